"""ProjectNames on a team's store: a checkout's shared name is bound to the spelling the store
keeps (core.projects.stored_spelling), read again once PROJECT_SPELLING_TTL_S has passed; a
split's memories, and those kept under the checkout's path, are to move to it, never on a read
(``of`` writes nothing; reads see them through ``pending``) but at ``move_pending``, which a
role that may not write survives, and in a write (``writing``: a name resolved in it is moved
to before it is given); a name that is the checkout's path is never bound. On the in-memory
store, with git stood in for."""

from __future__ import annotations

import threading
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


def split(store: FakeGraphStore) -> None:
    """``FIRST`` kept first, ``SECOND`` later: a project split in two."""
    store.add_memories(
        [
            memory("a", scope=Scope.PROJECT, project=FIRST),
            memory("b", scope=Scope.PROJECT, project=SECOND, created_at=NOW.replace(year=2026)),
        ]
    )


def test_naming_a_split_project_moves_nothing_but_its_reads_see_both_spellings() -> None:
    store = FakeGraphStore(dimension=8)
    split(store)
    bound = names(store)

    assert bound.of(CHECKOUT) == FIRST
    assert projects(store) == {"a": FIRST, "b": SECOND}
    assert bound.pending(FIRST) == {SECOND, CHECKOUT}  # the path's (none here) and the other spelling's
    assert bound.pending(SECOND) == bound.pending(None) == frozenset()


def test_move_pending_moves_them_once() -> None:
    store = FakeGraphStore(dimension=8)
    split(store)
    bound = names(store)
    bound.of(CHECKOUT)

    assert bound.move_pending() == 1
    assert projects(store) == {"a": FIRST, "b": FIRST}
    assert bound.pending(FIRST) == frozenset()
    assert bound.move_pending() == 0


def test_a_name_resolved_in_a_write_has_its_memories_moved_to_it_before_it_is_given() -> None:
    store = FakeGraphStore(dimension=8)
    split(store)
    bound = names(store)

    with bound.writing():
        assert projects(store) == {"a": FIRST, "b": SECOND}  # nothing named yet: nothing to move
        assert bound.of(CHECKOUT) == FIRST
        assert projects(store) == {"a": FIRST, "b": FIRST}
    assert bound.pending(FIRST) == frozenset()


def test_a_write_starts_with_the_moves_a_read_left_pending() -> None:
    store = FakeGraphStore(dimension=8)
    split(store)
    bound = names(store)
    bound.of(CHECKOUT)  # a read

    with bound.writing():
        assert projects(store) == {"a": FIRST, "b": FIRST}


def test_a_read_on_another_thread_during_a_write_moves_nothing() -> None:
    store = FakeGraphStore(dimension=8)
    split(store)
    bound = names(store)
    named: list[str | None] = []

    with bound.writing():
        reader = threading.Thread(target=lambda: named.append(bound.of(CHECKOUT)))
        reader.start()
        reader.join()
        assert named == [FIRST]
        assert projects(store) == {"a": FIRST, "b": SECOND}
    assert bound.pending(FIRST) == {SECOND, CHECKOUT}


def test_a_checkouts_path_memories_are_its_names_till_moved() -> None:
    store = FakeGraphStore(dimension=8)
    store.add_memories([memory("a", scope=Scope.PROJECT, project=CHECKOUT)])  # from before project names
    bound = names(store, named=FIRST)

    assert bound.of(CHECKOUT) == FIRST
    assert projects(store) == {"a": CHECKOUT} and bound.pending(FIRST) == {CHECKOUT}
    assert bound.move_pending() == 1
    assert projects(store) == {"a": FIRST} and bound.pending(FIRST) == frozenset()


def test_a_role_that_may_not_write_binds_moves_nothing_and_still_sees_both(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = Refusing(StoreError("The PostgreSQL store at postgresql://bot@db/graphmem is read only"))
    split(store)
    bound = names(store)

    assert bound.of(CHECKOUT) == FIRST
    assert bound.move_pending() == 0
    assert projects(store) == {"a": FIRST, "b": SECOND}
    assert SECOND in bound.pending(FIRST)  # its reads still see them as the project's
    assert "stay till a writer moves them" in caplog.text
    caplog.clear()
    assert bound.move_pending() == 0 and caplog.text == ""  # not tried again till read again


def test_a_store_that_cannot_be_reached_fails_the_move_and_keeps_it_pending() -> None:
    store = Refusing(
        StoreUnavailableError("The PostgreSQL store at postgresql://db/graphmem cannot be reached")
    )
    split(store)
    bound = names(store)
    assert bound.of(CHECKOUT) == FIRST  # naming reads only

    with pytest.raises(StoreUnavailableError):
        bound.move_pending()
    assert SECOND in bound.pending(FIRST)


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
    assert bound.of(CHECKOUT) == SECOND and bound.pending(SECOND) == {CHECKOUT}  # as read a moment ago
    clock.now += 1
    assert bound.of(CHECKOUT) == FIRST
    assert bound.pending(FIRST) == {CHECKOUT, SECOND} and bound.pending(SECOND) == frozenset()
    bound.move_pending()
    assert projects(store) == {"a": FIRST, "b": FIRST}


def test_a_checkout_named_by_its_path_is_never_bound() -> None:
    store = FakeGraphStore(dimension=8)
    upper = CHECKOUT.replace("shop", "Shop")
    store.add_memories([memory("a", scope=Scope.PROJECT, project=upper)])

    bound = names(store, named=CHECKOUT)
    assert bound.of(CHECKOUT) == CHECKOUT
    assert bound.pending(CHECKOUT) == frozenset() and bound.move_pending() == 0
    assert projects(store) == {"a": upper}
