"""What a client reads of a daemon's ``/health`` (``server/daemon_process.health``, which
``graphmem doctor`` shows): its reasons when it is degraded, and never more than an answer
says when what answers on its port is not a daemon."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest
from support.local_server import LocalServer

from graphmem.server.daemon_process import DaemonInfo, health

STORE_DOWN = "store unavailable: The PostgreSQL store at postgresql://me@db:5432/team cannot be reached"


def answering(status: int, body: bytes) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # quiet
            pass

    return Handler


@pytest.fixture
def serving(request: pytest.FixtureRequest) -> Iterator[DaemonInfo]:
    status, body = request.param
    server = LocalServer(answering(status, body))
    server.start()
    yield DaemonInfo(1, f"http://127.0.0.1:{server.port}", "/data", 0.0, "0.1.0")
    server.stop()


@pytest.mark.parametrize(
    "serving", [(503, json.dumps({"status": "degraded", "reasons": [STORE_DOWN]}).encode())], indirect=True
)
def test_a_degraded_daemon_says_why(serving: DaemonInfo) -> None:
    assert health(serving) == [STORE_DOWN]


@pytest.mark.parametrize("serving", [(200, b'{"status": "healthy", "reasons": []}')], indirect=True)
def test_a_healthy_daemon_has_no_reason(serving: DaemonInfo) -> None:
    assert health(serving) == []


@pytest.mark.parametrize("serving", [(200, b"<html>"), (503, b"[" * 100_000)], indirect=True)
def test_another_program_answering_on_the_port_is_said_to_be_unreadable(serving: DaemonInfo) -> None:
    assert health(serving) == ["its /health answer cannot be read"]


def test_nothing_listening_is_no_answer() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed when the test asks: refused
    assert health(DaemonInfo(1, f"http://127.0.0.1:{port}", "/data", 0.0, "0.1.0")) is None
