"""The ``GraphStore`` contract for a status or a category graphmem never writes, run against every
store: a team's store takes rows written by hand (``psql``, a script, a newer graphmem), and such a
value is filtered as it is read (``adapters/record_rows.py``: a status as archived, a category as
a fact), so ``list --status archived`` finds what ``show`` calls archived, and what asks current
memories only never does.

The value is written as a store takes it, through ``update_memory``: PostgreSQL and Kùzu keep it
as it is, the fake as a read gives it back (``adapters/fake_rows.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from support.records import memory
from support.stores import STORES, open_store

from graphmem.core.models import CURRENT_STATUSES, Category, Scope, Status
from graphmem.core.ports import GraphStore, Visibility

DIM = 8
PROJECT = "/src/shop"
HAND = "mem_0000000000000bad"
ARCHIVED = "mem_00000000000000a0"
ACTIVE = "mem_00000000000000ac"
TEXT = "Always deploy the ledger service on Fridays"
# Values graphmem never writes: a word, another case of one of its own, a length no column of its holds.
NOT_GRAPHMEMS = ["bogus", "Active", "x" * 100_000]


@pytest.fixture(params=sorted(STORES))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[GraphStore]:
    opened = open_store(request.param, tmp_path, request, DIM)
    yield opened
    opened.close()


def by_hand(store: GraphStore, **columns: object) -> None:
    """``HAND``, a project directive, with ``columns`` as a row written by hand holds them; beside
    it an archived memory and an active one of the project."""
    placed = {"scope": Scope.PROJECT, "project": PROJECT}
    store.add_memories(
        [
            memory(HAND, TEXT, category=Category.DIRECTIVE, **placed),
            memory(ARCHIVED, f"{TEXT} (archived)", status=Status.ARCHIVED, **placed),
            memory(ACTIVE, f"{TEXT} (active)", **placed),
        ],
        np.eye(3, DIM, dtype=np.float32),
    )
    store.update_memory(HAND, columns)


def listed(store: GraphStore, visibility: Visibility) -> set[str]:
    return {m.id for m in store.list_memories(visibility, limit=10)}


@pytest.mark.parametrize("status", NOT_GRAPHMEMS, ids=["word", "case", "long"])
def test_a_status_graphmem_never_writes_is_listed_as_the_archived_status_it_is_read_as(
    store: GraphStore, status: str
) -> None:
    by_hand(store, status=status)

    assert store.get_memories([HAND])[HAND].status is Status.ARCHIVED
    assert listed(store, Visibility(PROJECT, frozenset({Status.ARCHIVED}))) == {HAND, ARCHIVED}
    assert listed(store, Visibility(PROJECT, CURRENT_STATUSES)) == {ACTIVE}
    assert listed(store, Visibility(PROJECT, frozenset(Status))) == {HAND, ARCHIVED, ACTIVE}


def test_a_status_graphmem_never_writes_is_found_by_a_search_of_the_archived_only(
    store: GraphStore,
) -> None:
    by_hand(store, status="bogus")

    archived = {
        i
        for i, _ in store.search_text("ledger Fridays", Visibility(PROJECT, frozenset({Status.ARCHIVED})), 10)
    }
    current = {i for i, _ in store.search_text("ledger Fridays", Visibility(PROJECT, CURRENT_STATUSES), 10)}

    assert (archived, current) == ({HAND, ARCHIVED}, {ACTIVE})


def test_a_category_graphmem_never_writes_is_listed_as_the_fact_it_is_read_as(store: GraphStore) -> None:
    by_hand(store, category="Directive")
    everything = frozenset(Status)

    assert store.get_memories([HAND])[HAND].category is Category.FACT
    assert HAND in listed(store, Visibility(PROJECT, everything, frozenset({Category.FACT})))
    assert HAND not in listed(store, Visibility(PROJECT, everything, frozenset({Category.DIRECTIVE})))
    assert HAND in listed(store, Visibility(PROJECT, everything, frozenset(Category)))


def test_a_vector_of_a_status_graphmem_never_writes_is_loaded_with_the_status_it_is_read_as(
    store: GraphStore,
) -> None:
    by_hand(store, status="bogus")

    loaded = store.load_vectors()

    assert dict(zip(loaded.ids, loaded.statuses, strict=True))[HAND] == Status.ARCHIVED.value
