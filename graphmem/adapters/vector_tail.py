"""The exact tail of the vector index (``vector_index.py``): the float32 vectors of the rows no
HNSW graph holds yet, scanned exactly by every search until ``tidy`` merges them into a graph,
and, per row, where its vector is: a slot of the tail, a graph, or the store's rows the index
was loaded with (``VectorRows``).

The tail's matrix doubles when it is full and is cut down when a merge or build leaves it more
than four times what it holds. A float32 matrix of its own given to ``load`` becomes the tail
as it is: not a second copy of every vector.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from graphmem.adapters.row_visibility import best_shown, grown
from graphmem.core.ports import Vector

__all__ = ["IN_GRAPH", "IN_STORE", "ExactTail"]

# A row's slot when its vector is not in the tail: in a graph (or dead), or read from the
# store's rows the index was loaded with (``VectorRows``) until a graph holds it.
IN_GRAPH, IN_STORE = -1, -2

Rows = Sequence[int] | npt.NDArray[np.int64]


class ExactTail:
    """The tail's vectors, the row of each slot, and each row's slot (or ``IN_GRAPH``,
    ``IN_STORE``).

    The per-row slots live here rather than in the index: appending, dropping, loading and
    restoring move a row's slot together with its vector, so with the slots outside each of
    them would hand slots back for the index to write; the index only asks where a row's
    vector is (``holds``, ``in_graph``, ``read``). The index's lock guards every call; this
    class takes no lock of its own.
    """

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self._vectors = np.zeros((0, dimension), np.float32)
        self._rows = np.zeros(0, np.int64)  # per slot: its row (-1 past the size)
        self._size = 0
        self._slot = np.zeros(0, np.int32)  # per row: its slot, or IN_GRAPH, IN_STORE

    def __len__(self) -> int:
        return self._size

    @property
    def rows(self) -> npt.NDArray[np.int64]:
        """The rows in the tail, in slot order (a view)."""
        return self._rows[: self._size]

    # -- where each row's vector is -----------------------------------------------

    def grow_rows(self, capacity: int) -> None:
        """Room for ``capacity`` rows; a new one is ``IN_GRAPH`` until it gets a vector."""
        self._slot = grown(self._slot, capacity, IN_GRAPH)

    def holds(self, row: int) -> bool:
        """Whether ``row``'s vector is in the tail."""
        return bool(self._slot[row] >= 0)

    def in_graph(self, rows: Rows) -> npt.NDArray[np.bool_]:
        """Per row of ``rows``: whether its vector is in a graph (or it is dead)."""
        return np.asarray(self._slot[rows] == IN_GRAPH)

    def from_store(self, n: int) -> None:
        """Rows ``0`` to ``n - 1`` are read from the store's rows (``VectorRows``)."""
        self._slot[:n] = IN_STORE

    def stored_rows(self, n: int) -> npt.NDArray[np.int64]:
        """The rows among the first ``n`` still read from the store."""
        return np.flatnonzero(self._slot[:n] == IN_STORE)

    def to_graph(self, rows: npt.NDArray[np.int64]) -> None:
        """``rows``, read from the store until now, are in a graph (or dead)."""
        self._slot[rows] = IN_GRAPH

    # -- writes -------------------------------------------------------------------

    def load(self, matrix: npt.NDArray[Any], n: int) -> None:
        """Rows ``0`` to ``n - 1`` with the vectors of ``matrix``, into an empty tail: ``matrix``
        itself when it can be (``_adoptable``), else a copy."""
        if _adoptable(matrix, (n, self.dimension)):
            self._vectors, self._rows = matrix, np.full(n, -1, np.int64)
        else:
            self.grow(n)
            self._vectors[:n] = matrix
        self._rows[:n] = np.arange(n)
        self._size = n
        self._slot[:n] = np.arange(n)

    def grow(self, size: int) -> None:
        """Room for ``size`` vectors: twice the room before at least, and 256 at least."""
        capacity = len(self._vectors)
        if size <= capacity:
            return
        capacity = max(size, 256, capacity * 2)
        vectors = np.zeros((capacity, self.dimension), np.float32)
        vectors[: self._size] = self._vectors[: self._size]
        self._vectors = vectors
        self._rows = grown(self._rows, capacity, -1)

    def append(self, row: int, vector: Vector) -> None:
        """``row``'s vector in the next slot (``grow`` made room for it)."""
        slot = self._size
        self._slot[row] = slot
        self._vectors[slot] = vector
        self._rows[slot] = row
        self._size += 1

    def replace(self, row: int, vector: Vector) -> None:
        """``row``'s vector in its slot (the tail ``holds`` it)."""
        self._vectors[self._slot[row]] = vector

    def drop(self, rows: Collection[int]) -> None:
        """``rows`` out of the tail (now in a graph, or dead) and the rest in slots from 0, in
        a new matrix: as large as the one before, or ``max(256, 2 * rest)`` when that one was
        more than four times the rest and over 1,024."""
        old_rows = self._rows[: self._size]
        keep = np.flatnonzero(~np.isin(old_rows, np.fromiter(rows, np.int64, len(rows))))
        size = len(keep)
        capacity = max(256, size * 2) if len(self._vectors) > max(4 * size, 1024) else len(self._vectors)
        vectors = np.zeros((capacity, self.dimension), np.float32)
        tail_rows = np.full(capacity, -1, np.int64)
        vectors[:size] = self._vectors[keep]
        tail_rows[:size] = old_rows[keep]
        self._slot[old_rows] = IN_GRAPH
        self._slot[tail_rows[:size]] = np.arange(size)
        self._vectors, self._rows, self._size = vectors, tail_rows, size

    def restore(self, vectors: Vector, rows: npt.NDArray[np.int64]) -> None:
        """The tail ``state`` gave, into an empty tail."""
        size = len(rows)
        self.grow(size)
        self._vectors[:size] = vectors
        self._rows[:size] = rows
        self._size = size
        self._slot[self._rows[:size]] = np.arange(size)

    # -- reads --------------------------------------------------------------------

    def best(self, query: Vector, k: int, visible: npt.NDArray[np.bool_]) -> list[tuple[int, float]]:
        """The best ``k`` of the tail's rows ``visible`` shows, by exact cosine with ``query``."""
        size = self._size
        if not size:
            return []
        rows = self._rows[:size]
        return best_shown(rows, np.where(visible[rows], self._vectors[:size] @ query, -np.inf), k)

    def read(
        self, rows: npt.NDArray[np.int64], out: Vector
    ) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
        """The vectors of those of ``rows`` in the tail, written to their lines of ``out``;
        returns which of ``rows`` are read from the store and which are in a graph."""
        slots = self._slot[rows]
        in_tail = slots >= 0
        out[in_tail] = self._vectors[slots[in_tail]]
        return slots == IN_STORE, slots == IN_GRAPH

    def state(self) -> tuple[Vector, npt.NDArray[np.int64]]:
        """Copies of the tail's vectors and of their rows, for saving."""
        return self._vectors[: self._size].copy(), self._rows[: self._size].copy()


def _adoptable(matrix: npt.NDArray[Any], shape: tuple[int, int]) -> bool:
    """Whether ``matrix`` can be the tail as it is: float32, C-ordered, writable, its own data."""
    flags = matrix.flags
    return (
        matrix.dtype == np.float32
        and matrix.shape == shape
        and flags.c_contiguous
        and flags.writeable
        and flags.owndata
    )
