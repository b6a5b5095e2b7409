"""What the pgvector index of the PostgreSQL store does beyond the contract: the HNSW scan's
settings kept on each pooled connection, the cosines of a search's hits answered from it, and
an import into a new store building the index once at its end."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import psycopg
import pytest
from support.records import memory
from support.stores import opened_postgres, postgres_url

from graphmem.adapters import postgres_embeddings
from graphmem.adapters.postgres_connection import POOL_MAX
from graphmem.adapters.postgres_embeddings import BULK_ROWS_MIN, EF_SEARCH_MIN, REBUILD_RATIO
from graphmem.adapters.postgres_store import PostgresGraphStore
from graphmem.adapters.postgres_vector_parts import ALL_INDEXED, PART_OF_NAMES, VECTOR_INDEXES, drop_indexes
from graphmem.adapters.postgres_vectors import PgVectorIndex
from graphmem.core.models import Scope, Status
from graphmem.core.ports import VectorQuery

DIM = 8
ACTIVE = frozenset({"active"})


@pytest.fixture
def store(request: pytest.FixtureRequest) -> PostgresGraphStore:
    return opened_postgres(postgres_url(request), request, DIM)


def _vectors(n: int, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


ASK = "SELECT current_setting('hnsw.ef_search', true)"


def test_a_statement_runs_under_the_settings_it_asks_for(store: PostgresGraphStore) -> None:
    for value in ("150", "40", "150", "150"):
        assert store.db.rows(ASK, settings={"hnsw.ef_search": value}) == [(value,)]


def test_settings_asked_for_in_a_transaction_that_rolls_back_are_not_taken_as_kept(
    store: PostgresGraphStore,
) -> None:
    for _ in range(POOL_MAX):
        store.db.rows(ASK, settings={"hnsw.ef_search": "150"})
    with pytest.raises(RuntimeError, match="undone"), store.transaction():
        assert store.db.rows(ASK, settings={"hnsw.ef_search": "120"}) == [("120",)]
        raise RuntimeError("undone")
    for _ in range(POOL_MAX):  # whichever pooled connection comes next: set again
        assert store.db.rows(ASK, settings={"hnsw.ef_search": "120"}) == [("120",)]


def test_a_search_finds_what_it_asks_for_past_the_scan_s_default_list(store: PostgresGraphStore) -> None:
    store.add_memories([memory(f"m{i:03d}") for i in range(EF_SEARCH_MIN + 20)], _vectors(EF_SEARCH_MIN + 20))
    found = store.vectors.nearest(
        VectorQuery(_vectors(1, seed=9)[0], EF_SEARCH_MIN + 10, project=None, statuses=ACTIVE)
    )
    assert len(found) == EF_SEARCH_MIN + 10


def test_a_search_in_a_project_sees_the_memories_of_its_aliases(store: PostgresGraphStore) -> None:
    """``VectorQuery.aliases``: names the project's memories are still kept under."""
    store.add_memories(
        [
            memory("g"),
            memory("a", scope=Scope.PROJECT, project="github.com/acme/shop"),
            memory("b", scope=Scope.PROJECT, project="github.com/Acme/Shop"),
            memory("o", scope=Scope.PROJECT, project="/src/other"),
        ],
        _vectors(4),
    )
    alone = VectorQuery(_vectors(1, seed=9)[0], 10, "github.com/Acme/Shop", ACTIVE)
    aliased = replace(alone, aliases=frozenset({"github.com/acme/shop"}))

    assert {i for i, _ in store.vectors.nearest(aliased)} == {"g", "a", "b"}
    assert {i for i, _ in store.vectors.nearest(alone)} == {"g", "b"}


@pytest.mark.parametrize("project", [None, "/src/shop"], ids=["global", "of-a-project"])
def test_a_vector_of_a_status_graphmem_never_writes_is_searched_as_the_archived_one_it_is_read_as(
    store: PostgresGraphStore, project: str | None
) -> None:
    """A row written by hand (``psql``) of status "bogus" is read as archived (``record_rows``):
    a search of every status (``recall --history``) or of the archived finds it, of the current
    ones never."""
    scope = Scope.GLOBAL if project is None else Scope.PROJECT
    store.add_memories([memory(m, scope=scope, project=project) for m in ("active", "by-hand")], _vectors(2))
    store.update_memory("by-hand", {"status": "bogus"})
    query = VectorQuery(_vectors(1, seed=9)[0], 10, project, ACTIVE)

    def found(statuses: frozenset[str]) -> list[str]:
        return sorted(i for i, _ in store.vectors.nearest(replace(query, statuses=statuses)))

    assert found(ACTIVE) == ["active"]
    assert found(frozenset({"archived"})) == ["by-hand"]
    assert found(frozenset(s.value for s in Status)) == ["active", "by-hand"]


def test_the_cosines_of_a_search_s_hits_and_of_other_memories_are_the_database_s(
    store: PostgresGraphStore,
) -> None:
    ids = [f"m{i}" for i in range(12)]
    store.add_memories([memory(i) for i in ids], _vectors(12))
    index = PgVectorIndex(store, DIM)
    query = _vectors(1, seed=5)[0]
    hits = dict(index.search(VectorQuery(query, 4, project=None, statuses=ACTIVE)))

    found = index.similarities(query, ids)

    assert found.keys() == set(ids)
    assert {i: found[i] for i in hits} == hits
    assert found == pytest.approx(store.vectors.cosine(query, ids))
    other = query.copy()  # another query: nothing of the last search is reused
    assert index.similarities(other, list(hits)) == pytest.approx(store.vectors.cosine(other, list(hits)))


# -- an import into a new store: the HNSW index built once at the end ---------------------------


def _indexed(store: PostgresGraphStore) -> bool:
    """Whether the vectors have their index, every part of it (postgres_vector_parts.py)."""
    return bool(store.db.rows(f"SELECT {ALL_INDEXED}")[0][0])


def _add(store: PostgresGraphStore, n: int, prefix: str = "m") -> None:
    store.add_memories([memory(f"{prefix}{i:05d}") for i in range(n)], _vectors(n))


def test_an_import_into_a_new_store_builds_the_vector_index_once_at_its_end(
    store: PostgresGraphStore,
) -> None:
    with store.vectors.vector_index_put_off(BULK_ROWS_MIN):
        assert not _indexed(store)
        _add(store, BULK_ROWS_MIN)
        # Searches go on meanwhile (exact).
        assert len(store.vectors.nearest(VectorQuery(_vectors(1)[0], 5, project=None, statuses=ACTIVE))) == 5
    assert _indexed(store)
    built = store.db.rows(
        "SELECT c.relname, i.indisvalid, a.amname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "JOIN pg_am a ON a.oid = c.relam WHERE c.relname LIKE 'memories_embedding%' ORDER BY c.relname"
    )
    assert built == sorted((part.name, True, "hnsw") for part in VECTOR_INDEXES)


def test_an_import_into_a_new_store_leaves_the_word_statistics_of_its_memories_read(
    store: PostgresGraphStore,
) -> None:
    with store.vectors.vector_index_put_off(BULK_ROWS_MIN):
        store.add_memories([memory(f"m{i:05d}", f"kafka lag note {i}") for i in range(BULK_ROWS_MIN)])
    stats = store.text._read_stats()
    assert not stats.counted and stats.shares.get("kafka") == pytest.approx(1.0)


def test_an_import_inside_a_load_that_put_the_index_off_leaves_it_to_that_load(
    store: PostgresGraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions: list[int] = []
    session = store.db.session

    def counted() -> object:
        sessions.append(1)
        return session()

    monkeypatch.setattr(store.db, "session", counted)
    with store.vectors.vector_index_put_off(3 * BULK_ROWS_MIN):  # a load of three files, say
        with store.vectors.vector_index_put_off(BULK_ROWS_MIN):  # its first file's import
            _add(store, BULK_ROWS_MIN)
        assert not _indexed(store)  # built once, at the load's end
    assert _indexed(store)
    assert len(sessions) == 1  # the file's import took no connection of its own to hold


def test_a_failed_import_leaves_the_vector_index_in_place(store: PostgresGraphStore) -> None:
    with pytest.raises(RuntimeError, match="broke"), store.vectors.vector_index_put_off(BULK_ROWS_MIN):
        _add(store, 10)
        raise RuntimeError("broke")
    assert _indexed(store)


def test_a_small_import_or_a_store_holding_many_times_its_vectors_keeps_its_index(
    store: PostgresGraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    with store.vectors.vector_index_put_off(BULK_ROWS_MIN - 1):
        assert _indexed(store)
    monkeypatch.setattr(postgres_embeddings, "BULK_ROWS_MIN", 10)  # a store of 80 stands for 8,000
    _add(store, 10 * REBUILD_RATIO)
    with store.vectors.vector_index_put_off(10):
        assert _indexed(store)  # inserting 10 rows costs less than building 90
    with store.vectors.vector_index_put_off(11):
        assert not _indexed(store)  # the next file of a store being loaded: built again at its end
        _add(store, 11, prefix="n")
    assert _indexed(store)
    assert len(store.vectors.nearest(VectorQuery(_vectors(1)[0], 100, project=None, statuses=ACTIVE))) == 91


def test_a_store_opened_during_the_import_leaves_the_index_to_it_but_one_opened_after_builds_it(
    store: PostgresGraphStore, request: pytest.FixtureRequest
) -> None:
    url = store.where  # the test server's: no password to leave out
    with store.vectors.vector_index_put_off(BULK_ROWS_MIN):
        assert not _indexed(opened_postgres(url, request, DIM))
    store.db.run(drop_indexes())  # as an import that died would leave it
    assert _indexed(opened_postgres(url, request, DIM))


def test_a_role_that_does_not_own_the_table_imports_with_the_index_in_place(
    store: PostgresGraphStore, request: pytest.FixtureRequest
) -> None:
    url = store.where  # the test server's: no password to leave out
    with psycopg.connect(store.db._conninfo, autocommit=True) as conn:
        conn.execute("CREATE ROLE graphmem_writer NOLOGIN")  # docs/team.md's writer role
        conn.execute("GRANT USAGE ON SCHEMA public TO graphmem_writer")
        conn.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO graphmem_writer")
        conn.execute("GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO graphmem_writer")
        conn.execute("CREATE ROLE dev LOGIN IN ROLE graphmem_writer")
    writer = opened_postgres(url.replace("postgres@", "dev@"), request, DIM)
    with writer.vectors.vector_index_put_off(BULK_ROWS_MIN):
        assert _indexed(writer)
        _add(writer, 20)
    assert len(writer.vectors.nearest(VectorQuery(_vectors(1)[0], 5, project=None, statuses=ACTIVE))) == 5


# -- the index in parts (schema 19, postgres_vector_parts.py) -----------------------------------


def _by_part(store: PostgresGraphStore, prefix: str) -> list[list[str]]:
    """64 project names, those of each part of the index together (as the server puts them)."""
    names = [f"/src/{prefix}-{i}" for i in range(64)]
    parts: dict[int, list[str]] = {}
    for name, part in store.db.rows(PART_OF_NAMES, (names,)):
        parts.setdefault(int(part), []).append(str(name))
    return list(parts.values())


def _in_parts(store: PostgresGraphStore, count: int, prefix: str) -> list[str]:
    """``count`` project names, each in a part of the index none of the others is in."""
    firsts = [names[0] for names in _by_part(store, prefix)]
    assert len(firsts) >= count
    return firsts[:count]


def test_a_project_that_is_a_small_share_of_the_store_is_searched_whole_in_its_own_part(
    store: PostgresGraphStore, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pgvector filters an HNSW scan after its walk and stops after ``hnsw.max_scan_tuples``
    rows: under one index for every memory, a project's memories that another project's crowd
    out near the question were found short. (Its part's scan, not its memories read whole.)"""
    monkeypatch.setattr(postgres_embeddings, "READ_WHOLE_MAX", 0)
    small, big = _in_parts(store, 2, "crowded")
    query = _vectors(1, seed=9)[0]
    near = query + 0.05 * _vectors(300, seed=4)  # the other project's: all nearer the question
    far = -query + 0.05 * _vectors(10, seed=5)
    store.add_memories(
        [memory(f"b{i:03d}", scope=Scope.PROJECT, project=big) for i in range(300)]
        + [memory(f"s{i:03d}", scope=Scope.PROJECT, project=small) for i in range(10)],
        np.concatenate([near, far]).astype(np.float32),
    )
    with psycopg.connect(store.db._conninfo, autocommit=True) as conn:  # the index or nothing
        database = conn.execute("SELECT current_database()").fetchone()[0]  # type: ignore[index]
        for setting in ("enable_seqscan = off", "enable_sort = off", "hnsw.max_scan_tuples = 20"):
            conn.execute(f'ALTER DATABASE "{database}" SET {setting}')
    scanned = opened_postgres(store.where, request, DIM)  # new connections, with those settings

    found = scanned.vectors.nearest(VectorQuery(query, 10, small, ACTIVE))

    assert sorted(i for i, _ in found) == [f"s{i:03d}" for i in range(10)]


def test_a_store_that_forgets_the_parts_it_knew_asks_for_every_name_of_a_search_again(
    store: PostgresGraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postgres_embeddings, "KNOWN_PARTS_MAX", 2)
    a, b, c = _in_parts(store, 3, "known")
    store.add_memories([memory(n, scope=Scope.PROJECT, project=n) for n in (a, b, c)], _vectors(3))

    def found(name: str, *more: str) -> list[str]:
        query = VectorQuery(_vectors(1, seed=9)[0], 10, name, ACTIVE, aliases=frozenset(more))
        return sorted(i for i, _ in store.vectors.nearest(query))

    # the last: one name known, one new past the bound
    assert [found(a), found(b), found(a, c)] == [[a], [b], sorted([a, c])]


def _sharing_a_part(store: PostgresGraphStore, prefix: str) -> tuple[str, str]:
    """Two project names in one part of the index."""
    small, big = next(names[:2] for names in _by_part(store, prefix) if len(names) >= 2)
    return small, big


def _crowded(store: PostgresGraphStore, request: pytest.FixtureRequest) -> tuple[PostgresGraphStore, str]:
    """A store whose small project shares its part with a big one whose 300 memories are all
    nearer the question, with ten global memories, further than the small project's, to fill an
    answer; opened again with only the index to scan and ``hnsw.max_scan_tuples`` 20. The query
    asks for the small project."""
    small, big = _sharing_a_part(store, "shared")
    query = _vectors(1, seed=9)[0]
    near = query + 0.05 * _vectors(300, seed=4)
    mine = query + 0.6 * _vectors(10, seed=5)
    far = -query + 0.05 * _vectors(10, seed=6)
    store.add_memories(
        [memory(f"b{i:03d}", scope=Scope.PROJECT, project=big) for i in range(300)]
        + [memory(f"s{i:03d}", scope=Scope.PROJECT, project=small) for i in range(10)]
        + [memory(f"g{i:03d}") for i in range(10)],
        np.concatenate([near, mine, far]).astype(np.float32),
    )
    with psycopg.connect(store.db._conninfo, autocommit=True) as conn:  # the index or nothing
        database = conn.execute("SELECT current_database()").fetchone()[0]  # type: ignore[index]
        for setting in ("enable_seqscan = off", "hnsw.max_scan_tuples = 20"):
            conn.execute(f'ALTER DATABASE "{database}" SET {setting}')
    return opened_postgres(store.where, request, DIM), small


def test_a_project_of_few_memories_in_the_part_of_a_large_one_is_read_whole(
    store: PostgresGraphStore, request: pytest.FixtureRequest
) -> None:
    """Its part's scan would stop short at ``hnsw.max_scan_tuples`` (the global memories filling
    the answer all the same): its memories, few, are read whole instead."""
    scanned, small = _crowded(store, request)

    found = scanned.vectors.nearest(VectorQuery(_vectors(1, seed=9)[0], 10, small, ACTIVE))

    assert sorted(i for i, _ in found) == [f"s{i:03d}" for i in range(10)]
    assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)


def test_a_project_of_more_memories_than_are_read_whole_is_searched_in_its_part(
    store: PostgresGraphStore, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postgres_embeddings, "READ_WHOLE_MAX", 9)
    scanned, small = _crowded(store, request)

    found = scanned.vectors.nearest(VectorQuery(_vectors(1, seed=9)[0], 10, small, ACTIVE))

    assert len(found) == 10
    assert sum(i.startswith("s") for i, _ in found) < 10  # what its part's scan found, the rest global
    assert not any(i.startswith("b") for i, _ in found)


def test_a_project_whose_alias_is_in_another_part_is_searched_in_both(store: PostgresGraphStore) -> None:
    name, alias, other = _in_parts(store, 3, "moved")
    store.add_memories(
        [
            memory("g"),
            memory("a", scope=Scope.PROJECT, project=alias),
            memory("n", scope=Scope.PROJECT, project=name),
            memory("o", scope=Scope.PROJECT, project=other),
        ],
        _vectors(4),
    )
    query = VectorQuery(_vectors(1, seed=9)[0], 10, name, ACTIVE, aliases=frozenset({alias}))

    assert sorted(i for i, _ in store.vectors.nearest(query)) == ["a", "g", "n"]
    assert sorted(i for i, _ in store.vectors.nearest(replace(query, project=None))) == ["g"]


def test_a_large_project_is_counted_once_in_a_while_not_at_every_search(
    store: PostgresGraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postgres_embeddings, "READ_WHOLE_MAX", 2)
    large, again = _in_parts(store, 2, "large")
    store.add_memories(
        [
            memory(f"{n}{i}", scope=Scope.PROJECT, project=name)
            for n, name in (("l", large), ("a", again))
            for i in range(3)
        ],
        _vectors(6),
    )
    sent: list[tuple[str, bool]] = []
    rows = store.db.rows

    def spied(sql: str, *args: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
        sent.append((sql, kwargs.get("planned_each_time", False)))
        return rows(sql, *args, **kwargs)

    monkeypatch.setattr(store.db, "rows", spied)

    def counted(name: str) -> bool:
        assert len(store.vectors.nearest(VectorQuery(_vectors(1, seed=9)[0], 10, name, ACTIVE))) == 3
        sql, planned_each_time = sent[-1]
        assert sql.startswith("SELECT")  # read again on a dropped connection (PostgresConnection.rows)
        assert planned_each_time == ("WITH size" in sql)  # never on a generic plan, made for no project
        return "WITH size" in sql

    assert [counted(large), counted(large), counted(large)] == [True, False, False]
    monkeypatch.setattr(postgres_embeddings, "LARGE_KEPT_S", -1.0)  # known large no longer than that
    assert [counted(again), counted(again)] == [True, True]
