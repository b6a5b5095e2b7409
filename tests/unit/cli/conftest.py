"""The ``invoke`` fixture: ``graphmem ARGS`` in process on a fresh store with the hash embedder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from graphmem.adapters.embedders import HashEmbedder
from graphmem.app import open_memory
from graphmem.cli import main
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings

Invoke = Callable[..., Result]


@pytest.fixture
def invoke(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Invoke:
    data_dir = tmp_path / "data"
    project = tmp_path / "work"
    project.mkdir()

    def factory(data_dir: Path | None, *, check_model: bool = True) -> MemoryService:
        return open_memory(
            load_settings(data_dir=data_dir), embedder=HashEmbedder(256), check_model=check_model
        )

    monkeypatch.setattr(main, "SERVICE_FACTORY", factory)
    runner = CliRunner()

    def run(*args: str, input: str | None = None) -> Result:
        return runner.invoke(
            main.cli, ["--data-dir", str(data_dir), "--project", str(project), *args], input=input
        )

    return run
