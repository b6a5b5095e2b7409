"""The ports a store's parts own, each delegated to its part: ``StoreParts``.

A store is composed of parts that each own their state (sqlite-utils' ``Table`` holding its
``Database``): its entities and ABOUT edges (``EntityGraph``), the edges between memories
(``MemoryLinks``), the history (``MemoryHistory``), and the scans of expiring and branch
memories, the reads of the stored vectors, and the connection's transactions and meta table.
``StoreParts`` is given those parts and answers their ports by calling them; ``KuzuGraphStore``
and ``PostgresGraphStore`` are built on it, and add the memory records, their search and the
vector writes they keep themselves. ``OnePersonsStore`` answers who else sees a memory on a store
of one person (Kùzu's, the fake): no one.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Protocol

from graphmem.core.events import EventKind, MemoryEvent
from graphmem.core.models import Entity, EntityKind, Link, LinkKind, MemoryRecord, Scope
from graphmem.core.ports import EntityGraph, MemoryHistory, MemoryLinks, Neighbour, StoredVectors, Vector


class Connection(Protocol):
    """What a store's connection part offers the ``StoreMeta`` port: transactions and meta."""

    def transaction(self) -> AbstractContextManager[None]: ...
    def get_meta(self, key: str) -> str | None: ...
    def set_meta(self, key: str, value: str) -> None: ...


class VectorReads(Protocol):
    """The reads of ``MemoryVectors`` a store's vector part answers alone."""

    def load_vectors(self) -> StoredVectors: ...
    def count_vectors(self) -> int: ...
    def embedding_of(self, memory_id: str) -> Vector | None: ...


class MemoryScans(Protocol):
    """The scans of ``MemoryRecords`` over a column few memories fill: expiry and branch."""

    def expiring(self, now: datetime, limit: int) -> list[MemoryRecord]: ...
    def next_expiry(self) -> datetime | None: ...
    def branch_memories(self, project: str | None, branch: str | None, limit: int) -> list[MemoryRecord]: ...


class OnePersonsStore:
    """``MemoryRecords.shared_memories`` and ``shared_scopes`` of a store one person keeps (the
    embedded Kùzu store, the fake): no one else sees its memories, whatever their scope."""

    def shared_memories(self, ids: Collection[str]) -> set[str]:
        return set()

    def shared_scopes(self) -> frozenset[Scope]:
        return frozenset()


class StoreParts:
    """The ``EntityGraph``, ``MemoryLinks`` and ``MemoryHistory`` ports, the memory scans, the
    vector reads and the transactions and meta of a store, delegated to the parts given."""

    def __init__(
        self,
        *,
        connection: Connection,
        entities: EntityGraph,
        links: MemoryLinks,
        history: MemoryHistory,
        scans: MemoryScans,
        vectors: VectorReads,
    ) -> None:
        self._connection = connection
        self._vector_reads = vectors
        self.entities = entities
        self.links_part = links
        self.history = history
        self.scans = scans

    # -- StoreMeta ---------------------------------------------------------------------

    def transaction(self) -> AbstractContextManager[None]:
        return self._connection.transaction()

    def get_meta(self, key: str) -> str | None:
        return self._connection.get_meta(key)

    def set_meta(self, key: str, value: str) -> None:
        self._connection.set_meta(key, value)

    # -- EntityGraph ------------------------------------------------------------------

    def upsert_entities(self, entities: Sequence[Entity]) -> None:
        self.entities.upsert_entities(entities)

    def get_entities(self, keys: Collection[str]) -> dict[str, Entity]:
        return self.entities.get_entities(keys)

    def find_entities(self, name: str, kinds: Collection[EntityKind]) -> list[Entity]:
        return self.entities.find_entities(name, kinds)

    def all_entities(self) -> Iterable[Entity]:
        return self.entities.all_entities()

    def link_about(self, pairs: Sequence[tuple[str, Entity]]) -> None:
        self.entities.link_about(pairs)

    def about(self, memory_ids: Collection[str]) -> dict[str, list[Entity]]:
        return self.entities.about(memory_ids)

    def about_bodies(self, memory_ids: Collection[str]) -> dict[str, dict[str, str]]:
        return self.entities.about_bodies(memory_ids)

    def memories_about(self, entity_keys: Collection[str]) -> dict[str, list[str]]:
        return self.entities.memories_about(entity_keys)

    def remembered(self, keys: Collection[str]) -> set[str]:
        return self.entities.remembered(keys)

    def move_about(self, kind: EntityKind, old: str, new: str) -> list[str]:
        return self.entities.move_about(kind, old, new)

    # -- MemoryLinks --------------------------------------------------------------------

    def add_links(self, links: Sequence[Link]) -> None:
        self.links_part.add_links(links)

    def remove_link(self, source: str, target: str, kind: LinkKind) -> bool:
        return self.links_part.remove_link(source, target, kind)

    def links(self, memory_ids: Collection[str] | None = None) -> list[Link]:
        return self.links_part.links(memory_ids)

    def add_next(self, pairs: Sequence[tuple[str, str]]) -> None:
        self.links_part.add_next(pairs)

    def next_pairs(self, memory_ids: Collection[str] | None = None) -> list[tuple[str, str]]:
        return self.links_part.next_pairs(memory_ids)

    def neighbours(self, memory_ids: Collection[str], limit: int) -> list[Neighbour]:
        return self.links_part.neighbours(memory_ids, limit)

    # -- MemoryHistory --------------------------------------------------------------------

    def add_events(self, events: Sequence[MemoryEvent]) -> None:
        self.history.add_events(events)

    def events_of(
        self, memory_id: str, limit: int, *, kinds: Collection[EventKind] | None = None
    ) -> list[MemoryEvent]:
        return self.history.events_of(memory_id, limit, kinds=kinds)

    def get_event(self, event_id: str) -> MemoryEvent | None:
        return self.history.get_event(event_id)

    def set_undone(self, event_id: str, undone_by: str) -> None:
        self.history.set_undone(event_id, undone_by)

    def all_events(self) -> Iterable[MemoryEvent]:
        return self.history.all_events()

    # -- MemoryVectors' reads ------------------------------------------------------------

    def load_vectors(self) -> StoredVectors:
        return self._vector_reads.load_vectors()

    def count_vectors(self) -> int:
        return self._vector_reads.count_vectors()

    def embedding_of(self, memory_id: str) -> Vector | None:
        return self._vector_reads.embedding_of(memory_id)

    # -- MemoryRecords' scans -------------------------------------------------------------

    def expiring(self, now: datetime, limit: int) -> list[MemoryRecord]:
        return self.scans.expiring(now, limit)

    def next_expiry(self) -> datetime | None:
        return self.scans.next_expiry()

    def branch_memories(self, project: str | None, branch: str | None, limit: int) -> list[MemoryRecord]:
        return self.scans.branch_memories(project, branch, limit)
