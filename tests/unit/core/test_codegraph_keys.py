"""``core.codegraph.key_in_project``: the key of the same code under a project's new name."""

from __future__ import annotations

import pytest

from graphmem.core.codegraph import file_key, key_in_project, module_key, symbol_key

OLD, NEW = "/home/alice/work/payments", "gitlab.com/shop/payments"


@pytest.mark.parametrize(
    ("key", "moved"),
    [
        (file_key(OLD, "src/a.py"), file_key(NEW, "src/a.py")),
        (symbol_key(OLD, "src/a.py", "Refund.apply"), symbol_key(NEW, "src/a.py", "Refund.apply")),
        (module_key(OLD, "requests"), module_key(NEW, "requests")),
    ],
)
def test_a_files_symbols_and_modules_key_keeps_its_path_and_name_under_the_new_project(
    key: str, moved: str
) -> None:
    assert key_in_project(key, OLD, NEW) == moved


@pytest.mark.parametrize(
    "key",
    [file_key(OLD + "-fork", "src/a.py"), file_key(NEW, "src/a.py"), "Issue:shop/payments#4", "Person:ana"],
)
def test_a_key_of_another_project_or_no_code_is_left_alone(key: str) -> None:
    assert key_in_project(key, OLD, NEW) is None
