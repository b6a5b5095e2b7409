"""A Memory service on the in-memory store: service tests without Kùzu.

``in_memory_service()`` builds what ``graphmem.app.open_memory`` builds, on an
``InMemoryGraphStore`` (``adapters/memory_store.py``, held to the Kùzu store's contract by
``tests/unit/adapters/test_store_contract.py``), its code graph (``InMemoryCodeGraph``) and the
deterministic hash embedder. There is no GitLab graph (it lives in Kùzu): a test of GitLab
enrichment, or of what its notes cost a context's budget, uses ``fake_memory`` (a fresh Kùzu
store) instead.
"""

from __future__ import annotations

from pathlib import Path

from graphmem.adapters.embedders import HashEmbedder
from graphmem.adapters.memory_code import InMemoryCodeGraph
from graphmem.adapters.memory_store import InMemoryGraphStore
from graphmem.core.ports import Embedder
from graphmem.service.memory import MemoryService
from graphmem.service.semantic import SemanticIndex

DIMENSION = 256


def in_memory_service(
    data_dir: Path, *, store: InMemoryGraphStore | None = None, embedder: Embedder | None = None
) -> MemoryService:
    """A Memory service on ``store`` (a new in-memory store by default); ``data_dir`` holds only
    what the service itself writes there (exports)."""
    embedder = embedder or HashEmbedder(DIMENSION)
    store = store or InMemoryGraphStore(dimension=embedder.dimension)
    store.set_meta("embedding_model", embedder.model_name)
    store.set_meta("embedding_dimension", str(embedder.dimension))
    return MemoryService(
        store, SemanticIndex(store, embedder), data_dir=data_dir, code=InMemoryCodeGraph(store)
    )
