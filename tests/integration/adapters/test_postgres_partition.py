"""A team's PostgreSQL server that goes silent under graphmem's connections (a network partition:
nothing closed, nothing answered), played by a proxy that stops forwarding
(``support/black_hole.py``) between graphmem and the session's real server
(``adapters/postgres_liveness.py``): the call waiting fails saying the server cannot be reached,
its connection is not lent again, the first call after the server answers again goes through,
and a long statement on a server that answers is never given up.

The bounds are the URL's, as a user sets them (a URL's own libpq parameters win over graphmem's
defaults): a statement waiting 1 s has the server checked, and the check's new connection waits
2 s (libpq's least ``connect_timeout``).
"""

from __future__ import annotations

from collections.abc import Iterator

import psycopg.conninfo
import pytest
from support.black_hole import SilentProxy, silent_proxy
from support.records import memory
from support.stores import opened_postgres, postgres_url

from graphmem.adapters.postgres_store import PostgresGraphStore
from graphmem.errors import StoreUnavailableError

pytestmark = [
    pytest.mark.integration,
    # Each test takes seconds; without the bounds a call would wait out the kernel's TCP
    # retransmissions (about 15 minutes): fail well before that.
    pytest.mark.timeout(120),
]

DIM = 8
BOUNDS = "?keepalives_idle=1&connect_timeout=2"


@pytest.fixture
def proxy(request: pytest.FixtureRequest) -> Iterator[tuple[SilentProxy, str]]:
    """The proxy before a fresh database of the session's server, and the database's URL through it."""
    direct = postgres_url(request)
    port = int(psycopg.conninfo.conninfo_to_dict(direct)["port"])
    with silent_proxy(("127.0.0.1", port)) as opened:
        yield opened, opened.url(direct) + BOUNDS


@pytest.fixture
def store(proxy: tuple[SilentProxy, str], request: pytest.FixtureRequest) -> PostgresGraphStore:
    return opened_postgres(proxy[1], request, DIM)


def backend(store: PostgresGraphStore) -> int:
    return int(store.db.rows("SELECT pg_backend_pid()")[0][0])


def assert_cannot_be_reached(exc: BaseException, store: PostgresGraphStore) -> None:
    message = str(exc)
    assert isinstance(exc, StoreUnavailableError), message
    assert message.startswith(f"The PostgreSQL store at {store.where} cannot be reached: "), message
    assert "stopped answering" in message and "Check that the server runs" in message, message


def test_a_read_whose_server_went_silent_fails_saying_it_cannot_be_reached(
    proxy: tuple[SilentProxy, str], store: PostgresGraphStore
) -> None:
    store.add_memories([memory("a", "the ledger closes at midnight")])
    proxy[0].silence()
    with pytest.raises(StoreUnavailableError) as raised:
        store.get_memories(["a"])
    assert_cannot_be_reached(raised.value, store)


def test_the_first_call_after_the_server_answers_again_goes_through_on_a_new_connection(
    proxy: tuple[SilentProxy, str], store: PostgresGraphStore
) -> None:
    store.add_memories([memory("a")])
    before = backend(store)
    proxy[0].silence()
    with pytest.raises(StoreUnavailableError):
        store.get_memories(["a"])
    proxy[0].resume()
    assert list(store.get_memories(["a"])) == ["a"]
    assert backend(store) != before  # the connection that went silent was not lent again


def test_a_write_whose_server_went_silent_inside_its_transaction_fails_and_keeps_nothing(
    proxy: tuple[SilentProxy, str], store: PostgresGraphStore
) -> None:
    with pytest.raises(StoreUnavailableError) as raised:  # noqa: SIM117 (the block is the point)
        with store.db.transaction():
            store.db.run("INSERT INTO graphmem_meta (key, value) VALUES ('partition', 'written')")
            proxy[0].silence()
            store.db.run("SELECT 1")
    assert_cannot_be_reached(raised.value, store)
    proxy[0].resume()
    assert store.get_meta("partition") is None
    store.set_meta("partition", "written again")  # the next write goes through
    assert store.get_meta("partition") == "written again"


def test_a_long_statement_on_a_server_that_answers_is_not_given_up(store: PostgresGraphStore) -> None:
    # Three times the wait after which the server is checked: a bootstrap's, an import's or an
    # index build's long statement runs to its end while the server answers the checks.
    assert store.db.rows("SELECT pg_sleep(3), 'done'")[0][1] == "done"
