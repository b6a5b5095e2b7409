"""What a client reads of a daemon's ``/health`` (``server/daemon_process.health``, which
``graphmem doctor`` shows): its reasons when it is degraded, never more than an answer says when
what answers on its port is not a daemon, and a daemon that takes the connection and says
nothing in time told apart from one that is gone."""

from __future__ import annotations

import fcntl
import json
import socket
from collections.abc import Callable, Iterator
from dataclasses import asdict
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from support import raw_answer
from support.client_cli import client_cli
from support.local_server import LocalServer

from graphmem.cli import integrations
from graphmem.server.daemon_process import DaemonInfo, NoAnswer, health

WAIT_S = 5.0  # each answer here comes at once; a silent one is waited for SILENT_S
SILENT_S = 0.2

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
    assert health(serving, WAIT_S) == [STORE_DOWN]


@pytest.mark.parametrize("serving", [(200, b'{"status": "healthy", "reasons": []}')], indirect=True)
def test_a_healthy_daemon_has_no_reason(serving: DaemonInfo) -> None:
    assert health(serving, WAIT_S) == []


@pytest.mark.parametrize("serving", [(200, b"<html>"), (503, b"[" * 100_000)], indirect=True)
def test_another_program_answering_on_the_port_is_said_to_be_unreadable(serving: DaemonInfo) -> None:
    assert health(serving, WAIT_S) == ["its /health answer cannot be read"]


def info_at(port: int) -> DaemonInfo:
    return DaemonInfo(1, f"http://127.0.0.1:{port}", "/data", 0.0, "0.1.0")


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # closed when the test asks: refused


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port whose listener takes connections (the kernel's backlog) and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield int(listener.getsockname()[1])


@pytest.fixture
def not_http_port() -> Iterator[int]:
    """A port where another program answers, not in HTTP (an ssh server on a port reused)."""
    with raw_answer.answering(b"SSH-2.0-OpenSSH_9.6\r\n\r\n") as port:
        yield port


def test_nothing_listening_is_gone(closed_port: int) -> None:
    assert health(info_at(closed_port), WAIT_S) is NoAnswer.GONE


def test_a_listener_that_says_nothing_in_time_is_silent(silent_port: int) -> None:
    assert health(info_at(silent_port), SILENT_S) is NoAnswer.SILENT


def test_a_program_that_answers_in_another_protocol_is_said_to_be_unreadable(not_http_port: int) -> None:
    assert health(info_at(not_http_port), WAIT_S) == ["its /health answer cannot be read"]


# -- what `graphmem doctor` says of each ----------------------------------------------------------


@pytest.fixture
def doctor_at(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[int], str]]:
    """``doctor_at(port)``: the daemon line of `graphmem doctor` for a live daemon (its lock held)
    that published ``port``."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    invoke = client_cli(tmp_path, monkeypatch)
    monkeypatch.setattr(integrations, "DOCTOR_WAIT_S", SILENT_S)

    def line(port: int) -> str:
        info = DaemonInfo(4242, f"http://127.0.0.1:{port}", str(data_dir), 0.0, "0.1.0")
        (data_dir / "daemon.json").write_text(json.dumps(asdict(info)), "utf-8")
        done = invoke("--data-dir", str(data_dir), "doctor")
        assert done.exit_code == 0, done.output
        return done.stdout.splitlines()[0]

    with open(data_dir / "daemon.lock", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield line


def test_doctor_calls_a_silent_daemon_busy_or_hung_not_gone(
    doctor_at: Callable[[int], str], silent_port: int
) -> None:
    assert doctor_at(silent_port) == (
        f"daemon: pid 4242 at http://127.0.0.1:{silent_port} gave no answer in 0.2 s (busy or hung): "
        "run `graphmem doctor` again, and `graphmem stop` if it still gives none"
    )


def test_doctor_tells_to_stop_a_daemon_whose_port_is_closed(
    doctor_at: Callable[[int], str], closed_port: int
) -> None:
    assert doctor_at(closed_port) == (
        f"daemon: pid 4242 does not answer at http://127.0.0.1:{closed_port}: run `graphmem stop`"
    )


def test_doctor_says_what_answers_in_another_protocol_is_no_daemon_it_can_read(
    doctor_at: Callable[[int], str], not_http_port: int
) -> None:
    assert doctor_at(not_http_port).endswith(", not healthy: its /health answer cannot be read")
