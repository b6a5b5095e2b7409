"""A project's shared name on a team's store (core/projects.py): one name for every way of
writing its remote's URL, no credentials in it, the override checked, and the spellings of one
name that differ in ASCII case bound to the one the store keeps first."""

from __future__ import annotations

import string
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphmem.core.projects import (
    MAX_PROJECT_NAME,
    ForeignRemote,
    Spelling,
    checkout_path,
    foreign_remote,
    is_checkout_path,
    project_key,
    project_override,
    remote_name,
    stored_spelling,
)
from graphmem.errors import InvalidInputError

T0 = datetime(2025, 6, 1, tzinfo=UTC)
T1 = T0 + timedelta(days=1)

SAME = [
    "git@gitlab.com:group/repo.git",
    "https://gitlab.com/group/repo",
    "https://gitlab.com/group/repo.git/",
    "ssh://git@gitlab.com:22/group/repo.git",
    "https://alice:glpat-secret@GitLab.com:443/group/repo.git",
    "gitlab.com:group/repo",
]


@pytest.mark.parametrize("url", SAME)
def test_every_form_of_one_remote_is_one_name(url: str) -> None:
    assert remote_name(url) == "gitlab.com/group/repo"


def test_a_subgroup_stays_in_the_name() -> None:
    assert remote_name("git@gitlab.com:group/sub/repo.git") == "gitlab.com/group/sub/repo"


@pytest.mark.parametrize(
    "url",
    ["/srv/git/repo.git", "file:///srv/git/repo.git", "C:/work/repo", "", "https://gitlab.com/", "https://h/a/../b",
     "https://gitlab.com/gr\x00oup/repo"],
)  # fmt: skip
def test_a_local_or_unreadable_remote_names_nothing(url: str) -> None:
    assert remote_name(url) is None


def test_no_credentials_reach_the_name() -> None:
    name = remote_name("https://alice:glpat-secret@gitlab.com/group/repo.git")
    assert name is not None and "secret" not in name and "alice" not in name


def test_the_override_is_kept_as_written_and_checked() -> None:
    assert project_override("  shop  ", "/src/shop") == "shop"
    for bad in ("", " ", "a\nb", "x" * 201):
        with pytest.raises(InvalidInputError, match=r"graphmem\.project"):
            project_override(bad, "/src/shop")


def test_a_path_names_its_checkout_and_a_shared_name_none() -> None:
    assert is_checkout_path("/src/shop") and checkout_path("/src/shop") is not None
    assert not is_checkout_path("gitlab.com/group/repo") and checkout_path("gitlab.com/group/repo") is None


# -- spellings of one name ---------------------------------------------------------------


def test_remotes_that_differ_in_case_have_one_key() -> None:
    first, second = remote_name("git@github.com:Acme/Shop.git"), remote_name("https://github.com/acme/shop")
    assert (first, second) == ("github.com/Acme/Shop", "github.com/acme/shop")  # each as written
    assert project_key(first) == project_key(second) == "github.com/acme/shop"


@pytest.mark.parametrize(
    ("hostile", "ascii_name"),
    [
        ("github.com/acme/\u017fhop", "github.com/acme/shop"),  # long s: casefold() makes it s
        ("github.com/acme/\u212aitchen", "github.com/acme/kitchen"),  # Kelvin sign: lower() makes it k
        ("github.com/\u0130stanbul/app", "github.com/istanbul/app"),  # dotted capital I
        ("github.com/acme/\uff33hop", "github.com/acme/shop"),  # fullwidth S
        ("github.com/acme/sho\u0301p", "github.com/acme/shop"),  # a combining accent
    ],
    ids=["long-s", "kelvin", "dotted-I", "fullwidth", "combining"],
)
def test_no_letter_beyond_ascii_makes_a_name_another(hostile: str, ascii_name: str) -> None:
    assert project_key(hostile) != project_key(ascii_name)
    assert stored_spelling(hostile, {ascii_name: T0}) == Spelling(hostile)
    assert stored_spelling(ascii_name, {hostile: T0}) == Spelling(ascii_name)


def test_a_name_the_store_keeps_no_spelling_of_is_kept_as_written() -> None:
    assert stored_spelling("github.com/acme/shop", {}) == Spelling("github.com/acme/shop")
    other = {"github.com/acme/shopping": T0}
    assert stored_spelling("github.com/acme/shop", other) == Spelling("github.com/acme/shop")


def test_a_name_binds_to_the_spelling_the_store_keeps() -> None:
    stored = {"github.com/Acme/Shop": T1}
    assert stored_spelling("github.com/acme/shop", stored) == Spelling("github.com/Acme/Shop")


def test_of_several_spellings_the_one_stored_first_is_kept_and_the_others_join_it() -> None:
    stored = {"github.com/acme/shop": T1, "github.com/ACME/shop": T1, "github.com/Acme/Shop": T0}
    for asked in ("github.com/acme/shop", "github.com/ACME/SHOP", "github.com/Acme/Shop"):
        spelling = stored_spelling(asked, stored)
        assert spelling == Spelling("github.com/Acme/Shop", ("github.com/ACME/shop", "github.com/acme/shop"))


def test_spellings_first_stored_at_one_moment_are_ordered_by_code_point() -> None:
    stored = {"github.com/acme/shop": T0, "github.com/Acme/Shop": T0}
    assert stored_spelling("github.com/acme/shop", stored).name == "github.com/Acme/Shop"


def test_a_spelling_with_memories_comes_before_one_with_only_code() -> None:
    memories, code = {"github.com/acme/shop": T1}, {"github.com/Acme/Shop", "github.com/acme/shop"}
    assert stored_spelling("github.com/ACME/shop", memories, code) == Spelling("github.com/acme/shop")


def test_a_spelling_with_only_code_is_kept_when_none_has_memories() -> None:
    code = {"github.com/acme/shop", "github.com/Acme/Shop", "github.com/acme/other"}
    assert stored_spelling("github.com/ACME/SHOP", {}, code) == Spelling("github.com/Acme/Shop")


def test_a_checkout_path_is_never_a_spelling_of_a_shared_name() -> None:
    assert stored_spelling("/src/shop", {"/src/Shop": T0}) == Spelling("/src/shop")
    assert stored_spelling("gitlab.com/g/r", {"/gitlab.com/g/r": T0, "Gitlab.com/G/R": T1}).others == ()
    assert stored_spelling("gitlab.com/g/r", {}, {"/Gitlab.com/g/r"}) == Spelling("gitlab.com/g/r")


def test_a_long_name_is_keyed_in_full() -> None:
    name = "gitlab.com/" + "A" * (MAX_PROJECT_NAME - 12) + "x"
    assert project_key(name) == name.lower()
    assert stored_spelling(name.lower(), {name: T0}).name == name


@given(st.sampled_from(["github.com/", "GitLab.example.com/", "bitbucket.org/"]), st.text(max_size=60))
def test_on_a_caseless_forge_the_key_changes_ascii_capitals_and_nothing_else(host: str, path: str) -> None:
    name = host + path
    key = project_key(name)
    assert len(key) == len(name) and project_key(key) == key
    for before, after in zip(name, key, strict=True):
        assert after == (before.lower() if before in string.ascii_uppercase else before)


@pytest.mark.parametrize(
    "name",
    ["git.example.com/Acme/Shop", "review.example.org/Tools/Build", "Acme Shop", "example.com/github.com/A"],
)
def test_elsewhere_case_tells_two_repositories_apart(name: str) -> None:
    # A plain git server, Gerrit or cgit may hold Shop and shop side by side: never one project.
    assert project_key(name) == name
    assert stored_spelling(name.lower(), {name: T0}) == Spelling(name.lower())


@pytest.mark.parametrize(
    ("url", "forge"),
    [
        ("git@github.com:acme/shop.git", ForeignRemote("GitHub", "github.com/acme/shop")),
        ("https://github.example.com/acme/shop", ForeignRemote("GitHub", "github.example.com/acme/shop")),
        ("https://bitbucket.org/acme/shop.git", ForeignRemote("Bitbucket", "bitbucket.org/acme/shop")),
        ("git@gitlab.com:acme/shop.git", None),
        ("https://git.example.com/acme/shop", None),  # a self-hosted GitLab may be called anything
    ],
)
def test_a_remote_on_a_forge_other_than_gitlab_is_named_with_its_forge(url: str, forge: object) -> None:
    assert foreign_remote(remote_name(url)) == forge


def test_a_foreign_remotes_path_is_what_its_own_refs_resolve_in() -> None:
    assert ForeignRemote("GitHub", "github.com/acme/sub/shop").path == "acme/sub/shop"
    assert foreign_remote(None) is None
