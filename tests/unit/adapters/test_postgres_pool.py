"""The pool of a PostgreSQL store's connections (``adapters/postgres_pool.py``): what it lends,
keeps, closes and refuses. A server stopped and started again is in
``tests/integration/adapters/test_postgres_outage.py``."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from support.stores import postgres_url

from graphmem.adapters import postgres_pool
from graphmem.adapters.postgres_connection import conninfo, describe
from graphmem.adapters.postgres_pool import PostgresPool
from graphmem.errors import StoreError, StoreUnavailableError

# Nothing listens on port 1: the host refuses at once, as it does for a stopped server.
REFUSED = "postgresql://graphmem@127.0.0.1:1/graphmem"


def _configure(conn: psycopg.Connection[Any]) -> None:
    conn.execute("SET statement_timeout = 60000")


def pool_of(url: str, size: int = 2) -> PostgresPool:
    return PostgresPool(conninfo(url), describe(url), configure=_configure, size=size)


@pytest.fixture
def pool(request: pytest.FixtureRequest) -> Iterator[PostgresPool]:
    opened = pool_of(postgres_url(request))
    opened.open()
    yield opened
    opened.close()


def test_a_connection_given_back_is_lent_again(pool: PostgresPool) -> None:
    first = pool.get()
    assert first is not None
    pool.put(first)
    again = pool.get()
    assert again is first
    pool.put(again)


def test_with_every_connection_lent_a_call_gets_none_once_its_wait_is_over(pool: PostgresPool) -> None:
    lent = [pool.get(), pool.get()]
    assert pool.get(timeout=0.05) is None  # the caller says "busy"; nothing else was opened
    assert pool.counts() == (2, 0)
    for conn in lent:
        assert conn is not None
        pool.put(conn)
    again = pool.get(timeout=0.05)
    assert again is not None
    pool.put(again)


def test_a_broken_connection_given_back_is_closed_and_its_place_freed(pool: PostgresPool) -> None:
    lent = [pool.get(), pool.get()]
    assert lent[0] is not None and lent[1] is not None
    lent[0].close()
    pool.put(lent[0])
    fresh = pool.get(timeout=0.05)
    assert fresh is not None and fresh is not lent[0]
    assert fresh.execute("SELECT 1").fetchone() == (1,)
    pool.put(fresh)
    pool.put(lent[1])


def test_a_connection_given_back_inside_a_transaction_is_closed_not_lent_again(pool: PostgresPool) -> None:
    conn = pool.get()
    assert conn is not None
    conn.execute("BEGIN")
    pool.put(conn)
    assert conn.closed
    again = pool.get()
    assert again is not None and again is not conn
    pool.put(again)


def test_idle_connections_unused_past_the_limit_are_closed_but_the_last(
    pool: PostgresPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    lent = [pool.get(), pool.get()]
    monkeypatch.setattr(postgres_pool, "MAX_IDLE_S", -1.0)
    for conn in lent:
        assert conn is not None
        pool.put(conn)
    assert pool.counts() == (1, 1)
    assert lent[0] is not None and lent[0].closed


def test_a_connection_older_than_the_limit_is_closed_when_given_back(
    pool: PostgresPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    conn = pool.get()
    assert conn is not None
    monkeypatch.setattr(postgres_pool, "MAX_AGE_S", 0.0)
    pool.put(conn)
    assert conn.closed and pool.counts() == (0, 0)


def test_a_closed_pool_refuses_calls_and_closes_what_is_given_back(pool: PostgresPool) -> None:
    lent = pool.get()
    assert lent is not None
    pool.close()
    with pytest.raises(StoreError, match="closed"):
        pool.get()
    pool.put(lent)
    assert lent.closed and pool.counts() == (0, 0)


def test_a_server_refusing_the_first_connection_is_a_clear_error_without_the_password() -> None:
    refused = pool_of(REFUSED.replace("graphmem@", "graphmem:hunter2@"))
    with pytest.raises(StoreUnavailableError, match="Cannot connect to the PostgreSQL store at") as raised:
        refused.open()
    assert "127.0.0.1:1" in str(raised.value) and "hunter2" not in str(raised.value)
    assert refused.counts() == (0, 0)


def test_a_server_that_cannot_be_reached_fails_each_call_at_once_and_is_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    refused = pool_of(REFUSED)  # as if it had been reached at open, then went away
    caplog.set_level(logging.INFO, logger="graphmem")
    for _ in range(3):
        with pytest.raises(StoreUnavailableError) as raised:
            refused.get()
        message = str(raised.value)
        assert message.startswith(f"The PostgreSQL store at {describe(REFUSED)} cannot be reached: ")
        assert "Check that the server runs" in message and "busy" not in message
    said = [r.getMessage() for r in caplog.records if r.name.startswith("graphmem")]
    assert len(said) == 1 and "cannot be reached" in said[0]
    assert refused.counts() == (0, 0)  # no place kept by a connection that was never made


def test_a_daemons_pool_opened_while_the_server_is_down_waits_for_it_saying_so_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    waiting = pool_of(REFUSED)
    caplog.set_level(logging.INFO, logger="graphmem")
    assert waiting.open(wait=True) is False
    for _ in range(3):
        with pytest.raises(StoreUnavailableError) as raised:
            waiting.get()
        assert str(raised.value).startswith(f"The PostgreSQL store at {describe(REFUSED)} cannot be reached")
    said = [r.getMessage() for r in caplog.records if r.name.startswith("graphmem")]
    assert len(said) == 1 and "cannot be reached" in said[0] and "calls fail until it is back" in said[0]
    assert waiting.counts() == (0, 0)


def test_a_daemons_pool_is_refused_at_open_by_a_server_that_answers_but_has_no_such_database(
    request: pytest.FixtureRequest,
) -> None:
    # A wrong URL, user or password is the user's to fix: said at once, not waited for.
    missing = postgres_url(request).rsplit("/", 1)[0] + "/no_such_database"
    with pytest.raises(StoreUnavailableError, match="Cannot connect to the PostgreSQL store at") as raised:
        pool_of(missing).open(wait=True)
    assert "no_such_database" in str(raised.value)
