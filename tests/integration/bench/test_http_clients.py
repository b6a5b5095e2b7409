"""Concurrent clients of ``bench scale --http-clients`` against a real ``graphmem serve``: light
processes sharing one daemon over HTTP (``graphmem.bench.clients``, ``graphmem.bench.serving_daemon``),
here on a small embedded store whose daemon stores hash vectors (``support/hash_vectors.py``). The
report's shape and the refused counts are unit tests (``tests/unit/bench/test_http_clients.py``)."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from urllib.parse import urlsplit

from support.daemons import HASH_VECTORS
from support.hash_vectors import named_hash_embedder

from graphmem.app import open_memory
from graphmem.bench import clients
from graphmem.core.models import Status
from graphmem.core.ports import Visibility
from graphmem.server.daemon_process import daemon_alive
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
