"""How an import plans and writes a large file (``service/transfer_plan.py``, ``transfer.py``): the
store asked a slice of keys at a time, the memories' records made a batch at a time as they are
written, none in a dry run."""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

import pytest

from graphmem.adapters.fake_store import FakeGraphStore
from graphmem.core.memory_line import MemoryLine
from graphmem.core.models import MemoryRecord
from graphmem.service import transfer, transfer_plan
from graphmem.service.memory import MemoryService
from graphmem.service.writer import MemoryWriter


def memory_line(number: int, text: str) -> str:
    line = {
        "type": "memory", "id": f"mem_{number:016x}", "text": text, "category": "fact", "scope": "global",
        "created_at": "2026-01-01T00:00:00Z",
    }  # fmt: skip
    return json.dumps(line) + "\n"


def export(*texts: str) -> str:
    return "".join(memory_line(number, text) for number, text in enumerate(texts, start=1))


TEXTS = [f"Payments retry {n} times" for n in range(1, 7)]


def made_records(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the records ``MemoryLine.to_record`` makes from now on, in order."""
    made: list[str] = []
    real = MemoryLine.to_record

    def to_record(line: MemoryLine, *args: Any, **kwargs: Any) -> MemoryRecord:
        made.append(line.id)
        return real(line, *args, **kwargs)

    monkeypatch.setattr(MemoryLine, "to_record", to_record)
    return made


def test_an_import_asks_the_store_for_its_ids_and_hashes_a_slice_at_a_time(
    memory_service: MemoryService, memory_store: FakeGraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory_service.import_text(export(*TEXTS[:1]).replace("mem_0000000000000001", "mem_00000000000000ff"))
    monkeypatch.setattr(transfer_plan, "LOOKUP_KEYS", 2)
    asked: list[int] = []
    for name in ("get_memories", "find_by_hashes"):
        real = getattr(memory_store, name)

        def lookup(keys: Collection[str], real: Any = real) -> Any:
            asked.append(len(keys))
            return real(keys)

        monkeypatch.setattr(memory_store, name, lookup)

    # The file's first text is stored already, under another id: found whichever slice asks it.
    summary = memory_service.import_text(export(*TEXTS[1:], TEXTS[0]), dry_run=True)

    assert asked and max(asked) <= 2
    assert (summary.memories_added, summary.memories_skipped) == (5, 1)


def test_a_dry_run_makes_no_memory_record(
    memory_service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = made_records(monkeypatch)

    summary = memory_service.import_text(export(*TEXTS), dry_run=True)

    assert summary.memories_added == len(TEXTS) and made == []


def test_an_import_makes_each_batch_of_records_as_it_is_written(
    memory_service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transfer, "IMPORT_BATCH", 2)
    made = made_records(monkeypatch)
    made_when_written: list[int] = []
    real_add = MemoryWriter.add

    def add(writer: MemoryWriter, records: list[MemoryRecord], *args: Any, **kwargs: Any) -> Any:
        made_when_written.append(len(made))
        return real_add(writer, records, *args, **kwargs)

    monkeypatch.setattr(MemoryWriter, "add", add)

    summary = memory_service.import_text(export(*TEXTS))

    assert summary.memories_added == len(TEXTS) == len(made)
    # Each batch is written with the next one made (embedded ahead), never more.
    assert made_when_written == [4, 6, 6]
