"""``graphmem enrich``'s exit status, run in process against the fake GitLab on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from support.fake_gitlab import TOKEN, FakeGitLab, shop_checkout
from support.git_repo import git, new_repo
from support.stores import KuzuTemplates

from graphmem.adapters.embedders import HashEmbedder
from graphmem.app import open_memory
from graphmem.cli import main
from graphmem.errors import GitLabError
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings

Invoke = Callable[..., Result]


@pytest.fixture
def gitlab() -> Iterator[FakeGitLab]:
    with FakeGitLab() as server:
        yield server


@pytest.fixture
def invoke(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gitlab: FakeGitLab, kuzu_templates: KuzuTemplates
) -> Invoke:
    """Runs ``graphmem ARGS`` in a checkout of acme/shop/backend (or ``project``), GitLab being the
    fake one; the data dir's first command finds an empty store's files there, as ``open_memory``
    makes them (``KuzuTemplates.lay_out``)."""
    monkeypatch.setenv("GRAPHMEM_GITLAB_TOKEN", TOKEN)
    monkeypatch.setenv("GRAPHMEM_GITLAB__URL", gitlab.url)
    monkeypatch.setenv("GRAPHMEM_GITLAB__TIMEOUT_SECONDS", "1")
    shop = shop_checkout(tmp_path)

    def factory(data_dir: Path | None, *, check_model: bool = True) -> MemoryService:
        if data_dir is not None and not data_dir.exists():
            kuzu_templates.lay_out(data_dir, 64)
        return open_memory(
            load_settings(data_dir=data_dir), embedder=HashEmbedder(64), check_model=check_model
        )

    monkeypatch.setattr(main, "SERVICE_FACTORY", factory)
    runner = CliRunner()

    def run(*args: str, project: str = shop) -> Result:
        return runner.invoke(main.cli, ["--data-dir", str(tmp_path / "data"), "--project", project, *args])

    return run


def test_a_fetch_exits_0(invoke: Invoke) -> None:
    result = invoke("enrich", "!12")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("fetched 1")


def test_only_missing_refs_exit_0(invoke: Invoke) -> None:
    result = invoke("enrich", "#999")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("missing 1")


def test_some_fetched_and_some_failed_exits_0(invoke: Invoke, gitlab: FakeGitLab) -> None:
    gitlab.fail("malformed", route="issues/34")
    result = invoke("enrich", "!12", "#34")
    assert result.exit_code == 0, result.output
    assert "fetched 1" in result.stdout and "error 1" in result.stdout


def test_a_rejected_token_exits_with_gitlabs_code(invoke: Invoke, gitlab: FakeGitLab) -> None:
    gitlab.fail(401)
    result = invoke("enrich", "!12", "#34")
    assert result.exit_code == GitLabError.exit_code == 11
    assert "deferred 2" in result.stdout
    assert "rejected the token" in result.stderr
    assert result.stderr.rstrip().splitlines()[-1].startswith("error: Nothing could be fetched from GitLab")


def test_gitlab_offline_exits_with_gitlabs_code_and_json_says_failed(
    invoke: Invoke, gitlab: FakeGitLab
) -> None:
    gitlab.stop()
    result = invoke("enrich", "!12", "--json")
    assert result.exit_code == 11
    report = json.loads(result.stdout)
    assert report["counts"] == {"error": 1} and report["failed"] is True


def test_a_github_checkouts_ref_is_not_asked_of_gitlab_and_the_command_says_why(
    invoke: Invoke, gitlab: FakeGitLab, tmp_path: Path
) -> None:
    github = new_repo(tmp_path / "github")  # GitLab holds a project of the same path: it would answer
    git(github, "remote", "add", "origin", "git@github.com:acme/shop/backend.git")

    result = invoke("enrich", "!12", project=str(github))

    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "foreign 1",
        "problems:",
        "  !12: github.com/acme/shop/backend is a GitHub repository, and graphmem enriches GitLab's "
        "merge requests, issues and epics only.",
    ]
    assert gitlab.count("merge_requests") == 0
