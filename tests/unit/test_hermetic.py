"""No test reaches the developer's home, config, daemon or store (``tests/conftest.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.home_guard import REAL_HOME, TOUCHED_REAL_HOME

from graphmem.adapters.embedders import default_cache_dir
from graphmem.locate import default_config_file, default_data_dir, locate

CHILD = """
from pathlib import Path
from graphmem.locate import default_config_file, default_data_dir
print(Path.home(), default_data_dir(), default_config_file(), sep="\\n")
"""


def test_every_place_graphmem_would_use_by_default_is_the_tests_own() -> None:
    places = [Path.home(), default_data_dir(), default_config_file(), default_cache_dir(), locate().data_dir]
    for variable in (
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        "XDG_CACHE_HOME",
        "XDG_RUNTIME_DIR",
    ):
        places.append(Path(os.environ[variable]))

    assert [place for place in places if place.resolve().is_relative_to(REAL_HOME)] == []


def test_a_child_process_finds_no_default_under_the_real_home(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True)

    for line in done.stdout.splitlines():
        assert not Path(line).resolve().is_relative_to(REAL_HOME), line


def test_two_tests_never_share_a_home(tmp_path: Path) -> None:
    assert Path.home() != tmp_path and not Path.home().is_relative_to(tmp_path)
    assert not default_data_dir().exists()  # no other test's store is here


@pytest.mark.parametrize("mode", ["r", "a"])
def test_the_guard_sees_a_test_touch_the_real_home(mode: str) -> None:
    probe = REAL_HOME / ".config" / "graphmem-guard-probe" / "missing.toml"  # never created

    with pytest.raises(FileNotFoundError):
        open(probe, mode).close()

    seen = list(TOUCHED_REAL_HOME)
    TOUCHED_REAL_HOME.clear()  # this test touched it on purpose; the guard would fail it
    assert seen == [f"{'read' if mode == 'r' else 'wrote'} {probe}"]
