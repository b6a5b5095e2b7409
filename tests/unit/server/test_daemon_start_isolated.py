"""The daemon a client starts (``ensure_daemon``'s ``graphmem serve --detach``, and the daemon that
one detaches, ``spawn_detached``) is graphmem's own, whatever directory the client runs in: a
``python -P`` child in ``/`` (``graphmem/python_child.py``), given its data dir and config file
by absolute paths. A cloned repository's ``graphmem/`` folder never runs in the user's name
because ``graphmem mcp`` or a hook started the daemon there."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.daemons import stop_serving
from support.shadowing_project import shadowing_project

from graphmem.errors import StoreError
from graphmem.server.daemon_process import ensure_daemon, serve_command, spawn_detached


class Launched:
    """Stands in for ``subprocess.run`` and ``Popen``: records the command and its options, and
    plays a daemon that failed at once (no daemon runs)."""

    def __init__(self) -> None:
        self.argv: list[str] = []
        self.options: dict[str, Any] = {}

    def run(self, argv: list[str], **options: Any) -> subprocess.CompletedProcess[str]:
        self.argv, self.options = list(argv), options
        return subprocess.CompletedProcess(argv, 1, "", "graphmem: it failed\n")

    def popen(self, argv: list[str], **options: Any) -> Any:
        self.argv, self.options = list(argv), options
        return _Exited()


class _Exited:
    pid = -1

    def poll(self) -> int:
        return 1


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The client's current directory: a project, as ``graphmem mcp`` and the hooks run in."""
    path = tmp_path / "project"
    path.mkdir()
    monkeypatch.chdir(path)
    return path


def test_serve_command_is_graphmem_run_with_dash_p_in_the_root_on_an_absolute_data_dir(project: Path) -> None:
    child = serve_command(Path("../data"), "--detach")

    data_dir = str(project.parent / "data")
    assert child.argv == [sys.executable, "-P", "-m", "graphmem", "--data-dir", data_dir, "serve", "--detach"]
    assert child.cwd == "/"


def test_ensure_daemon_runs_its_launcher_in_the_root_with_the_config_file_it_was_given(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    launched = Launched()
    monkeypatch.setattr(subprocess, "run", launched.run)
    monkeypatch.setenv("GRAPHMEM_CONFIG", "graphmem.toml")  # read from the project by the client

    with pytest.raises(StoreError, match="it failed"):
        ensure_daemon(project.parent / "data", timeout=5.0)

    assert launched.argv[:4] == [sys.executable, "-P", "-m", "graphmem"]
    assert launched.argv[4:7] == ["--data-dir", str(project.parent / "data"), "serve"]
    assert launched.options["cwd"] == "/"
    assert launched.options["env"]["GRAPHMEM_CONFIG"] == str(project / "graphmem.toml")


def test_serve_detach_runs_the_daemon_in_the_root(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    launched = Launched()
    monkeypatch.setattr(subprocess, "Popen", launched.popen)

    with pytest.raises(StoreError, match="exited with code 1"):
        spawn_detached(project.parent / "data", timeout=5.0, env={"GRAPHMEM_CONFIG": "graphmem.toml"})

    assert launched.argv[:4] == [sys.executable, "-P", "-m", "graphmem"]
    assert "--detached-child" in launched.argv
    assert launched.options["cwd"] == "/"
    assert launched.options["env"] == {"GRAPHMEM_CONFIG": str(project / "graphmem.toml")}


def test_a_daemon_started_in_a_project_with_a_graphmem_folder_is_graphmems_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real processes: ``ensure_daemon`` in the project, as ``graphmem mcp`` runs it, starts
    ``graphmem serve --detach``. Its settings (a config file named relative to the project) give
    the daemon a port no daemon can take, so graphmem's own daemon stops at once and says why;
    the project's package would have exited quietly, its marker written."""
    project = shadowing_project(tmp_path)
    (project.root / "graphmem.toml").write_text('[server]\nport = "no port"\n', "utf-8")
    monkeypatch.chdir(project.root)
    monkeypatch.setenv("GRAPHMEM_CONFIG", "graphmem.toml")
    data_dir = tmp_path / "data"

    try:
        with pytest.raises(StoreError) as raised:
            ensure_daemon(data_dir, timeout=60.0)
    finally:
        stop_serving(data_dir)  # none should run; a test that failed leaves none either

    assert project.imported_by() == ""
    assert str(project.root / "graphmem.toml") in str(raised.value)  # graphmem's own read its settings
