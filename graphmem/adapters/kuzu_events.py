"""Each memory's history in Kùzu: the ``MemoryEvent`` nodes (``core/events.py``).

Part of ``KuzuGraphStore`` (``kuzu_store.py``): the ``MemoryHistory`` port, over the store's
connection and lock.
``before`` and ``after`` are stored as JSON text; ``seq`` orders the events of one instant.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from graphmem.adapters.kuzu_connection import KuzuConnection
from graphmem.adapters.kuzu_rows import aware, naive_utc
from graphmem.core.events import EventKind, MemoryEvent
from graphmem.errors import StoreError

_FIELDS = (
    "e.id, e.memory_id, e.at, e.kind, e.actor, e.reason, e.before, e.after, e.other_id, e.rule, "
    "e.undoes, e.undone_by"
)
_CREATE = (
    "CREATE (:MemoryEvent {id: $id, memory_id: $memory_id, other_id: $other_id, at: $at, kind: $kind, "
    "actor: $actor, rule: $rule, reason: $reason, before: $before, after: $after, undoes: $undoes, "
    "undone_by: $undone_by, seq: $seq})"
)


def _event(row: Sequence[Any]) -> MemoryEvent:
    at = aware(row[2])
    assert at is not None
    return MemoryEvent(
        id=row[0],
        memory_id=row[1],
        at=at,
        kind=EventKind(row[3]),
        actor=row[4] or "",
        reason=row[5] or "",
        before=json.loads(row[6] or "{}"),
        after=json.loads(row[7] or "{}"),
        other_id=row[8],
        rule=row[9],
        undoes=row[10],
        undone_by=row[11],
    )


class KuzuHistory(KuzuConnection):
    """The history part of the Kùzu store (see the module doc)."""

    _event_seq: int | None = None

    def add_events(self, events: Sequence[MemoryEvent]) -> None:
        with self.lock:
            for event in events:
                if self.rows("MATCH (e:MemoryEvent {id: $id}) RETURN e.id", {"id": event.id}):
                    raise StoreError(f"Event {event.id} is stored already.")
                self.run(_CREATE, self._params(event))

    def _params(self, event: MemoryEvent) -> dict[str, Any]:
        if self._event_seq is None:
            found = self.rows("MATCH (e:MemoryEvent) RETURN max(e.seq)")
            self._event_seq = int(found[0][0] or 0) if found else 0
        self._event_seq += 1
        return {
            "id": event.id,
            "memory_id": event.memory_id,
            "other_id": event.other_id,
            "at": naive_utc(event.at),
            "kind": event.kind.value,
            "actor": event.actor,
            "rule": event.rule,
            "reason": event.reason,
            "before": json.dumps(event.before, ensure_ascii=False),
            "after": json.dumps(event.after, ensure_ascii=False),
            "undoes": event.undoes,
            "undone_by": event.undone_by,
            "seq": self._event_seq,
        }

    def events_of(self, memory_id: str, limit: int) -> list[MemoryEvent]:
        rows = self.rows(
            f"MATCH (e:MemoryEvent) WHERE e.memory_id = $id OR e.other_id = $id RETURN {_FIELDS} "
            "ORDER BY e.seq DESC LIMIT $limit",
            {"id": memory_id, "limit": limit},
        )
        return [_event(row) for row in rows]

    def get_event(self, event_id: str) -> MemoryEvent | None:
        rows = self.rows(f"MATCH (e:MemoryEvent {{id: $id}}) RETURN {_FIELDS}", {"id": event_id})
        return _event(rows[0]) if rows else None

    def set_undone(self, event_id: str, undone_by: str) -> None:
        self.run("MATCH (e:MemoryEvent {id: $id}) SET e.undone_by = $by", {"id": event_id, "by": undone_by})

    def all_events(self) -> Iterable[MemoryEvent]:
        return [_event(row) for row in self.rows(f"MATCH (e:MemoryEvent) RETURN {_FIELDS} ORDER BY e.seq")]
