"""Reads never move a project's memories (docs/team.md, "One project, wherever it is checked
out"): on a team's store a checkout is named by its repository, and the memories kept under
another spelling of that name, or under the checkout's path from before project names, belong
to it (``service/project_names.py``). A read finds them where they are and changes nothing,
events included (the repository export writes them as they will be once moved); the next
write, or the daemon's idle worker, moves them, recording no event (a rename never did). On
real Kùzu and PostgreSQL, checkouts named as a team's store names them, with git stood in for."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from support.records import NOW, memory
from support.stores import new_kuzu, postgres_url

from graphmem.adapters.embedders import HashEmbedder
from graphmem.adapters.kuzu_code import KuzuCodeGraph
from graphmem.adapters.postgres_code import PostgresCodeGraph
from graphmem.adapters.postgres_store import PostgresGraphStore
from graphmem.adapters.postgres_vectors import PgVectorIndex
from graphmem.adapters.vector_index import HnswVectorIndex
from graphmem.app import build_memory, learning_sources
from graphmem.core.dedup import memory_hash
from graphmem.core.models import Category, Scope
from graphmem.core.ports import CodeGraph, GraphStore, VectorIndex
from graphmem.core.timeparse import utc_now
from graphmem.server.runtime import Runtime
from graphmem.service.coordination import Coordinator
from graphmem.service.file_access import REPOSITORY_FILE
from graphmem.service.memory import MemoryService
from graphmem.service.semantic import SemanticIndex
from graphmem.settings import load_settings

DIMENSION = 64
CHECKOUT = "/home/bob/code/shop"  # Bob's clone of https://github.com/acme/shop
FIRST, SECOND = "github.com/Acme/Shop", "github.com/acme/shop"  # kept first; Bob's remote
KEPT, SPLIT, PATHS = "mem_00000000000000a1", "mem_00000000000000b1", "mem_00000000000000c1"
Opened = tuple[GraphStore, CodeGraph, Callable[[int], VectorIndex]]


class Remotes:
    """The ``ProjectRoots`` port as a team's store has it (``GitToplevel(shared=True)``): the
    checkout named by its remote, ``SECOND``."""

    def project_root(self, path: Path) -> Path | None:
        return path

    def project_name(self, root: Path) -> str:
        return SECOND if str(root) == CHECKOUT else str(root)

    def checkout(self, project: str) -> Path | None:
        return Path(CHECKOUT) if project in (FIRST, SECOND) else None

    def local_branches(self, project: str) -> frozenset[str] | None:
        return None

    def branch(self, root: Path) -> tuple[str, str] | None:
        return None


def _kuzu(tmp_path: Path, request: pytest.FixtureRequest) -> Opened:
    store = new_kuzu(tmp_path / "kuzu", request, DIMENSION)
    return store, KuzuCodeGraph(store), HnswVectorIndex


def _postgres(tmp_path: Path, request: pytest.FixtureRequest) -> Opened:
    store = PostgresGraphStore(postgres_url(request, DIMENSION), dimension=DIMENSION)
    return store, PostgresCodeGraph(store), lambda dimension: PgVectorIndex(store, dimension)


@pytest.fixture(params=[_kuzu, _postgres], ids=["kuzu", "postgres"])
def bob(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryService]:
    """Bob's service in his checkout, on a store that keeps the project split in two and, from
    before project names, under his checkout's path too: each memory with its vector."""
    store, code, index = request.param(tmp_path, request)
    embedder = HashEmbedder(DIMENSION)
    store.set_meta("embedding_model", embedder.model_name)
    kept = [
        memory(KEPT, "Refunds go through the ledger service", project=FIRST,
               created_at=NOW - timedelta(days=30)),
        memory(SPLIT, "Refunds are retried by the ledger after 5 s", project=SECOND),
        memory(PATHS, "The ledger refunds in the currency of the order", project=CHECKOUT),
    ]  # fmt: skip
    kept = [replace(m, scope=Scope.PROJECT, category=Category.DECISION) for m in kept]
    kept = [replace(m, content_hash=memory_hash(m.scope, m.project, m.text)) for m in kept]
    store.add_memories(kept, embedder.embed([m.text for m in kept]))
    settings = load_settings(data_dir=tmp_path / "data")
    sources = replace(learning_sources(settings), roots=Remotes())
    semantic = SemanticIndex(store, embedder, index)
    service = build_memory(store, semantic, settings, data_dir=tmp_path / "data", code=code, sources=sources)
    yield service.bound(CHECKOUT)
    service.close()


def snapshot(store: GraphStore) -> tuple[object, ...]:
    """The memories (not whether each has its vector yet), their events and links."""
    memories = sorted((replace(r, embedded=False) for r in store.all_memories()), key=lambda r: r.id)
    return memories, list(store.all_events()), store.links([r.id for r in memories])


def projects(store: GraphStore) -> dict[str, str | None]:
    return {m.id: m.project for m in store.all_memories()}


READS: dict[str, Callable[[MemoryService], set[str]]] = {
    "recall": lambda m: {hit.memory.id for hit in m.recall("ledger refunds").hits},
    "list": lambda m: {r.id for r in m.list()},
    "select": lambda m: {r.id for r in m.select(categories=[Category.DECISION])},
    "get_context": lambda m: {
        item.hit.memory.id for items in m.get_context("ledger refunds").groups.values() for item in items
    },
    "boot_context": lambda m: {
        item.hit.memory.id for items in m.boot_context().groups.values() for item in items
    },
    "export": lambda m: {i for i in (KEPT, SPLIT, PATHS) if i in _exported(m)},
    "export_repository": lambda m: {i for i in (KEPT, SPLIT, PATHS) if i in _shared(m)[REPOSITORY_FILE]},
}


def _exported(memory: MemoryService) -> str:
    out = io.StringIO()
    memory.export(out)
    return out.getvalue()


def _shared(memory: MemoryService) -> dict[str, str]:
    """The files of the checkout's ``.graphmem/`` (``graphmem export --project --to .graphmem/``)."""
    return memory.export_repository(project=CHECKOUT).files


@pytest.mark.parametrize("verb", sorted(READS))
def test_a_read_changes_nothing_yet_finds_the_memories_under_the_other_names(
    bob: MemoryService, verb: str
) -> None:
    before = snapshot(bob.store)

    found = READS[verb](bob)

    assert found == {KEPT, SPLIT, PATHS}
    assert snapshot(bob.store) == before
    assert projects(bob.store) == {KEPT: FIRST, SPLIT: SECOND, PATHS: CHECKOUT}


def test_the_repository_export_holds_them_as_it_will_once_they_are_moved(bob: MemoryService) -> None:
    before = snapshot(bob.store)

    shared = _shared(bob)

    assert snapshot(bob.store) == before
    bob.move_pending_projects()
    assert projects(bob.store) == {KEPT: FIRST, SPLIT: FIRST, PATHS: FIRST}
    assert _shared(bob) == shared  # the same bytes: the team's file does not change when they move


def test_the_next_write_moves_them_and_records_no_event_for_the_move(bob: MemoryService) -> None:
    bob.list()
    events = list(bob.store.all_events())

    written = bob.remember("Refunds over 500 EUR need a second approval", category="decision").memory

    assert projects(bob.store) == {KEPT: FIRST, SPLIT: FIRST, PATHS: FIRST, written.id: FIRST}
    assert [e for e in bob.store.all_events() if e.memory_id != written.id] == events
    assert {r.id for r in bob.list()} == {KEPT, SPLIT, PATHS, written.id}
    assert bob.parts.names.pending(FIRST) == frozenset()


WRITES: dict[str, Callable[[MemoryService], object]] = {
    "edit": lambda m: m.edit(KEPT, text="Refunds go through the ledger service, never the shop's"),
    "import": lambda m: m.import_text(_exported(m), project=CHECKOUT),
}


@pytest.mark.parametrize("verb", sorted(WRITES))
def test_every_write_moves_them_first(bob: MemoryService, verb: str) -> None:
    WRITES[verb](bob)

    assert projects(bob.store) == {KEPT: FIRST, SPLIT: FIRST, PATHS: FIRST}
    assert bob.parts.names.pending(FIRST) == frozenset()


def test_a_dry_run_import_writes_nothing_and_so_moves_nothing(bob: MemoryService) -> None:
    exported = _exported(bob)
    before = snapshot(bob.store)

    bob.import_text(exported, project=CHECKOUT, dry_run=True)

    assert snapshot(bob.store) == before
    assert bob.parts.names.pending(FIRST) == {SECOND, CHECKOUT}


def test_the_repository_export_finds_a_teammates_copy_of_one_in_the_store_under_another_name(
    bob: MemoryService,
) -> None:
    teammates = _shared(bob)[REPOSITORY_FILE].replace(PATHS, "mem_00000000000000d1")  # their import's id

    again = bob.export_repository(project=CHECKOUT, current=teammates).files  # no "not imported yet"

    assert PATHS in again[REPOSITORY_FILE]
    assert projects(bob.store) == {KEPT: FIRST, SPLIT: SECOND, PATHS: CHECKOUT}


def test_the_daemons_idle_worker_moves_them(bob: MemoryService) -> None:
    runtime = Runtime(
        bob.serving(Coordinator(utc_now, timedelta(minutes=5))),
        log_hint="the test's log",
        resolve_project=lambda path: path,
        version="test",
    )
    assert {hit.memory.id for hit in bob.recall("ledger refunds").hits} == {KEPT, SPLIT, PATHS}
    events = list(bob.store.all_events())

    assert runtime._move_projects()  # what the worker does when it has nothing to embed

    assert projects(bob.store) == {KEPT: FIRST, SPLIT: FIRST, PATHS: FIRST}
    assert list(bob.store.all_events()) == events
    assert {hit.memory.id for hit in bob.recall("ledger refunds").hits} == {KEPT, SPLIT, PATHS}
