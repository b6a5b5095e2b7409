"""The daemon's side: ``memory_service`` here is the service as the daemon serves it
(``graphmem.app.serve_memory``): path verbs confined, sessions and claims kept by a coordinator.
A ``Runtime`` built on it serves that very object, so a test may call or patch it beside the
daemon's routes and tools."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from support.memory_service import in_memory_service

from graphmem.core.ports import GraphStore
from graphmem.core.timeparse import utc_now
from graphmem.service.coordination import Coordinator
from graphmem.service.memory import MemoryService

SESSION_TTL = timedelta(minutes=5)


@pytest.fixture
def memory_service(memory_store: GraphStore, tmp_path: Path) -> Iterator[MemoryService]:
    """The daemon's Memory service on ``memory_store`` (the in-memory store and hash embedder)."""
    # Embedding left to the daemon's worker, as ``serve_memory`` builds it: none runs here, so
    # recall is lexical and never embeds.
    memory = in_memory_service(tmp_path / "data", store=memory_store, worker=True)
    yield memory.serving(Coordinator(utc_now, SESSION_TTL))
    memory.close()
