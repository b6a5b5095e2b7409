"""The CLI in process on the in-memory store with the hash embedder.

``in_memory_cli`` makes every command of a test open its service on one in-memory store per
data dir, kept between commands as the Kùzu directory would be (``stores[data_dir]`` is it,
to look at). ``invoke`` runs ``graphmem ARGS`` on a fresh data dir with it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from support.memory_service import DIMENSION, in_memory_service

from graphmem.adapters.fake_code import FakeCodeGraph
from graphmem.adapters.fake_store import FakeGraphStore
from graphmem.cli import main
from graphmem.service.memory import MemoryService

Invoke = Callable[..., Result]


class KeptStore(FakeGraphStore):
    """An in-memory store that outlives the service of one command, as a data dir does."""

    def close(self) -> None:
        """Each command closes its service; the next command of the test reads the same data."""


@pytest.fixture
def in_memory_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[Path, KeptStore]:
    """Commands open their service on the in-memory store of their data dir; the stores by data dir."""
    stores: dict[Path, KeptStore] = {}
    code_graphs: dict[Path, FakeCodeGraph] = {}  # its code graph, kept with it

    def factory(data_dir: Path | None, *, check_model: bool = True) -> MemoryService:
        folder = Path(data_dir or tmp_path / "default-data").resolve()
        store = stores.setdefault(folder, KeptStore(dimension=DIMENSION))
        code = code_graphs.setdefault(folder, FakeCodeGraph(store))
        return in_memory_service(folder, store=store, code=code)

    monkeypatch.setattr(main, "SERVICE_FACTORY", factory)
    return stores


@pytest.fixture
def invoke(tmp_path: Path, in_memory_cli: dict[Path, KeptStore]) -> Invoke:
    data_dir = tmp_path / "data"
    project = tmp_path / "work"
    project.mkdir()
    runner = CliRunner()

    def run(*args: str, input: str | None = None) -> Result:
        return runner.invoke(
            main.cli, ["--data-dir", str(data_dir), "--project", str(project), *args], input=input
        )

    return run
