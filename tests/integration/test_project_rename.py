"""A checkout's code graph follows its project to the repository's name (docs/code-graph.md,
"A project renamed"): on a team's store a checkout first kept under its path is later named by
its repository; the next bootstrap moves the memories' links from the old graph to the same
files and symbols under the name, keeps the links to code the name does not have (on nodes
marked deleted), and removes the old graph. Run on the in-memory store, Kùzu and PostgreSQL,
each with the team store's project names (``GitToplevel(shared=True)``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from support.git_repo import commit, git, new_repo
from support.records import memory
from support.stores import postgres_url

from graphmem.adapters.embedders import HashEmbedder
from graphmem.adapters.fake_code import FakeCodeGraph
from graphmem.adapters.fake_store import FakeGraphStore
from graphmem.adapters.git import GitToplevel
from graphmem.adapters.kuzu_code import KuzuCodeGraph
from graphmem.adapters.kuzu_store import KuzuGraphStore
from graphmem.adapters.postgres_code import PostgresCodeGraph
from graphmem.adapters.postgres_store import PostgresGraphStore
from graphmem.adapters.vector_index import HnswVectorIndex
from graphmem.app import build_memory, learning_sources
from graphmem.core.codegraph import file_key, module_key, symbol_key
from graphmem.core.models import Entity, EntityKind, Scope
from graphmem.core.ports import CodeGraph, GraphStore
from graphmem.service.memory import MemoryService
from graphmem.service.semantic import SemanticIndex
from graphmem.settings import load_settings

pytestmark = pytest.mark.integration

DIMENSION = 64
NAME = "payments"
SOURCE = "def refund(order):\n    return order.total\n\n\ndef retry(order):\n    return refund(order)\n"

GRAPHS: dict[str, Callable[[Path, pytest.FixtureRequest], tuple[GraphStore, CodeGraph]]] = {
    "kuzu": lambda path, _: (
        store := KuzuGraphStore(path / "kuzu", dimension=DIMENSION),
        KuzuCodeGraph(store),
    ),
    "memory": lambda path, _: (store := FakeGraphStore(dimension=DIMENSION), FakeCodeGraph(store)),
    "postgres": lambda path, request: (
        store := PostgresGraphStore(postgres_url(request), dimension=DIMENSION),
        PostgresCodeGraph(store),
    ),
}


@pytest.fixture(params=sorted(GRAPHS))
def graphs(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[GraphStore, CodeGraph]]:
    store, code = GRAPHS[request.param](tmp_path, request)
    yield store, code
    store.close()


def team_service(store: GraphStore, code: CodeGraph, data_dir: Path) -> MemoryService:
    """A service on ``store`` naming projects as on a team's store (by the repository)."""
    settings = load_settings(data_dir=data_dir)
    embedder = HashEmbedder(DIMENSION)
    store.set_meta("embedding_model", embedder.model_name)
    sources = replace(learning_sources(settings), roots=GitToplevel(shared=True))
    semantic = SemanticIndex(store, embedder, HnswVectorIndex)
    return build_memory(store, semantic, settings, data_dir=data_dir, code=code, sources=sources)


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A repository with no remote (so first kept under its path) holding src/refunds.py."""
    root = new_repo(tmp_path / "payments")
    (root / "src").mkdir()
    commit(root, "src/refunds.py", SOURCE)
    return root


def about(store: GraphStore, memory_id: str) -> list[str]:
    return sorted(e.key for e in store.about([memory_id]).get(memory_id, []))


def test_after_a_rename_the_memories_links_follow_to_the_named_projects_code(
    graphs: tuple[GraphStore, CodeGraph], checkout: Path, tmp_path: Path
) -> None:
    store, code = graphs
    old = str(checkout)
    first = team_service(store, code, tmp_path / "first")
    assert first.bootstrap(checkout, history=0).project == old
    notes = [
        memory("mem_00000000000000a1", "refunds: see the file", scope=Scope.PROJECT, project=old),
        memory("mem_00000000000000a2", "refund is idempotent", scope=Scope.PROJECT, project=old),
        memory("mem_00000000000000a3", "retry backs off", scope=Scope.PROJECT, project=old),
        memory("mem_00000000000000a4", "the readme is the runbook", scope=Scope.PROJECT, project=old),
        memory("mem_00000000000000a5", "a key that leaves the checkout", scope=Scope.PROJECT, project=old),
    ]
    store.add_memories(notes)
    code_file, readme = file_key(old, "src/refunds.py"), file_key(old, "README.md")
    outside = file_key(old, "../outside.txt")  # a file exists there, beside the checkout
    (checkout.parent / "outside.txt").write_text("not the project's\n")
    refund, retry = symbol_key(old, "src/refunds.py", "refund"), symbol_key(old, "src/refunds.py", "retry")
    store.upsert_entities(
        [
            Entity(readme, EntityKind.FILE, "README.md", old),
            Entity(outside, EntityKind.FILE, "../outside.txt", old),
        ]
    )  # as memories naming them
    store.link_about(
        [
            ("mem_00000000000000a1", Entity(code_file, EntityKind.FILE, "src/refunds.py")),
            ("mem_00000000000000a2", Entity(refund, EntityKind.SYMBOL, "refund")),
            ("mem_00000000000000a3", Entity(retry, EntityKind.SYMBOL, "retry")),
            ("mem_00000000000000a4", Entity(readme, EntityKind.FILE, "README.md")),
            ("mem_00000000000000a5", Entity(outside, EntityKind.FILE, "../outside.txt")),
        ]
    )
    commit(checkout, "src/refunds.py", SOURCE.split("\n\n\n")[0] + "\n")  # retry is gone
    git(checkout, "config", "graphmem.project", NAME)

    second = team_service(store, code, tmp_path / "second")
    report = second.bootstrap(checkout, history=0)

    assert (report.project, report.renamed_from) == (NAME, old)
    assert (report.links_followed, report.links_kept) == (3, 2)
    assert about(store, "mem_00000000000000a5") == [outside]  # not followed out of the checkout
    assert about(store, "mem_00000000000000a1") == [file_key(NAME, "src/refunds.py")]
    assert about(store, "mem_00000000000000a2") == [symbol_key(NAME, "src/refunds.py", "refund")]
    assert about(store, "mem_00000000000000a4") == [file_key(NAME, "README.md")]
    assert about(store, "mem_00000000000000a3") == [retry]  # kept, on code marked deleted
    assert code.symbols([retry])[retry].deleted_at is not None
    assert second.show("mem_00000000000000a3").memory.stale  # possibly stale: its code is gone
    assert code.file_states(old) == {}
    assert [s.key for s in code.symbols_in(old, "src/refunds.py")] == [retry]
    assert {m.project for m in store.all_memories()} == {NAME}  # moved when the name was first used


def test_a_later_bootstrap_of_the_named_project_has_nothing_left_to_move(
    graphs: tuple[GraphStore, CodeGraph], checkout: Path, tmp_path: Path
) -> None:
    store, code = graphs
    team_service(store, code, tmp_path / "first").bootstrap(checkout, history=0)
    git(checkout, "config", "graphmem.project", NAME)
    second = team_service(store, code, tmp_path / "second")
    assert second.bootstrap(checkout, history=0).renamed_from == str(checkout)

    again = second.bootstrap(checkout, history=0)

    assert (again.renamed_from, again.links_followed) == (None, 0)
    assert set(code.file_states(NAME)) == {"src/refunds.py"}


def test_the_old_names_external_modules_go_but_one_a_memory_is_still_about(
    graphs: tuple[GraphStore, CodeGraph], checkout: Path, tmp_path: Path
) -> None:
    store, code = graphs
    old = str(checkout)
    commit(checkout, "src/clients.py", "import requests\nimport yaml\n")
    team_service(store, code, tmp_path / "first").bootstrap(checkout, history=0)
    yaml, requests = module_key(old, "yaml"), module_key(old, "requests")
    assert set(store.get_entities([yaml, requests])) == {yaml, requests}
    store.add_memories([memory("mem_00000000000000b1", "yaml is pinned", scope=Scope.PROJECT, project=old)])
    store.link_about([("mem_00000000000000b1", Entity(yaml, EntityKind.EXTERNAL_MODULE, "yaml"))])
    commit(checkout, "src/clients.py", "import requests\n")  # the named project's code has no yaml
    git(checkout, "config", "graphmem.project", NAME)

    report = team_service(store, code, tmp_path / "second").bootstrap(checkout, history=0)

    assert (report.renamed_from, report.links_kept) == (old, 1)
    assert set(store.get_entities([yaml, requests])) == {yaml}  # kept for its memory
    assert about(store, "mem_00000000000000b1") == [yaml]
    assert module_key(NAME, "requests") in store.get_entities([module_key(NAME, "requests")])
