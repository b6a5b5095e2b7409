"""Each memory's history and the memories that expire, in PostgreSQL.

A part of ``PostgresGraphStore`` (``postgres_store.py``) over its connection part: the
``MemoryHistory`` port over table ``memory_events`` (``before`` and ``after`` as ``jsonb``,
``seq`` a sequence that orders the events of one instant; no foreign key, so that the history of
a deleted memory stays readable; ``owner`` keeps the history of a user's global memory theirs,
see ``postgres_schema.py``, schema 6) and the expiry queries of ``MemoryRecords`` on the indexed
``expires_at``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb

from graphmem.adapters.postgres_connection import PostgresConnection
from graphmem.adapters.postgres_rows import MEMORY_RETURN, memory_from_row, utc
from graphmem.adapters.record_rows import EVENT_FIELDS, event_from_row
from graphmem.core.events import EventKind, MemoryEvent
from graphmem.core.export_format import MAX_ID_CHARS, MAX_REASON_CHARS
from graphmem.core.models import CURRENT_STATUSES, MemoryRecord

# Who made an event and why: read no longer than an export writes them (an import refuses more).
_LABELS = {"actor": MAX_ID_CHARS, "reason": MAX_REASON_CHARS, "rule": MAX_ID_CHARS}
# With who made it (schema 13): the role that wrote the row, which the database sets.
_FIELDS = ", ".join(
    [f"left({name}, {_LABELS[name]})" if name in _LABELS else name for name in EVENT_FIELDS] + ["person"]
)
# The events graphmem writes: a row of another kind (written by hand) is no change graphmem can show
# or undo, and is left out of every read.
_KNOWN = "kind = ANY(%(kinds)s)"
_KINDS = sorted(kind.value for kind in EventKind)
# An event about a global memory that has an owner (schema 6) is seen by that owner alone, like
# the memory: the owner of the memory, or of the other memory it names.
_PRIVATE_TO = (
    "coalesce((SELECT m.owner FROM memories m WHERE m.id = %(memory_id)s AND m.scope = 'global'), "
    "(SELECT m.owner FROM memories m WHERE m.id = %(other_id)s AND m.scope = 'global'))"
)
_CURRENT = sorted(s.value for s in CURRENT_STATUSES)


class PostgresHistory:
    """The history and expiry parts of the PostgreSQL store (see the module doc)."""

    def __init__(self, db: PostgresConnection) -> None:
        self._db = db

    def add_events(self, events: Sequence[MemoryEvent]) -> None:
        rows = [
            {
                "id": e.id,
                "memory_id": e.memory_id,
                "other_id": e.other_id,
                "at": utc(e.at),
                "kind": e.kind.value,
                "actor": e.actor,
                "rule": e.rule,
                "reason": e.reason,
                "before": Jsonb(e.before),
                "after": Jsonb(e.after),
                "undoes": e.undoes,
                "undone_by": e.undone_by,
            }
            for e in events
        ]
        with self._db.transaction():
            self._db.many(
                "INSERT INTO memory_events (id, memory_id, other_id, at, kind, actor, rule, reason, before, "
                "after, undoes, undone_by, owner) VALUES (%(id)s, %(memory_id)s, %(other_id)s, %(at)s, "
                "%(kind)s, %(actor)s, %(rule)s, %(reason)s, %(before)s, %(after)s, %(undoes)s, "
                f"%(undone_by)s, {_PRIVATE_TO})",
                rows,
            )

    def events_of(
        self, memory_id: str, limit: int, *, kinds: Collection[EventKind] | None = None
    ) -> list[MemoryEvent]:
        # Of the kinds asked among those graphmem writes, chosen by the query before its LIMIT.
        wanted = _KINDS if kinds is None else sorted({EventKind(kind).value for kind in kinds})
        if not wanted:
            return []
        rows = self._db.rows(
            f"SELECT {_FIELDS} FROM memory_events WHERE (memory_id = %(id)s OR other_id = %(id)s) "
            f"AND {_KNOWN} ORDER BY seq DESC LIMIT %(limit)s",
            {"id": memory_id, "limit": max(limit, 0), "kinds": wanted},
        )
        return [_event(row) for row in rows]

    def get_event(self, event_id: str) -> MemoryEvent | None:
        rows = self._db.rows(
            f"SELECT {_FIELDS} FROM memory_events WHERE id = %(id)s AND {_KNOWN}",
            {"id": event_id, "kinds": _KINDS},
        )
        return _event(rows[0]) if rows else None

    def set_undone(self, event_id: str, undone_by: str) -> None:
        self._db.run("UPDATE memory_events SET undone_by = %s WHERE id = %s", (undone_by, event_id))

    def all_events(self) -> Iterable[MemoryEvent]:
        rows = self._db.rows(
            f"SELECT {_FIELDS} FROM memory_events WHERE {_KNOWN} ORDER BY seq", {"kinds": _KINDS}
        )
        return [_event(row) for row in rows]

    # -- expiry ---------------------------------------------------------------------------

    def expiring(self, now: datetime, limit: int) -> list[MemoryRecord]:
        rows = self._db.rows(
            f"SELECT {MEMORY_RETURN} FROM memories m WHERE m.expires_at IS NOT NULL "
            "AND m.expires_at <= %(now)s AND m.status = ANY(%(current)s) "
            "ORDER BY m.expires_at, m.id LIMIT %(limit)s",
            {"now": utc(now), "current": _CURRENT, "limit": max(limit, 0)},
        )
        return [memory_from_row(row) for row in rows]

    def branch_memories(self, project: str | None, branch: str | None, limit: int) -> list[MemoryRecord]:
        rows = self._db.rows(
            f"SELECT {MEMORY_RETURN} FROM memories m WHERE m.branch IS NOT NULL "
            "AND m.status = ANY(%(current)s) AND (%(p)s::text IS NULL OR m.project = %(p)s) "
            "AND (%(b)s::text IS NULL OR m.branch = %(b)s) ORDER BY m.created_at, m.id LIMIT %(limit)s",
            {"current": _CURRENT, "p": project, "b": branch, "limit": max(limit, 0)},
        )
        return [memory_from_row(row) for row in rows]

    def next_expiry(self) -> datetime | None:
        rows = self._db.rows(
            "SELECT min(expires_at) FROM memories WHERE expires_at IS NOT NULL AND status = ANY(%s)",
            (_CURRENT,),
        )
        return utc(rows[0][0]) if rows and rows[0][0] is not None else None


def _event(row: Sequence[Any]) -> MemoryEvent:
    return replace(event_from_row(row[:-1]), person=row[-1])
