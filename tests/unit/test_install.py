"""What `make run` installs is what runs; the size the docs give is the one CI enforces.

CI builds the runtime virtualenv and measures it (.ci/check_install.py); these tests check,
without installing anything, that the Makefile keeps the test tools out of it and that
README.md and docs/operations.md print one figure within CI's limit.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def recipe(target: str, venv: Path) -> str:
    """The commands `make TARGET` would run for a virtualenv that does not exist yet (make -n)."""
    done = subprocess.run(
        ["make", "-n", "--no-print-directory", "-C", str(ROOT), target, f"VENV={venv}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_run_installs_graphmem_without_the_dev_extra_and_make_test_adds_it(tmp_path: Path) -> None:
    venv = tmp_path / "v"

    run = recipe("run", venv)
    test = recipe("test", venv)

    installs = [line for line in run.splitlines() if " pip install " in line]
    assert any(" -e . " in f"{line} " for line in installs), run
    assert not any("[dev]" in line for line in installs), run
    assert "-e '.[dev]'" in test, test


def test_readme_and_operations_give_one_runtime_size_within_what_ci_allows() -> None:
    spec = importlib.util.spec_from_file_location("check_install", ROOT / ".ci" / "check_install.py")
    assert spec is not None and spec.loader is not None
    check_install = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check_install)
    readme = (ROOT / "README.md").read_text("utf-8")
    operations = (ROOT / "docs" / "operations.md").read_text("utf-8")

    figures = {
        "README.md": re.findall(r"the virtualenv is (\d+) MiB in all", readme),
        "operations.md table": re.findall(
            r"\| Disk \| (\d+) MiB for the virtualenv `make run` makes", operations
        ),
        "operations.md du": re.findall(r"^(\d+)\t/tmp/v$", operations, re.M),
    }

    assert all(len(found) == 1 for found in figures.values()), figures
    assert len({found[0] for found in figures.values()}) == 1, figures
    assert int(figures["README.md"][0]) <= check_install.RUNTIME_VENV_MAX_MIB
