"""A project on a team's PostgreSQL store is named by its repository, not by where it is checked
out (docs/team.md, "One project, wherever it is checked out"): two clones of one repository in
different folders, each with its own daemon-less service on one database, share the project's
memories, its context and one code graph; memories stored under a checkout's path before move
to the name; the embedded store keeps naming a project by its path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from support.git_repo import commit, git, new_repo
from support.records import memory
from support.stores import postgres_url

from graphmem.adapters.embedders import HashEmbedder
from graphmem.app import open_memory
from graphmem.core.models import Scope
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings

pytestmark = pytest.mark.integration

DIMENSION = 256
NAME = "gitlab.example.com/shop/payments"
DECISION = "Refunds go through src/refunds.py and never call the card network twice"


def service(url: str | None, data_dir: Path, checkout: Path) -> MemoryService:
    settings = load_settings(data_dir=data_dir, store={"url": url} if url else None)
    opened = open_memory(settings, embedder=HashEmbedder(DIMENSION))
    return opened.bound(str(checkout))  # as graphmem.open_memory binds the current directory's


@pytest.fixture
def clones(tmp_path: Path) -> tuple[Path, Path]:
    """One repository cloned twice, in unrelated folders, its origin written two ways."""
    first = new_repo(tmp_path / "alice" / "work" / "payments")
    (first / "src").mkdir()
    commit(first, "src/refunds.py", "def refund(order):\n    return order.total\n")
    second = tmp_path / "bob" / "code" / "pay"
    second.parent.mkdir(parents=True)
    git(second.parent, "clone", "-q", str(first), str(second))
    git(first, "remote", "add", "origin", "git@gitlab.example.com:shop/payments.git")
    git(second, "remote", "set-url", "origin", "https://bob:glpat-x@gitlab.example.com/shop/payments")
    return first, second.resolve()


@pytest.fixture
def url(request: pytest.FixtureRequest) -> str:
    return postgres_url(request)


@pytest.fixture
def team(
    url: str, clones: tuple[Path, Path], tmp_path: Path
) -> Iterator[tuple[MemoryService, MemoryService]]:
    alice = service(url, tmp_path / "alice-data", clones[0])
    bob = service(url, tmp_path / "bob-data", clones[1])
    yield alice, bob
    alice.close()
    bob.close()


def test_two_clones_at_different_paths_share_the_projects_memories(
    team: tuple[MemoryService, MemoryService],
) -> None:
    alice, bob = team
    written = alice.remember(DECISION, category="decision").memory
    assert written.project == NAME
    bob.embed_pending()
    assert [hit.memory.id for hit in bob.recall("refunds card network").hits] == [written.id]
    assert [m.id for m in bob.list()] == [written.id]
    context = bob.get_context("src/refunds.py", max_tokens=2000)
    assert context.entity is not None and context.entity.key == f"File:{NAME}::src/refunds.py"
    assert written.id in {item.hit.memory.id for items in context.groups.values() for item in items}


def test_bootstrap_from_two_checkouts_builds_one_code_graph(
    team: tuple[MemoryService, MemoryService], clones: tuple[Path, Path], url: str
) -> None:
    alice, bob = team
    assert alice.bootstrap(clones[0], history=0).project == NAME
    assert bob.bootstrap(clones[1], history=0).project == NAME
    with psycopg.connect(url) as conn:
        projects = {row[0] for row in conn.execute("SELECT DISTINCT project FROM code_files")}
    assert projects == {NAME}
    assert bob.code is not None and [s.name for s in bob.code.symbols_in(NAME, "src/refunds.py")] == [
        "refund"
    ]


def test_memories_stored_under_a_checkouts_path_move_to_the_projects_name(
    url: str, clones: tuple[Path, Path], tmp_path: Path
) -> None:
    before = service(url, tmp_path / "old", clones[0])
    before.store.add_memories(
        [memory("mem_00000000000000a1", DECISION, scope=Scope.PROJECT, project=str(clones[0]))]
    )
    before.close()
    alice = service(url, tmp_path / "alice-data", clones[0])
    bob = service(url, tmp_path / "bob-data", clones[1])
    try:
        # Alice's reads find it where it is, and move nothing; her next write moves it to the name
        assert [(m.id, m.project) for m in alice.list()] == [("mem_00000000000000a1", str(clones[0]))]
        assert bob.list() == []
        alice.remember("Refunds are logged", category="decision")
        assert {m.project for m in bob.list()} == {NAME}
        assert "mem_00000000000000a1" in {m.id for m in bob.list()}
    finally:
        alice.close()
        bob.close()


def test_the_repository_can_name_its_project(url: str, clones: tuple[Path, Path], tmp_path: Path) -> None:
    for clone in clones:
        git(clone, "config", "graphmem.project", "payments")
    alice = service(url, tmp_path / "alice-data", clones[0])
    bob = service(url, tmp_path / "bob-data", clones[1])
    try:
        alice.remember(DECISION, category="decision")
        assert [m.project for m in bob.list()] == ["payments"]
    finally:
        alice.close()
        bob.close()


def test_the_embedded_store_still_names_a_project_by_its_path(
    clones: tuple[Path, Path], tmp_path: Path
) -> None:
    alone = service(None, tmp_path / "kuzu", clones[0])
    try:
        assert alone.remember(DECISION, category="decision").memory.project == str(clones[0])
    finally:
        alone.close()
