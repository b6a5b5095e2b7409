"""``graphmem install|uninstall|doctor CLIENT`` run in process, with every agent client's user
folder under ``tmp_path`` and a memory store that may not be opened (those commands never open it)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from graphmem.adapters import opencode_config
from graphmem.cli import main
from graphmem.service.memory import MemoryService

Invoke = Callable[..., Result]
# What the clients' configs run: this virtualenv's, so doctor finds them (it reports a path that is gone).
COMMAND = [str(Path(sys.executable).with_name("graphmem")), "mcp"]
HOOK_PYTHON = sys.executable  # what the hooks run


def client_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Invoke:
    def no_store(data_dir: Path | None, *, check_model: bool = True) -> MemoryService:
        raise AssertionError("install, uninstall and doctor must not open the memory store")

    monkeypatch.setattr(main, "SERVICE_FACTORY", no_store)
    monkeypatch.setattr(opencode_config, "graphmem_command", lambda: list(COMMAND))
    monkeypatch.setattr(sys, "executable", HOOK_PYTHON)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-home"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    runner = CliRunner()
    return lambda *args: runner.invoke(main.cli, list(args))
