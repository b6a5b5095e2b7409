"""A Python process graphmem starts of its own runs ``python -P -m MODULE`` in ``/``, with the
locations its parent read from the environment made absolute: a project's files, the parent's
current directory, are never imported nor read in their place (``graphmem/python_child.py``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.shadowing_project import EMPTY_PYTHONPATH_ENTRY, shadowing_project

from graphmem.python_child import CHILD_CWD, child_environment, python_child


def test_a_child_is_python_dash_p_on_the_module_started_in_the_root() -> None:
    child = python_child("graphmem", "--data-dir", "/d", "serve")

    assert child.argv == [sys.executable, "-P", "-m", "graphmem", "--data-dir", "/d", "serve"]
    assert child.cwd == CHILD_CWD == "/"


def test_the_child_gets_the_given_environment_or_this_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHMEM_EMBEDDING__MODEL", "m")

    assert python_child("graphmem").env["GRAPHMEM_EMBEDDING__MODEL"] == "m"
    assert python_child("graphmem", env={"A": "1"}).env == {"A": "1"}


def test_a_relative_config_file_or_data_dir_is_made_absolute_from_the_parents_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    given = {
        "GRAPHMEM_CONFIG": "conf/graphmem.toml",
        "graphmem_data_dir": "../store",  # the settings match any letter case
        "GRAPHMEM_STORE__SSLCERT": "client.pem",  # no location of graphmem's own files
        "PATH": "bin",
    }

    made = child_environment(given)

    assert made == {
        "GRAPHMEM_CONFIG": str(tmp_path / "conf" / "graphmem.toml"),
        "graphmem_data_dir": str(tmp_path.parent / "store"),
        "GRAPHMEM_STORE__SSLCERT": "client.pem",
        "PATH": "bin",
    }
    assert given["GRAPHMEM_CONFIG"] == "conf/graphmem.toml"  # the caller's mapping is left as it was


@pytest.mark.parametrize("value", ["/etc/graphmem.toml", "~/graphmem.toml", ""])
def test_an_absolute_home_relative_or_empty_location_is_passed_as_it_is(
    value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)

    assert child_environment({"GRAPHMEM_CONFIG": value}) == {"GRAPHMEM_CONFIG": value}


def test_a_child_started_from_a_project_with_a_graphmem_folder_imports_graphmems_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parent runs in the project, whose ``graphmem/`` would run first on a ``python -m`` in
    it; and even under ``-P``, through an empty entry of ``PYTHONPATH``."""
    project = shadowing_project(tmp_path)
    monkeypatch.chdir(project.root)
    monkeypatch.setenv("PYTHONPATH", EMPTY_PYTHONPATH_ENTRY)
    child = python_child("graphmem.python_child")  # a module that runs nothing: only its import

    done = subprocess.run(child.argv, cwd=child.cwd, env=child.env, capture_output=True, timeout=60)

    assert project.imported_by() == ""
    assert done.returncode == 0, done.stderr
