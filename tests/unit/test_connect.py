"""graphmem.open_memory: the daemon when one holds the store, the store itself otherwise,
and the project of the current directory, like the CLI."""

from __future__ import annotations

import fcntl
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphmem.adapters.embedders import HashEmbedder
from graphmem.cli import main
from graphmem.connect import open_memory, resolve_project, warm_model
from graphmem.core.models import Scope
from graphmem.errors import ConfigError, StoreLockedError
from graphmem.service.memory import MemoryService


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


def test_inside_a_repository_the_memory_uses_its_project_like_the_cli(
    data_dir: Path, git_project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(Path(git_project) / "src")
    memory = open_memory(data_dir=data_dir, embedder=HashEmbedder(256))
    try:
        assert isinstance(memory, MemoryService)  # no daemon: the store opens in this process
        assert memory.project == git_project
        stored = memory.remember("CI is red on !123 until the flaky test is fixed", category="blocker")
        assert stored.memory.scope is Scope.PROJECT and stored.memory.project == git_project
        bundle = memory.get_context("!123")  # resolved in the project's GitLab namespace
        assert bundle.entity is not None and bundle.entity.key == "MergeRequest:group/sub/proj!123"
        assert [item.hit.memory.id for items in bundle.groups.values() for item in items] == [
            stored.memory.id
        ]
        assert [hit.memory.id for hit in memory.recall("flaky test").hits] == [stored.memory.id]
        assert memory.get_context("!123", project=None).entity == bundle.entity  # None: the own project
    finally:
        memory.close()


def test_what_python_stores_the_cli_finds_in_the_same_directory(
    data_dir: Path, git_project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(git_project)
    memory = open_memory(data_dir=data_dir, embedder=HashEmbedder(256))
    stored = memory.remember("CI is red on !123 until the flaky test is fixed", category="blocker")
    memory.close()

    def factory(path: Path | None, *, check_model: bool = True) -> MemoryService:
        return open_memory(data_dir=path, embedder=HashEmbedder(256), check_model=check_model, project=None)

    monkeypatch.setattr(main, "SERVICE_FACTORY", factory)
    result = CliRunner().invoke(main.cli, ["--data-dir", str(data_dir), "context", "!123", "--json"])
    assert result.exit_code == 0, result.output
    assert stored.memory.id in result.output


def test_project_none_opens_the_memory_with_no_project(
    data_dir: Path, git_project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(git_project)
    memory = open_memory(data_dir=data_dir, embedder=HashEmbedder(256), project=None)
    try:
        assert memory.project is None
        assert memory.remember("Prefer small commits", category="decision").memory.scope is Scope.GLOBAL
    finally:
        memory.close()


def test_outside_a_repository_there_is_no_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outside = tmp_path / "plain"
    outside.mkdir()
    monkeypatch.chdir(outside)
    assert resolve_project(None) is None
    memory = open_memory(data_dir=tmp_path / "data", embedder=HashEmbedder(256))
    try:
        assert memory.project is None
    finally:
        memory.close()


@pytest.fixture
def held_by_a_daemon(data_dir: Path) -> Iterator[Path]:
    """``data_dir`` as a live daemon leaves it: ``daemon.lock`` held, ``daemon.json`` written."""
    data_dir.mkdir(parents=True)
    info = {"pid": 4242, "url": "http://127.0.0.1:9", "data_dir": str(data_dir), "started_at": 0.0}
    (data_dir / "daemon.json").write_text(json.dumps({**info, "version": "0.1.0"}), "utf-8")
    with open(data_dir / "daemon.lock", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield data_dir


def test_an_explicit_embedder_beside_a_daemon_is_a_clear_error(held_by_a_daemon: Path) -> None:
    with pytest.raises(StoreLockedError, match=r"pid 4242.*own model.*without embedder=.*graphmem stop"):
        open_memory(data_dir=held_by_a_daemon, embedder=HashEmbedder(256))


def test_beside_a_daemon_the_memory_goes_through_it(
    held_by_a_daemon: Path, git_project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graphmem.server.remote import RemoteMemory

    monkeypatch.chdir(git_project)
    memory = open_memory(data_dir=held_by_a_daemon)
    assert isinstance(memory, RemoteMemory)
    assert memory.project == git_project
    memory.close()


def test_the_settings_name_the_embedders_default_model() -> None:
    from graphmem import settings
    from graphmem.adapters import embedders

    assert settings.DEFAULT_MODEL == embedders.DEFAULT_MODEL


def test_warming_the_model_with_invalid_settings_raises_before_anything_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[recall]\nlimit = -5\n")
    monkeypatch.setenv("GRAPHMEM_CONFIG", str(config))

    with pytest.raises(ConfigError, match=r"recall.limit"):
        warm_model(tmp_path / "data")  # the command fails: no model is left loading at its exit

    assert "graphmem-model-load" not in {t.name for t in threading.enumerate()}
