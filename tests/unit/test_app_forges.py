"""The enricher ``open_memory`` composes knows which projects are on another forge: by the origin
of a checkout, and by a team's shared name (``host/group/repo``) where none is checked out."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.git_repo import git, new_repo

from graphmem.adapters.embedders import HashEmbedder
from graphmem.app import open_memory
from graphmem.service.enrichment import Enricher
from graphmem.settings import load_settings

REF = "Issue:acme/shop#12"


@pytest.fixture
def enricher(tmp_path: Path) -> Iterator[Enricher]:
    memory = open_memory(load_settings(data_dir=tmp_path / "data"), embedder=HashEmbedder(64))
    assert memory.enricher is not None
    yield memory.enricher
    memory.close()


def test_a_checkout_on_github_is_told_apart_by_its_origin(enricher: Enricher, tmp_path: Path) -> None:
    github, gitlab = new_repo(tmp_path / "github"), new_repo(tmp_path / "gitlab")
    git(github, "remote", "add", "origin", "git@github.com:acme/shop.git")
    git(gitlab, "remote", "add", "origin", "git@gitlab.com:acme/shop.git")

    found = enricher.foreign(REF, str(github))

    assert found is not None and (found.forge, found.name) == ("GitHub", "github.com/acme/shop")
    assert enricher.foreign(REF, str(gitlab)) is None


def test_a_teams_project_not_checked_out_here_is_told_apart_by_its_shared_name(enricher: Enricher) -> None:
    found = enricher.foreign(REF, "github.com/acme/shop")

    assert found is not None and found.forge == "GitHub"
    assert enricher.foreign(REF, "gitlab.com/acme/shop") is None
    assert enricher.foreign(REF, "shop") is None  # a name set with graphmem.project: no forge in it
