"""A real daemon under a flood of connections that never finish a request, and its rate limit
seen from other loopback addresses: over real sockets, the way an attacker on the machine
would try them."""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.daemons import SHORT_DEADLINES, Daemon, http, start_daemon

pytestmark = pytest.mark.integration

# More than the 1,024 file descriptors a process usually may open (the daemon gets that limit).
FLOOD = 1100
HALF_HEAD = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n"  # no blank line: the head never ends


def address(daemon: Daemon) -> tuple[str, int]:
    host, port = daemon.url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def stats_call(daemon: Daemon) -> tuple[int, bytes]:
    status, _, raw = http(
        "POST",
        f"{daemon.url}/rpc",
        json.dumps({"method": "stats"}).encode(),
        {"Content-Type": "application/json"},
    )
    return status, raw


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    running = start_daemon(tmp_path / "data", open_files=1024, GRAPHMEM_INGEST__ENABLED="false")
    yield running
    running.stop()


def test_a_flood_of_half_sent_requests_leaves_health_and_rpc_answering(daemon: Daemon) -> None:
    opened: list[socket.socket] = []
    try:
        for _ in range(FLOOD):
            sock = socket.socket()
            sock.settimeout(5)
            opened.append(sock)
            with contextlib.suppress(OSError):  # a full backlog: the attacker's problem
                sock.connect(address(daemon))
                sock.sendall(HALF_HEAD)

        assert http("GET", f"{daemon.url}/health", token=False)[0] in (200, 503)
        status, raw = stats_call(daemon)
        assert status == 200 and "result" in json.loads(raw), raw
    finally:
        for sock in opened:
            sock.close()


def test_a_request_that_stops_halfway_is_closed_by_the_daemon(tmp_path: Path) -> None:
    """The deadlines cut to a second (``support/short_deadlines.py``): the test waits for them."""
    daemon = start_daemon(tmp_path / "data", program=SHORT_DEADLINES, GRAPHMEM_INGEST__ENABLED="false")
    try:
        _closed_halfway(daemon)
    finally:
        daemon.stop()


def _closed_halfway(daemon: Daemon) -> None:
    head_only = socket.create_connection(address(daemon), timeout=120)
    head_only.sendall(HALF_HEAD)
    body_half = socket.create_connection(address(daemon), timeout=120)
    host, port = address(daemon)
    body_half.sendall(
        f"POST /rpc HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f'Authorization: Bearer {daemon.token}\r\nContent-Length: 100\r\n\r\n{{"method"'.encode()
    )
    with head_only, body_half:
        assert head_only.recv(4096) == b""  # closed, with nothing said: the head never came
        answer = b""
        while chunk := body_half.recv(4096):
            answer += chunk
        assert b" 200 " not in answer.split(b"\r\n", 1)[0]  # the call never ran


def test_another_loopback_address_gets_no_fresh_rate_budget(tmp_path: Path) -> None:
    daemon = start_daemon(tmp_path / "data", GRAPHMEM_INGEST__ENABLED="false", GRAPHMEM_RATE_LIMIT="3")
    try:
        host, port = address(daemon)
        request = (
            f"GET /stats HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {daemon.token}\r\n"
            "Connection: close\r\n\r\n"
        ).encode()
        statuses = []
        for peer in ("127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"):
            with socket.socket() as sock:
                sock.settimeout(60)
                sock.bind((peer, 0))
                sock.connect((host, port))
                sock.sendall(request)
                statuses.append(int(sock.recv(4096).split(b" ", 2)[1]))
        assert statuses == [200, 200, 200, 429]
    finally:
        daemon.stop()
