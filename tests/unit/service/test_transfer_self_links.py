"""An import takes no link from a memory to itself, whether a link line or an event's state holds
it: ``undo`` of such an event linked a memory to itself (hidden as superseded), and its store's
export no longer imported back."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.memory_service import in_memory_service

from graphmem.errors import ImportFileError
from graphmem.service.memory import MemoryService

SELF_LINK = "source and target are the same memory: a memory cannot be linked to itself"


@pytest.fixture
def other(tmp_path: Path) -> Iterator[MemoryService]:
    """A second, empty store: where the file is imported."""
    memory = in_memory_service(tmp_path / "other")
    yield memory
    memory.close()


def export_lines(memory: MemoryService) -> list[dict[str, object]]:
    out = io.StringIO()
    memory.export(out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_an_event_whose_before_links_a_memory_to_itself_is_refused_and_nothing_is_imported(
    memory_service: MemoryService, other: MemoryService
) -> None:
    # The explorer's file: a real export whose supersede event says the memory superseded itself.
    old = memory_service.remember("We deploy on Tuesdays.", category="decision").memory
    memory_service.remember("We deploy on Fridays.", category="decision", supersedes=old.id)
    lines = export_lines(memory_service)
    number, event = next((n, x) for n, x in enumerate(lines, start=1) if x["type"] == "event")
    event["before"] = {"status": "active", "valid_to": None, "links": [[old.id, old.id, "supersedes", None]]}
    text = "".join(json.dumps(line) + "\n" for line in lines)

    with pytest.raises(ImportFileError, match="nothing was imported") as refused:
        other.import_text(text)

    assert refused.value.problems == [(number, f"event.before.links: {SELF_LINK}")]
    assert list(other.store.all_memories()) == [] and list(other.store.all_events()) == []
