"""Tests that share a fixture wider than one test share a pytest-xdist worker
(``support/worker_groups.py``): these tests are the items the hook marked. That the marks take
effect on two real workers is ``tests/integration/test_worker_groups.py``."""

from __future__ import annotations

from collections.abc import Iterator

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
