"""The daemon's ``Runtime`` serves only the daemon's service, wired by the composition root
(``graphmem.app.serve_memory``): it never finishes a service it is handed."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.memory_service import in_memory_service

from graphmem.server.runtime import Runtime
from graphmem.service.memory import MemoryService


def runtime_of(memory: MemoryService) -> Runtime:
    return Runtime(memory, log_hint="stderr", resolve_project=lambda p: p, version="t")


def test_a_service_not_built_to_serve_agents_is_refused_with_the_builder_to_use(tmp_path: Path) -> None:
    memory = in_memory_service(tmp_path / "data")  # what open_memory builds: no coordinator
    try:
        with pytest.raises(ValueError, match=r"graphmem\.app\.serve_memory"):
            runtime_of(memory)
    finally:
        memory.close()


def test_the_daemons_service_is_served_as_it_was_built(memory_service: MemoryService) -> None:
    runtime = runtime_of(memory_service)  # tests/unit/server/conftest.py: the daemon's service

    assert runtime.memory is memory_service
    assert runtime.coordinator is memory_service.coordinator
