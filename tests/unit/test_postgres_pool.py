"""The pool of the tests' PostgreSQL databases (``support/postgres.py``, ``lend_database`` and
``give_back``, which ``support.stores.postgres_url`` uses): a database given back is lent again
only as its template's fresh copy would be, with nothing of the test before it."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import psycopg
import pytest
from support.postgres import PostgresServer
from support.postgres_reset import FINGERPRINT
from support.records import memory
from support.stores import MIGRATED, opened_template, postgres_url, writer_role

from graphmem.adapters.postgres_store import PostgresGraphStore
from graphmem.adapters.postgres_vector_parts import ALL_INDEXED
from graphmem.core.models import Entity, EntityKind

DIM = 8


def state(url: str) -> dict[str, Any]:
    """What a test could read of the database at ``url`` besides graphmem's own calls: its
    fingerprint, every table's rows, the sequences' next values and the planner's statistics."""
    with psycopg.connect(url, autocommit=True) as conn:
        tables = [
            row[0]
            for row in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()
        ]
        found: dict[str, Any] = {
            "fingerprint": conn.execute(FINGERPRINT).fetchone(),
            "rows": {t: sorted(map(repr, conn.execute(f"SELECT * FROM {t}").fetchall())) for t in tables},
            "stats": conn.execute(
                "SELECT tablename, attname FROM pg_stats WHERE schemaname = 'public' ORDER BY 1, 2"
            ).fetchall(),
            "tuples": conn.execute(
                "SELECT relname, reltuples FROM pg_class WHERE relnamespace = 'public'::regnamespace "
                "ORDER BY 1"
            ).fetchall(),
        }
        # Read last: nextval moves the sequences it reads.
        found["next"] = conn.execute(
            "SELECT sequencename, nextval(format('%I.%I', schemaname, sequencename)) FROM pg_sequences "
            "ORDER BY 1"
        ).fetchall()
    return found


def used(url: str) -> None:
    """Store what a test of the store would: memories with vectors (the column sized, its index
    built), entities and links, a meta value, the planner's statistics gathered."""
    store = PostgresGraphStore(url, dimension=DIM)
    try:
        rng = np.random.default_rng(1)
        vectors = rng.standard_normal((30, DIM)).astype(np.float32)
        store.add_memories([memory(f"m{i}", f"deploy the service step {i}") for i in range(30)], vectors)
        store.upsert_entities([Entity("project:p", EntityKind.PROJECT, "p")])
        store.link_about([("m0", Entity("project:p", EntityKind.PROJECT, "p"))])
        store.set_meta("embedding_model", "left-behind")
        store.db.run("ANALYZE")
    finally:
        store.close()


def fresh_state(server: PostgresServer) -> dict[str, Any]:
    """The ``state`` of a fresh copy of the migrated template: what a database lent again must be."""
    fresh = server.new_database(MIGRATED)
    try:
        return state(fresh)
    finally:
        server.drop_database(fresh)


def test_a_database_given_back_is_lent_again_as_a_fresh_copy_of_its_template(
    postgres_server: PostgresServer,
) -> None:
    expected = fresh_state(postgres_server)
    url = postgres_server.lend_database(MIGRATED)
    used(url)
    assert state(url) != expected  # what the reset must undo
    left_open = psycopg.connect(url)  # a connection the test forgot: ended, not waited for
    postgres_server.give_back(url)
    assert left_open.closed or left_open.broken or _ended(left_open)

    again = postgres_server.lend_database(MIGRATED)
    try:
        assert again == url  # lent again, not a new copy
        assert state(again) == expected
    finally:
        postgres_server.give_back(again)


def test_a_database_whose_connections_a_test_ended_is_lent_again_as_a_fresh_copy(
    postgres_server: PostgresServer,
) -> None:
    """A test that ends every connection to its database (as a server dropping them would) ends
    the one the pool keeps to empty it too: the database is emptied over a new one, not dropped."""
    expected = fresh_state(postgres_server)
    url = postgres_server.lend_database(MIGRATED)
    postgres_server.give_back(url)  # emptied once: the pool keeps a connection to it
    assert postgres_server.lend_database(MIGRATED) == url
    used(url)
    with psycopg.connect(url, autocommit=True) as conn:
        others = (
            "FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() "
            "AND backend_type = 'client backend'"
        )
        # The store's connections closed, but their server processes may not have exited yet on
        # a loaded machine (two ended, not one): they are waited for, the pool's own stays.
        deadline = time.monotonic() + 30
        while conn.execute(f"SELECT count(*) {others}").fetchone() != (1,) and time.monotonic() < deadline:
            time.sleep(0.01)
        ended = conn.execute(f"SELECT pg_terminate_backend(pid) {others}").fetchall()
    assert ended == [(True,)]  # the pool's own (an autovacuum worker on it is not a connection)
    postgres_server.give_back(url)

    again = postgres_server.lend_database(MIGRATED)
    try:
        assert again == url  # lent again, not a new copy
        assert state(again) == expected
    finally:
        postgres_server.give_back(again)


def test_a_database_of_a_dimension_opens_a_store_of_it_as_it_is_and_comes_back_so(
    postgres_server: PostgresServer,
) -> None:
    """``postgres_url(request, DIM)``'s databases: their vector column has the dimension and its
    index already, so a store of it opens without changing them; one given back is lent again as
    a fresh copy of their template."""
    template = opened_template(postgres_server, DIM)
    fresh = postgres_server.new_database(template)
    try:
        with psycopg.connect(fresh, autocommit=True) as conn:
            column = conn.execute(
                f"SELECT a.atttypmod, {ALL_INDEXED} FROM pg_attribute a "
                "WHERE a.attrelid = 'memories'::regclass AND a.attname = 'embedding'"
            ).fetchone()
            before = conn.execute(FINGERPRINT).fetchone()
        PostgresGraphStore(fresh, dimension=DIM).close()
        with psycopg.connect(fresh, autocommit=True) as conn:
            after = conn.execute(FINGERPRINT).fetchone()
        expected = state(fresh)
    finally:
        postgres_server.drop_database(fresh)
    assert column == (DIM, True)
    assert after == before
    url = postgres_server.lend_database(template)
    used(url)
    postgres_server.give_back(url)

    again = postgres_server.lend_database(template)
    try:
        assert again == url
        assert state(again) == expected
    finally:
        postgres_server.give_back(again)


def _ended(conn: psycopg.Connection[Any]) -> bool:
    try:
        conn.execute("SELECT 1")
    except psycopg.OperationalError:
        return True
    return False


def test_a_database_a_role_was_made_for_is_dropped_not_lent_again(postgres_server: PostgresServer) -> None:
    url = postgres_server.lend_database(MIGRATED)
    name = url.rsplit("/", 1)[1]
    writer_role(url, f"pool_{name}")  # a test's role, named after its database
    postgres_server.give_back(url)

    again = postgres_server.lend_database(MIGRATED)
    try:
        assert again != url
        with psycopg.connect(postgres_server.url) as conn:
            found = conn.execute("SELECT count(*) FROM pg_database WHERE datname = %s", (name,)).fetchone()
        assert found == (0,)
    finally:
        postgres_server.give_back(again)


def test_a_database_whose_schema_a_test_changed_is_dropped_not_lent_again(
    postgres_server: PostgresServer,
) -> None:
    url = postgres_server.lend_database(MIGRATED)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ALTER TABLE memories ADD COLUMN left_behind text")
    postgres_server.give_back(url)

    again = postgres_server.lend_database(MIGRATED)
    try:
        assert again != url
        with psycopg.connect(again) as conn:
            columns = conn.execute(
                "SELECT count(*) FROM pg_attribute WHERE attrelid = 'memories'::regclass "
                "AND attname = 'left_behind'"
            ).fetchone()
        assert columns == (0,)
    finally:
        postgres_server.give_back(again)


# Two tests in order on one worker: what the first writes through ``postgres_url``, the second
# (lent the same database) does not see.
LENT: list[str] = []


@pytest.mark.xdist_group("postgres-pool")
def test_a_test_writes_to_the_store_postgres_url_lends(request: pytest.FixtureRequest) -> None:
    url = postgres_url(request)
    used(url)
    LENT.append(url)


@pytest.mark.xdist_group("postgres-pool")
def test_the_next_test_lent_that_database_finds_it_empty(request: pytest.FixtureRequest) -> None:
    url = postgres_url(request)
    if LENT:  # the test before ran on this worker: its database is the one lent again
        assert url == LENT[-1]
    store = PostgresGraphStore(url, dimension=DIM)
    try:
        assert store.total_memories() == 0
        assert store.get_meta("embedding_model") is None
        assert store.db.rows("SELECT count(*) FROM entities") == [(0,)]
    finally:
        store.close()
