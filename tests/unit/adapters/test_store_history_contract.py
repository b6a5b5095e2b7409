"""The history part of the store contract (``core.ports.MemoryHistory``) and memories that expire
(``MemoryRecords.expiring``, ``next_expiry``), on Kùzu and the in-memory fake."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from support.records import NOW, memory
from support.stores import STORES, new_kuzu, open_store

from graphmem.adapters.kuzu_store import KuzuGraphStore
from graphmem.core.events import CHANGES, EventKind, MemoryEvent
from graphmem.core.models import Status
from graphmem.core.ports import GraphStore
from graphmem.errors import StoreError

DIM = 8


@pytest.fixture(params=sorted(STORES))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[GraphStore]:
    opened = open_store(request.param, tmp_path, request, DIM)
    yield opened
    opened.close()


def event(event_id: str, memory_id: str = "m1", **changes: object) -> MemoryEvent:
    values: dict[str, object] = {
        "id": event_id,
        "memory_id": memory_id,
        "at": NOW,
        "kind": EventKind.EDIT,
        "actor": "user",
        "reason": "a typo",
        "before": {"text": "old 'text' \"quoted\" ünïcode", "about": ["Issue:#4"]},
        "after": {"text": "new text", "about": []},
    }
    values.update(changes)
    return MemoryEvent(**values)  # type: ignore[arg-type]


def test_an_event_reads_back_unchanged(store: GraphStore) -> None:
    stored = event(
        "evt_1", other_id="m2", rule="mr-merged-resolves-blocker", kind=EventKind.STATUS, undoes="evt_0"
    )
    store.add_events([stored])

    read = store.get_event("evt_1")
    # Who made it is the store's to say (a team's store: the database role), never the caller's.
    assert read is not None and replace(read, person=None) == stored
    assert store.get_event("evt_missing") is None


def test_events_of_a_memory_are_newest_first_and_include_links_to_it(store: GraphStore) -> None:
    store.add_events([event("evt_a"), event("evt_b", "m2", other_id="m1"), event("evt_c", "m3")])
    store.add_events([event("evt_d", at=NOW + timedelta(seconds=1))])

    assert [e.id for e in store.events_of("m1", 10)] == ["evt_d", "evt_b", "evt_a"]
    assert [e.id for e in store.events_of("m1", 2)] == ["evt_d", "evt_b"]
    assert store.events_of("nobody", 10) == []


def repeat(event_id: str, count: int) -> MemoryEvent:
    """A repeat of m1 (``MemoryWriter.reinforce``): its count before and after."""
    before, after = {"reinforced": count - 1}, {"reinforced": count}
    return event(event_id, kind=EventKind.REINFORCE, reason="remembered again", before=before, after=after)


def test_a_repeat_reads_back_with_its_count(store: GraphStore) -> None:
    store.add_events([repeat("evt_r", 3)])

    read = store.get_event("evt_r")
    assert read is not None and replace(read, person=None) == repeat("evt_r", 3)
    assert [(e.kind, e.before, e.after) for e in store.events_of("m1", 10)] == [
        (EventKind.REINFORCE, {"reinforced": 2}, {"reinforced": 3})
    ]


def test_events_of_given_kinds_are_chosen_before_the_limit_counts(store: GraphStore) -> None:
    """More repeats than the limit, after the changes a reader looks for: never in their place."""
    store.add_events([event("evt_a"), event("evt_b", "m2", other_id="m1", kind=EventKind.LINK)])
    store.add_events([repeat(f"evt_r{n}", n) for n in range(1, 4)])

    assert [e.id for e in store.events_of("m1", 2, kinds=CHANGES)] == ["evt_b", "evt_a"]
    assert [e.id for e in store.events_of("m1", 2, kinds=[EventKind.REINFORCE])] == ["evt_r3", "evt_r2"]
    assert [e.id for e in store.events_of("m1", 10, kinds=[EventKind.LINK])] == ["evt_b"]
    assert store.events_of("m1", 10, kinds=[]) == []
    assert len(store.events_of("m1", 10)) == 5


def test_an_undone_event_names_its_undo(store: GraphStore) -> None:
    store.add_events([event("evt_a")])
    store.set_undone("evt_a", "evt_b")

    assert store.get_event("evt_a").undone_by == "evt_b"  # type: ignore[union-attr]


def test_all_events_are_oldest_first(store: GraphStore) -> None:
    store.add_events([event("evt_z"), event("evt_a", "m2")])

    assert [e.id for e in store.all_events()] == ["evt_z", "evt_a"]


def test_an_event_id_is_stored_once(store: GraphStore) -> None:
    store.add_events([event("evt_a")])

    with pytest.raises(StoreError):
        store.add_events([event("evt_a", reason="again")])
    assert store.get_event("evt_a").reason == "a typo"  # type: ignore[union-attr]


def test_events_stay_when_their_memory_is_deleted(store: GraphStore) -> None:
    store.add_memories([memory("m1")])
    store.add_events([event("evt_a")])
    store.delete_memory("m1")

    assert [e.id for e in store.events_of("m1", 10)] == ["evt_a"]


def test_kuzu_keeps_events_and_their_order_across_a_restart(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    first = new_kuzu(tmp_path / "data", request, DIM)
    first.add_events([event("evt_a"), event("evt_b")])
    first.close()
    second = KuzuGraphStore(tmp_path / "data", dimension=DIM)
    second.add_events([event("evt_c")])

    assert [e.id for e in second.events_of("m1", 10)] == ["evt_c", "evt_b", "evt_a"]
    second.close()


def test_a_schema_5_store_is_migrated_and_gets_a_history(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    old = new_kuzu(tmp_path / "data", request, DIM)
    old.add_memories([memory("m1")])
    old.db.run("DROP TABLE MemoryEvent")  # a store written before the history existed
    old.set_meta("schema_version", "5")
    old.close()

    store = KuzuGraphStore(tmp_path / "data", dimension=DIM)
    store.add_events([event("evt_a")])

    assert store.get_meta("schema_version") == "14"
    assert [e.id for e in store.events_of("m1", 10)] == ["evt_a"]
    assert list(store.get_memories(["m1"])) == ["m1"]
    store.close()


# -- expiry (MemoryRecords.expiring, next_expiry) -------------------------------------------


def test_expiring_lists_current_memories_past_their_expiry_soonest_first(store: GraphStore) -> None:
    store.add_memories(
        [
            memory("m_later", expires_at=NOW + timedelta(days=2)),
            memory("m_soon", expires_at=NOW + timedelta(days=1)),
            memory("m_never"),
            memory("m_archived", expires_at=NOW, status=Status.ARCHIVED),
            memory("m_not_merged", expires_at=NOW, status=Status.NOT_MERGED),
        ]
    )

    assert [r.id for r in store.expiring(NOW + timedelta(days=3), 10)] == [
        "m_not_merged",
        "m_soon",
        "m_later",
    ]
    assert [r.id for r in store.expiring(NOW + timedelta(days=3), 1)] == ["m_not_merged"]
    assert store.expiring(NOW - timedelta(days=1), 10) == []
    assert store.next_expiry() == NOW


def test_an_expiry_reads_back_and_can_be_changed(store: GraphStore) -> None:
    store.add_memories([memory("m1", expires_at=NOW + timedelta(days=1))])
    assert store.get_memories(["m1"])["m1"].expires_at == NOW + timedelta(days=1)

    store.update_memory("m1", {"expires_at": None})

    assert store.get_memories(["m1"])["m1"].expires_at is None
    assert store.next_expiry() is None


def test_expiry_survives_bulk_loading(store: GraphStore) -> None:
    store.add_memories([memory(f"m{i}", expires_at=NOW + timedelta(hours=i + 1)) for i in range(70)])

    assert store.next_expiry() == NOW + timedelta(hours=1)
