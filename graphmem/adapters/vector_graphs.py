"""The vector index's HNSW graphs: one per project, its branches' rows with it, and one of the
global memories (``vector_index.py`` owns the rows and searches these).

Every search sees the global memories and those of at most a few projects (its own, its
aliases: ``core.ports.VectorQuery``), so each searches only their graphs. In one graph of
every project, a recall for one project of 20 asked usearch for 24 times the rows it needed
and explored twice that: 26 ms at a million memories, against 6 ms when they were all
global. A project's rows are in its graph only: no row is in two.

A save from before the graphs were per project (``vector_files`` format 3) holds one graph
of every row: it is kept as the one graph ``MIXED``, searched by every search (its filters
hide the other projects' rows) until the next ``tidy`` builds the graphs again.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

from graphmem.adapters.hnsw_graph import graph_dtype, new_graph, writable_copy

# The graph of every project's rows a save from before held (not a project's code: those
# are -1, global, and up).
MIXED = -2
# The first rows of a new graph are added on one thread, the rest on every core: built
# concurrently from nothing, a graph of 40 rows left one to three of them unreachable in 12%
# of builds (a search of all 40 returned 37-39), and which ones changed from build to build.
# Seeded on one thread its upper layers are the same every build; this many rows cost a few
# milliseconds against the seconds of a graph of 20,000.
SEED_ROWS = 1_024


class ProjectGraphs:
    """The graphs by project code (``RowVisibility.partitions``), the rows each holds and
    when each last changed. The index holds its lock around every call."""

    def __init__(self, dimension: int, dtype: str) -> None:
        self.dimension = dimension
        self.dtype = dtype
        self._graphs: dict[int, Any] = {}
        self._sizes: dict[int, int] = {}  # rows each holds, dead ones included
        self._versions: dict[int, int] = {}  # the index's graph_version when each last changed
        self._views: set[int] = set()  # read-only maps of a saved file: copied before an add
        self.dead = 0  # rows of the graphs whose memory was removed or re-embedded

    def __bool__(self) -> bool:
        return bool(self._graphs)

    @property
    def rows(self) -> int:
        """Rows the graphs hold, dead ones included."""
        return sum(self._sizes.values())

    @property
    def stale(self) -> bool:
        """Whether the graphs must be built again: one of every project's rows (``MIXED``), or
        of another kind of vectors than the index keeps (a save from before)."""
        return MIXED in self._graphs or any(graph_dtype(g) != self.dtype for g in self._graphs.values())

    def searched(self, partitions: Iterable[int]) -> list[tuple[int, Any, int]]:
        """The graphs a search of ``partitions`` reads, with their codes and sizes: theirs, or
        ``MIXED`` when the graphs are a save's of every row."""
        if MIXED in self._graphs:
            return [(MIXED, self._graphs[MIXED], self._sizes[MIXED])]
        return [(p, self._graphs[p], self._sizes[p]) for p in sorted(set(partitions)) if p in self._graphs]

    def holding(self, partitions: npt.NDArray[np.int32]) -> Iterable[tuple[Any, npt.NDArray[np.bool_]]]:
        """Each graph that holds some of the rows of ``partitions`` (their codes), with which."""
        if MIXED in self._graphs:
            yield self._graphs[MIXED], np.ones(len(partitions), np.bool_)
            return
        for code in np.unique(partitions).tolist():
            if code in self._graphs:
                yield self._graphs[code], partitions == code

    def add(
        self,
        rows: npt.NDArray[np.int64],
        partitions: npt.NDArray[np.int32],
        vectors: npt.NDArray[Any],
        version: int,
    ) -> None:
        """Add ``rows`` (their codes and vectors) to their projects' graphs, making the ones
        missing and copying a mapped one into memory first; each graph's first ``SEED_ROWS``
        on one thread."""
        for code in np.unique(partitions).tolist():
            which = partitions == code
            keys, added = rows[which].astype(np.uint64), vectors[which]
            graph = self._writable(code)
            seeded = max(0, SEED_ROWS - self._sizes[code])
            if seeded:
                graph.add(keys[:seeded], added[:seeded], threads=1)
            if seeded < len(keys):
                graph.add(keys[seeded:], added[seeded:], threads=0)
            self._sizes[code] += len(keys)
            self._versions[code] = version

    def stamp(self, version: int) -> None:
        """Every graph as changed at ``version`` (new graphs, swapped in)."""
        self._versions = dict.fromkeys(self._graphs, version)

    def _writable(self, code: int) -> Any:
        if code not in self._graphs:
            self._graphs[code], self._sizes[code] = new_graph(self.dimension, self.dtype), 0
        elif code in self._views:
            self._graphs[code] = writable_copy(self._graphs[code])
            self._views.discard(code)
        return self._graphs[code]

    # -- saving and restoring (adapters/vector_files.py) -----------------------------

    def state(self) -> dict[str, Any]:
        """What ``vector_files`` saves: each graph, its size and when it last changed."""
        return {
            "graphs": dict(self._graphs),
            "graph_sizes": dict(self._sizes),
            "graph_versions": dict(self._versions),
            "graph_dead": self.dead,
        }

    def restore(self, state: dict[str, Any], *, views: bool, version: int) -> None:
        """Take the graphs of ``state`` (as ``state`` gave them, read back by ``vector_files``),
        as changed at ``version``; read-only maps of their files if ``views``."""
        self._graphs = {int(code): graph for code, graph in state["graphs"].items()}
        self._sizes = {int(code): int(size) for code, size in state["graph_sizes"].items()}
        self._versions = dict.fromkeys(self._graphs, version)
        self._views = set(self._graphs) if views else set()
        self.dead = int(state["graph_dead"])
