"""A folder that is not graphmem's (a project, a home) given as the data dir gets nothing from the
daemon's start: no lock, start lock or log is written into it before the store would refuse it
(``graphmem.adapters.data_dir.refuse_foreign``), and ``serve --detach`` says why with a
``StoreError``'s exit code. No daemon runs: what would start one is replaced by a failure."""

from __future__ import annotations

import os
import re
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from support.foreign_folder import foreign_folder, snapshot

from graphmem.cli.main import cli
from graphmem.errors import StoreError
from graphmem.server import daemon_process
from graphmem.server.daemon_process import ServeLock, ensure_daemon, spawn_detached

REFUSED = "holds files graphmem did not make ('notes.txt')"


@pytest.fixture
def no_daemon(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What would start a daemon (the detached ``serve``, its launcher) fails the test instead."""
    started: list[Any] = []

    def refuse(args: Any, *rest: Any, **options: Any) -> Any:
        started.append(args)
        raise AssertionError(f"a daemon was started on a folder that is not graphmem's: {args}")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(subprocess, "run", refuse)
    return started


STARTS: dict[str, Callable[[Path], object]] = {
    "the daemon's lock": ServeLock,
    "serve --detach's start": lambda data_dir: spawn_detached(data_dir, timeout=1.0),
    "a client's start, under the start lock": lambda data_dir: ensure_daemon(data_dir, timeout=1.0),
}


@pytest.mark.parametrize("start", list(STARTS.values()), ids=list(STARTS))
def test_a_daemon_start_on_a_folder_that_is_not_graphmems_writes_nothing_into_it(
    tmp_path: Path, no_daemon: list[Any], start: Callable[[Path], object]
) -> None:
    folder = foreign_folder(tmp_path)
    before = snapshot(folder)

    with pytest.raises(StoreError, match=re.escape(REFUSED)):
        start(folder)

    assert snapshot(folder) == before
    assert no_daemon == []


def test_serve_detach_on_a_folder_that_is_not_graphmems_says_why_and_leaves_it_as_it_was(
    tmp_path: Path, no_daemon: list[Any]
) -> None:
    folder = foreign_folder(tmp_path)
    before = snapshot(folder)

    result = CliRunner().invoke(cli, ["--data-dir", str(folder), "serve", "--detach", "--start-timeout", "1"])

    assert result.exit_code == StoreError.exit_code, result.output
    assert REFUSED in result.output
    assert "Traceback" not in result.output
    assert snapshot(folder) == before
    assert not (folder / daemon_process.LOG_FILENAME).exists()
    assert no_daemon == []


def test_a_new_data_dir_and_one_of_graphmems_own_files_still_take_the_daemons_lock(tmp_path: Path) -> None:
    fresh = tmp_path / "new" / "data"
    used = tmp_path / "used"
    used.mkdir(mode=0o700)
    (used / daemon_process.LOG_FILENAME).write_text("an earlier daemon's log\n")
    (used / ".DS_Store").write_bytes(b"\0")  # what a file browser leaves is no one's work
    for data_dir in (fresh, used):
        lock = ServeLock(data_dir)
        try:
            assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
            assert (data_dir / daemon_process.LOCK_FILENAME).read_text().strip() == str(os.getpid())
        finally:
            lock.release()
