"""``graphmem mcp`` on a data dir no daemon can start in says what is wrong and how to fix it, as
one line with its exit code, before it speaks MCP: not, on every tool call, "the daemon is
unavailable ...; see daemon.log" about a log that was never written (the proxy starts the daemon
in the background, so a data dir refused there came back to the agent only). No proxy runs and
no daemon starts: what would is replaced by a failure."""

from __future__ import annotations

import logging
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from support.foreign_folder import foreign_folder, snapshot

from graphmem.cli.main import cli
from graphmem.errors import StoreError
from graphmem.server import proxy
from graphmem.server.daemon_process import LOG_FILENAME

REFUSED = "holds files graphmem did not make ('notes.txt')"


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What ``graphmem mcp`` would start (the stdio proxy, a daemon) is recorded instead; the
    handler the command gives graphmem's logger is taken away after the test."""
    calls: list[Any] = []
    monkeypatch.setattr(proxy, "main", lambda *args, **options: calls.append(("proxy", args)))

    def refuse(args: Any, *rest: Any, **options: Any) -> Any:
        calls.append(("process", args))
        raise AssertionError(f"graphmem mcp started a process: {args}")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(subprocess, "run", refuse)
    logger = logging.getLogger("graphmem")
    monkeypatch.setattr(logger, "handlers", list(logger.handlers))
    monkeypatch.setattr(logger, "level", logger.level)
    return calls


def test_mcp_on_a_folder_that_is_not_graphmems_names_its_files_and_leaves_it_as_it_was(
    tmp_path: Path, started: list[Any]
) -> None:
    folder = foreign_folder(tmp_path)
    before = snapshot(folder)

    result = CliRunner().invoke(cli, ["--data-dir", str(folder), "mcp"], input="")

    assert result.exit_code == StoreError.exit_code, result.output
    assert REFUSED in result.output
    assert "--data-dir" in result.output  # how to fix it
    assert LOG_FILENAME not in result.output
    assert "Traceback" not in result.output
    assert snapshot(folder) == before
    assert started == []


def test_mcp_on_a_data_dir_that_cannot_be_created_says_so(tmp_path: Path, started: list[Any]) -> None:
    a_file = tmp_path / "notes.txt"
    a_file.write_text("a file, where the data dir's parent folder would be\n")
    data_dir = a_file / "data"

    result = CliRunner().invoke(cli, ["--data-dir", str(data_dir), "mcp"], input="")

    assert result.exit_code == StoreError.exit_code, result.output
    said = rf"Cannot create the data dir {re.escape(str(data_dir))} \(.+\): give a folder you can write"
    assert re.search(said, result.output), result.output
    assert LOG_FILENAME not in result.output
    assert "Traceback" not in result.output
    assert started == []
