"""Memory vectors of the Kùzu store, kept in ``<data_dir>/graph.vectors`` (``vector_log.py``).

Part of ``KuzuGraphStore`` (``kuzu_store.py``). Kùzu holds the memories and the graph; their
vectors live in the vector log, written as they come (one append, durable when it returns):
Kùzu 0.11 cannot take vectors one at a time (see ``vector_log.py``). A memory has a vector
when the log holds one for it, and its record says so (``embedded``).

The memories still without a vector are kept in memory (``_pending``), from one read of
every memory id at the first ask: this process is the store's only writer, so every change
of them passes here. Asking Kùzu each time took 17 ms at 100,000 memories, which the
daemon's embedding worker ran twice after each ``remember``, holding the store.

Stores written before schema version 9 kept their vectors in Kùzu's ``embedding`` column:
``copy_vectors_out`` moves them to the log once, at open.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from graphmem.adapters.kuzu_connection import KuzuConnection
from graphmem.adapters.kuzu_rows import VECTOR_EXTENT, VECTOR_PAGE, VECTORS_BETWEEN, stored_vectors
from graphmem.adapters.vector_log import VectorLog
from graphmem.core.branches import place
from graphmem.core.models import MemoryRecord
from graphmem.core.ports import StoredVectors, Vector

if TYPE_CHECKING:
    import pyarrow as pa

VECTOR_LOG = "graph.vectors"
# The memories' columns a loaded vector index needs, a page of node offsets at a time.
MEMORIES_BETWEEN = (
    "MATCH (m:Memory) WHERE offset(id(m)) >= $first AND offset(id(m)) < $stop "
    "RETURN m.id, m.project, m.status, m.branch"
)
MEMORY_EXTENT = "MATCH (m:Memory) RETURN max(offset(id(m)))"


class KuzuVectors(KuzuConnection):
    """The vectors part of the Kùzu store (see the module doc)."""

    dimension: int
    _records: dict[str, MemoryRecord]
    _vectors: VectorLog
    _pending: dict[str, None] | None  # the memories without a vector; None: not read yet
    get_memories: Callable[[Collection[str]], dict[str, MemoryRecord]]  # the store's

    def pending_embeddings(self, limit: int) -> list[tuple[str, str]]:
        with self._lock:
            if self._pending is None:
                rows = self._rows("MATCH (m:Memory) RETURN m.id")
                self._pending = {row[0]: None for row in rows if row[0] not in self._vectors}
            wanted = list(itertools.islice(self._pending, limit))
            found = self.get_memories(wanted)
            for memory_id in wanted:
                if memory_id not in found:  # its write was rolled back
                    del self._pending[memory_id]
            return [(memory_id, found[memory_id].text) for memory_id in wanted if memory_id in found]

    def _now_pending(self, ids: Iterable[str]) -> None:
        """Memories just written without a vector."""
        if self._pending is not None:
            self._pending.update(dict.fromkeys(ids))

    def set_embeddings(self, ids: Sequence[str], vectors: Vector) -> None:
        with self._lock:
            found = self.get_memories(ids)  # a vector of no memory is not kept
            rows = [i for i, memory_id in enumerate(ids) if memory_id in found]
            self._put_vectors([ids[i] for i in rows], np.asarray(vectors, np.float32)[rows])

    def _put_vectors(self, ids: Sequence[str], vectors: Vector) -> None:
        self._vectors.put(ids, vectors)
        for memory_id in ids:
            self._records.pop(memory_id, None)
            if self._pending is not None:
                self._pending.pop(memory_id, None)

    def _drop_vector(self, memory_id: str, *, pending: bool) -> None:
        """The memory's text changed (``pending``: it needs a vector again) or it is gone."""
        self._vectors.remove([memory_id])
        if self._pending is not None:
            if pending:
                self._pending[memory_id] = None
            else:
                self._pending.pop(memory_id, None)

    def _as_embedded(self, record: MemoryRecord) -> MemoryRecord:
        """``record`` as read from Kùzu, ``embedded`` when the log holds its vector."""
        embedded = record.id in self._vectors
        return record if record.embedded is embedded else replace(record, embedded=embedded)

    def clear_embeddings(self, dimension: int) -> None:
        with self._lock:
            self._records.clear()
            self._vectors.clear(dimension)
            self._pending = None
            self.dimension = dimension

    def load_vectors(self) -> StoredVectors:
        with self._lock:
            top = self._rows(MEMORY_EXTENT)[0][0]
            ids: list[str] = []
            projects: list[str | None] = []
            statuses: list[str] = []
            live: set[str] = set()
            for page in self._memory_pages(-1 if top is None else top):
                for memory_id, project, status, branch in page:
                    live.add(str(memory_id))
                    if memory_id in self._vectors:
                        ids.append(str(memory_id))
                        projects.append(place(project, branch))
                        statuses.append(str(status))
            self._vectors.compact(live)
            return StoredVectors(ids, self._vectors.matrix(ids), projects, statuses)

    def _memory_pages(self, top: int) -> Iterator[list[list[str | None]]]:
        for start in range(0, top + 1, VECTOR_PAGE):
            yield self._rows(MEMORIES_BETWEEN, {"first": start, "stop": start + VECTOR_PAGE})

    def count_vectors(self) -> int:
        with self._lock:
            return len(self._vectors)

    def embedding_of(self, memory_id: str) -> Vector | None:
        with self._lock:
            return self._vectors.get(memory_id)

    # -- stores before schema version 9 ------------------------------------------------

    def copy_vectors_out(self, log: Path) -> None:
        """Move the vectors of Kùzu's ``embedding`` column to a new vector log at ``log``
        (a store written before version 9); the column is left as it is: clearing it
        would be the very write Kùzu cannot take."""
        moving = log.with_name(f"{log.name}.moving")
        VectorLog.create(moving, self.dimension)
        fresh = VectorLog(moving, self.dimension)
        count, top = self._rows(VECTOR_EXTENT)[0]
        if count:
            old = stored_vectors(self._old_vector_pages(-1 if top is None else top), count, self.dimension)
            for start in range(0, len(old.ids), VECTOR_PAGE):
                fresh.put(old.ids[start : start + VECTOR_PAGE], old.matrix[start : start + VECTOR_PAGE])
        fresh.close()
        fresh.path.replace(log)

    def _old_vector_pages(self, top: int) -> Iterator[pa.Table]:
        for start in range(0, top + 1, VECTOR_PAGE):
            with self._translated():
                result = self._execute(VECTORS_BETWEEN, {"first": start, "stop": start + VECTOR_PAGE})
                yield result.get_as_arrow()
