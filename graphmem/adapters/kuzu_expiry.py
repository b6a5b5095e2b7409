"""Memories that expire, in Kùzu: those due now and the next expiry (``remember --expires``).

Part of ``KuzuGraphStore`` (``kuzu_store.py``): two scans of the ``expires_at`` column, which
the writer runs only when the next expiry is due or unknown.
"""

from __future__ import annotations

from datetime import datetime

from graphmem.adapters.kuzu_connection import KuzuConnection
from graphmem.adapters.kuzu_rows import MEMORY_RETURN, aware, memory_from_row, naive_utc
from graphmem.core.models import CURRENT_STATUSES, MemoryRecord

_CURRENT = sorted(s.value for s in CURRENT_STATUSES)


class KuzuExpiry(KuzuConnection):
    """The expiry part of the Kùzu store (see the module doc)."""

    def expiring(self, now: datetime, limit: int) -> list[MemoryRecord]:
        rows = self._rows(
            "MATCH (m:Memory) WHERE m.expires_at IS NOT NULL AND m.expires_at <= $now "
            f"AND m.status IN $current RETURN {MEMORY_RETURN} ORDER BY m.expires_at, m.id LIMIT $limit",
            {"now": naive_utc(now), "current": _CURRENT, "limit": limit},
        )
        return [memory_from_row(row) for row in rows]

    def next_expiry(self) -> datetime | None:
        rows = self._rows(
            "MATCH (m:Memory) WHERE m.expires_at IS NOT NULL AND m.status IN $current "
            "RETURN min(m.expires_at)",
            {"current": _CURRENT},
        )
        return aware(rows[0][0]) if rows and rows[0][0] is not None else None
