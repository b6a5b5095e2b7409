"""Concurrent clients of ``bench scale --http-clients``: light processes sharing one real
``graphmem serve`` over HTTP (``graphmem.bench.clients``, ``graphmem.bench.serving_daemon``),
here on a small embedded store whose daemon stores hash vectors (``support/hash_vectors.py``)."""

from __future__ import annotations

import os
import socket
import sys
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from click.testing import CliRunner
from support.daemons import HASH_VECTORS
from support.hash_vectors import named_hash_embedder
from support.memory_service import in_memory_service

from graphmem.app import open_memory
from graphmem.bench import clients
from graphmem.cli import main
from graphmem.core.models import Status
from graphmem.core.ports import Visibility
from graphmem.core.timeparse import utc_now
from graphmem.server.daemon_process import daemon_alive
from graphmem.server.runtime import Runtime
from graphmem.service.coordination import Coordinator
from graphmem.settings import load_settings

FAILING_REMEMBER = str(Path(__file__).parents[2] / "support" / "failing_remember.py")


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _port_free(url: str) -> bool:
    """Nothing listens on ``url``'s port (the daemon's closed connections may linger in TIME_WAIT)."""
    try:
        socket.create_connection(("127.0.0.1", urlsplit(url).port or 0), timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


def test_http_clients_are_processes_whose_calls_reach_the_one_daemon_which_is_stopped_after(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"

    [report] = clients.run(
        [], data_dir, store_url=None, seconds=0.1, http_counts=[2], program=(sys.executable, *HASH_VECTORS)
    )

    assert (report["clients"], report["mode"], report["errors"]) == (2, "http", 0)
    assert report["recall_ms"]["calls"] > 0 and report["remember_ms"]["calls"] > 0
    assert report["calls"] == report["recall_ms"]["calls"] + report["remember_ms"]["calls"]
    assert report["text_search"] is None  # the embedded store has one word search
    assert "(http, one daemon)" in clients.format_lines([report])[0]
    # The daemon was stopped and waited for: no process left, its port and its store free.
    daemon = report["daemon"]
    assert daemon["ready_s"] > 0 and _gone(daemon["pid"]) and _port_free(daemon["url"])
    assert not daemon_alive(data_dir)
    # Each client's remembers went through the one daemon into the store, each with its vector.
    memory = open_memory(load_settings(data_dir=data_dir), embedder=named_hash_embedder())
    try:
        stored = memory.store.list_memories(Visibility(None, frozenset(Status)), limit=1000)
        assert memory.store.pending_embeddings(10) == []
    finally:
        memory.close()
    assert {record.text.split(" note ")[0] for record in stored} == {"Client 0", "Client 1"}
    assert len(stored) <= report["remember_ms"]["calls"]  # a near-duplicate reinforces one


def test_a_call_the_daemon_fails_is_counted_with_its_message_not_raised(tmp_path: Path) -> None:
    [report] = clients.run(
        [],
        tmp_path / "data",
        store_url=None,
        seconds=0.0,
        http_counts=[1],
        program=(sys.executable, FAILING_REMEMBER),
    )

    assert report["errors"] == report["remember_ms"]["calls"] > 0
    assert report["remember_ms"]["p50"] is None and report["recall_ms"]["p50"] is not None
    assert report["first_error"] == "StoreError: Lost the connection to the PostgreSQL store: try again."
    assert _gone(report["daemon"]["pid"])


def test_a_daemon_that_does_not_start_fails_the_run_with_its_logs_tail(tmp_path: Path) -> None:
    no_store = (
        sys.executable,
        "-c",
        "import sys; print('the store is locked by pid 42', file=sys.stderr); sys.exit(3)",
    )

    with pytest.raises(RuntimeError, match="exited with code 3: the store is locked by pid 42"):
        clients.run([], tmp_path / "data", store_url=None, seconds=0.0, http_counts=[1], program=no_store)


def test_the_report_of_one_daemon_on_a_teams_store_says_its_index_answered() -> None:
    report = clients.summarise(
        16,
        [("recall", 5.0, None, False)],
        1.0,
        0.0,
        "http",
        {"index_copy_mb": 41.2, "daemon": {"answering": "index", "current_s": 3.4}},
    )

    assert clients.format_lines([report])[-1] == (
        "   full text answered by the daemon's own index (a copy of 41.2 MB, current 3.4 s after it "
        "was launched)"
    )


@pytest.mark.parametrize("count", ["0", "33"])
def test_a_count_of_http_clients_outside_1_to_32_is_refused(count: str) -> None:
    result = CliRunner().invoke(main.cli, ["bench", "scale", "--http-clients", count])

    assert result.exit_code == 2
    assert "--http-clients" in result.output and "1<=x<=32" in result.output


def test_the_daemon_says_which_word_search_answers_a_teams_store_and_none_on_the_embedded_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the benchmark reads of its daemon before and after the timed calls (``/stats``): what
    its store says (``MemorySearch.full_text_search``; a team's store's in test_postgres_lexical)."""
    served = in_memory_service(tmp_path).serving(Coordinator(utc_now, timedelta(minutes=5)))
    runtime = Runtime(served, log_hint="stderr", resolve_project=lambda path: path, version="t")
    try:
        assert runtime.status()["full_text"] is None
        for answering in ("database", "index"):  # a team's index, catching up, then current
            monkeypatch.setattr(type(served.store.inner), "full_text_search", answering)
            assert runtime.status()["full_text"] == answering
    finally:
        served.close()
