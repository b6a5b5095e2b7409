"""A Memory service's threads live as long as it does: once closed, none it started still runs
(its recall's search thread, the symbol indexes it was building), and a recall after it says the
service is closed instead of waiting on a thread that is gone. On the in-memory store, Kùzu and
PostgreSQL, each opened as the product opens it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection
from pathlib import Path

import pytest
from support.memory_service import in_memory_service
from support.stores import KuzuTemplates, postgres_url
from support.team import on_postgres

from graphmem.adapters.embedders import HashEmbedder
from graphmem.adapters.fake_code import FakeCodeGraph
from graphmem.adapters.fake_store import FakeGraphStore
from graphmem.app import open_memory
from graphmem.core.code import ParsedFile
from graphmem.errors import StoreError
from graphmem.service.described_code import DescribedCode
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings

DIMENSION = 64
Open = Callable[[Path, pytest.FixtureRequest], MemoryService]


def _in_memory(tmp_path: Path, request: pytest.FixtureRequest) -> MemoryService:
    return in_memory_service(tmp_path / "data")


def _kuzu(tmp_path: Path, request: pytest.FixtureRequest) -> MemoryService:
    templates: KuzuTemplates = request.getfixturevalue("kuzu_templates")
    templates.lay_out(tmp_path / "kuzu", DIMENSION)  # an empty store's files, as open_memory makes them
    return open_memory(load_settings(data_dir=tmp_path / "kuzu"), embedder=HashEmbedder(DIMENSION))


def _postgres(tmp_path: Path, request: pytest.FixtureRequest) -> MemoryService:
    return on_postgres(postgres_url(request, DIMENSION), tmp_path / "postgres", DIMENSION)


@pytest.fixture(params=[_in_memory, _kuzu, _postgres], ids=["in-memory", "kuzu", "postgres"])
def open_service(request: pytest.FixtureRequest) -> Open:
    opener: Open = request.param
    return opener


def used(memory: MemoryService, project: str) -> None:
    """What starts the service's threads: a scan, a recall (its words searched on the search
    thread) and a question that names no code (the project's symbol index, built on its own)."""
    memory.bootstrap(project, history=0)
    memory.remember("Refunds are retried nightly in src/app.py", project=project)
    assert memory.recall("refunds retried", project=project).hits
    memory.recall("how is money given back to a customer", project=project)


def test_a_closed_service_leaves_no_thread_of_its_own(
    open_service: Open, tmp_path: Path, request: pytest.FixtureRequest, git_project: str
) -> None:
    before = set(threading.enumerate())
    memory = open_service(tmp_path, request)
    used(memory, git_project)
    started = {t.name for t in threading.enumerate() if t not in before}

    memory.close()

    assert "graphmem-recall-search_0" in started  # the threads the test means to see end
    assert [t.name for t in threading.enumerate() if t not in before and t.is_alive()] == []


def test_a_recall_after_close_says_the_service_is_closed(
    open_service: Open, tmp_path: Path, request: pytest.FixtureRequest, git_project: str
) -> None:
    memory = open_service(tmp_path, request)
    used(memory, git_project)
    memory.close()

    with pytest.raises(StoreError, match="closed: open the memory again"):
        memory.recall("refunds retried", project=git_project)
    with pytest.raises(StoreError, match="closed: open the memory again"):
        memory.code_described("how is money given back", project=git_project)


def test_a_service_closed_twice_is_closed_once(
    open_service: Open, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    memory = open_service(tmp_path, request)
    memory.recall("anything")
    memory.close()

    memory.close()  # a test's own close, then its fixture's

    with pytest.raises(StoreError, match="closed"):
        memory.recall("anything")


class _HeldParses(FakeCodeGraph):
    """A code graph that gives a project's parses once ``go`` is set: an index still being built."""

    def __init__(self) -> None:
        super().__init__(FakeGraphStore(dimension=DIMENSION))
        self.go = threading.Event()

    def load_parsed(self, project: str, paths: Collection[str] | None = None) -> dict[str, ParsedFile]:
        self.go.wait()
        return super().load_parsed(project, paths)


def test_close_waits_for_the_symbol_index_being_built_and_builds_none_after() -> None:
    code = _HeldParses()
    described = DescribedCode(code)
    before = set(threading.enumerate())
    assert described.entities_in("how is money given back", "/shop") == []  # its index is being built
    building = [t for t in threading.enumerate() if t not in before]

    code.go.set()
    described.close()

    assert [t.name for t in building] == ["graphmem-symbol-index"]
    assert not building[0].is_alive()
    assert described.entities_in("how is money given back", "/api") == []
    assert [t for t in threading.enumerate() if t not in before and t.is_alive()] == []
