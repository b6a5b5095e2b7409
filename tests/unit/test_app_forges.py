"""The enricher ``open_memory`` composes knows which projects are on another forge: by the origin
of a checkout, and by a team's shared name (``host/group/repo``) where none is checked out."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.git_repo import git, new_repo

from graphmem.adapters import git as git_adapter
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


@pytest.fixture
def origin_reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The checkouts whose ``origin`` graphmem asked git for (real git still answers)."""
    read: list[Path] = []
    real = git_adapter._git

    def recording(cwd: Path, *args: str) -> str | None:
        if args[-1:] == ("remote.origin.url",):
            read.append(cwd)
        return real(cwd, *args)

    monkeypatch.setattr(git_adapter, "_git", recording)
    return read


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


def test_a_checkouts_origin_is_read_once_for_every_ref_its_contexts_show(
    tmp_path: Path, origin_reads: list[Path]
) -> None:
    github = new_repo(tmp_path / "github")
    git(github, "remote", "add", "origin", "git@github.com:acme/shop.git")
    memory = open_memory(load_settings(data_dir=tmp_path / "data"), embedder=HashEmbedder(64))
    try:
        first = memory.get_context("#12", project=str(github)).notes
        read = list(origin_reads)
        later = [memory.get_context(ref, project=str(github)).notes for ref in ("!3", "#14", "!3")]
    finally:
        memory.close()

    assert all(
        any("github.com/acme/shop is a GitHub repository" in n for n in notes) for notes in [first, *later]
    )
    assert read and set(read) == {github}
    assert origin_reads == read  # within PROJECT_NAME_TTL_S, later contexts ask git nothing more
