"""What the pgvector index of the PostgreSQL store does beyond the contract: the HNSW scan's
settings kept on each pooled connection, and the cosines of a search's hits answered from it."""

from __future__ import annotations

import numpy as np
import pytest
from support.records import memory
from support.stores import postgres_url

from graphmem.adapters.postgres_connection import POOL_MAX
from graphmem.adapters.postgres_store import EF_SEARCH_MIN, PostgresGraphStore
from graphmem.adapters.postgres_vectors import PgVectorIndex

DIM = 8
ACTIVE = {"active"}


@pytest.fixture
def store(request: pytest.FixtureRequest) -> PostgresGraphStore:
    opened = PostgresGraphStore(postgres_url(request), dimension=DIM)
    request.addfinalizer(opened.close)
    return opened


def _vectors(n: int, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


ASK = "SELECT current_setting('hnsw.ef_search', true)"


def test_a_statement_runs_under_the_settings_it_asks_for(store: PostgresGraphStore) -> None:
    for value in ("150", "40", "150", "150"):
        assert store._rows(ASK, settings={"hnsw.ef_search": value}) == [(value,)]


def test_settings_asked_for_in_a_transaction_that_rolls_back_are_not_taken_as_kept(
    store: PostgresGraphStore,
) -> None:
    for _ in range(POOL_MAX):
        store._rows(ASK, settings={"hnsw.ef_search": "150"})
    with pytest.raises(RuntimeError, match="undone"), store.transaction():
        assert store._rows(ASK, settings={"hnsw.ef_search": "120"}) == [("120",)]
        raise RuntimeError("undone")
    for _ in range(POOL_MAX):  # whichever pooled connection comes next: set again
        assert store._rows(ASK, settings={"hnsw.ef_search": "120"}) == [("120",)]


def test_a_search_finds_what_it_asks_for_past_the_scan_s_default_list(store: PostgresGraphStore) -> None:
    store.add_memories([memory(f"m{i:03d}") for i in range(EF_SEARCH_MIN + 20)], _vectors(EF_SEARCH_MIN + 20))
    found = store.nearest(_vectors(1, seed=9)[0], EF_SEARCH_MIN + 10, project=None, statuses=ACTIVE)
    assert len(found) == EF_SEARCH_MIN + 10


def test_the_cosines_of_a_search_s_hits_and_of_other_memories_are_the_database_s(
    store: PostgresGraphStore,
) -> None:
    ids = [f"m{i}" for i in range(12)]
    store.add_memories([memory(i) for i in ids], _vectors(12))
    index = PgVectorIndex(store, DIM)
    query = _vectors(1, seed=5)[0]
    hits = dict(index.search(query, 4, project=None, statuses=ACTIVE))

    found = index.similarities(query, ids)

    assert found.keys() == set(ids)
    assert {i: found[i] for i in hits} == hits
    assert found == pytest.approx(store.cosine(query, ids))
    other = query.copy()  # another query: nothing of the last search is reused
    assert index.similarities(other, list(hits)) == pytest.approx(store.cosine(other, list(hits)))
