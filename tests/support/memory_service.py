"""A Memory service on the in-memory store: service tests without Kùzu.

``in_memory_service()`` builds what ``graphmem.app.open_memory`` builds (with ``build_memory``), on an
``FakeGraphStore`` (``adapters/fake_store.py``, held to the Kùzu store's contract by
``tests/unit/adapters/test_store_contract.py``), its code graph and GitLab graph
(``FakeCodeGraph``, ``FakeGitLabGraph``, held to their own contract suites), an enricher
with no GitLab client (as with no ``[gitlab]`` token) that knows a GitHub checkout's refs are
not GitLab's, and the deterministic hash embedder.
"""

from __future__ import annotations

from pathlib import Path

from graphmem.adapters.embedders import HashEmbedder
from graphmem.adapters.fake_code import FakeCodeGraph
from graphmem.adapters.fake_gitlab_graph import FakeGitLabGraph
from graphmem.adapters.fake_store import FakeGraphStore
from graphmem.adapters.git import gitlab_path, origin_name
from graphmem.adapters.vector_index import HnswVectorIndex
from graphmem.app import build_memory, learning_sources
from graphmem.core.ports import Embedder
from graphmem.core.projects import ForeignRemote, foreign_remote
from graphmem.core.timeparse import utc_now
from graphmem.service.enrichment import Enricher, EnrichmentConfig
from graphmem.service.memory import MemoryService
from graphmem.service.semantic import SemanticIndex, record_model
from graphmem.settings import load_settings

DIMENSION = 256


def in_memory_service(
    data_dir: Path,
    *,
    store: FakeGraphStore | None = None,
    embedder: Embedder | None = None,
    code: FakeCodeGraph | None = None,
    worker: bool = False,
) -> MemoryService:
    """A Memory service on ``store`` (a new in-memory store by default) and ``code`` (a new code
    graph on it by default), composed by ``graphmem.app.build_memory`` as ``open_memory`` composes
    it on Kùzu; ``data_dir`` holds only what the service itself writes there (exports).
    ``worker``: its embedding left to a daemon's worker, as ``serve_memory`` builds it."""
    embedder = embedder or HashEmbedder(DIMENSION)
    store = store or FakeGraphStore(dimension=embedder.dimension)
    record_model(store, embedder.model_name, embedder.dimension)
    code = code or FakeCodeGraph(store)

    def namespace(project: str) -> str | None:
        return gitlab_path(Path(project))  # as app.py: the project's GitLab remote

    def foreign(project: str) -> ForeignRemote | None:
        return foreign_remote(origin_name(Path(project)))  # as app.py: its origin on another forge

    enricher = Enricher(
        FakeGitLabGraph(store),
        None,
        EnrichmentConfig(),
        namespace=namespace,
        clock=utc_now,
        code=code,
        foreign=foreign,
    )
    settings = load_settings(data_dir=data_dir)
    return build_memory(
        store,
        SemanticIndex(store, embedder, HnswVectorIndex, background=worker),
        settings,
        data_dir=data_dir,
        namespace=namespace,
        code=code,
        enricher=enricher,
        sources=learning_sources(settings),
    )
