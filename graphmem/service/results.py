"""What the Memory service's management verbs return."""

from __future__ import annotations

from dataclasses import dataclass

from graphmem.core.models import Entity, Link, MemoryRecord


@dataclass(frozen=True, slots=True)
class RememberResult:
    """What ``remember`` did: stored a new memory, or reinforced an existing one."""

    memory: MemoryRecord
    created: bool
    duplicate_of: str | None = None  # set when an existing memory was reinforced
    superseded: tuple[str, ...] = ()
    entities: tuple[Entity, ...] = ()


@dataclass(frozen=True, slots=True)
class MemoryDetail:
    """One memory with what it is about and how it relates to others."""

    memory: MemoryRecord
    entities: tuple[Entity, ...]
    links: tuple[Link, ...]


@dataclass(frozen=True, slots=True)
class Stats:
    total: int
    by_category: dict[str, int]
    by_status: dict[str, int]
    by_scope: dict[str, int]
    entities: dict[str, int]
    pending_embeddings: int
    data_dir: str
    model: str
