"""import says what it added: a repeated import adds no memory, entity nor link; what it adds is
credited to the file by its absolute path."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from graphmem.adapters.fake_store import FakeGraphStore

Invoke = Callable[..., Result]  # the ``invoke`` fixture of conftest.py


def test_a_repeated_import_says_nothing_was_added(invoke: Invoke, tmp_path: Path) -> None:
    first = invoke("remember", "-c", "decision", "Payments retry 3 times, see !12 and #4").stdout.strip()
    second = invoke(
        "remember", "-c", "decision", "Refunds never retry, unlike payments in !12"
    ).stdout.strip()
    assert invoke("link", second, first, "--kind", "related").exit_code == 0
    out = tmp_path / "out.jsonl"
    assert invoke("export", "-o", str(out)).exit_code == 0

    again = invoke("import", str(out))

    assert again.exit_code == 0, again.output
    assert again.stdout.startswith("imported 0 memories (2 already present), 0 entities, 0 links from")


def test_an_import_says_the_rules_it_brought_are_proposals_for_a_person_to_confirm(
    invoke: Invoke, tmp_path: Path
) -> None:
    assert invoke("remember", "-c", "directive", "Always run make lint before pushing").exit_code == 0
    assert invoke("remember", "-c", "decision", "Payments retry 3 times").exit_code == 0
    out = tmp_path / "backup.jsonl"
    assert invoke("export", "-o", str(out)).exit_code == 0

    restored = invoke("--data-dir", str(tmp_path / "restored"), "import", str(out))

    assert restored.exit_code == 0, restored.output
    assert restored.stdout.startswith("imported 2 memories (0 already present)")
    assert "1 directive or preference arrived as proposals: an import never makes a rule." in restored.stdout
    assert "`graphmem review` lists them" in restored.stdout
    review = invoke("--data-dir", str(tmp_path / "restored"), "review")
    assert "Always run make lint before pushing" in review.stdout


def test_an_import_says_a_newer_copy_of_your_memory_is_a_proposal_not_an_update(
    invoke: Invoke, tmp_path: Path
) -> None:
    memory_id = invoke("remember", "-c", "decision", "Payments retry 3 times").stdout.strip()
    out = tmp_path / "team.jsonl"
    assert invoke("export", "-o", str(out)).exit_code == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    for line in lines:
        if line.get("id") == memory_id:
            line.update(text="Payments retry 7 times", updated_at="2099-01-01T00:00:00Z")
    out.write_text("".join(json.dumps(line) + "\n" for line in lines))

    imported = invoke("import", str(out))

    assert imported.exit_code == 0, imported.output
    assert imported.stdout.startswith("imported 0 memories (0 already present), ")
    assert "updated" not in imported.stdout
    assert "1 change to memories you wrote or confirmed arrived as proposals beside them" in imported.stdout


def test_an_import_is_credited_to_the_files_absolute_path_not_the_path_as_typed(
    invoke: Invoke, in_memory_cli: dict[Path, FakeGraphStore], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``import:../all.jsonl`` would mean nothing once the shell that typed it has moved on; the
    daemon names a file an agent imports by its absolute path too."""
    assert invoke("remember", "-c", "fact", "Payments retry 3 times").exit_code == 0
    backups = tmp_path / "backups"
    backups.mkdir()
    assert invoke("export", "-o", str(backups / "all.jsonl")).exit_code == 0
    monkeypatch.chdir(tmp_path / "work")
    restored = tmp_path / "restored"

    result = invoke("--data-dir", str(restored), "import", "../backups/all.jsonl")

    assert result.exit_code == 0, result.output
    [memory] = in_memory_cli[restored.resolve()].all_memories()
    where = (backups / "all.jsonl").resolve()
    assert memory.source == f"import:{where}"
    assert f"from an import of {where}" in invoke("--data-dir", str(restored), "show", memory.id).stdout
