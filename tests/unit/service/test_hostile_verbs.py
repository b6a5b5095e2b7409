"""Hostile input to a verb answers graphmem's own error, saying what to fix, and stores nothing:
JSON nested deeper than Python's parser recurses, times UTC cannot hold, a lease too long for a
``timedelta`` and a NUL in a path once crashed a verb with a bare Python exception."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from graphmem.adapters.fake_store import FakeGraphStore
from graphmem.errors import ImportFileError, InvalidInputError
from graphmem.service.coordination import Coordinator
from graphmem.service.file_access import FileAccess
from graphmem.service.memory import MemoryService

DEEP = "[" * 3000  # deeper than json.loads recurses: it raised RecursionError
# The two ends of what a datetime holds, each with an offset that moves it past the end in UTC.
LATEST_WEST = datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone(timedelta(hours=-14)))
EARLIEST_EAST = datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=14)))
RANGE = "between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z"


def memory_line(**changes: object) -> str:
    line = {
        "type": "memory",
        "id": "mem_0123456789abcdef",
        "text": "We chose Kùzu for the graph.",
        "category": "decision",
        "scope": "global",
        "created_at": "2025-06-01T12:00:00Z",
        **changes,
    }
    return json.dumps(line)


def test_an_import_line_nested_too_deep_is_a_problem_of_its_line(
    memory_service: MemoryService, memory_store: FakeGraphStore
) -> None:
    with pytest.raises(ImportFileError, match="Fix the lines listed") as caught:
        memory_service.import_text(memory_line() + "\n" + DEEP + "\n", name="deep.jsonl")

    [(number, problem)] = caught.value.problems
    assert number == 2 and problem.startswith("not valid JSON") and "nested too deep" in problem
    assert memory_store.all_memories() == []


def test_export_never_replaces_a_file_whose_first_line_is_nested_too_deep(tmp_path: Path) -> None:
    access = FileAccess(tmp_path / "data", agent=True)
    target = access.exports / "deep.jsonl"
    target.parent.mkdir(parents=True)
    target.write_text(DEEP + "\n", "utf-8")

    with pytest.raises(InvalidInputError, match="graphmem did not write it: give another file name"):
        access.writable_file("deep.jsonl", None, overwrite=True)

    assert target.read_text("utf-8") == DEEP + "\n"


@pytest.mark.parametrize("field", ["created_at", "updated_at", "valid_to", "expires_at"])
def test_an_import_time_utc_cannot_hold_is_a_problem_naming_its_field(
    memory_service: MemoryService, memory_store: FakeGraphStore, field: str
) -> None:
    line = memory_line(**{field: LATEST_WEST.isoformat()})

    with pytest.raises(ImportFileError) as caught:
        memory_service.import_text(line + "\n", name="times.jsonl")

    [(number, problem)] = caught.value.problems
    assert number == 1 and f"memory.{field}" in problem and RANGE in problem
    assert memory_store.all_memories() == []


@pytest.mark.parametrize("moment", [LATEST_WEST, EARLIEST_EAST])
def test_remember_refuses_a_time_utc_cannot_hold_naming_it_and_the_range(
    memory_service: MemoryService, memory_store: FakeGraphStore, moment: datetime
) -> None:
    with pytest.raises(InvalidInputError) as caught:
        memory_service.remember("The deploy ran at the end of time.", occurred_at=moment)

    assert moment.isoformat() in str(caught.value) and RANGE in str(caught.value)
    assert memory_store.all_memories() == []


def test_remember_refuses_an_expiry_utc_cannot_hold(
    memory_service: MemoryService, memory_store: FakeGraphStore
) -> None:
    with pytest.raises(InvalidInputError, match=RANGE):
        memory_service.remember("The token expires at the end of time.", expires_at=LATEST_WEST)

    assert memory_store.all_memories() == []


def test_a_claim_too_long_for_a_timedelta_is_refused_with_the_bounds(memory_service: MemoryService) -> None:
    memory_service = memory_service.serving(Coordinator(lambda: datetime(2026, 5, 1, tzinfo=UTC)))
    session = memory_service.session_start("opencode/build", project="/p")

    with pytest.raises(InvalidInputError, match="ttl_seconds must be between 1 and 86400"):
        memory_service.claim_item(session.id, "!12", ttl_seconds=10**30)

    assert memory_service.active_sessions(project="/p").claims == []


def test_bootstrap_refuses_a_path_with_a_nul_character(memory_service: MemoryService, tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="The path contains a NUL character: give a real path"):
        memory_service.bootstrap(str(tmp_path) + "/x\x00")
