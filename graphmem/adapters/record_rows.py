"""The one mapping from a store's row of memory columns to a ``MemoryRecord``, for every
store that returns them in ``MEMORY_FIELDS`` order (Kùzu, PostgreSQL), then whether the
memory has a vector."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from graphmem.core.models import Category, MemoryRecord, Scope, Status, Trust


def utc(value: datetime | None) -> datetime | None:
    """``value`` in UTC, aware; a naive value (Kùzu's TIMESTAMP) is taken as UTC."""
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def memory_from_row(row: Sequence[Any]) -> MemoryRecord:
    (
        id_,
        text,
        category,
        scope,
        project,
        created,
        updated,
        valid_from,
        valid_to,
        status,
        chash,
        source,
        session,
        reinforced,
        origin,
        trust,
        expires_at,
        branch,
        embedded,
    ) = row
    return MemoryRecord(
        id=id_,
        text=text,
        category=Category(category),
        scope=Scope(scope),
        project=project,
        created_at=utc(created) or datetime.now(UTC),
        updated_at=utc(updated) or datetime.now(UTC),
        valid_from=utc(valid_from) or datetime.now(UTC),
        valid_to=utc(valid_to),
        status=Status(status),
        content_hash=chash or "",
        source=source or "user",
        session=session,
        reinforced=int(reinforced or 0),
        embedded=bool(embedded),
        origin=origin,
        trust=Trust(trust) if trust else Trust.NORMAL,
        expires_at=utc(expires_at),
        branch=branch or None,
    )
