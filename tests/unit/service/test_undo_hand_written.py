"""``undo`` of an event graphmem did not write (a team's store takes rows written by hand): it
applies only a state graphmem writes (``core.export_format.EventState``, a text ``remember``
takes), whatever store fed it, or it is refused and changes nothing. On Kùzu and the in-memory
fake: Kùzu reads a state it does not understand as empty, the fake gives back what it was given."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.stores import open_store

from graphmem.core.events import EventKind, MemoryEvent, State
from graphmem.core.models import MemoryRecord
from graphmem.core.ports import GraphStore
from graphmem.core.text import MAX_TEXT_CHARS
from graphmem.errors import ConflictError
from graphmem.service.remember import Rememberer
from graphmem.service.writer import MemoryWriter
from tests.support.bookkeeping import T0

TEXT = "We deploy on Tuesdays."
FORGED = "evt_00000000000000f0"


@pytest.fixture(params=["kuzu", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[GraphStore]:
    opened = open_store(request.param, tmp_path, request, 8)
    yield opened
    opened.close()


@pytest.fixture
def memory(rememberer: Rememberer) -> MemoryRecord:
    return rememberer.remember(TEXT, category="fact", project="/p").memory


def forge(store: GraphStore, memory: MemoryRecord, before: State, after: State) -> str:
    """An event row written by hand (``psql``) into the store, not through the writer."""
    store.add_events(
        [MemoryEvent(FORGED, memory.id, T0, EventKind.EDIT, "agent", "", before=before, after=after)]
    )
    return FORGED


def refused_and_unchanged(writer: MemoryWriter, store: GraphStore, event_id: str) -> MemoryRecord:
    """The memory as it is after ``undo(event_id)`` was refused; the event is not marked undone."""
    with pytest.raises(ConflictError, match="graphmem does not write"):
        writer.history.undo(event_id)
    assert store.get_event(event_id).undone_by is None  # type: ignore[union-attr]
    return writer.get(store.get_event(event_id).memory_id)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "text", [None, "   ", "x" * (MAX_TEXT_CHARS + 1)], ids=["null", "blank", "longer-than-remember-takes"]
)
def test_undo_refuses_a_text_remember_would_not_take(
    writer: MemoryWriter, store: GraphStore, memory: MemoryRecord, text: str | None
) -> None:
    event_id = forge(store, memory, {"text": text, "about": []}, {"text": TEXT, "about": []})

    assert refused_and_unchanged(writer, store, event_id).text == TEXT


@pytest.mark.parametrize(
    "before",
    [
        {"category": "rule"},
        {"category": None},
        {"status": "deleted"},
        {"status": None},
        {"trust": "root"},
        {"trust": None},
    ],
    ids=str,
)
def test_undo_refuses_a_category_status_or_trust_graphmem_never_writes(
    writer: MemoryWriter, store: GraphStore, memory: MemoryRecord, before: State
) -> None:
    name = next(iter(before))
    event_id = forge(store, memory, before, {name: getattr(memory, name).value})

    kept = refused_and_unchanged(writer, store, event_id)

    assert (kept.category, kept.status, kept.trust) == (memory.category, memory.status, memory.trust)


@pytest.mark.parametrize(
    "before",
    [
        {"status": "archived", "source": "user"},
        {"status": "archived", "links": None},
        {"text": "We deploy on Fridays.", "about": None},
    ],
    ids=["source", "null-links", "null-about"],
)
def test_undo_refuses_a_state_holding_a_part_graphmem_never_writes(
    writer: MemoryWriter, store: GraphStore, memory: MemoryRecord, before: State
) -> None:
    after = {"status": memory.status.value} if "status" in before else {"text": TEXT, "about": []}
    event_id = forge(store, memory, before, after)

    kept = refused_and_unchanged(writer, store, event_id)

    assert (kept.text, kept.status, kept.source) == (TEXT, memory.status, memory.source)


def test_undo_refuses_an_event_whose_after_it_cannot_read_rather_than_skip_the_change_check(
    writer: MemoryWriter, store: GraphStore, memory: MemoryRecord
) -> None:
    # An ``after`` no store understands would leave nothing to compare the memory with: the check
    # that it did not change since would pass whatever the memory is now.
    event_id = forge(store, memory, {"text": "Deploys are frozen."}, {"source": "user"})

    assert refused_and_unchanged(writer, store, event_id).text == TEXT


def test_undo_refuses_to_link_a_memory_to_itself(
    writer: MemoryWriter, store: GraphStore, memory: MemoryRecord
) -> None:
    # Applied, it hid the memory as superseded by itself, and the store's export no longer imported.
    before = {"status": "active", "links": [[memory.id, memory.id, "supersedes", None]]}
    event_id = forge(store, memory, before, {"status": memory.status.value, "links": []})

    kept = refused_and_unchanged(writer, store, event_id)

    assert store.links([memory.id]) == [] and kept.status is memory.status
