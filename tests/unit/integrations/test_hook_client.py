"""A hook's call to the daemon never blocks or breaks the client's turn: an answer, or ``{}``
within the deadline and one log line (no daemon, a slow one, a squatter); it starts a daemon
when none runs, and leaves a failing one alone for a while."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from support.local_server import POLL_S
from support.shadowing_project import EMPTY_PYTHONPATH_ENTRY, shadowing_project
from support.squatter import Squatter

from graphmem.integrations import hook_client
from graphmem.integrations.hook_client import BACKOFF_FILENAME, HookClient
from graphmem.server import identity
from graphmem.server.daemon_process import DaemonInfo, ServeLock, ensure_token

BLOCK = '<memory source="graphmem">\n- [fact] The staging database listens on port 5433.\n</memory>'


class StandIn(ThreadingHTTPServer):
    """The daemon's /identity and one plugin route; ``delay_s`` makes the route slow."""

    daemon_threads = True

    def __init__(self, token: str, delay_s: float = 0.0) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.token = token
        self.delay_s = delay_s
        self.bodies: list[dict[str, object]] = []


class _Handler(BaseHTTPRequestHandler):
    server: StandIn
    protocol_version = "HTTP/1.1"  # /identity and the call share one connection

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
        if self.path == identity.PATH:
            answer = identity.answer(
                self.server.token, None, body.get("nonce"), self.server.server_address[1]
            )
        else:
            assert self.headers["Authorization"] == f"Bearer {self.server.token}"
            self.server.bodies.append(body)
            time.sleep(self.server.delay_s)
            answer = {"block": BLOCK}
        raw = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir(mode=0o700)
    return path


@pytest.fixture
def lock(data_dir: Path) -> Iterator[ServeLock]:
    """This process plays the daemon's part: it holds the lock and publishes daemon.json."""
    held = ServeLock(data_dir)
    yield held
    held.release()


def serve(lock: ServeLock, url: str, *, age_s: float = 3600.0) -> None:
    """Publish daemon.json for ``url``: a daemon serving for ``age_s`` (an hour: well started)."""
    lock.publish(DaemonInfo(os.getpid(), url, str(lock.data_dir), time.time() - age_s, "test"))


@pytest.fixture
def stand_in(data_dir: Path, lock: ServeLock) -> Iterator[StandIn]:
    server = StandIn(ensure_token(data_dir))
    # Asked to stop, it stops within POLL_S, not serve_forever's default 0.5 s
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL_S}, daemon=True).start()
    serve(lock, f"http://127.0.0.1:{server.server_address[1]}")
    yield server
    server.shutdown()
    server.server_close()


def test_the_daemons_answer_comes_back(stand_in: StandIn, data_dir: Path) -> None:
    answer = HookClient(data_dir, start=False).call("/plugin/boot", {"session_id": "s1"}, 5.0)
    assert answer == {"block": BLOCK}
    assert stand_in.bodies == [{"session_id": "s1"}]


def test_a_slow_daemon_gives_nothing_within_the_deadline_and_is_left_alone_after(
    stand_in: StandIn, data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    stand_in.delay_s = 5.0
    client = HookClient(data_dir, start=False)
    with caplog.at_level(logging.WARNING, logger="graphmem.integrations.hook_client"):
        started = time.monotonic()
        assert client.call("/plugin/turn", {"session_id": "s1"}, 0.2) == {}
        assert time.monotonic() - started < 4.0  # the deadline, not the daemon's 5 s
        assert (data_dir / BACKOFF_FILENAME).exists()
        assert HookClient(data_dir, start=False).call("/plugin/turn", {"session_id": "s1"}, 5.0) == {}
    assert len(stand_in.bodies) == 1  # the second call asked nothing
    assert re.search(
        r"/plugin/turn: (no answer .* within 200 ms|.* did not answer \(timed out\))", caplog.text
    )
    assert "failed less than 30 s ago" in caplog.text


def test_no_daemon_and_no_start_is_an_empty_answer_and_a_log_line(
    data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="graphmem.integrations.hook_client"):
        assert HookClient(data_dir, start=False).call("/plugin/boot", {}, 1.0) == {}
    assert "no graphmem daemon is running" in caplog.text


def test_no_daemon_starts_one_and_this_call_does_not_wait_past_its_deadline(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    started: list[Path] = []
    monkeypatch.setattr(hook_client, "start_daemon", lambda where, env=None: started.append(where))
    with caplog.at_level(logging.WARNING, logger="graphmem.integrations.hook_client"):
        assert HookClient(data_dir).call("/plugin/boot", {}, 0.3) == {}
    assert started == [data_dir]
    assert "started one, not serving yet: added nothing" in caplog.text
    assert "the next turn gets memories" not in caplog.text  # a promise the daemon's start time breaks


def test_a_program_on_the_daemons_port_gets_neither_the_token_nor_the_prompt(
    data_dir: Path, lock: ServeLock, caplog: pytest.LogCaptureFixture
) -> None:
    token = ensure_token(data_dir)
    squatter = Squatter(os.getpid())
    serve(lock, squatter.url)
    try:
        with caplog.at_level(logging.WARNING, logger="graphmem.integrations.hook_client"):
            answer = HookClient(data_dir, start=False).call("/plugin/turn", {"text": "secret prompt"}, 5.0)
    finally:
        squatter.close()
    assert answer == {}
    assert token.encode() not in squatter.received and b"secret prompt" not in squatter.received
    assert "is not the graphmem daemon" in caplog.text


def test_a_daemon_gone_since_its_daemon_json_is_an_empty_answer(
    data_dir: Path, lock: ServeLock, caplog: pytest.LogCaptureFixture
) -> None:
    ensure_token(data_dir)
    squatter = Squatter(os.getpid())
    url = squatter.url
    squatter.close()  # nothing listens there now
    serve(lock, url)
    with caplog.at_level(logging.WARNING, logger="graphmem.integrations.hook_client"):
        assert HookClient(data_dir, start=False).call("/plugin/boot", {}, 2.0) == {}
    assert "did not answer" in caplog.text


def test_a_daemon_that_holds_the_lock_but_has_not_published_is_starting_and_not_backed_off(
    data_dir: Path, lock: ServeLock, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    crashed = DaemonInfo(999_999, "http://127.0.0.1:9", str(data_dir), time.time() - 3600, "test")
    (data_dir / "daemon.json").write_text(json.dumps(dataclasses.asdict(crashed)))  # a crashed daemon's
    started: list[Path] = []
    monkeypatch.setattr(hook_client, "start_daemon", lambda where, env=None: started.append(where))

    with caplog.at_level(logging.WARNING, logger="graphmem.integrations.hook_client"):
        assert HookClient(data_dir).call("/plugin/turn", {"text": "secret prompt"}, 1.0) == {}

    assert f"the graphmem daemon (pid {os.getpid()}) is starting" in caplog.text
    assert "another program" not in caplog.text
    assert started == [] and not (data_dir / BACKOFF_FILENAME).exists()


def call_a_silent_daemon(data_dir: Path, lock: ServeLock, age_s: float) -> None:
    """A call to this process's daemon, published ``age_s`` ago, whose socket listens but answers
    nothing (as the daemon's does before its server runs, or while it is stuck)."""
    ensure_token(data_dir)
    quiet = socket.socket()
    quiet.bind(("127.0.0.1", 0))
    quiet.listen()
    try:
        serve(lock, f"http://127.0.0.1:{quiet.getsockname()[1]}", age_s=age_s)
        assert HookClient(data_dir, start=False).call("/plugin/turn", {}, 0.2) == {}
    finally:
        quiet.close()


def test_a_daemon_started_moments_ago_that_does_not_answer_yet_is_not_backed_off(
    data_dir: Path, lock: ServeLock, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="graphmem.integrations.hook_client"):
        call_a_silent_daemon(data_dir, lock, age_s=1.0)

    assert f"the graphmem daemon (pid {os.getpid()}) started 1 s ago" in caplog.text
    assert "another program" not in caplog.text
    assert not (data_dir / BACKOFF_FILENAME).exists()


def test_a_silent_daemon_that_started_long_ago_is_left_alone_and_the_log_says_it_is_the_daemon(
    data_dir: Path, lock: ServeLock, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="graphmem.integrations.hook_client"):
        call_a_silent_daemon(data_dir, lock, age_s=3600.0)

    pid = os.getpid()
    assert re.search(
        rf"the graphmem daemon \(pid {pid}\) .*did not answer|no answer from the graphmem daemon", caplog.text
    )
    assert "another program" not in caplog.text
    assert (data_dir / BACKOFF_FILENAME).exists()


def test_start_daemon_runs_the_clis_locked_start_detached_away_from_the_project(
    monkeypatch: pytest.MonkeyPatch, data_dir: Path
) -> None:
    """The hook runs in the agent's project: the starter is graphmem's own module (``-P``) in
    ``/``, given the data dir by its absolute path."""
    seen: dict[str, object] = {}

    def popen(command: list[str], **options: object) -> None:
        seen["command"], seen["options"] = command, options

    monkeypatch.setattr(subprocess, "Popen", popen)
    monkeypatch.chdir(data_dir.parent)
    hook_client.start_daemon(Path(data_dir.name))
    assert seen["command"] == [
        sys.executable,
        "-P",
        "-m",
        "graphmem.integrations.hook_client",
        str(data_dir),
    ]
    assert isinstance(seen["options"], dict) and seen["options"]["start_new_session"] is True
    assert seen["options"]["cwd"] == "/"


def test_a_hook_in_a_project_with_a_graphmem_folder_starts_graphmems_own_starter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real processes, as a hook in a cloned repository starts the daemon: the project's
    ``graphmem/`` is imported neither from the current directory nor through an empty entry of
    ``PYTHONPATH``. graphmem's own starter runs: its data dir is a file, so it fails at once (exit
    1) and starts no daemon; the project's package would have exited 0, its marker written."""
    project = shadowing_project(tmp_path)
    monkeypatch.chdir(project.root)
    monkeypatch.setenv("PYTHONPATH", EMPTY_PYTHONPATH_ENTRY)
    not_a_folder = tmp_path / "data"
    not_a_folder.write_text("", "utf-8")
    started: list[subprocess.Popen[bytes]] = []
    popen = subprocess.Popen

    def keep(*args: Any, **options: Any) -> subprocess.Popen[bytes]:
        started.append(popen(*args, **{**options, "stderr": subprocess.PIPE}))  # what it says, read
        return started[-1]

    monkeypatch.setattr(subprocess, "Popen", keep)

    hook_client.start_daemon(not_a_folder)

    [starter] = started
    _, said = starter.communicate(timeout=60)
    assert project.imported_by() == ""
    assert (starter.returncode, said) == (1, b"")  # ensure_daemon's StoreError: no traceback
