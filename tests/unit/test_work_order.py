"""The order pytest-xdist hands the work units out in (``support/work_order.py``): the costliest
kind first, each unit's tests together and in their own order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import pytest
from support.work_order import costliest_first


@dataclass
class Collected:
    """What costliest_first reads of a collected test."""

    nodeid: str
    group: str | None = None
    fixturenames: list[str] = field(default_factory=list)

    def get_closest_marker(self, name: str) -> Any:
        assert name == "xdist_group"
        return pytest.mark.xdist_group(self.group).mark if self.group else None


def ordered(*tests: Collected) -> list[str]:
    items = cast(list[pytest.Item], list(tests))
    costliest_first(items)
    return [item.nodeid for item in items]


def test_the_costliest_kind_goes_first_and_the_unit_tests_last() -> None:
    assert ordered(
        Collected("tests/unit/test_a.py::test_one"),
        Collected("tests/unit/test_b.py::test_grouped", group="tests/unit/test_b.py"),
        Collected("tests/integration/test_c.py::test_alone"),
        Collected("tests/integration/test_d.py::test_shared", group="tests/integration/test_d.py"),
        Collected("tests/integration/opencode/test_e.py::test_turns", fixturenames=["opencode_binary"]),
    ) == [
        "tests/integration/opencode/test_e.py::test_turns",
        "tests/integration/test_d.py::test_shared",
        "tests/integration/test_c.py::test_alone",
        "tests/unit/test_b.py::test_grouped",
        "tests/unit/test_a.py::test_one",
    ]


def test_a_groups_tests_stay_together_in_their_order_the_larger_group_first() -> None:
    small, large = "tests/integration/small", "tests/integration/large"
    assert ordered(
        Collected("tests/integration/small/test_s.py::test_1", group=small),
        Collected("tests/integration/large/test_l.py::test_1", group=large),
        Collected("tests/integration/test_x.py::test_alone"),
        Collected("tests/integration/small/test_s.py::test_2", group=small),
        Collected("tests/integration/large/test_l.py::test_2", group=large),
        Collected("tests/integration/large/test_l.py::test_3", group=large),
    ) == [
        "tests/integration/large/test_l.py::test_1",
        "tests/integration/large/test_l.py::test_2",
        "tests/integration/large/test_l.py::test_3",
        "tests/integration/small/test_s.py::test_1",
        "tests/integration/small/test_s.py::test_2",
        "tests/integration/test_x.py::test_alone",
    ]


def test_a_group_with_one_client_test_goes_with_the_clients() -> None:
    group = "tests/integration/test_m.py"
    assert ordered(
        Collected("tests/integration/test_big.py::test_1", group="big"),
        Collected("tests/integration/test_big.py::test_2", group="big"),
        Collected("tests/integration/test_m.py::test_plain", group=group),
        Collected("tests/integration/test_m.py::test_client", group=group, fixturenames=["codex_binary"]),
    )[:2] == ["tests/integration/test_m.py::test_plain", "tests/integration/test_m.py::test_client"]


def test_units_of_one_kind_and_size_keep_the_collection_order() -> None:
    names = [f"tests/unit/test_{n}.py::test_it" for n in "qwerty"]
    assert ordered(*(Collected(name) for name in names)) == names


def test_the_clients_take_turns() -> None:
    assert ordered(
        Collected("tests/integration/claude_code/test_c.py::test_1", fixturenames=["claude_binary"]),
        Collected("tests/integration/claude_code/test_c.py::test_2", fixturenames=["claude_binary"]),
        Collected("tests/integration/codex/test_x.py::test_1", fixturenames=["codex_binary"]),
        Collected("tests/integration/opencode/test_o.py::test_1", fixturenames=["opencode_binary"]),
        Collected("tests/integration/opencode/test_o.py::test_2", fixturenames=["opencode_binary"]),
    ) == [
        "tests/integration/claude_code/test_c.py::test_1",
        "tests/integration/codex/test_x.py::test_1",
        "tests/integration/opencode/test_o.py::test_1",
        "tests/integration/claude_code/test_c.py::test_2",
        "tests/integration/opencode/test_o.py::test_2",
    ]
