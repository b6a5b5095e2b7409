"""Memories on a branch, in Kùzu (``core/branches.py``).

Part of ``KuzuGraphStore`` (``kuzu_store.py``): one scan of the ``branch`` column, which the
branch lifecycle runs when a branch's MR merges or closes, or to check local branches.
"""

from __future__ import annotations

from typing import Any

from graphmem.adapters.kuzu_connection import KuzuConnection
from graphmem.adapters.kuzu_rows import MEMORY_RETURN, memory_from_row
from graphmem.core.models import CURRENT_STATUSES, MemoryRecord

_CURRENT = sorted(s.value for s in CURRENT_STATUSES)


class KuzuBranches(KuzuConnection):
    """The branch part of the Kùzu store (see the module doc)."""

    def branch_memories(self, project: str | None, branch: str | None, limit: int) -> list[MemoryRecord]:
        where = ["m.branch IS NOT NULL", "m.status IN $current"]
        params: dict[str, Any] = {"current": _CURRENT, "limit": limit}
        if project is not None:
            where.append("m.project = $project")
            params["project"] = project
        if branch is not None:
            where.append("m.branch = $branch")
            params["branch"] = branch
        rows = self._rows(
            f"MATCH (m:Memory) WHERE {' AND '.join(where)} "
            f"RETURN {MEMORY_RETURN} ORDER BY m.created_at, m.id LIMIT $limit",
            params,
        )
        return [memory_from_row(row) for row in rows]
