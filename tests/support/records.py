"""A memory record for store tests: every field filled, any of them changed by keyword."""

from __future__ import annotations

from datetime import UTC, datetime

from graphmem.core.models import Category, MemoryRecord, Scope

NOW = datetime(2025, 6, 1, 12, 0, 0, 123456, tzinfo=UTC)


def memory(memory_id: str, text: str | None = None, **changes: object) -> MemoryRecord:
    values: dict[str, object] = {
        "id": memory_id,
        "text": text or f"memory {memory_id}",
        "category": Category.FACT,
        "scope": Scope.GLOBAL,
        "project": None,
        "created_at": NOW,
        "updated_at": NOW,
        "valid_from": NOW,
        "content_hash": f"hash-{memory_id}",
        "source": "test",
    }
    values.update(changes)
    return MemoryRecord(**values)  # type: ignore[arg-type]
