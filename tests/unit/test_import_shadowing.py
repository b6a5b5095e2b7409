"""A folder named graphmem beside a script (a clone of graphmem, ~/src/graphmem) never hides the
installed package: the script imports graphmem itself, not an empty namespace package.

setuptools' default editable install finds graphmem with an import hook that Python asks only
after its own path search, which takes such a folder for a namespace package first (``cannot
import name 'open_memory' from 'graphmem' (unknown location)``). The Makefile installs graphmem
as a path entry instead (``editable_mode=compat``), where a real package wins over a namespace
folder; a wheel install is a real package in site-packages too.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import graphmem
from tests.unit.test_install import recipe

ROOT = Path(__file__).resolve().parents[2]
REINSTALL = ".venv/bin/python -m pip install --no-deps -e . --config-settings editable_mode=compat"


def test_a_script_beside_a_folder_named_graphmem_imports_the_installed_package(tmp_path: Path) -> None:
    (tmp_path / "graphmem" / "graphmem").mkdir(parents=True)  # a clone: its package one level down
    (tmp_path / "graphmem" / "README.md").write_text("a clone of graphmem\n", "utf-8")
    script = tmp_path / "script.py"
    script.write_text(
        "import graphmem\nfrom graphmem import open_memory\nprint(graphmem.__file__)\n", "utf-8"
    )
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONSAFEPATH")}

    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )

    assert done.returncode == 0, f"{done.stderr}\nis graphmem installed editable as a path entry? {REINSTALL}"
    assert done.stdout.strip() == graphmem.__file__


def test_the_makefile_installs_graphmem_editable_as_a_path_entry(tmp_path: Path) -> None:
    commands = recipe("test", tmp_path / "venv").splitlines()
    editable = [command for command in commands if " pip install " in command and " -e " in command]

    assert len(editable) == 2  # what runs, then the test tools on top of it
    assert all(command.endswith("--config-settings editable_mode=compat") for command in editable), editable
