"""What an import keeps of an entity, link, next and event line (``core/held_lines.py``): the
fields it uses, in slots, once the line's pydantic model has checked it."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from graphmem.core.events import EventKind, MemoryEvent
from graphmem.core.export_format import parse_lines

ENTITY = {"type": "entity", "key": "File:/src/shop::app.py", "kind": "File", "name": "app.py"}
LINK = {"type": "link", "source": "mem_b", "target": "mem_a", "kind": "related"}
NEXT = {"type": "next", "source": "mem_a", "target": "mem_b"}
EVENT = {
    "type": "event", "id": "evt_0123456789abcdef", "memory_id": "mem_a", "other_id": "mem_b",
    "at": "2024-01-02T01:00:00+01:00", "kind": "supersede", "actor": "agent", "person": "bob",
    "reason": "token ghp_abcdefghijklmnopqrstuvwxyz0123456789 leaked", "change": "status active → superseded",
    "before": {"status": "active", "valid_to": None, "trust": "confirmed"},
    "after": {"status": "superseded", "valid_to": "2024-01-02T01:00:00+01:00"},
}  # fmt: skip


def test_entity_link_next_and_event_lines_are_kept_in_slots() -> None:
    parsed = parse_lines(enumerate((json.dumps(line) for line in (ENTITY, LINK, NEXT, EVENT)), start=1))

    kept = [r for _, r in [*parsed.entities, *parsed.links, *parsed.nexts, *parsed.events]]
    assert parsed.problems == [] and len(kept) == 4
    assert [type(r).__name__ for r in kept if hasattr(r, "__dict__")] == []


def test_an_event_line_keeps_its_states_as_a_store_keeps_them_and_stores_its_reason_redacted() -> None:
    [(_, held)] = parse_lines([(1, json.dumps(EVENT))]).events

    at = datetime(2024, 1, 2, tzinfo=UTC)
    assert held.before == {"status": "active", "valid_to": None}  # no trust from a file
    assert held.after == {"status": "superseded", "valid_to": at.isoformat()}
    event = held.to_event()
    assert event == MemoryEvent(
        id="evt_0123456789abcdef", memory_id="mem_a", at=at, kind=EventKind.SUPERSEDE, actor="agent",
        reason=event.reason, before=held.before, after=held.after, other_id="mem_b",
    )  # fmt: skip
    assert "ghp_" not in event.reason and event.person is None
