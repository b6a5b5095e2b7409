"""Memory vectors of the Kùzu store, kept in ``<data_dir>/graph.vectors`` (``vector_log.py``).

A part of ``KuzuGraphStore`` (``kuzu_store.py``), over the store's connection: it owns the
vector log and the memories still without a vector. Kùzu holds the memories and the graph; their
vectors live in the vector log, written as they come (one append, durable when it returns):
Kùzu 0.11 cannot take vectors one at a time (see ``vector_log.py``). A memory has a vector
when the log holds one for it, and its record says so (``embedded``).

The memories still without a vector are kept in memory (``PendingScan``): this process is
the store's only writer, so every change of them passes here. Asking Kùzu each time took
17 ms at 100,000 memories, which the daemon's embedding worker ran twice after each
``remember``, holding the store. They are found by reading the memory ids a page of node
offsets at a time, only as far as an ask needs: one read of every id at the first ask took
28-37 s at a million memories under load (a recall without a daemon, or the daemon's first
embedding batch, with a backlog). How many there are is the store's count of memories less
the log's of vectors (``count_pending``): the log holds the vectors of stored memories only.

Stores written before schema version 9 kept their vectors in Kùzu's ``embedding`` column:
``copy_vectors_out`` moves them to the log once, at open.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from graphmem.adapters.kuzu_connection import KuzuConnection
from graphmem.adapters.kuzu_rows import VECTOR_EXTENT, VECTOR_PAGE, VECTORS_BETWEEN, stored_vectors
from graphmem.adapters.record_rows import status_as_read
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
# The memory ids of a page of node offsets. Kùzu 0.11 reads the column of every row before it
# filters by offset (a page costs a pass over the column, whatever its size): a scan's pages
# double from ``PENDING_PAGE`` up to ``PENDING_PAGE_MOST``.
IDS_BETWEEN = "MATCH (m:Memory) WHERE offset(id(m)) >= $first AND offset(id(m)) < $stop RETURN m.id"
PENDING_PAGE = 8_192
PENDING_PAGE_MOST = 262_144


class KuzuVectors:
    """The vectors part of the Kùzu store (see the module doc)."""

    def __init__(self, db: KuzuConnection, path: Path, dimension: int) -> None:
        self._db = db
        self.dimension = dimension
        self._log = VectorLog(path, dimension)
        self._pending: PendingScan | None = None  # the memories without a vector; None: not read yet

    def close(self) -> None:
        self._log.close()

    # -- the memories without a vector -----------------------------------------------

    def pending(self, limit: int) -> list[str]:
        """Up to ``limit`` memories without a vector, the oldest written first."""
        with self._db.lock:
            if self._pending is None:
                top = self._db.rows(MEMORY_EXTENT)[0][0]
                self._pending = PendingScan(-1 if top is None else int(top))
            return self._pending.first(limit, self._unembedded)

    def _unembedded(self, first: int, stop: int) -> list[str]:
        """The memories without a vector among the node offsets ``first`` to ``stop``."""
        ids = self._db.arrow(IDS_BETWEEN, {"first": first, "stop": stop}).column(0).to_pylist()
        held = self._log.holding(ids)
        return [memory_id for memory_id, has in zip(ids, held.tolist(), strict=True) if not has]

    def count_pending(self, memories: int) -> int:
        """How many of the store's ``memories`` have no vector (the log holds vectors of stored
        memories only: ``set_embeddings`` keeps none of another, a deletion drops its own)."""
        with self._db.lock:
            return max(0, memories - len(self._log))

    def not_pending(self, ids: Iterable[str]) -> None:
        """Memories that are gone (their write was rolled back), or have their vector."""
        if self._pending is not None:
            self._pending.discard(ids)

    def now_pending(self, ids: Iterable[str]) -> None:
        """Memories just written without a vector."""
        if self._pending is not None:
            self._pending.written(ids)

    def forget_pending(self) -> None:
        """Read the memories without a vector again at the next ask (a rollback)."""
        self._pending = None

    # -- vectors ------------------------------------------------------------------------

    def put(self, ids: Sequence[str], vectors: Vector) -> None:
        """Keep the vectors of memories the store holds."""
        self._log.put(ids, vectors)
        self.not_pending(ids)

    def drop(self, memory_id: str, *, pending: bool) -> None:
        """The memory's text changed (``pending``: it needs a vector again) or it is gone."""
        self._log.remove([memory_id])
        if pending:
            self.now_pending([memory_id])
        else:
            self.not_pending([memory_id])

    def as_embedded(self, record: MemoryRecord) -> MemoryRecord:
        """``record`` as read from Kùzu, ``embedded`` when the log holds its vector."""
        embedded = record.id in self._log
        return record if record.embedded is embedded else replace(record, embedded=embedded)

    def clear(self, dimension: int) -> None:
        """Forget every vector; the next ones have ``dimension``."""
        with self._db.lock:
            self._log.clear(dimension)
            self._pending = None
            self.dimension = dimension

    def load_vectors(self) -> StoredVectors:
        with self._db.lock:
            top = self._db.rows(MEMORY_EXTENT)[0][0]
            ids: list[str] = []
            projects: list[str | None] = []
            statuses: list[str] = []
            live: set[str] = set()
            for page in self._memory_pages(-1 if top is None else top):
                for memory_id, project, status, branch in page:
                    live.add(str(memory_id))
                    if memory_id in self._log:
                        ids.append(str(memory_id))
                        projects.append(place(project, branch))
                        statuses.append(status_as_read(status, memory_id))
            self._log.compact(live)
            # Read from the log when the index asks (``VectorLog.rows``): a build takes them a
            # chunk at a time, where a matrix of them all took 1.5 GB at a million.
            return StoredVectors(ids, self._log.rows(ids), projects, statuses)

    def _memory_pages(self, top: int) -> Iterator[list[list[str | None]]]:
        for start in range(0, top + 1, VECTOR_PAGE):
            yield self._db.rows(MEMORIES_BETWEEN, {"first": start, "stop": start + VECTOR_PAGE})

    def count_vectors(self) -> int:
        with self._db.lock:
            return len(self._log)

    def embedding_of(self, memory_id: str) -> Vector | None:
        with self._db.lock:
            return self._log.get(memory_id)

    def vectors_of(self, ids: Sequence[str]) -> tuple[Vector, npt.NDArray[np.bool_]]:
        """The vectors of ``ids``, a row each, and which have one (``VectorLog.gather``): the
        vector index's exact vectors (``HnswVectorIndex(exact=...)``). Without Kùzu's lock: a
        recall's search waited for it behind the full-text search's thread (82 ms a recall at
        a million memories under load); a write only appends records after those it reads."""
        return self._log.gather(ids)


class PendingScan:
    """The memories without a vector, found by a scan of the node offsets up to ``top`` (the
    last one when it began), a page at a time, and those written without one since it began.

    A memory written since then is ``written`` here whatever offset Kùzu gives it (0.11.3
    gives new offsets only, even after deletes and a reopen; one given again below the scan's
    cursor is still known, one above it is skipped when the scan reaches it). The oldest come
    first: those the scan found, in offset order, then those written since, in write order."""

    def __init__(self, top: int) -> None:
        self._top = top
        self._next = 0  # the first offset not read yet
        self._page = PENDING_PAGE
        self._found: dict[str, None] = {}  # by the scan
        self._written: dict[str, None] = {}  # since the scan began

    def first(self, limit: int, unembedded: Callable[[int, int], list[str]]) -> list[str]:
        """Up to ``limit`` of them, reading pages (``unembedded(first, stop)``) until the scan
        has found ``limit`` or read every offset up to ``top``."""
        while len(self._found) < limit and self._next <= self._top:
            stop = min(self._next + self._page, self._top + 1)
            self._found.update((i, None) for i in unembedded(self._next, stop) if i not in self._written)
            self._next, self._page = stop, min(self._page * 2, PENDING_PAGE_MOST)
        return list(itertools.islice(itertools.chain(self._found, self._written), max(limit, 0)))

    def written(self, ids: Iterable[str]) -> None:
        for memory_id in ids:
            if memory_id not in self._found:
                self._written[memory_id] = None

    def discard(self, ids: Iterable[str]) -> None:
        for memory_id in ids:
            self._found.pop(memory_id, None)
            self._written.pop(memory_id, None)


# -- stores before schema version 9 ------------------------------------------------


def copy_vectors_out(db: KuzuConnection, log: Path, dimension: int) -> None:
    """Move the vectors of Kùzu's ``embedding`` column to a new vector log at ``log`` (a store
    written before version 9); the column is left as it is: clearing it would be the very
    write Kùzu cannot take."""
    moving = log.with_name(f"{log.name}.moving")
    VectorLog.create(moving, dimension)
    fresh = VectorLog(moving, dimension)
    count, top = db.rows(VECTOR_EXTENT)[0]
    if count:
        old = stored_vectors(_old_vector_pages(db, -1 if top is None else top), count, dimension)
        matrix = np.asarray(old.matrix)  # read from Kùzu into one: no copy
        for start in range(0, len(old.ids), VECTOR_PAGE):
            fresh.put(old.ids[start : start + VECTOR_PAGE], matrix[start : start + VECTOR_PAGE])
    fresh.close()
    fresh.path.replace(log)


def _old_vector_pages(db: KuzuConnection, top: int) -> Iterator[pa.Table]:
    for start in range(0, top + 1, VECTOR_PAGE):
        yield db.arrow(VECTORS_BETWEEN, {"first": start, "stop": start + VECTOR_PAGE})
