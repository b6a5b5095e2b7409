"""How long graphmem waits for a PostgreSQL server that went silent (``adapters/postgres_liveness.py``):
the TCP bounds each connection gets, the URL's own winning, and the server check. A real
partition, played by a proxy that stops forwarding, is
``tests/integration/adapters/test_postgres_partition.py``."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import psycopg.conninfo
import pytest
from support.stores import postgres_url

from graphmem.adapters.postgres_connection import PostgresConnection, conninfo
from graphmem.adapters.postgres_liveness import (
    KEEPALIVES_COUNT,
    KEEPALIVES_IDLE_S,
    KEEPALIVES_INTERVAL_S,
    TCP_USER_TIMEOUT_MS,
    Liveness,
    server_tcp_settings,
)

URL = "postgresql://graphmem@db.internal:5432/graphmem"
# Nothing listens on port 1: the host refuses at once, as it does for a stopped server.
REFUSED = "postgresql://graphmem@127.0.0.1:1/graphmem"


def params(url: str) -> dict[str, str]:
    return {name: str(value) for name, value in psycopg.conninfo.conninfo_to_dict(conninfo(url)).items()}


@pytest.fixture
def unanswered() -> Iterator[str]:
    """A URL whose host takes connections and never answers them (a listener nothing accepts on)."""
    with socket.create_server(("127.0.0.1", 0), backlog=8) as listener:
        yield f"postgresql://graphmem@127.0.0.1:{listener.getsockname()[1]}/graphmem?connect_timeout=2"


def test_each_connection_gets_tcp_keepalives_and_a_user_timeout() -> None:
    assert params(URL) | {
        "keepalives": "1",
        "keepalives_idle": str(KEEPALIVES_IDLE_S),
        "keepalives_interval": str(KEEPALIVES_INTERVAL_S),
        "keepalives_count": str(KEEPALIVES_COUNT),
        "tcp_user_timeout": str(TCP_USER_TIMEOUT_MS),
    } == params(URL)


def test_the_urls_own_tcp_bounds_win() -> None:
    mine = params(f"{URL}?keepalives_idle=30&tcp_user_timeout=0")
    assert mine["keepalives_idle"] == "30" and mine["tcp_user_timeout"] == "0"
    assert mine["keepalives_interval"] == str(KEEPALIVES_INTERVAL_S)  # what it left unset is graphmem's


def test_the_servers_end_of_each_connection_gets_the_same_bounds(request: pytest.FixtureRequest) -> None:
    url = postgres_url(request)
    db = PostgresConnection(f"{url}?keepalives_idle=30")
    try:
        shown = db.rows(
            "SELECT current_setting('tcp_keepalives_idle'), current_setting('tcp_keepalives_count'), "
            "current_setting('tcp_user_timeout')"
        )
    finally:
        db.close()
    assert shown == [("30", str(KEEPALIVES_COUNT), str(TCP_USER_TIMEOUT_MS))]


def test_keepalives_off_in_the_url_turns_graphmems_checks_off_too() -> None:
    off = conninfo(f"{URL}?keepalives=0")
    assert not Liveness(off).enabled
    assert server_tcp_settings(off) == {}


def test_a_server_that_refuses_a_new_connection_has_answered() -> None:
    # Stopped, or out of connections: the call's own connection says so, not the check.
    assert Liveness(conninfo(REFUSED)).answers()


def test_a_server_that_takes_a_new_connection_and_never_answers_is_silent(unanswered: str) -> None:
    assert not Liveness(conninfo(unanswered)).answers()
