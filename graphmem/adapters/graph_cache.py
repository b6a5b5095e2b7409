"""An in-process copy of the memory graph's edges, for graph expansion at recall time.

Expanding two hops around 30 seeds took six Kùzu queries (tens of milliseconds
at 100k memories); the edges themselves are small. A store that keeps recalling (a
daemon) loads them once and keeps this copy in step with its own writes — it is the
only writer, since Kùzu allows one process per database. A process that recalls once
(a one-shot ``graphmem recall``) reads only the edges around its seeds instead: loading
every edge of 100,000 memories took 0.2–0.6 s, most of a cold recall's store time.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable

from graphmem.core.ports import Neighbour

# Memories taken through one shared entity: a hub (a file every memory mentions)
# says little about any one of them.
ENTITY_FANOUT = 50


class GraphCache:
    """Memory↔entity, memory↔memory (RELATES) and NEXT adjacency."""

    def __init__(
        self,
        load: Callable[
            [], tuple[Iterable[tuple[str, str]], Iterable[tuple[str, str, str]], Iterable[tuple[str, str]]]
        ],
    ) -> None:
        self._load = load
        self._lock = threading.Lock()
        self._ready = False
        self._entities_of: dict[str, set[str]] = defaultdict(set)
        self._memories_of: dict[str, set[str]] = defaultdict(set)
        self._related: dict[str, dict[str, str]] = defaultdict(dict)
        self._next: dict[str, set[str]] = defaultdict(set)

    @property
    def ready(self) -> bool:
        """Whether every edge is loaded (only then do the writes below keep it in step)."""
        return self._ready

    def load(self) -> None:
        """Load every edge now. The store calls it holding its own lock, which its writes
        hold when they update this copy: a write cannot fall between the read and the copy."""
        with self._lock:
            self._ensure()

    def _ensure(self) -> None:
        if self._ready:
            return
        about, relates, nexts = self._load()
        self._add_about(about)
        for source, target, kind in relates:
            self._add_related(source, target, kind)
        self._add_next(nexts)
        self._ready = True

    def reset(self) -> None:
        """Forget every edge (a rolled-back transaction's may be among them): they are
        loaded again at the next ask that needs them all."""
        with self._lock:
            self._ready = False
            for edges in (self._entities_of, self._memories_of, self._related, self._next):
                edges.clear()

    # -- kept in step with the store's writes ---------------------------------

    def about_added(self, pairs: Iterable[tuple[str, str]]) -> None:
        with self._lock:
            if self._ready:
                self._add_about(pairs)

    def about_moved(self, memory_ids: Iterable[str], old: str, new: str) -> None:
        with self._lock:
            if self._ready:
                for memory_id in memory_ids:
                    self._entities_of[memory_id].discard(old)
                    self._entities_of[memory_id].add(new)
                    self._memories_of[old].discard(memory_id)
                    self._memories_of[new].add(memory_id)

    def related_added(self, source: str, target: str, kind: str) -> None:
        with self._lock:
            if self._ready:
                self._add_related(source, target, kind)

    def related_removed(self, source: str, target: str) -> None:
        with self._lock:
            if self._ready:
                self._related[source].pop(target, None)
                self._related[target].pop(source, None)

    def next_added(self, pairs: Iterable[tuple[str, str]]) -> None:
        with self._lock:
            if self._ready:
                self._add_next(pairs)

    def memory_removed(self, memory_id: str) -> None:
        with self._lock:
            if not self._ready:
                return
            for key in self._entities_of.pop(memory_id, set()):
                self._memories_of[key].discard(memory_id)
            for other in self._related.pop(memory_id, {}):
                self._related[other].pop(memory_id, None)
            for other in self._next.pop(memory_id, set()):
                self._next[other].discard(memory_id)

    # -- one edge into the copy, both ways (loading it, and the writes above) ----

    def _add_about(self, pairs: Iterable[tuple[str, str]]) -> None:
        for memory_id, key in pairs:
            self._entities_of[memory_id].add(key)
            self._memories_of[key].add(memory_id)

    def _add_related(self, source: str, target: str, kind: str) -> None:
        self._related[source][target] = kind
        self._related[target][source] = kind

    def _add_next(self, pairs: Iterable[tuple[str, str]]) -> None:
        for a, b in pairs:
            self._next[a].add(b)
            self._next[b].add(a)

    # -- reading ----------------------------------------------------------------

    def has_entities(self, memory_id: str) -> bool:
        """Whether the memory is about any entity."""
        with self._lock:
            self._ensure()
            return bool(self._entities_of.get(memory_id))

    def neighbours(self, memory_ids: Collection[str], limit: int) -> list[Neighbour]:
        """Edges from ``memory_ids`` to other memories, at most ``limit``."""
        with self._lock:
            self._ensure()
            found: list[Neighbour] = []
            for memory_id in sorted(memory_ids):
                for other in sorted(self._next.get(memory_id, ())):
                    found.append(Neighbour(memory_id, "next", other))
                for other, kind in sorted(self._related.get(memory_id, {}).items()):
                    found.append(Neighbour(memory_id, kind, other))
                for key in sorted(self._entities_of.get(memory_id, ())):
                    members = self._memories_of.get(key, set())
                    if len(members) > ENTITY_FANOUT:
                        continue
                    found.extend(
                        Neighbour(memory_id, key, o, len(members)) for o in sorted(members) if o != memory_id
                    )
                if len(found) >= limit:
                    break
            return found[:limit]
