"""The groups ``support/worker_groups.py`` gives take effect: a run of pytest on two
pytest-xdist workers (a process each), as ``make test`` runs, puts each group's tests on one
worker. ``tests/unit/test_worker_groups.py`` checks which group each kind of test gets."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_the_tests_of_one_group_run_on_one_worker(tmp_path: Path) -> None:
    """The mark takes effect: with two workers and --dist loadgroup as `make test` runs, the six
    tests of one group all report the same worker (pytest 9.2 with pytest-xdist 3.8 spreads
    them: the group is written where pytest no longer reads a test's id), and so do the tests of
    each param of a shared fixture, grouped by the hook (a group named "...[store=0]" was none:
    pytest-xdist reads no group from an id that ends in "]")."""
    (tmp_path / "conftest.py").write_text(
        "import pytest\n"
        "from support.worker_groups import group_by_shared_fixtures\n"
        "@pytest.hookimpl(tryfirst=True)\n"
        "def pytest_collection_modifyitems(items):\n"
        "    group_by_shared_fixtures(items)\n"
    )
    (tmp_path / "test_grouped.py").write_text(
        "import os, pytest\n"
        "def mark(name):\n"
        "    with open(name, 'w') as out:\n"
        "        out.write(os.environ['PYTEST_XDIST_WORKER'])\n"
        "@pytest.mark.xdist_group('together')\n"
        "@pytest.mark.parametrize('i', range(6))\n"
        "def test_member(i):\n"
        "    mark(f'worker-{i}')\n"
        "@pytest.fixture(scope='module', params=['a', 'b'])\n"
        "def store(request):\n"
        "    return request.param\n"
        "@pytest.mark.parametrize('i', range(6))\n"
        "def test_on_a_store(store, i):\n"
        "    mark(f'store-{store}-{i}')\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup",
         "-c", os.devnull, "--rootdir", str(tmp_path), "test_grouped.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )  # fmt: skip

    assert done.returncode == 0, done.stdout + done.stderr
    workers = {(tmp_path / f"worker-{i}").read_text() for i in range(6)}
    assert len(workers) == 1, workers
    for store in "ab":
        workers = {(tmp_path / f"store-{store}-{i}").read_text() for i in range(6)}
        assert len(workers) == 1, (store, workers)
