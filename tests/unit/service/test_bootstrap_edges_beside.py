"""A pass resolves its edges on a thread while the store writes its symbols and files, which need
none (``service/bootstrap.py``, ``CodeScan.resolved_edges``): the Python of the resolution runs
while Kùzu's ``COPY`` and the parse store's writes have let go of the interpreter. A resolution
that fails after the store began leaves the project interrupted, and the next pass completes it.
On the fake code graph and on Kùzu (the parse store beside it), with fake sources."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support.fake_sources import FakeFiles, FakeHistory, FakeParser
from support.stores import new_kuzu

from graphmem.adapters.embedders import HashEmbedder
from graphmem.adapters.fake_code import FakeCodeGraph
from graphmem.adapters.fake_store import FakeGraphStore
from graphmem.adapters.git import GitToplevel
from graphmem.adapters.kuzu_code import KuzuCodeGraph
from graphmem.adapters.opencode_sessions import OpenCodeSessions
from graphmem.adapters.vector_index import HnswVectorIndex
from graphmem.app import build_memory
from graphmem.core.code import CallRef, Definition, ImportRef, ParsedFile
from graphmem.core.codegraph import CodeEdges, CodeScan, ProjectCode, symbol_key
from graphmem.core.ports import CodeGraph, GraphStore, LearningSources
from graphmem.service.memory import MemoryService
from graphmem.service.semantic import SemanticIndex
from graphmem.settings import load_settings

DIMENSION = 64
LEDGER = b"def post(entry):\n    return entry\n"
SHOP = b"from ledger import post\n\n\ndef sell(entry):\n    return post(entry)\n"
POST = Definition("function", "post", "post", 1, 2, "def post(entry)", None, "h-post", None)
SELL = Definition("function", "sell", "sell", 4, 5, "def sell(entry)", None, "h-sell", None)
CALLS_POST = CallRef("post", None, 5, "sell")
IMPORTS_POST = ImportRef("ledger", ("post",), None, 1)
PARSES = {
    LEDGER: ParsedFile("python", (POST,), (), (), (), 0),
    SHOP: ParsedFile("python", (SELL,), (CALLS_POST,), (IMPORTS_POST,), (), 0),
}


class Shop:
    """Two files, ``sell`` in shop.py calling ``post`` of ledger.py, and a service on ``store``."""

    def __init__(self, root: Path, data_dir: Path, store: GraphStore, code: CodeGraph) -> None:
        self.root = root
        self.code = code
        self.parser = FakeParser(dict(PARSES))
        self.files = FakeFiles({"ledger.py": (LEDGER, 1), "shop.py": (SHOP, 1)})
        sources = LearningSources(
            new_parser=lambda: self.parser,
            files=self.files,
            history=FakeHistory(),
            roots=GitToplevel(),
            sessions=OpenCodeSessions(),
        )
        self.memory: MemoryService = build_memory(
            store,
            SemanticIndex(store, HashEmbedder(DIMENSION), HnswVectorIndex),
            load_settings(data_dir=data_dir),
            data_dir=data_dir,
            code=code,
            sources=sources,
        )
        self.project = str(root.resolve())

    def calls_of_sell(self) -> list[tuple[str, str]]:
        sell = symbol_key(self.project, "shop.py", "sell")
        return [(s.key, confidence) for s, _, confidence in self.code.calls([sell], incoming=False, limit=10)]


def _fake(data_dir: Path, request: pytest.FixtureRequest) -> tuple[GraphStore, CodeGraph]:
    store = FakeGraphStore(dimension=DIMENSION)
    return store, FakeCodeGraph(store)


def _kuzu(data_dir: Path, request: pytest.FixtureRequest) -> tuple[GraphStore, CodeGraph]:
    store = new_kuzu(data_dir, request, DIMENSION)
    return store, KuzuCodeGraph(store)


@pytest.fixture(params=[_fake, _kuzu], ids=["fake", "kuzu"])
def shop(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Shop]:
    opens: Callable[[Path, pytest.FixtureRequest], tuple[GraphStore, CodeGraph]] = request.param
    root = tmp_path / "shop"
    root.mkdir()
    store, code = opens(tmp_path / "data", request)
    made = Shop(root, tmp_path / "service", store, code)
    yield made
    made.memory.close()


def test_the_store_begins_writing_a_pass_before_its_edges_are_resolved(
    shop: Shop, monkeypatch: pytest.MonkeyPatch
) -> None:
    saving = threading.Event()
    resolved_after_save_began: list[bool] = []
    save, edges = shop.code.save, ProjectCode.edges

    def saving_code(scan: CodeScan) -> dict[str, int]:
        saving.set()
        return save(scan)

    def resolving(code: ProjectCode) -> CodeEdges:
        resolved_after_save_began.append(saving.wait(30))  # before the change: never, as save waited
        return edges(code)

    monkeypatch.setattr(shop.code, "save", saving_code)
    monkeypatch.setattr(ProjectCode, "edges", resolving)
    report = shop.memory.bootstrap(shop.root, history=0)

    assert resolved_after_save_began == [True]
    assert report.calls == {"import": 1}  # the report counts the edges resolved beside the writes
    assert shop.calls_of_sell() == [(symbol_key(shop.project, "ledger.py", "post"), "import")]


def test_a_pass_whose_edges_fail_after_the_store_began_is_completed_by_the_next(
    shop: Shop, monkeypatch: pytest.MonkeyPatch
) -> None:
    edges = ProjectCode.edges

    def failing(code: ProjectCode) -> CodeEdges:
        raise RuntimeError("resolution failed")

    monkeypatch.setattr(ProjectCode, "edges", failing)
    with pytest.raises(RuntimeError, match="resolution failed"):
        shop.memory.bootstrap(shop.root, history=0)
    assert shop.code.scan_interrupted(shop.project)  # the symbols were written, the edges not

    monkeypatch.setattr(ProjectCode, "edges", edges)
    report = shop.memory.bootstrap(shop.root, history=0)

    assert report.parsed == 2  # an interrupted pass: every file again, not only the changed
    assert not shop.code.scan_interrupted(shop.project)
    assert [s.qualified_name for s in shop.code.symbols_in(shop.project, "shop.py")] == ["sell"]
    assert shop.calls_of_sell() == [(symbol_key(shop.project, "ledger.py", "post"), "import")]
