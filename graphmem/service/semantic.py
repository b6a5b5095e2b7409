"""The semantic side of the store: embedding backlog and the in-process vector index.

Writes never wait for the model to load nor for the backlog. New memories are stored without a
vector; they are embedded in batches by the daemon's worker, or, with no daemon, by the first thing that
needs vectors (a recall embeds for at most ``EMBED_ON_READ_S``; ``graphmem status`` and
``reindex`` embed all); import embeds each batch before storing it. What a person or an
agent wrote is embedded before what was scraped (``added``), and no read waits for an
embedding under way: the model runs outside the index's lock (``_lock``), which is held
only to open the index and to add a batch's rows to it.

In a daemon, what a person, their session or their agent wrote is embedded by the write itself
once the model has loaded (``added``). With no daemon, a read embeds what they wrote through this
process also while reads pause on a backlog (``READ_PAUSE_S``): a memory without
a vector scores nothing on the semantic channel, so its near-duplicates that have one outranked
it, and a writer's recall right after its remember missed the memory it had just written (a
team store's backlog is every writer's memories, which one read's budget does not finish).
Those are few (one a remember), at most ``OWN_ON_READ_MAX`` a read.

The vector index is derived from the store's vectors. With ``files`` it is saved between
runs (at close, and by ``tidy`` when many changes are unsaved) and restored at the first
search instead of being read back from the store; the memories whose vector, status or
project changed since the save are read again from the store, and a save that disagrees
with the store is dropped and the index rebuilt from it.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager

import numpy as np

from graphmem.core.branches import place
from graphmem.core.models import MemoryRecord, Status
from graphmem.core.ports import (
    Embedder,
    GraphStore,
    StoreMeta,
    Vector,
    VectorIndex,
    VectorIndexFiles,
    VectorQuery,
)
from graphmem.core.provenance import Origin, origin_of
from graphmem.errors import GraphmemError

log = logging.getLogger(__name__)

# Memories embedded per model call and per store write.
EMBED_CHUNK = 256
# Queries kept in the query-embedding cache (repeated recalls of the same text).
QUERY_CACHE_SIZE = 256
# The store's meta key naming the saved vector index that belongs to it.
TOKEN_KEY = "vector_index_token"
# Changes journaled since the last save after which ``tidy`` saves again (reading them back
# from the store at open costs about a millisecond each).
SAVE_AFTER_CHANGES = 2_000
# More journaled changes than this at open: reading every vector back (3.8 s at 100,000 on a
# quiet machine) is cheaper than a lookup each (about a millisecond).
MAX_REPLAYED = 2_000
# With no daemon (``embed_on_read``), a read embeds the backlog for at most this long and
# answers with what has vectors: a store with 100,000 memories waiting answered only after
# minutes when a read embedded them all.
EMBED_ON_READ_S = 0.5
# After a read spent that budget, the reads of the next seconds embed nothing (the same recall's)
# but what this process wrote itself, at most this many a read.
READ_PAUSE_S = 2.0
OWN_ON_READ_MAX = EMBED_CHUNK // 8
# Whose memories are embedded first: the user's, their sessions' (and those sessions' summaries)
# and their agents' own, before what a bootstrap scraped or an import brought (those wait in
# write order).
EMBEDDED_FIRST = frozenset({Origin.PERSON, Origin.SESSION, Origin.SUMMARY, Origin.AGENT})


def record_model(store: StoreMeta, model: str, dimension: int) -> None:
    """Record ``model`` and its ``dimension`` as the store's embedding model, in one transaction:
    a team's daemon opening the store meanwhile (its first open, a reindex) saw the model
    without its dimension, and refused the store as embedded with another."""
    with store.transaction():
        store.set_meta("embedding_model", model)
        store.set_meta("embedding_dimension", str(dimension))


class SemanticIndex:
    """Embeds what is pending and answers cosine searches."""

    def __init__(
        self,
        store: GraphStore,
        embedder: Embedder,
        new_index: Callable[[int], VectorIndex],
        files: VectorIndexFiles | None = None,
        *,
        background: bool = False,
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._new_index = new_index
        self._files = files
        # A daemon's index (``background``): its worker embeds the backlog
        # (``embed_pending(limit=...)``), so that a recall never waits for a batch to embed...
        self.embed_on_read = not background
        # ...and loads the model: until then recall is lexical.
        self.ready = not background
        self._index: VectorIndex | None = None
        self._lock = threading.RLock()  # the index: opening it, adding rows; never held while embedding
        self._embedding = threading.Lock()  # one embedding run at a time
        self._query_cache: dict[str, Vector] = {}
        self._queries = threading.Lock()  # the query cache's evictions (a daemon's recalls run at once)
        self._maybe_pending = True  # something may be waiting for a vector
        self._writes = 0  # memories written since the start: a scan that found none stays right
        self._first: dict[str, None] = {}  # memories to embed before the store's backlog
        self._read_embeds_after = 0.0  # monotonic time before which a read embeds nothing

    @property
    def embedder(self) -> Embedder:
        return self._embedder

    @property
    def loaded(self) -> bool:
        return self._index is not None

    def index(self) -> VectorIndex:
        """The vector index, restored or loaded from the store on first use; with
        ``embed_on_read``, the backlog embedded for at most ``EMBED_ON_READ_S`` first. A read
        that spent it leaves the rest to the reads after ``READ_PAUSE_S`` (a recall opens the
        index several times: its budget is spent once), but for what this process wrote itself
        (see the module doc)."""
        index = self._opened()
        if not self.embed_on_read:
            return index
        if time.monotonic() >= self._read_embeds_after:
            self.embed_pending(budget_s=EMBED_ON_READ_S)
            if not self.complete:
                self._read_embeds_after = time.monotonic() + READ_PAUSE_S
        elif self._first:
            with self._embedding:
                self._embed(self._first_batch(OWN_ON_READ_MAX))
        return index

    def _opened(self) -> VectorIndex:
        """The vector index, restored or loaded from the store on first use."""
        with self._lock:
            if self._index is None:
                self._index = self._open_index()
            return self._index

    def _key(self) -> str:
        token = self._store.get_meta(TOKEN_KEY)
        if token is None:
            token = os.urandom(16).hex()
            self._store.set_meta(TOKEN_KEY, token)
        return f"{token}:{self._embedder.model_name}:{self._embedder.dimension}"

    def _open_index(self) -> VectorIndex:
        index = self._new_index(self._embedder.dimension)
        if index.in_store:  # the store's own index (pgvector): nothing to read back
            return index
        if self._files is not None:
            marked = self._files.restore(index, self._key())
            if marked is not None and len(marked) <= MAX_REPLAYED:
                self._read_again(index, marked)
                vectors = self._store.count_vectors()
                if len(index) == vectors:
                    # Every memory has its vector: no scan for one still waiting (a one-shot
                    # recall's first call would make one: 60 ms at 100,000 memories).
                    self._maybe_pending = vectors != self._store.total_memories()
                    return index
                log.warning("The saved vector index disagrees with the store: rebuilding it.")
            index = self._new_index(self._embedder.dimension)
        index.load(self._store.load_vectors())
        return index

    def _read_again(self, index: VectorIndex, ids: Sequence[str]) -> None:
        """Bring the rows of ``ids`` in line with the store (changed since the save)."""
        records = self._store.get_memories(ids)
        for memory_id in ids:
            record = records.get(memory_id)
            vector = self._store.embedding_of(memory_id) if record is not None else None
            if record is None or vector is None:
                index.remove(memory_id)
            else:
                index.add([memory_id], vector[None, :], [_place(record)], [record.status.value])

    def tidy(self) -> bool:
        """Background upkeep, off every caller's path (the daemon's worker when idle): build or
        merge the index's graph, and save the index when many changes are unsaved. Whether
        the graph changed (call again until it says no to finish the work)."""
        with self._lock:
            index = self._index
        if index is None:
            return False
        changed = index.tidy()
        if self._files is not None and (changed or self._files.unsaved >= SAVE_AFTER_CHANGES):
            self._files.save(index, self._key())
        return changed

    def close(self) -> None:
        """Stop any upkeep under way and save the index (when it changed) for the next run."""
        index = self._index
        if index is not None:
            index.interrupt()
        with self._lock:
            index, self._index = self._index, None
            if self._files is None:
                return
            try:
                if index is not None and (self._files.unsaved or index.changed):
                    self._files.save(index, self._key())
            finally:
                self._files.close()

    # -- marks: before the store changes a vector, a status or a project ------------------

    def will_change(self, ids: Iterable[str]) -> None:
        """The store is about to change the vector, status or project of ``ids``."""
        if self._files is not None:
            self._files.will_change(ids)

    def _applied(self, ids: Iterable[str]) -> None:
        if self._files is not None:
            self._files.applied(ids)

    @property
    def maybe_pending(self) -> bool:
        """False when every memory is known to have its vector."""
        return self._maybe_pending

    @property
    def complete(self) -> bool:
        """Every memory is known to have its vector: a semantic search sees them all."""
        return not self._maybe_pending

    def embed_pending(
        self,
        progress: Callable[[int], None] | None = None,
        *,
        limit: int | None = None,
        budget_s: float | None = None,
    ) -> int:
        """Embed memories still without a vector, people's first (at most ``limit``, and no
        new batch after ``budget_s`` seconds); returns how many."""
        done = 0
        started = time.monotonic()
        chunk_most = EMBED_CHUNK if budget_s is None else EMBED_CHUNK // 8  # a budget: small steps
        with self._embedding:
            while limit is None or done < limit:
                if not self._maybe_pending:
                    return done
                if budget_s is not None and done and time.monotonic() - started >= budget_s:
                    return done
                writes = self._writes
                size = chunk_most if limit is None else min(chunk_most, limit - done)
                batch, whole = self._next_batch(size)
                if batch:
                    self._embed(batch)
                    done += len(batch)
                    if progress is not None:
                        progress(len(batch))
                if whole and writes == self._writes:  # all that waited, and nothing written since
                    self._maybe_pending = False
                    return done
                if not batch:
                    return done
            return done

    def _embed(self, batch: Sequence[tuple[str, str]]) -> None:
        """Embed and store the vectors of ``batch`` (ids and texts), holding ``_embedding``."""
        if not batch:
            return
        ids = [memory_id for memory_id, _ in batch]
        vectors = self._embedder.embed([text for _, text in batch])  # no lock held
        self.will_change(ids)
        self._store.set_embeddings(ids, vectors)
        self.stored(ids, vectors)

    def _first_batch(self, size: int) -> list[tuple[str, str]]:
        """Up to ``size`` of the memories ``added`` as people's that still have no vector."""
        batch: list[tuple[str, str]] = []
        while self._first and len(batch) < size:
            wanted = list(self._first)[: size - len(batch)]
            records = self._store.get_memories(wanted)
            for memory_id in wanted:
                self._first.pop(memory_id, None)
                record = records.get(memory_id)
                if record is not None and not record.embedded:
                    batch.append((memory_id, record.text))
        return batch

    def _next_batch(self, size: int) -> tuple[list[tuple[str, str]], bool]:
        """Up to ``size`` memories to embed: those ``added`` as people's first, then the store's
        backlog in write order; and whether they are the whole backlog. A backlog shorter than
        ``size`` is the whole of it, people's memories among it: their records are not read on
        their own, nor the backlog again after the batch (each a round trip on a database store,
        in the recall after a remember)."""
        first = list(self._first)
        more = self._store.pending_embeddings(size)
        if len(more) < size:
            for memory_id in first:  # embedded in this batch, or by then no longer waiting
                self._first.pop(memory_id, None)
            return more, True
        batch = self._first_batch(size)
        taken = {memory_id for memory_id, _ in batch}
        batch += [(i, text) for i, text in more if i not in taken][: size - len(batch)]
        return batch, False

    def embed_query(self, text: str) -> Vector:
        cached = self._query_cache.get(text)
        if cached is None:
            cached = self._embedder.embed_query(text)  # outside the lock: recalls embed at once
            with self._queries:
                while len(self._query_cache) >= QUERY_CACHE_SIZE:
                    self._query_cache.pop(next(iter(self._query_cache)))
                self._query_cache[text] = cached
        return cached

    def forget_queries(self) -> None:
        """Drop cached query vectors (benchmarks time each recall's own embedding)."""
        with self._queries:
            self._query_cache.clear()

    def embed_texts(self, texts: list[str]) -> Vector:
        return self._embedder.embed(texts)

    def search(self, query: VectorQuery) -> list[tuple[str, float]]:
        """The nearest memories ``query`` shows, best first (``VectorIndex.search``)."""
        return self.index().search(query)

    def bulk_load(self, rows: int) -> AbstractContextManager[None]:
        """The block stores ``rows`` memories with their vectors (an import): the index may put
        its upkeep off till the block ends (``VectorIndex.bulk_load``). Asked of a new index
        object when none is open: opening one may read every vector, and the answer does not
        depend on them."""
        with self._lock:
            index = self._index
        return (index or self._new_index(self._embedder.dimension)).bulk_load(rows)

    def similarities(self, query: Vector, ids: list[str]) -> dict[str, float]:
        return self.index().similarities(query, ids)

    def vector(self, memory_id: str) -> Vector | None:
        if self._index is not None:
            found = self._index.vector(memory_id)
            if found is not None:
                return np.asarray(found)
        return self._store.embedding_of(memory_id)

    # -- keeping the index in step with writes (each after ``will_change``) ----------

    def stored(self, ids: Sequence[str], vectors: Vector) -> None:
        """The store now holds ``vectors`` for ``ids`` (embedded here, or by an import)."""
        with self._lock:
            if self._index is not None and not self._index.in_store:  # the store's own index has them
                records = self._store.get_memories(ids)
                kept = [(row, records[i]) for row, i in enumerate(ids) if i in records]
                self._index.add(
                    [record.id for _, record in kept],
                    vectors[[row for row, _ in kept]],
                    [_place(record) for _, record in kept],
                    [record.status.value for _, record in kept],
                )
        self._applied(ids)

    def text_changed(self, memory_id: str) -> None:
        """The memory's text changed (an edit): its vector is stale until re-embedded, first."""
        if self._index is not None:
            self._index.remove(memory_id)
        self._first[memory_id] = None
        self._writes += 1
        self._maybe_pending = True
        self._applied([memory_id])

    def added(self, ids: Sequence[str] = (), *, source: str | None = None) -> None:
        """Memories were stored without a vector; those of ``source`` are embedded before the
        rest when a person, their session or their agent wrote them (``EMBEDDED_FIRST``). In a
        daemon whose model has loaded, those are embedded here, before the write answers (a few
        milliseconds): no read embeds there, and the next recall must find them by meaning."""
        first = source is not None and origin_of(source) in EMBEDDED_FIRST
        if first:
            self._first.update(dict.fromkeys(ids))
        self._writes += 1
        self._maybe_pending = True
        if first and self.ready and not self.embed_on_read:
            self._embed_own()

    def _embed_own(self) -> None:
        """Embed what people added (``_first``) now; a failure leaves them to the worker's next
        step (the memory is stored: its write does not fail for its vector)."""
        try:
            with self._embedding:
                self._embed(self._first_batch(OWN_ON_READ_MAX))
        except (GraphmemError, OSError) as exc:
            log.warning("A memory just written waits for the background worker's vector: %s", exc)

    def status_changed(self, memory_id: str, status: Status) -> None:
        if self._index is not None:
            self._index.set_status(memory_id, status.value)
        self._applied([memory_id])

    def moved(self, memory_id: str) -> None:
        """The memory's branch changed (its MR merged): its row follows it."""
        with self._lock:
            if self._index is not None:
                self._read_again(self._index, [memory_id])
        self._applied([memory_id])

    def removed(self, memory_id: str) -> None:
        if self._index is not None:
            self._index.remove(memory_id)
        self._applied([memory_id])

    def reset(self) -> None:
        """Forget the index and its save (after ``reindex`` cleared every vector)."""
        with self._lock:
            self._index = None
            if self._files is not None:
                self._files.discard()
            self.forget_queries()
            self._first.clear()
            self._maybe_pending = True


def _place(record: MemoryRecord) -> str | None:
    return place(record.project, record.branch)
