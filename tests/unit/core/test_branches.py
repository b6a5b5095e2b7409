"""Branch names as graphmem keeps them: git's rules, then only safe characters; places."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphmem.core.branches import on_branch, parse_branch, place, places_on, read_branch
from graphmem.errors import InvalidInputError


@pytest.mark.parametrize(
    "name", ["feature/refunds", "fix/überweisung", "release-2.0", "a/b/c", "user@x#1", "修正"]
)
def test_a_branch_name_git_allows_is_kept_as_it_is(name: str) -> None:
    assert parse_branch(name) == name
    assert read_branch(name) == name


@pytest.mark.parametrize(
    "name",
    ["", "has space", "tab\there", "new\nline", "nul\x00", "a..b", "a//b", "-start", "end/", "end.",
     "x.lock", "a/.hidden", "ask?", "star*", "tilde~1", "caret^", "colon:x", "back\\slash", "tick`x",
     "brace@{1}", "x" * 251, "bidi\u202eoverride"],
)  # fmt: skip
def test_a_name_git_refuses_is_refused_with_the_reason(name: str) -> None:
    with pytest.raises(InvalidInputError, match="give a git branch name"):
        parse_branch(name)
    assert read_branch(name) is None


def test_characters_that_could_carry_markup_are_kept_as_underscores() -> None:
    assert parse_branch("feat/<x>") == "feat/_x_"
    assert read_branch("feat/</memory>'\"$|;&!") == "feat/_/memory________"


def test_no_branch_stays_none() -> None:
    assert parse_branch(None) is None
    assert read_branch(None) is None
    assert read_branch("") is None


@given(st.text(max_size=300))
def test_a_kept_name_never_holds_a_space_a_control_character_or_markup(name: str) -> None:
    kept = read_branch(name)
    if kept is not None:
        assert kept == kept.strip() and "\n" not in kept and "`" not in kept
        assert not any(c in kept for c in "<>&'\" \t\r\x00")
        assert on_branch(kept) == f"on branch {kept}"


def test_a_place_is_its_project_or_its_project_and_branch() -> None:
    assert place("/p", None) == "/p"
    assert place(None, "b") is None
    assert places_on(str(place("/p", "feature/x")), "/p")
    assert not places_on("/p", "/p")
    assert not places_on(str(place("/p2", "x")), "/p")
