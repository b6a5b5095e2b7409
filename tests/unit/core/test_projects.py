"""A project's shared name on a team's store (core/projects.py): one name for every way of
writing its remote's URL, no credentials in it, and the override checked."""

from __future__ import annotations

import pytest

from graphmem.core.projects import checkout_path, is_checkout_path, project_override, remote_name
from graphmem.errors import InvalidInputError

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
