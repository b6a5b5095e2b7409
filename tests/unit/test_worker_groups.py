"""Tests that share a fixture wider than one test share a pytest-xdist worker
(``support/worker_groups.py``): these tests are the items the hook marked."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.worker_groups import shared_group

MODULE = "tests/unit/test_worker_groups.py"


@pytest.fixture(scope="module")
def shared_daemon() -> str:
    return "one daemon for the module's tests"


@pytest.fixture(scope="module", params=["kuzu", "postgres"])
def store_kind(request: pytest.FixtureRequest) -> Iterator[str]:
    yield str(request.param)


@pytest.fixture(scope="class")
def per_class() -> str:
    return "one for each class that uses it"


class TestAClassFixture:
    def test_a_class_fixture_groups_the_class(self, per_class: str, request: pytest.FixtureRequest) -> None:
        assert group_of(request) == f"{MODULE}::TestAClassFixture"

    def test_a_module_fixture_is_wider_than_a_class_one(
        self, per_class: str, shared_daemon: str, request: pytest.FixtureRequest
    ) -> None:
        assert group_of(request) == MODULE


def group_of(request: pytest.FixtureRequest) -> str | None:
    """The group the hook gave this test (None: any worker), checked against ``shared_group``."""
    marker = request.node.get_closest_marker("xdist_group")
    group = marker.args[0] if marker is not None else None
    assert group == shared_group(request.node)
    return group


def test_a_test_with_function_fixtures_only_goes_to_any_worker(
    tmp_path: object, request: pytest.FixtureRequest
) -> None:
    assert group_of(request) is None


def test_the_tests_of_a_module_fixture_share_its_worker(
    shared_daemon: str, request: pytest.FixtureRequest
) -> None:
    assert group_of(request) == MODULE


def test_each_param_of_a_shared_fixture_is_a_group_of_its_own(
    store_kind: str, request: pytest.FixtureRequest
) -> None:
    index = ["kuzu", "postgres"].index(store_kind)
    assert group_of(request) == f"{MODULE}(store_kind={index})"


@pytest.mark.xdist_group("named")
def test_a_group_the_test_names_is_kept(shared_daemon: str, request: pytest.FixtureRequest) -> None:
    marker = request.node.get_closest_marker("xdist_group")
    assert marker is not None and marker.args == ("named",)


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
