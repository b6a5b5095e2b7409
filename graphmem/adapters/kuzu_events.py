"""Each memory's history in Kùzu: the ``MemoryEvent`` nodes (``core/events.py``).

A part of ``KuzuGraphStore`` (``kuzu_store.py``): the ``MemoryHistory`` port, over the store's
connection and lock.
``before`` and ``after`` are stored as JSON text; ``seq`` orders the events of one instant.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from graphmem.adapters.kuzu_connection import KuzuConnection
from graphmem.adapters.kuzu_rows import naive_utc
from graphmem.adapters.record_rows import EVENT_FIELDS, event_from_row
from graphmem.core.events import EventKind, MemoryEvent
from graphmem.errors import StoreError

_FIELDS = ", ".join(f"e.{name}" for name in EVENT_FIELDS)
_CREATE = (
    "CREATE (:MemoryEvent {id: $id, memory_id: $memory_id, other_id: $other_id, at: $at, kind: $kind, "
    "actor: $actor, rule: $rule, reason: $reason, before: $before, after: $after, undoes: $undoes, "
    "undone_by: $undone_by, seq: $seq})"
)


class KuzuHistory:
    """The history part of the Kùzu store (see the module doc)."""

    def __init__(self, db: KuzuConnection) -> None:
        self._db = db
        self._event_seq: int | None = None  # the last event's seq, read at the first event added

    def add_events(self, events: Sequence[MemoryEvent]) -> None:
        with self._db.lock:
            for event in events:
                if self._db.rows("MATCH (e:MemoryEvent {id: $id}) RETURN e.id", {"id": event.id}):
                    raise StoreError(f"Event {event.id} is stored already.")
                self._db.run(_CREATE, self._params(event))

    def _params(self, event: MemoryEvent) -> dict[str, Any]:
        if self._event_seq is None:
            found = self._db.rows("MATCH (e:MemoryEvent) RETURN max(e.seq)")
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

    def events_of(
        self, memory_id: str, limit: int, *, kinds: Collection[EventKind] | None = None
    ) -> list[MemoryEvent]:
        # A scan of every event: Kùzu indexes a node table's primary key alone, never memory_id.
        params: dict[str, Any] = {"id": memory_id, "limit": max(limit, 0)}
        of_kinds = ""
        if kinds is not None:
            params["kinds"] = sorted(EventKind(kind).value for kind in kinds)
            if not params["kinds"]:
                return []
            of_kinds = " AND e.kind IN $kinds"
        rows = self._db.rows(
            f"MATCH (e:MemoryEvent) WHERE (e.memory_id = $id OR e.other_id = $id){of_kinds} "
            f"RETURN {_FIELDS} ORDER BY e.seq DESC LIMIT $limit",
            params,
        )
        return [event_from_row(row) for row in rows]

    def get_event(self, event_id: str) -> MemoryEvent | None:
        rows = self._db.rows(f"MATCH (e:MemoryEvent {{id: $id}}) RETURN {_FIELDS}", {"id": event_id})
        return event_from_row(rows[0]) if rows else None

    def set_undone(self, event_id: str, undone_by: str) -> None:
        self._db.run(
            "MATCH (e:MemoryEvent {id: $id}) SET e.undone_by = $by", {"id": event_id, "by": undone_by}
        )

    def all_events(self) -> Iterable[MemoryEvent]:
        return [
            event_from_row(row)
            for row in self._db.rows(f"MATCH (e:MemoryEvent) RETURN {_FIELDS} ORDER BY e.seq")
        ]
