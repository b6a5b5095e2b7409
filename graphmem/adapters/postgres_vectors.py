"""The ``VectorIndex`` port over pgvector: recall's semantic channel asks PostgreSQL itself.

The embedded store keeps an HNSW graph in the process (``vector_index.py``), derived from its
vectors and kept in step with its own writes: right for one process, wrong for a shared
database, since it would never see another daemon's memories. Here the index *is* the
database's (``memories.embedding``, pgvector's HNSW index for cosine distance): searching
asks it, and the changes the service reports (``add``, ``remove``, ``set_status``) are
already in the rows the store wrote, so they do nothing. Nothing is saved between runs.

A recall reads the cosines of the full-text search's hits with them (``search_text_near``,
``postgres_text.py``) on that search's thread while its own thread searches the vectors
(``service/recall.py``: two statements at once, each on its own connection), then the cosines
of every candidate: the vector search's hits among them are answered from the search the same
thread just made with the same query vector, and only the others (those the entity channel
alone found) are asked then.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager

from graphmem.adapters.postgres_store import PostgresGraphStore
from graphmem.core.ports import StoredVectors, Vector, VectorQuery


class PgVectorIndex:
    """Cosine top-k of memory vectors, filtered by project and status, asked of PostgreSQL."""

    changed = False  # nothing to save: the database holds it
    in_store = True

    def __init__(self, store: PostgresGraphStore, dimension: int) -> None:
        self._store = store
        self.dimension = dimension
        self._searched = threading.local()  # this thread's last search: (query, {id: cosine})

    def __len__(self) -> int:
        return self._store.count_vectors()

    def __contains__(self, memory_id: object) -> bool:
        return isinstance(memory_id, str) and self._store.embedding_of(memory_id) is not None

    def load(self, stored: StoredVectors) -> None:
        """Nothing to load: the vectors are searched where they are."""

    def add(
        self, ids: Sequence[str], vectors: Vector, projects: Sequence[str | None], statuses: Sequence[str]
    ) -> None:
        """The store wrote them already."""

    def set_status(self, memory_id: str, status: str) -> None:
        """The store changed the row already."""

    def remove(self, memory_id: str) -> None:
        """The store changed the row already."""

    def vector(self, memory_id: str) -> Vector | None:
        return self._store.embedding_of(memory_id)

    def similarities(self, query: Vector, ids: Collection[str]) -> dict[str, float]:
        last = getattr(self._searched, "last", None)
        known: dict[str, float] = last[1] if last is not None and last[0] is query else {}
        found = {i: known[i] for i in ids if i in known}
        found.update(self._store.vectors.cosine(query, [i for i in ids if i not in known]))
        return found

    def search(self, query: VectorQuery) -> list[tuple[str, float]]:
        hits = self._store.vectors.nearest(query)
        self._searched.last = (query.vector, dict(hits))
        return hits

    def bulk_load(self, rows: int) -> AbstractContextManager[None]:
        """A new store's index is built once after an import instead of taking each row
        (``PostgresEmbeddings.vector_index_put_off``)."""
        return self._store.vectors.vector_index_put_off(rows)

    def tidy(self) -> bool:
        return False  # PostgreSQL keeps its own index

    def interrupt(self) -> None:
        """No upkeep runs here."""
