"""Progress through a real daemon: a bootstrap sent to it reports its progress as it goes, to the
Python client and to the CLI's bar on a terminal (and nothing on a pipe)."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.daemons import Daemon, http, read_info, sandbox_env, start_daemon

from graphmem.server import loopback
from graphmem.server.daemon_process import DaemonInfo
from graphmem.server.remote import RemoteMemory

pytestmark = pytest.mark.integration

FILES = 130  # bootstrap reports every 50 files and at the last one


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    running = start_daemon(tmp_path_factory.mktemp("daemon") / "data")
    yield running
    running.stop()


def repository(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    for n in range(FILES):
        (root / "src" / f"m{n:03}.py").write_text(f"def f{n}() -> int:\n    return {n}\n", "utf-8")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root.resolve()


def remote(daemon: Daemon) -> RemoteMemory:
    info = read_info(daemon.data_dir)
    assert info is not None
    return RemoteMemory(DaemonInfo(**info))


def test_a_bootstrap_through_the_daemon_reports_its_progress(daemon: Daemon, tmp_path: Path) -> None:
    root = repository(tmp_path / "repo")
    events: list[tuple[int, int]] = []

    def progress(done: int, total: int) -> None:
        events.append((done, total))

    report = remote(daemon).bootstrap(root, history=0, progress=progress)
    assert report.files == FILES and report.parsed == FILES
    assert events, "no progress came through the daemon"
    assert all(total == FILES for _, total in events)
    assert [done for done, _ in events] == sorted(done for done, _ in events)
    assert events[-1] == (FILES, FILES)
    again = remote(daemon).bootstrap(root, history=0)  # a client that does not ask: the plain answer
    assert again.files == FILES and again.unchanged == FILES


def test_a_client_that_hangs_up_does_not_stop_the_bootstrap(daemon: Daemon, tmp_path: Path) -> None:
    root = repository(tmp_path / "left")
    port = int(daemon.url.rsplit(":", 1)[1])
    body = {"method": "bootstrap", "arguments": {"path": str(root), "history": 0}, "progress": True}
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {daemon.token}"}
    with loopback.open_post("127.0.0.1", port, "/rpc", json.dumps(body).encode(), headers, 60) as answer:
        assert answer.media_type == "application/x-ndjson"
        first = json.loads(next(answer.lines(65536)))  # the verb is under way; then hang up
    assert "progress" in first or "result" in first
    again = remote(daemon).bootstrap(root, history=0)  # waits for the first one's write lock
    assert again.files == FILES and again.unchanged == FILES  # the first one finished and kept it all
    assert http("GET", f"{daemon.url}/health")[0] in (200, 503)  # still serving
    assert "Traceback" not in daemon.log.read_text("utf-8")


def run_cli(daemon: Daemon, cwd: Path, *args: str, terminal: bool) -> tuple[int, str]:
    """Run graphmem with stderr on a terminal (a pty) or a pipe; its exit code and stderr."""
    command = [sys.executable, "-m", "graphmem", *args]
    env = sandbox_env(daemon.data_dir)
    if not terminal:
        done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
        return done.returncode, done.stderr
    main, secondary = pty.openpty()
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # EIO once the process has closed its side
                return
            if not chunk:
                return
            chunks.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        process = subprocess.run(
            command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=secondary, timeout=120, check=False
        )
    finally:
        os.close(secondary)
        reader.join(10)
        os.close(main)
    return process.returncode, b"".join(chunks).decode("utf-8", "replace")


def test_the_cli_draws_the_bar_through_the_daemon_on_a_terminal_only(daemon: Daemon, tmp_path: Path) -> None:
    root = repository(tmp_path / "repo")
    code, shown = run_cli(daemon, root, "bootstrap", "--history", "0", terminal=True)
    assert code == 0, shown
    assert "scanning" in shown and f"{FILES}/{FILES}" in shown  # the bar reached the daemon's last count
    (root / "src" / "m000.py").write_text("def changed() -> int:\n    return 0\n", "utf-8")
    code, piped = run_cli(daemon, root, "bootstrap", "--history", "0", terminal=False)
    assert code == 0, piped
    assert "scanning" not in piped
