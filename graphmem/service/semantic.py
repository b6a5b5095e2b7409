"""The semantic side of the store: embedding backlog and the in-process vector index.

Writes never wait for the model. New memories are stored without a vector; they
are embedded in batches by the first thing that needs vectors (a recall,
``graphmem status``, ``reindex``); import embeds each batch before storing it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import numpy as np

from graphmem.adapters.vector_index import NumpyVectorIndex
from graphmem.core.models import Status
from graphmem.core.ports import Embedder, GraphStore, Vector

log = logging.getLogger(__name__)

# Memories embedded per model call and per store write.
EMBED_CHUNK = 256
# Queries kept in the query-embedding cache (repeated recalls of the same text).
QUERY_CACHE_SIZE = 256


class SemanticIndex:
    """Embeds what is pending and answers cosine searches."""

    def __init__(self, store: GraphStore, embedder: Embedder) -> None:
        self._store = store
        self._embedder = embedder
        # A daemon embeds the backlog in the background (``embed_pending(limit=...)``)
        # and turns this off, so that a recall never waits for a batch to embed.
        self.embed_on_read = True
        # False while a daemon loads the model in the background: recall is then lexical.
        self.ready = True
        self._index: NumpyVectorIndex | None = None
        self._lock = threading.RLock()
        self._query_cache: dict[str, Vector] = {}
        self._maybe_pending = True  # something may be waiting for a vector

    @property
    def embedder(self) -> Embedder:
        return self._embedder

    @property
    def loaded(self) -> bool:
        return self._index is not None

    def index(self) -> NumpyVectorIndex:
        """The vector index, loaded from the store on first use, backlog embedded."""
        with self._lock:
            if self._index is None:
                index = NumpyVectorIndex(self._embedder.dimension)
                index.load(self._store.load_vectors())
                self._index = index
            if self.embed_on_read:
                self.embed_pending()
            return self._index

    @property
    def maybe_pending(self) -> bool:
        """False when every memory is known to have its vector."""
        return self._maybe_pending

    def embed_pending(
        self, progress: Callable[[int], None] | None = None, *, limit: int | None = None
    ) -> int:
        """Embed memories still without a vector (at most ``limit``); returns how many."""
        done = 0
        with self._lock:
            if not self._maybe_pending:
                return 0
            while limit is None or done < limit:
                chunk = EMBED_CHUNK if limit is None else min(EMBED_CHUNK, limit - done)
                batch = self._store.pending_embeddings(chunk)
                if not batch:
                    self._maybe_pending = False
                    return done
                ids = [memory_id for memory_id, _ in batch]
                vectors = self._embedder.embed([text for _, text in batch])
                self._store.set_embeddings(ids, vectors)
                if self._index is not None:
                    records = self._store.get_memories(ids)
                    kept = [i for i in ids if i in records]
                    rows = [ids.index(i) for i in kept]
                    self._index.add(
                        kept,
                        vectors[rows],
                        [records[i].project for i in kept],
                        [records[i].status.value for i in kept],
                    )
                done += len(batch)
                if progress is not None:
                    progress(len(batch))
            return done

    def embed_query(self, text: str) -> Vector:
        cached = self._query_cache.get(text)
        if cached is None:
            cached = self._embedder.embed([text])[0]
            if len(self._query_cache) >= QUERY_CACHE_SIZE:
                self._query_cache.pop(next(iter(self._query_cache)))
            self._query_cache[text] = cached
        return cached

    def forget_queries(self) -> None:
        """Drop cached query vectors (benchmarks time each recall's own embedding)."""
        self._query_cache.clear()

    def embed_texts(self, texts: list[str]) -> Vector:
        return self._embedder.embed(texts)

    def search(
        self, query: Vector, k: int, *, project: str | None, statuses: frozenset[Status]
    ) -> list[tuple[str, float]]:
        return self.index().search(query, k, project=project, statuses={s.value for s in statuses})

    def similarities(self, query: Vector, ids: list[str]) -> dict[str, float]:
        return self.index().similarities(query, ids)

    def vector(self, memory_id: str) -> Vector | None:
        if self._index is not None:
            found = self._index.vector(memory_id)
            if found is not None:
                return np.asarray(found)
        return self._store.embedding_of(memory_id)

    # -- keeping the index in step with writes ----------------------------------

    def text_changed(self, memory_id: str) -> None:
        """The memory's text changed: its vector is stale until re-embedded."""
        if self._index is not None:
            self._index.remove(memory_id)
        self._maybe_pending = True

    def added(self) -> None:
        self._maybe_pending = True

    def status_changed(self, memory_id: str, status: Status) -> None:
        if self._index is not None:
            self._index.set_status(memory_id, status.value)

    def removed(self, memory_id: str) -> None:
        if self._index is not None:
            self._index.remove(memory_id)

    def reset(self) -> None:
        """Forget the loaded index (after reindex)."""
        with self._lock:
            self._index = None
            self._query_cache.clear()
            self._maybe_pending = True
