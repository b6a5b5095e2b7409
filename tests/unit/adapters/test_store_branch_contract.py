"""The branch part of the store contract: a memory written on a branch is seen on that branch only
(``Visibility.branch``, ``all_branches``) in every read that filters (list, full-text search,
near-duplicate matches, vectors), ``branch_memories`` finds it, and a changed branch reads
back -- on Kùzu, the in-memory fake and PostgreSQL alike."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from support.records import memory
from support.stores import STORES, new_kuzu, open_store

from graphmem.adapters.kuzu_store import KuzuGraphStore
from graphmem.core.branches import place
from graphmem.core.models import Scope, Status
from graphmem.core.ports import GraphStore, Visibility

DIM = 8
SHOP = "/src/shop"
CURRENT = frozenset({Status.ACTIVE, Status.RESOLVED})


def on(project: str, branch: str) -> dict[str, object]:
    return {"scope": Scope.PROJECT, "project": project, "branch": branch}


@pytest.fixture(params=sorted(STORES))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[GraphStore]:
    opened = open_store(request.param, tmp_path, request, DIM)
    opened.add_memories(
        [
            memory("g", "refund fee rules everywhere"),
            memory("p", "refund fee on main", scope=Scope.PROJECT, project=SHOP),
            memory("f", "refund fee on the feature", **on(SHOP, "feature/fees")),
            memory("u", "refund fee ünïcode", **on(SHOP, "fix/überweisung")),
            memory("o", "refund fee elsewhere", **on("/src/other", "feature/fees")),
        ]
    )
    yield opened
    opened.close()


def seen(store: GraphStore, visibility: Visibility) -> set[str]:
    listed = {r.id for r in store.list_memories(visibility, limit=50)}
    searched = {i for i, _ in store.search_text("refund fee", visibility, 50)}
    matched = {m.id for m in store.text_matches("refund fee", visibility, 50)}
    assert listed == searched == matched, "list, search_text and text_matches disagree"
    return listed


def test_the_default_branch_sees_no_memory_of_a_branch(store: GraphStore) -> None:
    assert seen(store, Visibility(SHOP, CURRENT)) == {"g", "p"}


def test_a_branch_sees_its_own_memories_and_the_projects(store: GraphStore) -> None:
    assert seen(store, Visibility(SHOP, CURRENT, branch="feature/fees")) == {"g", "p", "f"}
    assert seen(store, Visibility(SHOP, CURRENT, branch="fix/überweisung")) == {"g", "p", "u"}
    assert seen(store, Visibility(SHOP, CURRENT, branch="feature/other")) == {"g", "p"}


def test_all_branches_sees_every_branch_of_the_project_only(store: GraphStore) -> None:
    assert seen(store, Visibility(SHOP, CURRENT, all_branches=True)) == {"g", "p", "f", "u"}


def test_text_matches_carry_the_branch(store: GraphStore) -> None:
    found = store.text_matches("refund fee", Visibility(SHOP, CURRENT, branch="feature/fees"), 10)

    assert {m.id: m.branch for m in found} == {"g": None, "p": None, "f": "feature/fees"}


def test_a_memory_reads_back_with_its_branch(store: GraphStore) -> None:
    found = store.get_memories(["f", "p"])

    assert (found["f"].branch, found["p"].branch) == ("feature/fees", None)


def test_branch_memories_are_the_current_ones_of_a_project_and_branch(store: GraphStore) -> None:
    store.update_memory("u", {"status": Status.ARCHIVED})

    assert [r.id for r in store.branch_memories(SHOP, None, 10)] == ["f"]
    assert {r.id for r in store.branch_memories(None, "feature/fees", 10)} == {"f", "o"}
    assert [r.id for r in store.branch_memories(SHOP, "feature/fees", 10)] == ["f"]
    assert store.branch_memories(SHOP, "feature/none", 10) == []


def test_a_memory_that_leaves_its_branch_is_seen_everywhere_at_once(store: GraphStore) -> None:
    store.update_memory("f", {"branch": None})

    assert seen(store, Visibility(SHOP, CURRENT)) == {"g", "p", "f"}
    assert store.get_memories(["f"])["f"].branch is None
    assert store.branch_memories(SHOP, "feature/fees", 10) == []


def test_vectors_are_stored_by_place(store: GraphStore) -> None:
    store.set_embeddings(["p", "f"], np.eye(DIM, dtype=np.float32)[:2])
    stored = store.load_vectors()

    assert dict(zip(stored.ids, stored.projects, strict=True)) == {
        "p": SHOP,
        "f": place(SHOP, "feature/fees"),
    }


def test_a_schema_7_kuzu_store_opens_and_its_memories_are_on_no_branch(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    old = new_kuzu(tmp_path / "data", request, DIM)
    old.add_memories([memory("m1", "kept across the migration", scope=Scope.PROJECT, project=SHOP)])
    old.db.run("ALTER TABLE Memory DROP branch")  # a store written before branches existed
    old.set_meta("schema_version", "7")
    old.close()

    store = KuzuGraphStore(tmp_path / "data", dimension=DIM)
    try:
        assert store.get_meta("schema_version") == "14"
        assert store.get_memories(["m1"])["m1"].branch is None
        assert [i for i, _ in store.search_text("migration", Visibility(SHOP, CURRENT), 5)] == ["m1"]
        store.add_memories([memory("m2", "written after", scope=Scope.PROJECT, project=SHOP, branch="b")])
        assert store.get_memories(["m2"])["m2"].branch == "b"
    finally:
        store.close()
