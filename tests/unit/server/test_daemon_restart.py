"""A call made right after the daemon died: what ``graphmem mcp`` and ``ensure_daemon`` find in the
data dir in the moments after (a killed daemon's lock not dropped yet while its port refuses, the
``daemon.json`` it left while another daemon starts, a start that died before it published) never
fails the call nor takes it to a dead daemon's port; a daemon that does not come up ends the call
in bounded time, with an error that says what to do.

The daemons are stand-ins: a process that holds the lock as the daemon takes it (``ServeLock``)
and does what the test tells it, and, where a daemon is started, a small HTTP server that proves
itself (``identity``) and answers every call, which ``serve_command`` runs in place of
``graphmem serve --detach``. Each test makes its moment happen at a step of the client's own
(the proxy's second look for the daemon, ``ensure_daemon``'s first pause), never after a sleep."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict
from pathlib import Path

import pytest

from graphmem.errors import StoreError
from graphmem.python_child import CHILD_CWD, PythonChild, child_environment
from graphmem.server import daemon_process
from graphmem.server import proxy as proxy_module
from graphmem.server.daemon_process import DaemonInfo, ensure_daemon, read_info
from graphmem.server.proxy import Proxy

TOKEN = "t" * 43
CALL = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "memory_status"}}

# Holds the daemon lock of argv[1] as the daemon does (its pid written in the lock file), says
# "held", and at each "publish" line publishes its own address (port argv[2]), as a daemon that
# has opened its store does.
HOLDER = """
import os, sys, time
from pathlib import Path
from graphmem.server.daemon_process import DaemonInfo, ServeLock
data_dir = Path(sys.argv[1])
lock = ServeLock(data_dir)
print("held", flush=True)
for line in sys.stdin:
    url = "http://127.0.0.1:" + sys.argv[2]
    lock.publish(DaemonInfo(os.getpid(), url, str(data_dir), time.time(), "holder"))
    print("published", flush=True)
"""

# ``graphmem serve`` for argv[1], in small: the lock, the token, a port that proves itself and
# answers every call with the pid that answered; with --detach, the launcher that starts it in a
# session of its own and returns once it has published its address (as ``serve --detach``).
STAND_IN = """
import json, os, subprocess, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from graphmem.server import identity
from graphmem.server.daemon_process import DaemonInfo, ServeLock, ensure_token, find_daemon

data_dir = Path(sys.argv[1])
if "--detach" in sys.argv:
    with open(data_dir / "daemon.log", "ab") as log:  # not the launcher's pipes: they end with it
        child = subprocess.Popen([sys.executable, __file__, str(data_dir)], start_new_session=True,
                                 stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    while (info := find_daemon(data_dir)) is None or info.pid != child.pid:
        if child.poll() is not None:
            sys.exit(f"the stand-in daemon exited with {child.returncode}")
        time.sleep(0.01)
    sys.exit(0)
threading.Timer(120, os._exit, [0]).start()  # never outlives a test run that lost it
lock = ServeLock(data_dir)
token = ensure_token(data_dir)

class Daemon(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path == identity.PATH:
            answer = identity.answer(token, None, body["nonce"], self.server.server_address[1])
        elif self.headers.get("Authorization") != "Bearer " + token:
            answer = {"error": "no token"}
        else:
            answer = {"jsonrpc": "2.0", "id": body["id"], "result": {"content": [], "by": os.getpid()}}
        raw = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", 0), Daemon)
url = "http://127.0.0.1:%d" % server.server_address[1]
lock.publish(DaemonInfo(os.getpid(), url, str(data_dir), time.time(), "stand-in"))
server.serve_forever()
"""


class Holder:
    """A process holding the daemon lock of ``data_dir``: a daemon killed and not gone yet, or one
    starting; ``publish`` has it publish its address, ``kill`` ends it (its lock dropped)."""

    def __init__(self, data_dir: Path, port: int) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(data_dir), str(port)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._said() == "held"
        self.pid = self.process.pid

    def _said(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline().strip()

    def publish(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("publish\n")
        self.process.stdin.flush()
        assert self._said() == "published"

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()  # gone: the kernel has dropped its lock

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.kill()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    """A data dir with the token a daemon left (it outlives the daemon); any stand-in daemon
    started there is stopped after the test."""
    folder = tmp_path / "data"
    folder.mkdir(mode=0o700)
    token = folder / "daemon.token"
    token.write_text(TOKEN + "\n", "ascii")
    token.chmod(0o600)
    yield folder
    info = read_info(folder)
    if info is not None and info.version == "stand-in":
        with contextlib.suppress(ProcessLookupError):
            os.kill(info.pid, signal.SIGKILL)


@pytest.fixture
def refusing_port() -> Iterator[int]:
    """A loopback port that refuses every connection (bound, never listening): a dead daemon's."""
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        yield int(bound.getsockname()[1])


@pytest.fixture
def holders() -> Iterator[Callable[[Path, int], Holder]]:
    started: list[Holder] = []

    def hold(data_dir: Path, port: int) -> Holder:
        started.append(Holder(data_dir, port))
        return started[-1]

    yield hold
    for holder in started:
        holder.close()


@pytest.fixture
def launches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """``graphmem serve --detach`` as ``ensure_daemon`` runs it, replaced by the stand-in's: the
    data dirs it was run for."""
    script = tmp_path / "stand_in_daemon.py"
    script.write_text(STAND_IN, "utf-8")
    launched: list[Path] = []

    def serve_command(data_dir: Path, *flags: str, env: Mapping[str, str] | None = None) -> PythonChild:
        launched.append(data_dir)
        return PythonChild(
            [sys.executable, str(script), str(data_dir), *flags], CHILD_CWD, child_environment(env)
        )

    monkeypatch.setattr(daemon_process, "serve_command", serve_command)
    return launched


def publish_dead_daemon(data_dir: Path, pid: int, port: int) -> None:
    """The ``daemon.json`` a daemon killed with SIGKILL leaves: its pid, its port."""
    info = DaemonInfo(pid, f"http://127.0.0.1:{port}", str(data_dir), 0.0, "dead")
    (data_dir / "daemon.json").write_text(json.dumps(asdict(info)), "utf-8")


def dead_pid() -> int:
    """The pid of a process that has ended."""
    process = subprocess.Popen([sys.executable, "-c", ""])
    process.wait()
    return process.pid


class FirstPause:
    """``daemon_process``'s clock, whose first pause runs ``then`` first: what happens while
    ``ensure_daemon`` waits for a daemon that is starting."""

    monotonic = staticmethod(time.monotonic)

    def __init__(self, then: Callable[[], None]) -> None:
        self.then: Callable[[], None] | None = then
        self.pauses = 0

    def sleep(self, seconds: float) -> None:
        self.pauses += 1
        if self.then is not None:
            then, self.then = self.then, None
            then()
        time.sleep(seconds)


class PausesOnly:
    """The proxy's clock, moved by its own pauses alone: how many tries fit in its start timeout
    does not hang on how loaded the machine is."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


# -- graphmem mcp, a call right after the daemon was killed ---------------------------------------


def test_a_call_right_after_the_daemon_was_killed_is_answered_by_the_daemon_started_after_it(
    data_dir: Path,
    refusing_port: int,
    holders: Callable[[Path, int], Holder],
    launches: list[Path],
) -> None:
    # Killed, not gone yet: it still holds its lock, daemon.json names it, its port refuses.
    dying = holders(data_dir, refusing_port)
    publish_dead_daemon(data_dir, dying.pid, refusing_port)
    looks: list[float] = []

    def start(folder: Path, timeout: float) -> DaemonInfo:
        looks.append(timeout)
        if len(looks) == 2:  # the proxy looks again after the dying daemon refused it twice
            dying.kill()
        return ensure_daemon(folder, timeout=timeout)

    proxy = Proxy(data_dir, None, "t", 30.0, start=start)
    try:
        reply = proxy.handle(CALL)
    finally:
        proxy.close()

    started = read_info(data_dir)
    assert started is not None and started.version == "stand-in"
    assert (reply or {}).get("result") == {"content": [], "by": started.pid}, reply
    assert launches == [data_dir]  # one daemon started, once the dying one had gone


def test_a_daemon_that_keeps_its_lock_and_refuses_ends_the_call_in_time_saying_what_to_do(
    data_dir: Path,
    refusing_port: int,
    holders: Callable[[Path, int], Holder],
    launches: list[Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stuck = holders(data_dir, refusing_port)
    publish_dead_daemon(data_dir, stuck.pid, refusing_port)
    looks: list[float] = []

    def start(folder: Path, timeout: float) -> DaemonInfo:
        looks.append(timeout)
        return ensure_daemon(folder, timeout=timeout)

    monkeypatch.setattr(proxy_module, "time", PausesOnly(), raising=False)
    proxy = Proxy(data_dir, None, "t", 0.5, start=start)
    try:
        reply = proxy.handle(CALL)
    finally:
        proxy.close()

    assert reply is not None and reply["result"]["isError"] is True
    text = reply["result"]["content"][0]["text"]
    assert f"daemon (pid {stuck.pid})" in text and "`graphmem stop`" in text, text
    assert "Nothing was stored by this call" in text
    assert len(looks) >= 5  # it kept looking while the daemon held its lock, not once
    assert looks == sorted(looks, reverse=True) and looks[0] <= 0.5  # within one start_timeout
    assert launches == []  # never a second daemon beside one that holds the lock


def test_a_data_dir_no_daemon_can_start_in_is_a_tool_error_that_says_why(tmp_path: Path) -> None:
    not_a_folder = tmp_path / "data"
    not_a_folder.write_text("a file where the data dir should be\n")
    proxy = Proxy(not_a_folder, None, "t", 5.0)

    reply = proxy.handle(CALL)

    assert reply is not None and reply["result"]["isError"] is True
    text = reply["result"]["content"][0]["text"]
    assert f"Cannot start the graphmem daemon of {not_a_folder}" in text, text
    assert "a folder you can write" in text and "Nothing was stored by this call" in text


# -- ensure_daemon, while another daemon starts over a killed one's daemon.json -------------------


def test_a_killed_daemons_file_is_never_taken_for_the_daemon_starting_in_its_place(
    data_dir: Path,
    refusing_port: int,
    holders: Callable[[Path, int], Holder],
    launches: list[Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    publish_dead_daemon(data_dir, dead_pid(), refusing_port)
    starting = holders(data_dir, refusing_port + 1)  # another client's daemon, opening its store
    clock = FirstPause(then=starting.publish)
    monkeypatch.setattr(daemon_process, "time", clock)

    info = ensure_daemon(data_dir, timeout=30.0)

    assert info.pid == starting.pid and info.url.endswith(f":{refusing_port + 1}")
    assert clock.pauses == 1  # it waited for the address, once
    assert launches == []


def test_a_daemon_that_never_publishes_is_an_error_in_time_that_names_it(
    data_dir: Path,
    refusing_port: int,
    holders: Callable[[Path, int], Holder],
    launches: list[Path],
) -> None:
    publish_dead_daemon(data_dir, dead_pid(), refusing_port)
    stuck = holders(data_dir, refusing_port)

    with pytest.raises(StoreError) as raised:
        ensure_daemon(data_dir, timeout=0.3)

    said = str(raised.value)
    assert f"The graphmem daemon (pid {stuck.pid}) holds" in said and f"`kill {stuck.pid}`" in said
    assert launches == []


def test_a_start_that_died_before_it_published_leaves_the_start_to_the_next_client(
    data_dir: Path,
    refusing_port: int,
    holders: Callable[[Path, int], Holder],
    launches: list[Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dead = dead_pid()
    publish_dead_daemon(data_dir, dead, refusing_port)
    crashed = holders(data_dir, refusing_port)  # dies while opening the store
    monkeypatch.setattr(daemon_process, "time", FirstPause(then=crashed.kill))

    info = ensure_daemon(data_dir, timeout=30.0)

    assert info.version == "stand-in" and info.pid not in (dead, crashed.pid)
    assert launches == [data_dir]


# -- the CLI and the API, while a daemon starts over a killed one's daemon.json ------------------


def test_open_memory_waits_for_the_daemon_starting_and_goes_through_it(
    data_dir: Path,
    refusing_port: int,
    holders: Callable[[Path, int], Holder],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from graphmem.connect import open_memory
    from graphmem.server.remote import RemoteMemory

    publish_dead_daemon(data_dir, dead_pid(), refusing_port)
    starting = holders(data_dir, refusing_port + 1)  # another client's daemon, opening its store
    clock = FirstPause(then=starting.publish)
    monkeypatch.setattr(daemon_process, "time", clock)

    memory = open_memory(data_dir=data_dir, project=None)
    try:
        assert isinstance(memory, RemoteMemory)  # not the store opened here, under the daemon's lock
        assert memory.info.pid == starting.pid and memory.info.url.endswith(f":{refusing_port + 1}")
        assert clock.pauses == 1
    finally:
        memory.close()


def test_stop_never_signals_the_pid_a_killed_daemon_left_and_stops_the_one_starting(
    data_dir: Path,
    refusing_port: int,
    holders: Callable[[Path, int], Holder],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The killed daemon's pid, given by the system to another process since (here: the test's own).
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        publish_dead_daemon(data_dir, other.pid, refusing_port)
        starting = holders(data_dir, refusing_port + 1)
        monkeypatch.setattr(daemon_process, "time", FirstPause(then=starting.publish))

        stopped = daemon_process.stop_daemon(data_dir)

        assert stopped is not None and stopped.pid == starting.pid
        assert starting.process.wait(timeout=30) == -signal.SIGTERM
        assert other.poll() is None  # never signalled
    finally:
        other.kill()
        other.wait()


def test_serve_detach_while_another_clients_daemon_starts_reports_that_daemon(
    data_dir: Path,
    refusing_port: int,
    holders: Callable[[Path, int], Holder],
    launches: list[Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from click.testing import CliRunner

    from graphmem.cli.main import cli

    publish_dead_daemon(data_dir, dead_pid(), refusing_port)
    starting = holders(data_dir, refusing_port + 1)
    monkeypatch.setattr(daemon_process, "time", FirstPause(then=starting.publish))
    monkeypatch.setattr(daemon_process, "spawn_detached", lambda *a, **k: pytest.fail("a second daemon"))

    result = CliRunner().invoke(cli, ["--data-dir", str(data_dir), "serve", "--detach"])

    assert result.exit_code == 0, result.output
    assert f"graphmem daemon (pid {starting.pid}): http://127.0.0.1:{refusing_port + 1}/mcp" in result.output


def test_a_command_without_settings_waits_for_a_starting_daemon_as_long_as_the_settings_default() -> None:
    from graphmem.connect import DAEMON_START_WAIT_S
    from graphmem.settings import ServerSettings

    assert ServerSettings().start_timeout_seconds == DAEMON_START_WAIT_S
