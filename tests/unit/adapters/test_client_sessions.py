"""The session row's meaning every client's reader shares (adapters/client_sessions.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from graphmem.adapters.claude_code_transcripts import ClaudeCodeTranscript
from graphmem.adapters.client_sessions import from_ms, line_time, row_transcript, to_ms
from graphmem.adapters.codex_sessions import CodexSessionFile
from graphmem.core.sessions import SessionMessage, SessionRow

WHEN = datetime(2026, 3, 1, 12, 30, 15, 250_000, tzinfo=UTC)


def test_a_row_time_is_milliseconds_and_reads_back_in_utc() -> None:
    assert to_ms(WHEN) == 1_772_368_215_250
    assert from_ms(to_ms(WHEN)) == WHEN
    assert from_ms(None) == datetime(1970, 1, 1, tzinfo=UTC)


def test_a_rows_transcript_keeps_its_names_times_parent_and_messages_in_order() -> None:
    row = SessionRow("s1", "/work/app", "Fix the cache", "parent", to_ms(WHEN), to_ms(WHEN) + 1_000)
    messages = [SessionMessage(id=f"m{i}", role="user", created_at=WHEN, parts=()) for i in range(3)]
    transcript = row_transcript(row, messages)
    assert (transcript.session_id, transcript.directory, transcript.title) == (
        "s1",
        "/work/app",
        "Fix the cache",
    )
    assert (transcript.created_at, transcript.updated_at) == (WHEN, from_ms(to_ms(WHEN) + 1_000))
    assert transcript.parent_id == "parent"
    assert [m.id for m in transcript.messages] == ["m0", "m1", "m2"]


def test_a_one_file_reader_is_its_file_and_never_lists_changed_sessions(tmp_path: Path) -> None:
    for reader in (ClaudeCodeTranscript(tmp_path / "a.jsonl"), CodexSessionFile(tmp_path / "b.jsonl")):
        assert reader.path.parent == tmp_path
        assert reader.changed_sessions(None) == []
        reader.close()


def test_a_line_time_is_iso_in_utc_and_anything_else_is_none() -> None:
    assert line_time("2026-03-01T12:30:15.250Z") == WHEN
    assert line_time("2026-03-01T14:30:15.250+02:00") == WHEN
    assert [line_time(v) for v in ("yesterday", "", None, 1_772_368_215)] == [None] * 4


def test_a_row_time_that_is_no_number_is_the_epoch() -> None:
    assert [from_ms(v) for v in ("yesterday", b"\x01", 10**30)] == [datetime(1970, 1, 1, tzinfo=UTC)] * 3
