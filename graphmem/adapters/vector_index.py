"""The in-process vector index over the stored embeddings: exact while small, HNSW when large.

Below ``HNSW_FROM_ROWS`` vectors every search is an exact scan (numpy, float32). Above it
HNSW graphs (usearch), one per project and one of the global memories (``vector_graphs.py``),
answer in about a millisecond (an exact scan of 100,000: 17-85 ms); a search reads those of
the projects it sees. They are built off the caller's path (``tidy``: the daemon's idle
worker, a benchmark); vectors added since wait in a small exact *tail*, searched beside
them, until the next ``tidy`` merges them.

Given the store's exact vectors (``exact``: the Kùzu store reads a search's from
``graph.vectors`` in one call), the graph keeps 8-bit vectors (``i8``) and only navigates:
the candidates it returns (1.5 times what is asked) are scored again exactly before the top
``k`` is taken, so every cosine a search or ``similarities`` gives is the float32 one and the
graph never gives a row's vector back (``graph_lookups``). At a million memories it is half
the half-precision graph (a file mapped into the serving process: all of it resident after a
few recalls). Without ``exact`` (the tests' plain index) the graph keeps half-precision
vectors and scores with them. A graph of the other kind (a save from before) is searched as
it is and built again by the next ``tidy``.

Loaded from a store that reads its vectors when asked (``VectorRows``), a large index keeps
them there until its graph is built (``load``): no float32 copy of every vector (1.5 GB a
million). Rows are numbered in the order vectors arrive and never renumbered: a row whose memory is
deleted, or whose text changed, is dead and filtered out (``vector_ids.py`` owns which memory
each row is). Project and status filters apply to both parts; a graph is asked for more
than ``k`` when filters hide part of it, and an exact scan of its visible rows takes over
when they are few. ``rebuild`` (``tidy``, when a quarter of the graphs is dead) drops them.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

import numpy as np
import numpy.typing as npt

from graphmem.adapters.hnsw_graph import COARSE, FINE, MIN_EXPANSION_SEARCH, graph_scores, graph_vectors
from graphmem.adapters.process_memory import release_after
from graphmem.adapters.row_visibility import RowVisibility, best_shown, grown
from graphmem.adapters.vector_graphs import ProjectGraphs
from graphmem.adapters.vector_ids import RowIds
from graphmem.adapters.vector_tail import ExactTail
from graphmem.core.ports import StoredVectors, Vector, VectorQuery, VectorRows

# Below this many live vectors the exact scan is fast enough (about 3 ms at 20,000) and
# exact: no graph is built. LoCoMo's stores and the tests stay exact.
HNSW_FROM_ROWS = 20_000
# Vectors waiting in the exact tail before ``tidy`` merges them into the graph.
MERGE_AT_ROWS = 2_048
# Vectors added to the graph per lock hold during a merge (a recall waits at most this long).
MERGE_CHUNK_ROWS = 512
# Vectors added to a new graph between checks for ``interrupt`` (a closing daemon waits at
# most this long for a build under way), read from the tail a chunk at a time.
BUILD_CHUNK_ROWS = 4_096
# The graph is rebuilt without its dead rows once they are this share of it.
DEAD_SHARE_REBUILD = 0.25
# When a graph's visible rows are this few, and it would be asked for all of them, they are
# scored exactly instead.
EXACT_VISIBLE_ROWS = 4_096
# With the exact vectors at hand, the graph's vectors are 8-bit and it returns this many
# times the candidates asked for, scored again exactly (within the same exploration). On
# 9,984 MiniLM vectors of developer notes, agreement with the exact top 10 / 50 / 100 was
# 0.948 / 0.959 / 0.966 at 1, 0.9965 / 0.9944 / 0.9971 at 1.5 and 0.999 / 0.9944 / 0.9971
# at 2; half precision, 0.994 / 0.993 / 0.9964.
RESCORED = 1.5
# The store's exact vectors of memory ids: a row each, and which have one (``exact``).
ExactVectors = Callable[[Sequence[str]], tuple[Vector, npt.NDArray[np.bool_]]]


class HnswVectorIndex:
    """Cosine top-k over L2-normalised vectors, filtered by project and status."""

    in_store = False  # derived from the store's vectors

    def __init__(self, dimension: int, exact: ExactVectors | None = None) -> None:
        self.dimension = dimension
        # The store's exact vectors of memory ids (``ExactVectors``); given, the graph is
        # 8-bit and its candidates are scored again with these.
        self._exact = exact
        self._dtype = COARSE if exact is not None else FINE
        self._lock = threading.RLock()
        self._build_lock = threading.Lock()  # one build or merge at a time
        self._interrupted = threading.Event()
        # Per row, in arrival order.
        self._rows = 0  # rows so far, dead ones included
        self._numbering = 0  # bumped when the rows are numbered anew (``load``, ``restore``)
        self._memories = RowIds()  # which memory each row is, and each live memory's row
        self._visibility = RowVisibility()  # each row's project and status, what a search shows
        # The graphs, one per project (usearch keys are rows), and which rows they hold.
        self._graphs = ProjectGraphs(dimension, self._dtype)
        self._in_graph = np.zeros(0, np.bool_)
        # The exact tail: vectors of the rows not in the graph, and where each row's vector is.
        self._tail = ExactTail(dimension)
        # The store's rows ``load`` was given, read from it (IN_STORE rows: row i is its row i)
        # until the graph holds them: not a float32 copy of every vector (1.5 GB a million).
        self._stored: VectorRows | None = None
        self.graph_version = 0  # bumped whenever the graph changes (``vector_files`` saves it then)
        self.changed = False  # since the last save (``vector_files``)
        # This thread's last search: (query, graph_version, rows list, {row: cosine}). A
        # recall asks ``similarities`` of the same query next, and its vector search has
        # already scored about half of the candidates (0.7 ms at 100,000 memories).
        self._searched = threading.local()

    # -- size -------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._memories)

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._memories

    @property
    def graph_lookups(self) -> bool:
        """Whether the graph gives rows' vectors back: only without ``exact``. With it, it only
        navigates, and a saved one is mapped without its table of keys (``vector_files``)."""
        return self._exact is None

    @property
    def graph_size(self) -> int:
        """Vectors searched through the HNSW graph (the rest are scanned exactly)."""
        return len(self._memories) - self._tail_live()

    def _tail_live(self) -> int:
        """Live rows outside the graph: in the tail, or still in the store."""
        live = int(np.count_nonzero(self._visibility.live(self._tail.rows)))
        return live + len(self._stored_rows(live_only=True))

    def _stored_rows(self, *, live_only: bool = False) -> npt.NDArray[np.int64]:
        """The rows read from the store (``IN_STORE``), live ones only if asked."""
        if self._stored is None:
            return np.zeros(0, np.int64)
        rows = self._tail.stored_rows(self._stored.shape[0])
        return rows[self._visibility.live(rows)] if live_only else rows

    # -- writes -----------------------------------------------------------------

    def load(self, stored: StoredVectors) -> None:
        """Replace the contents with ``stored``, searched exactly until ``tidy`` builds the
        graph. Rows the store reads when asked (``VectorRows``, the Kùzu store's) stay there
        when they are ``HNSW_FROM_ROWS`` or more: the build reads them a chunk at a time, and
        no float32 copy of every vector is made (1.5 GB a million); fewer are read into the
        tail. A matrix becomes the tail when it is a float32 array of its own: not a second
        copy of every vector."""
        n = len(stored.ids)
        matrix = stored.matrix
        if not isinstance(matrix, np.ndarray) and n < HNSW_FROM_ROWS:
            matrix = matrix.take(np.arange(n, dtype=np.int64))  # scanned exactly for good: kept in memory
        with self._lock:
            self._reset()
            self._grow_rows(n)
            if not isinstance(matrix, np.ndarray):
                self._stored = matrix
                self._tail.from_store(n)
            else:
                self._tail.load(matrix, n)
            self._visibility.assign(stored.projects, stored.statuses)
            self._memories.load(stored.ids)
            self._rows, self.changed = n, True

    def _reset(self) -> None:
        self._rows, self._memories = 0, RowIds()
        self._numbering += 1
        self._visibility = RowVisibility()
        self._in_graph = np.zeros(0, np.bool_)
        self._graphs = ProjectGraphs(self.dimension, self._dtype)
        self._tail = ExactTail(self.dimension)
        self._stored = None

    def add(
        self, ids: Sequence[str], vectors: Vector, projects: Sequence[str | None], statuses: Sequence[str]
    ) -> None:
        """Insert or replace rows (a replaced vector gets a new row in the tail)."""
        with self._lock:
            self._grow_rows(self._rows + len(ids), max(len(m.encode("utf-8")) for m in ids) if ids else 1)
            self._tail.grow(len(self._tail) + len(ids))
            for memory_id, vector, project, status in zip(ids, vectors, projects, statuses, strict=True):
                row = self._memories.row(memory_id)
                # Still in the tail, and no build reads it outside the lock: replace it in place.
                if row is not None and self._tail.holds(row) and not self._build_lock.locked():
                    self._tail.replace(row, vector)
                else:
                    if row is not None:
                        self._kill(row)
                    row = self._rows
                    self._rows += 1
                    self._memories.set(memory_id, row)
                    self._tail.append(row, vector)
                self._visibility.set(row, project, status)
            self.changed = True

    def _grow_rows(self, size: int, width: int = 1) -> None:
        capacity = len(self._in_graph)
        if size > capacity:
            capacity = max(size, 1024, capacity * 2)
            self._visibility.grow(capacity)
            self._in_graph = grown(self._in_graph, capacity, False)
            self._tail.grow_rows(capacity)
        self._memories.grow(capacity, width)

    def _kill(self, row: int) -> None:
        self._visibility.kill(row)
        if self._in_graph[row]:
            self._graphs.dead += 1

    def set_status(self, memory_id: str, status: str) -> None:
        with self._lock:
            row = self._memories.row(memory_id)
            if row is not None:
                self._visibility.set_status(row, status)
                self.changed = True

    def remove(self, memory_id: str) -> None:
        with self._lock:
            row = self._memories.pop(memory_id)
            if row is not None:
                self._kill(row)
                self.changed = True

    # -- reads ------------------------------------------------------------------

    def vector(self, memory_id: str) -> Vector | None:
        with self._lock:
            row = self._memories.row(memory_id)
            if row is None:
                return None
            vector: Vector = self._vectors([row])[0]
            in_graph = bool(self._tail.in_graph([row])[0])
        if in_graph and self._exact is not None:  # read outside the lock: the store takes its own
            exact, found = self._exact([memory_id])
            return np.asarray(exact[0], np.float32) if found[0] else None
        return vector

    def _cosines(self, rows: Sequence[int], query: Vector) -> npt.NDArray[np.float32]:
        """The cosine of ``query`` with the vector of each of ``rows``, as the searches score
        them: the graph's rows as the graph itself scores them (``hnsw_graph.graph_scores``), the
        tail's and the store's against the query as it is. With the exact vectors, the graph's
        rows are NaN here: the caller scores them exactly, outside the lock (``_rescored``)."""
        numbers = np.asarray(rows, np.int64)
        sims = np.zeros(len(numbers), np.float32)
        if not len(numbers):
            return sims
        in_graph = self._tail.in_graph(numbers)
        if not in_graph.all():
            sims[~in_graph] = self._vectors(numbers[~in_graph]) @ np.asarray(query, np.float32)
        if in_graph.any():
            lookups = self.graph_lookups
            sims[in_graph] = self._from_graphs(numbers[in_graph], graph_scores, query) if lookups else np.nan
        return sims

    def _from_graphs(self, rows: npt.NDArray[np.int64], read: Callable[..., Any], *args: Any) -> Any:
        """``read(graph, keys, *args)`` of each graph holding some of ``rows``, put together in
        their order: a row's score or vector as its graph gives it."""
        out: Any = None
        for graph, which in self._graphs.holding(self._visibility.partitions(rows)):
            part = np.asarray(read(graph, rows[which].astype(np.uint64), *args))
            if out is None:
                out = np.zeros((len(rows), *part.shape[1:]), part.dtype)
            out[which] = part
        return out

    def _vectors(self, rows: Sequence[int] | npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        """The vectors of ``rows`` (live or dead), float32, in order; the graph's left zero
        without ``graph_lookups`` (the caller reads them from ``exact``)."""
        out = np.zeros((len(rows), self.dimension), np.float32)
        if not len(rows):
            return out
        numbers = np.asarray(rows, np.int64)
        in_store, in_graph = self._tail.read(numbers, out)  # the tail's rows written to ``out``
        if self._stored is not None and in_store.any():
            out[in_store] = self._stored.take(numbers[in_store])
        if in_graph.any() and self.graph_lookups:
            out[in_graph] = self._from_graphs(numbers[in_graph], graph_vectors)
        return out

    def similarities(self, query: Vector, ids: Collection[str]) -> dict[str, float]:
        """Cosine of ``query`` with each of ``ids`` that has a vector."""
        vector = np.asarray(query, np.float32)
        with self._lock:
            known = self._known_cosines(query)
            asked = list(ids)
            found = self._memories.rows(asked).tolist()
            pairs = [(memory_id, row) for memory_id, row in zip(asked, found, strict=True) if row >= 0]
            todo = [row for _, row in pairs if row not in known]
            sims = dict(zip(todo, self._cosines(todo, vector).tolist(), strict=True))
            in_graph = self._tail.in_graph(list(sims)).tolist()
            coarse = [(row, sim) for (row, sim), held in zip(sims.items(), in_graph, strict=True) if held]
            ids_of = {row: self._memories.id(row) for row, _ in coarse} if self._exact is not None else {}
        sims.update(self._rescored(coarse, ids_of, vector))
        found = {memory_id: known.get(row, sims.get(row, math.nan)) for memory_id, row in pairs}
        return {memory_id: sim for memory_id, sim in found.items() if not math.isnan(sim)}

    def _known_cosines(self, query: Vector) -> dict[int, float]:
        """This thread's last search's cosines by row, when it asked ``query`` and no row
        has moved since (a merge or build bumps ``graph_version``; ``load`` and ``restore``
        number the rows anew)."""
        last = getattr(self._searched, "last", None)
        if last is None:
            return {}
        asked, version, numbering, cosines = last
        fresh = asked is query and version == self.graph_version and numbering == self._numbering
        return cosines if fresh else {}

    def search(self, query: VectorQuery) -> list[tuple[str, float]]:
        """Top ``query.k`` rows ``query`` shows, by cosine (``VectorQuery``)."""
        k = query.k
        vector = np.asarray(query.vector, np.float32)
        with self._lock:
            n = self._rows
            if n == 0 or k <= 0:
                return []
            visible = self._visibility.visible(n, query)
            found = self._search_tail(vector, k, visible)
            partitions = self._visibility.partitions_of(query)
            coarse = self._search_graphs(vector, k, visible, partitions) if self._graphs else []
            rows = [row for row, _ in (*found, *coarse)]
            ids = dict(zip(rows, self._memories.ids(rows), strict=True))
            moved = (self.graph_version, self._numbering)
        found += self._rescored(coarse, ids, vector)  # outside the lock: the store takes its own
        found.sort(key=lambda pair: -pair[1])
        self._searched.last = (query.vector, *moved, dict(found))
        return [(ids[row], sim) for row, sim in found[:k]]

    def _rescored(
        self, found: list[tuple[int, float]], ids: dict[int, str], query: Vector
    ) -> list[tuple[int, float]]:
        """``found`` (graph rows, with the graph's scores) scored with the store's exact
        vectors (``exact``); a row whose memory has none there keeps the graph's score, or is
        left out when the graph gave none (NaN: ``_cosines``). Not under the lock: ``exact``
        takes the store's."""
        if self._exact is None or not found:
            return found
        vectors, have = self._exact([ids[row] for row, _ in found])
        sims = (np.asarray(vectors, np.float32) @ query).tolist()
        scored = [(row, sims[i] if have[i] else sim) for i, (row, sim) in enumerate(found)]
        return [(row, sim) for row, sim in scored if not math.isnan(sim)]

    def _search_tail(self, query: Vector, k: int, visible: npt.NDArray[np.bool_]) -> list[tuple[int, float]]:
        """The best ``k`` visible rows outside the graph, scanned exactly: the tail, and the
        rows still in the store, scored where the store keeps them (``VectorRows.scores``)."""
        found = self._tail.best(query, k, visible)
        if self._stored is not None:
            stored = self._stored_rows()
            stored = stored[visible[stored]]
            found += best_shown(stored, self._stored.scores(stored, query), k)
            found.sort(key=lambda pair: -pair[1])
        return found[:k]

    def _search_graphs(
        self, query: Vector, k: int, visible: npt.NDArray[np.bool_], partitions: list[int]
    ) -> list[tuple[int, float]]:
        """The best visible rows of the graphs of ``partitions`` (``vector_graphs.py``), with
        their scores: ``k`` of each, or ``RESCORED`` times that when ``_rescored`` scores them
        again exactly."""
        shown = visible & self._in_graph[: len(visible)]
        searched = self._graphs.searched(partitions)
        codes = self._visibility.partitions(slice(0, len(visible))) if len(searched) > 1 else None
        found: list[tuple[int, float]] = []
        for code, graph, size in searched:  # a graph holds the shown rows of its project only
            mine = shown if codes is None else shown & (codes == code)
            found += self._search_graph(graph, size, query, k, mine)
        return found

    def _search_graph(
        self, graph: Any, size: int, query: Vector, k: int, shown: npt.NDArray[np.bool_]
    ) -> list[tuple[int, float]]:
        """The best ``shown`` rows of ``graph`` (of ``size`` rows) for ``_search_graphs``."""
        visible = int(np.count_nonzero(shown))
        if visible == 0:
            return []
        more = RESCORED if self._exact is not None else 1.0
        top = math.ceil(k * more)
        # Filters hide part of the graph: ask for enough that ``k`` shown ones come back.
        want = min(size, math.ceil(k * size / visible * 1.2) + 8)
        if visible <= EXACT_VISIBLE_ROWS and want >= visible:  # it would be asked for all of them
            rows = np.flatnonzero(shown)
            if not self.graph_lookups:  # every one scored exactly by ``_rescored``, the best k kept
                return [(row, math.nan) for row in rows.tolist()]
            return best_shown(rows, self._cosines(rows.tolist(), query), top)
        while True:
            graph.expansion_search = max(MIN_EXPANSION_SEARCH, 2 * want)
            matches = graph.search(query, min(size, math.ceil(want * more)), threads=1)
            keys = np.asarray(matches.keys, np.int64)
            sims = 1.0 - np.asarray(matches.distances, np.float32)
            kept = shown[keys]
            if int(np.count_nonzero(kept)) >= min(k, visible) or want >= size:
                return list(zip(keys[kept][:top].tolist(), sims[kept][:top].tolist(), strict=True))
            want = min(size, want * 4)

    # -- the graph ----------------------------------------------------------------

    def tidy(self) -> bool:
        """Build the graph, merge the tail into it, or rebuild it without its dead rows,
        whichever is due; returns whether anything was done. Runs off the caller's path
        (the daemon's background worker); searches go on meanwhile."""
        with self._build_lock:
            with self._lock:
                live = len(self._memories)
                if not self._graphs:
                    due = "build" if live >= HNSW_FROM_ROWS or self._stored is not None else ""
                elif self._graphs.dead > DEAD_SHARE_REBUILD * self._graphs.rows or self._graphs.stale:
                    due = "build"
                else:
                    due = "merge" if self._tail_live() >= MERGE_AT_ROWS else ""
            if due == "build":
                return self._build()
            if due == "merge":
                self._merge()
            return bool(due)

    def bulk_load(self, rows: int) -> AbstractContextManager[None]:
        """Nothing to put off: new rows wait in the exact tail, the graph is ``tidy``'s."""
        return nullcontext()

    def interrupt(self) -> None:
        """Stop a build or merge under way, leaving the index as it was (closing)."""
        self._interrupted.set()

    def _build(self) -> bool:
        """New graphs of every live row, built outside the lock, then swapped in; False
        when ``interrupt`` stopped it."""
        with self._lock:  # a project's rows together: a chunk adds to one graph or two
            every = np.sort(self._memories.live())
            every = every[np.argsort(self._visibility.partitions(every), kind="stable")]
        graphs = ProjectGraphs(self.dimension, self._dtype)
        added, gone = [], []
        for start in range(0, len(every), BUILD_CHUNK_ROWS):
            if self._interrupted.is_set():
                return False
            chunk, partitions, vectors, missing = self._build_chunk(every[start : start + BUILD_CHUNK_ROWS])
            graphs.add(chunk, partitions, vectors, version=0)
            added.append(chunk)
            gone += missing
        rows = np.concatenate(added) if added else every
        with self._lock:
            self.graph_version += 1
            graphs.stamp(self.graph_version)
            graphs.dead = int(np.count_nonzero(~self._visibility.live(rows)))  # died meanwhile
            self._graphs = graphs
            self._in_graph[:] = False
            self._in_graph[rows] = True
            self._tail.drop(rows.tolist())
            self._tail.to_graph(self._stored_rows())  # every live one is in the graphs now, the rest dead
            self._stored = None
            self.changed = True
        for memory_id in gone:  # the store has no vector for them any more
            self.remove(memory_id)
        release_after(len(rows))  # what a large build freed (process_memory.py)
        return True

    def _build_chunk(
        self, chunk: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], Vector, list[str]]:
        """The rows of ``chunk`` the new graphs take, their projects' codes and vectors (from the
        tail or the store: no copy of them all; read in one hold of the lock), and the memories
        left out: the rows of a graph built before are read from ``exact`` (outside the lock),
        and left out when their memory has none there."""
        with self._lock:
            partitions = self._visibility.partitions(chunk)
            vectors = self._vectors(chunk)
            again = self._tail.in_graph(chunk) & (not self.graph_lookups)
            ids = self._memories.ids(chunk[again])
        if self._exact is None or not ids:
            return chunk, partitions, vectors, []
        exact, have = self._exact(ids)
        vectors[again] = exact
        kept = np.ones(len(chunk), np.bool_)
        kept[np.flatnonzero(again)[~have]] = False
        return (
            chunk[kept],
            partitions[kept],
            vectors[kept],
            [memory_id for memory_id, has in zip(ids, have, strict=True) if not has],
        )

    def _merge(self) -> None:
        """Move the tail's live rows into the graph, a chunk per lock hold."""
        while not self._interrupted.is_set():
            with self._lock:
                tail_rows = self._tail.rows
                rows = tail_rows[self._visibility.live(tail_rows)][:MERGE_CHUNK_ROWS]
                if not len(rows):
                    self._tail.drop(tail_rows.tolist())
                    return
                self.graph_version += 1
                partitions = self._visibility.partitions(rows)
                self._graphs.add(rows, partitions, self._vectors(rows), self.graph_version)
                self._in_graph[rows] = True
                self._tail.drop(rows.tolist())
                self.changed = True

    # -- saving and restoring (adapters/vector_files.py) -----------------------------

    @contextmanager
    def graph_frozen(self) -> Iterator[None]:
        """No build or merge changes the graphs meanwhile (searches go on): for saving them."""
        with self._build_lock:
            yield

    def state(self) -> dict[str, Any]:
        """What ``vector_files`` saves: rows, codes, the tail and the graphs. Live rows still in
        the store (no build has finished since ``load``) are saved in the tail."""
        with self._lock:
            n = self._rows
            tail, tail_rows = self._tail.state()
            stored = self._stored_rows(live_only=True)
            if len(stored) and self._stored is not None:
                tail = np.concatenate([tail, self._stored.take(stored)])
                tail_rows = np.concatenate([tail_rows, stored])
            return {
                **self._memories.state(n),
                **self._visibility.state(n),
                "in_graph": self._in_graph[:n].copy(),
                **self._graphs.state(),
                "tail": tail,
                "tail_rows": tail_rows,
            }

    def restore(self, state: dict[str, Any], *, graph_is_view: bool) -> None:
        """Take ``state`` (as ``state`` gave it, read back by ``vector_files``)."""
        with self._lock:
            self._reset()
            self._rows = n = len(state["ids"])
            self._grow_rows(n)
            self._memories.restore(state)
            self._visibility.restore(state)
            self._in_graph[:n] = state["in_graph"]
            self._graphs.restore(state, views=graph_is_view, version=self.graph_version)
            self._tail.restore(state["tail"], state["tail_rows"])
            self.changed = False
