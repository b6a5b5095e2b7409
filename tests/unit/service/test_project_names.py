"""ProjectNames on a team's store: a checkout's shared name is bound to the spelling the store
keeps (core.projects.stored_spelling), read again once PROJECT_SPELLING_TTL_S has passed; a
split's memories move to it, but a role that may not write still gets its answer; a name that
is the checkout's path is never bound. On the in-memory store, with git stood in for."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import cast

import pytest
from support.records import NOW, memory

from graphmem.adapters.fake_store import FakeGraphStore
from graphmem.core.models import Scope
from graphmem.errors import StoreError, StoreUnavailableError
from graphmem.service.mentions import Mentions
from graphmem.service.project_names import PROJECT_SPELLING_TTL_S, ProjectNames
from graphmem.service.semantic import SemanticIndex
from graphmem.service.writer import MemoryWriter

CHECKOUT = "/home/bob/code/shop"
FIRST, SECOND = "github.com/Acme/Shop", "github.com/acme/shop"


class Remotes:
    """The ``ProjectRoots`` port: each checkout named as ``names`` says (its path otherwise)."""

    def __init__(self, names: Mapping[str, str]) -> None:
        self.names = dict(names)

    def project_root(self, path: Path) -> Path | None:
        return path

    def project_name(self, root: Path) -> str:
        return self.names.get(str(root), str(root))

    def checkout(self, project: str) -> Path | None:
        return None

    def local_branches(self, project: str) -> frozenset[str] | None:
        return None


class Refusing(FakeGraphStore):
    """A store whose memories cannot be changed, as ``refusal`` says (a read-only role, a server gone)."""

    def __init__(self, refusal: StoreError) -> None:
        super().__init__(dimension=8)
        self.refusal = refusal

    def update_memory(self, memory_id: str, changes: Mapping[str, object]) -> None:
        raise self.refusal


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def names(store: FakeGraphStore, clock: Clock | None = None, *, named: str = SECOND) -> ProjectNames:
    writer = MemoryWriter(store, cast(SemanticIndex, None), Mentions(None, lambda project: None))
    return ProjectNames(Remotes({CHECKOUT: named}), writer, monotonic=clock or Clock())


def projects(store: FakeGraphStore) -> dict[str, str | None]:
    return {m.id: m.project for m in store.all_memories()}


def test_a_role_that_may_not_write_binds_and_moves_nothing() -> None:
    store = Refusing(StoreError("The PostgreSQL store at postgresql://bot@db/graphmem is read only"))
    store.add_memories(
        [
            memory("a", scope=Scope.PROJECT, project=FIRST),
            memory("b", scope=Scope.PROJECT, project=SECOND, created_at=NOW.replace(year=2026)),
        ]
    )

    assert names(store).of(CHECKOUT) == FIRST
    assert projects(store) == {"a": FIRST, "b": SECOND}


def test_a_store_that_cannot_be_reached_fails_the_call() -> None:
    store = Refusing(
        StoreUnavailableError("The PostgreSQL store at postgresql://db/graphmem cannot be reached")
    )
    store.add_memories(
        [
            memory("a", scope=Scope.PROJECT, project=FIRST),
            memory("b", scope=Scope.PROJECT, project=SECOND, created_at=NOW.replace(year=2026)),
        ]
    )

    with pytest.raises(StoreUnavailableError):
        names(store).of(CHECKOUT)


def test_the_stored_spelling_is_read_again_once_its_time_is_up() -> None:
    store, clock = FakeGraphStore(dimension=8), Clock()
    bound = names(store, clock)
    assert bound.of(CHECKOUT) == SECOND  # the store keeps no spelling yet
    store.add_memories(  # another clone wrote first, at the same moment
        [
            memory("a", scope=Scope.PROJECT, project=FIRST, created_at=NOW.replace(year=2024)),
            memory("b", scope=Scope.PROJECT, project=SECOND),
        ]
    )

    clock.now += PROJECT_SPELLING_TTL_S - 1
    assert bound.of(CHECKOUT) == SECOND and projects(store)["b"] == SECOND  # as read a moment ago
    clock.now += 1
    assert bound.of(CHECKOUT) == FIRST
    assert projects(store) == {"a": FIRST, "b": FIRST}


def test_a_checkout_named_by_its_path_is_never_bound() -> None:
    store = FakeGraphStore(dimension=8)
    upper = CHECKOUT.replace("shop", "Shop")
    store.add_memories([memory("a", scope=Scope.PROJECT, project=upper)])

    assert names(store, named=CHECKOUT).of(CHECKOUT) == CHECKOUT
    assert projects(store) == {"a": upper}
