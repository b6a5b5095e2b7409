"""The journal of memory ids a derived index owes the store."""

from __future__ import annotations

from pathlib import Path

from graphmem.adapters.id_journal import IdJournal


def test_ids_appended_are_read_back_once_each_in_order(tmp_path: Path) -> None:
    journal = IdJournal(tmp_path / "journal")
    journal.append(["b", "a"])
    journal.append(["b", "c"])
    assert journal.read() == ["b", "a", "c"]
    journal.close()


def test_appended_ids_are_on_disk_before_the_journal_is_closed(tmp_path: Path) -> None:
    journal = IdJournal(tmp_path / "journal")
    journal.append(["a"])
    assert (tmp_path / "journal").read_text("utf-8") == "a\n"  # what a restarted process reads
    journal.close()


def test_keep_leaves_only_the_ids_still_owed_and_appending_goes_on(tmp_path: Path) -> None:
    journal = IdJournal(tmp_path / "journal")
    journal.append(["a", "b", "c"])
    journal.keep(["c", "c"])
    journal.append(["d"])
    assert journal.read() == ["c", "d"]
    assert not (tmp_path / "journal.new").exists()
    journal.close()


def test_a_missing_journal_reads_empty(tmp_path: Path) -> None:
    journal = IdJournal(tmp_path / "journal")
    (tmp_path / "journal").unlink()
    assert journal.read() == []
    journal.close()
