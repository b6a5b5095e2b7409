"""Scans of memory columns few memories fill, in Kùzu: expiry and branches.

A part of ``KuzuGraphStore`` (``kuzu_store.py``), given its connection: the memories due to
expire and the next expiry (``remember --expires``; two scans of the ``expires_at`` column,
which the writer runs only when the next expiry is due or unknown), and the current memories
on a branch (``core/branches.py``; one scan of the ``branch`` column, which the branch
lifecycle runs when a branch's MR merges or closes, or to check local branches).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from graphmem.adapters.kuzu_connection import KuzuConnection
from graphmem.adapters.kuzu_rows import MEMORY_RETURN, aware, memory_from_row, naive_utc
from graphmem.core.models import CURRENT_STATUSES, MemoryRecord

_CURRENT = sorted(s.value for s in CURRENT_STATUSES)


class KuzuScans:
    """The expiry and branch scans of the Kùzu store (see the module doc)."""

    def __init__(self, db: KuzuConnection) -> None:
        self._db = db

    def expiring(self, now: datetime, limit: int) -> list[MemoryRecord]:
        rows = self._db.rows(
            "MATCH (m:Memory) WHERE m.expires_at IS NOT NULL AND m.expires_at <= $now "
            f"AND m.status IN $current RETURN {MEMORY_RETURN} ORDER BY m.expires_at, m.id LIMIT $limit",
            {"now": naive_utc(now), "current": _CURRENT, "limit": limit},
        )
        return [memory_from_row(row) for row in rows]

    def next_expiry(self) -> datetime | None:
        rows = self._db.rows(
            "MATCH (m:Memory) WHERE m.expires_at IS NOT NULL AND m.status IN $current "
            "RETURN min(m.expires_at)",
            {"current": _CURRENT},
        )
        return aware(rows[0][0]) if rows and rows[0][0] is not None else None

    def branch_memories(self, project: str | None, branch: str | None, limit: int) -> list[MemoryRecord]:
        where = ["m.branch IS NOT NULL", "m.status IN $current"]
        params: dict[str, Any] = {"current": _CURRENT, "limit": limit}
        if project is not None:
            where.append("m.project = $project")
            params["project"] = project
        if branch is not None:
            where.append("m.branch = $branch")
            params["branch"] = branch
        rows = self._db.rows(
            f"MATCH (m:Memory) WHERE {' AND '.join(where)} "
            f"RETURN {MEMORY_RETURN} ORDER BY m.created_at, m.id LIMIT $limit",
            params,
        )
        return [memory_from_row(row) for row in rows]
