"""The tests' temporary folders go in memory only where the machine has room, and never where
the run chose another place (``support/temp_root.py``)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest
from support import temp_root


def test_a_root_that_is_missing_or_too_small_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert temp_root.memory_temp_root(tmp_path / "missing") is None
    monkeypatch.setattr(temp_root, "MIN_FREE_BYTES", 2**62)
    assert temp_root.memory_temp_root(tmp_path) is None
    monkeypatch.setattr(temp_root, "MIN_FREE_BYTES", 0)
    assert temp_root.memory_temp_root(tmp_path) == tmp_path


@pytest.mark.parametrize("chosen", ["basetemp", "variable"])
def test_a_run_that_chose_where_its_folders_go_keeps_its_choice(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, chosen: str
) -> None:
    monkeypatch.setattr(temp_root, "memory_temp_root", lambda: tmp_path / "memory")
    monkeypatch.delenv(temp_root.ROOT_VARIABLE, raising=False)
    if chosen == "variable":
        monkeypatch.setenv(temp_root.ROOT_VARIABLE, str(tmp_path / "mine"))
    config = SimpleNamespace(option=SimpleNamespace(basetemp=str(tmp_path) if chosen == "basetemp" else None))

    temp_root.put_temp_folders_in_memory(cast(pytest.Config, config))

    assert os.environ.get(temp_root.ROOT_VARIABLE) == (
        str(tmp_path / "mine") if chosen == "variable" else None
    )


def test_a_run_that_did_not_choose_makes_them_in_memory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(temp_root, "memory_temp_root", lambda: tmp_path)
    monkeypatch.delenv(temp_root.ROOT_VARIABLE, raising=False)

    temp_root.put_temp_folders_in_memory(
        cast(pytest.Config, SimpleNamespace(option=SimpleNamespace(basetemp=None)))
    )

    assert os.environ[temp_root.ROOT_VARIABLE] == str(tmp_path)


def test_a_tests_folder_is_new_named_after_it_and_made_without_a_link_per_name(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> None:
    """tests/conftest.py's ``tmp_path``: pytest's folder, without the ``<name>current`` link
    pytest's own leaves per test name (thousands in the base folder it lists for each test)."""
    stem = re.sub(r"\W", "_", request.node.name)[:30]

    assert tmp_path.parent == tmp_path_factory.getbasetemp()
    assert tmp_path.name.removeprefix(stem).isdigit()
    assert list(tmp_path.iterdir()) == []
    assert not (tmp_path.parent / f"{stem}current").is_symlink()
