"""A team's PostgreSQL server stopped (``pg_ctl stop``'s fast shutdown) and started again while
graphmem is connected to it (``adapters/postgres_pool.py``): while it is down a call fails at
once saying the server cannot be reached, the first call after it is back goes through (the
store's, a one-shot CLI's, a daemon's), and a daemon's background workers wait quietly, the
store saying once that it went away and once that it is back.

The tests stop a server: they have one of their own (``outage_server``, a fixture of the
module's, so they run one after the other on one worker), not the session's others share.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from platformdirs import user_cache_path
from support.daemons import SHORT_RETRIES, Daemon, http, sandbox_env, start_daemon, wait_healthy
from support.hostile import rpc_call
from support.postgres import PostgresServer
from support.records import memory
from support.short_retries import SHORT_RETRY_S
from support.stores import MIGRATED
from support.temp_root import ROOT_VARIABLE

from graphmem.adapters import postgres_pool
from graphmem.adapters.postgres_connection import POOL_MAX
from graphmem.adapters.postgres_migrate import migrate
from graphmem.adapters.postgres_store import PostgresGraphStore
from graphmem.core.models import Status
from graphmem.core.ports import Visibility
from graphmem.errors import StoreMismatchError, StoreUnavailableError

pytestmark = pytest.mark.integration

DIM = 8
MODEL_DIM = 384  # the bundled model's, for the daemon's store
EVERYONE = Visibility(None, frozenset(Status))
# Only stops a hung test: each wait below ends as soon as what it waits for is seen.
WAIT_S = 120.0
# Memories waiting for a vector when the daemon starts: its embedding worker still has some to
# do when the server stops (it embeds 8 at a time, between calls).
PENDING = 400


@pytest.fixture(scope="module")
def outage_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server of this module's alone, with graphmem's schema in a template."""
    where = os.environ.get(ROOT_VARIABLE)
    server = PostgresServer(parent=Path(where) if where else None)
    try:
        server.start()
        server.new_template(MIGRATED, lambda url: migrate(url))
        yield server
    finally:
        server.stop()


@pytest.fixture
def url(outage_server: PostgresServer) -> str:
    return outage_server.new_database(MIGRATED)


@pytest.fixture
def down(outage_server: PostgresServer) -> Iterator[PostgresServer]:
    """The server; a test stops it (``halt``) and starts it (``resume``): started again at the
    end whatever happened, for the next test."""
    yield outage_server
    if not outage_server.running:
        outage_server.resume()


@pytest.fixture
def store(url: str) -> Iterator[PostgresGraphStore]:
    opened = PostgresGraphStore(url, dimension=DIM)
    yield opened
    opened.close()


def assert_cannot_be_reached(exc: BaseException, server: PostgresServer) -> None:
    message = str(exc)
    assert isinstance(exc, StoreUnavailableError), message
    assert f"127.0.0.1:{server.port}" in message and "cannot be reached" in message, message
    assert "Check that the server runs" in message and "busy" not in message, message


# -- the store -----------------------------------------------------------------------------


def test_while_the_server_is_down_every_call_says_it_cannot_be_reached(
    store: PostgresGraphStore, down: PostgresServer
) -> None:
    store.add_memories([memory("a", "the ledger closes at midnight")])
    down.halt()
    calls = [
        lambda: store.get_memories(["a"]),  # a read
        lambda: store.add_memories([memory("b")]),  # a write, in a transaction
        lambda: store.search_text("ledger", EVERYONE, 5),
    ]
    for _ in range(POOL_MAX + 1):  # more than the pool holds: none waits for a place in it
        for call in calls:
            with pytest.raises(StoreUnavailableError) as raised:
                call()
            assert_cannot_be_reached(raised.value, down)


def test_the_first_call_after_the_server_is_back_goes_through(
    store: PostgresGraphStore, down: PostgresServer
) -> None:
    store.add_memories([memory("a")])
    assert list(store.get_memories(["a"])) == ["a"]
    down.halt()
    with pytest.raises(StoreUnavailableError):
        store.get_memories(["a"])
    down.resume()
    store.add_memories([memory("b")])  # a write first: nothing to wait out, no error
    assert sorted(store.get_memories(["a", "b"])) == ["a", "b"]


def test_connections_idle_through_the_outage_are_replaced_at_the_next_call(
    store: PostgresGraphStore, down: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.add_memories([memory("a")])
    # An outage of minutes: every pooled connection sat idle past the limit when it ends.
    monkeypatch.setattr(postgres_pool, "CHECK_IDLE_S", 0.0)
    down.halt()
    down.resume()  # no call meanwhile: the pool still holds the connections the stop ended
    store.add_memories([memory("b")])
    assert sorted(store.get_memories(["a", "b"])) == ["a", "b"]


def test_a_store_opened_to_wait_while_the_server_is_down_is_checked_and_serves_once_it_is_up(
    url: str, down: PostgresServer
) -> None:
    down.halt()
    waiting = PostgresGraphStore(url, dimension=DIM, wait=True)  # a daemon's: it does not refuse
    try:
        with pytest.raises(StoreUnavailableError) as raised:
            waiting.get_memories(["a"])
        assert_cannot_be_reached(raised.value, down)
        down.resume()
        waiting.add_memories([memory("a")])
        assert list(waiting.get_memories(["a"])) == ["a"]
    finally:
        waiting.close()


def test_a_store_waited_for_is_refused_once_reached_when_the_database_has_no_schema(
    outage_server: PostgresServer, down: PostgresServer
) -> None:
    bare = outage_server.new_database()  # pgvector, no graphmem schema
    down.halt()
    waiting = PostgresGraphStore(bare, dimension=DIM, wait=True)
    try:
        down.resume()
        for _ in range(2):  # checked again at each call, until someone runs graphmem migrate
            with pytest.raises(StoreMismatchError, match="Run `graphmem migrate`"):
                waiting.get_memories(["a"])
    finally:
        waiting.close()


# -- a one-shot CLI ------------------------------------------------------------------------


def cli(tmp_path: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    data_dir = tmp_path / "cli-data"
    return subprocess.run(
        [sys.executable, "-m", "graphmem", "--data-dir", str(data_dir), *args],
        env=sandbox_env(data_dir, GRAPHMEM_STORE_URL=url, XDG_CACHE_HOME=str(user_cache_path().resolve())),
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )


def test_a_cli_command_says_the_server_cannot_be_reached_then_works_once_it_is_back(
    url: str, down: PostgresServer, tmp_path: Path
) -> None:
    remembered = cli(tmp_path, url, "remember", "The ledger closes at midnight")
    assert remembered.returncode == 0, remembered.stderr
    down.halt()
    failed = cli(tmp_path, url, "list")
    assert failed.returncode == 5, failed.stderr
    said = failed.stderr.strip()
    assert (
        said.startswith("error: Cannot connect to the PostgreSQL store at ") and len(said.splitlines()) == 1
    )
    assert f"127.0.0.1:{down.port}" in said and "Check that the server runs" in said
    down.resume()
    listed = cli(tmp_path, url, "list")
    assert listed.returncode == 0, listed.stderr
    assert "The ledger closes at midnight" in listed.stdout


# -- a daemon ------------------------------------------------------------------------------


def error_of(answer: dict[str, Any]) -> dict[str, Any]:
    assert "error" in answer, answer
    error: dict[str, Any] = answer["error"]
    return error


def health(daemon: Daemon) -> dict[str, Any]:
    _, _, raw = http("GET", f"{daemon.url}/health")
    body: dict[str, Any] = json.loads(raw)
    return body


def wait_for(what: str, seen: Any) -> None:
    deadline = time.monotonic() + WAIT_S
    while not seen():
        assert time.monotonic() < deadline, f"never saw {what}"
        time.sleep(0.2)


def log_lines(daemon: Daemon, since: int = 0) -> list[str]:
    return daemon.log.read_text("utf-8", errors="replace").splitlines()[since:]


@pytest.fixture
def daemon(url: str, tmp_path: Path) -> Iterator[Daemon]:
    """A daemon on the store, started with :data:`PENDING` memories waiting for a vector."""
    seed = PostgresGraphStore(url, dimension=MODEL_DIM)
    try:
        seed.add_memories(
            [memory(f"m{i}", f"the ledger closes at midnight, note {i}") for i in range(PENDING)]
        )
    finally:
        seed.close()
    started = serve(url, tmp_path)
    yield started
    started.stop()


def test_a_daemon_fails_calls_at_once_while_the_server_is_down_and_serves_the_first_call_after(
    daemon: Daemon, down: PostgresServer
) -> None:
    before = len(log_lines(daemon))
    down.halt()  # the embedding worker has memories to embed: it meets the outage too
    for method, arguments in (("recall", {"query": "ledger"}), ("remember", {"text": "Refunds wait"})):
        error = error_of(rpc_call(daemon, method, **arguments))
        assert error["type"] == "StoreUnavailableError", error
        assert f"127.0.0.1:{down.port}" in error["message"] and "cannot be reached" in error["message"]
    # The worker met it (health says so), and tries again now and then, without a word each time.
    wait_for("the worker meet the outage", lambda: "cannot be reached" in " ".join(health(daemon)["reasons"]))
    time.sleep(3 * SHORT_RETRY_S)  # the outage goes on for a few of the worker's turns
    during = log_lines(daemon, before)
    gone = [line for line in during if "cannot be reached" in line]
    assert len(gone) == 1 and " ERROR " in gone[0], during
    assert [line for line in during if " ERROR " in line or " WARNING " in line] == gone, during

    down.resume()
    answer = rpc_call(daemon, "recall", query="ledger midnight")
    assert "result" in answer, answer
    answer = rpc_call(daemon, "remember", text="Refunds wait for the ledger to close")
    assert "result" in answer, answer
    wait_healthy(daemon, timeout=WAIT_S)  # the worker is back at work: its store error is gone
    after = log_lines(daemon, before + len(during))
    back = [line for line in after if "reachable again" in line]
    assert len(back) == 1, after
    assert [line for line in after if " ERROR " in line or " WARNING " in line] == back, after


def serve(url: str, tmp_path: Path) -> Daemon:
    """A daemon on the store at ``url``, in ``tmp_path``, whose workers try the store again each
    ``SHORT_RETRY_S`` while it cannot be reached (5 s in a user's daemon): what is asserted is what
    they do and say in the outage's turns and after them, which come sooner."""
    return start_daemon(
        tmp_path / "data",
        program=SHORT_RETRIES,
        GRAPHMEM_STORE_URL=url,
        GRAPHMEM_INGEST__ENABLED="false",
        GRAPHMEM_RATE_LIMIT="0",
        HOME=str(tmp_path),
        XDG_CACHE_HOME=str(user_cache_path().resolve()),  # the model file built once, not again
    )


def doctor(daemon: Daemon, tmp_path: Path) -> str:
    """``graphmem doctor``'s line about the daemon."""
    done = subprocess.run(
        [sys.executable, "-m", "graphmem", "--data-dir", str(daemon.data_dir), "doctor"],
        env=sandbox_env(daemon.data_dir, HOME=str(tmp_path)),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("daemon: ")]
    assert len(lines) == 1, done.stdout
    return lines[0]


def test_a_daemon_started_while_the_server_is_down_serves_and_says_so_then_serves_once_it_is_up(
    url: str, down: PostgresServer, tmp_path: Path
) -> None:
    down.halt()
    daemon = serve(url, tmp_path)  # a service started before its database: it starts
    try:
        status, _, raw = http("GET", f"{daemon.url}/health")
        reasons = " ".join(json.loads(raw)["reasons"])
        assert status == 503 and f"127.0.0.1:{down.port}" in reasons and "cannot be reached" in reasons
        error = error_of(rpc_call(daemon, "recall", query="ledger"))
        assert error["type"] == "StoreUnavailableError", error
        assert f"127.0.0.1:{down.port}" in error["message"] and "cannot be reached" in error["message"]
        said = doctor(daemon, tmp_path)
        assert said.startswith(f"daemon: reachable at {daemon.url} ") and ", not healthy: " in said, said
        assert "cannot be reached" in said, said
        gone = [line for line in log_lines(daemon) if "cannot be reached" in line]
        assert len(gone) == 1 and " ERROR " in gone[0], log_lines(daemon)

        down.resume()
        answer = rpc_call(daemon, "remember", text="Refunds wait for the ledger to close")
        assert "result" in answer, answer
        answer = rpc_call(daemon, "recall", query="refunds ledger")
        assert "Refunds wait for the ledger to close" in json.dumps(answer["result"]), answer
        wait_healthy(daemon, timeout=WAIT_S)  # its worker met the store too: the model's vectors
        healthy = f"daemon: reachable at {daemon.url} (pid {daemon.process.pid}, data dir {daemon.data_dir})"
        assert doctor(daemon, tmp_path) == healthy
        lines = log_lines(daemon)
        assert len([line for line in lines if "reachable again" in line]) == 1, lines
        assert len([line for line in lines if "cannot be reached" in line]) == 1, lines
    finally:
        daemon.stop()


def test_a_daemon_is_refused_at_start_by_a_server_that_answers_but_has_no_such_database(
    outage_server: PostgresServer, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    missing = outage_server.database_url("no_such_database")
    done = subprocess.run(
        [sys.executable, "-m", "graphmem", "--data-dir", str(data_dir), "serve"],
        env=sandbox_env(data_dir, GRAPHMEM_STORE_URL=missing, HOME=str(tmp_path)),
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert done.returncode == 5, done.stderr
    said = done.stderr.strip().splitlines()[-1]
    assert said.startswith("error: Cannot connect to the PostgreSQL store at "), done.stderr
    assert "no_such_database" in said and "Check that the server runs" in said, done.stderr
