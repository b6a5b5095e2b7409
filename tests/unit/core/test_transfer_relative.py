"""Project-relative keys of repository exports: ``relative_key`` and ``rooted_key`` (pure)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from graphmem.core.export_format import (
    RELATIVE_ROOT,
    is_relative,
    relative_key,
    relative_project,
    rooted_key,
    rooted_project,
)

KINDS = st.sampled_from(["File", "Symbol", "ExternalModule", "MergeRequest", "Issue", "Epic", "Person"])
SEGMENT = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=20
)
ROOTS = st.builds(
    lambda parts: "/" + "/".join(parts), st.lists(SEGMENT.filter(lambda s: "/" not in s), min_size=1)
)


def test_a_file_key_under_the_root_becomes_relative() -> None:
    assert relative_key("File:/home/me/shop::src/a.py", "/home/me/shop") == "File:.::src/a.py"


def test_a_symbol_key_keeps_its_path_and_name() -> None:
    key = "Symbol:/home/me/shop::src/a.py::Refund.apply"

    assert relative_key(key, "/home/me/shop") == "Symbol:.::src/a.py::Refund.apply"


def test_a_key_of_a_sibling_project_with_the_same_prefix_is_unchanged() -> None:
    key = "File:/home/me/shop2::src/a.py"

    assert relative_key(key, "/home/me/shop") == key


def test_gitlab_keys_are_unchanged() -> None:
    assert relative_key("MergeRequest:acme/shop!123", "/home/me/shop") == "MergeRequest:acme/shop!123"


def test_a_relative_key_is_rooted_in_the_importing_checkout() -> None:
    assert rooted_key("File:.::src/a.py", "/home/bob/shop") == "File:/home/bob/shop::src/a.py"


def test_relative_projects_and_keys_are_recognised() -> None:
    assert is_relative(RELATIVE_ROOT)
    assert is_relative("File:.::src/a.py")
    assert not is_relative("File:/home/me/shop::src/a.py")
    assert not is_relative("MergeRequest:acme/shop!1")
    assert not is_relative(None)


@given(kind=KINDS, root=ROOTS, rest=SEGMENT, other=ROOTS)
def test_a_key_moves_from_one_checkout_to_another(kind: str, root: str, rest: str, other: str) -> None:
    key = f"{kind}:{root}::{rest}"

    moved = rooted_key(relative_key(key, root), other)

    assert moved == f"{kind}:{other}::{rest}"
    assert relative_key(moved, other) == relative_key(key, root)


@given(kind=KINDS, root=ROOTS, rest=SEGMENT)
def test_keys_outside_the_root_survive_the_round_trip(kind: str, root: str, rest: str) -> None:
    key = f"{kind}:{rest}"

    assert rooted_key(relative_key(key, root + "/elsewhere"), root) == key or is_relative(key)


@given(root=ROOTS, project=st.one_of(st.none(), ROOTS))
def test_projects_round_trip(root: str, project: str | None) -> None:
    assert rooted_project(relative_project(project, root), root) == project
