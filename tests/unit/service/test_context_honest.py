"""get_context says when its target is not in the graph, and never files related memories
under the target as if they were about it."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.git_repo import git, new_repo

from graphmem.adapters.embedders import HashEmbedder
from graphmem.core.gitlab import MergeRequestData
from graphmem.core.gitlab_edits import GitLabAnswer, edit_for
from graphmem.core.models import Category
from graphmem.service.memory import MemoryService

REFUND = "src/payments/refund.py"


def _group_ids(bundle_groups: dict[Category, list]) -> list[str]:  # type: ignore[type-arg]
    return [item.hit.memory.id for items in bundle_groups.values() for item in items]


def test_a_path_not_in_the_graph_says_so_and_shows_related_memories_apart(
    memory_service: MemoryService,
) -> None:
    commit = memory_service.remember("Commit f031136: refund payments twice on retry", category="event")

    bundle = memory_service.get_context(REFUND)

    assert bundle.found is False
    assert bundle.entity is None
    assert bundle.notes[0] == (
        f"{REFUND} is not in the graph: nothing is linked to it; showing memories that mention related words."
    )
    assert bundle.groups == {}  # nothing under "Events" as if it were about the file
    assert [item.hit.memory.id for item in bundle.related_memories] == [commit.memory.id]
    markdown = bundle.markdown
    assert "### Events" not in markdown
    assert "### Related memories (not linked to it: they mention related words)" in markdown
    assert f"- [event] {commit.memory.text}" in markdown
    data = bundle.to_dict()
    assert data["found"] is False
    assert data["groups"] == {}
    assert [m["id"] for m in data["related_memories"]] == [commit.memory.id]
    assert data["related_memories"][0]["category"] == "event"


def test_a_ref_in_the_graph_keeps_linked_memories_under_it_and_the_rest_apart(
    memory_service: MemoryService,
) -> None:
    linked = memory_service.remember("Payments retry 3 times, see !123 and #45", category="decision")
    other = memory_service.remember("Issue #45 tracks the retry budget", category="fact")

    bundle = memory_service.get_context("!123")

    assert bundle.found is True
    assert _group_ids(bundle.groups) == [linked.memory.id]
    assert [item.hit.memory.id for item in bundle.related_memories] == [other.memory.id]


def test_a_topic_is_answered_by_recall_with_found_null(memory_service: MemoryService) -> None:
    made = memory_service.remember("Deploy with make release", category="procedure")

    bundle = memory_service.get_context("how do we deploy")

    assert bundle.found is None
    assert _group_ids(bundle.groups) == [made.memory.id]
    assert bundle.related_memories == []
    assert bundle.to_dict()["found"] is None


def test_the_cli_says_it_in_text_and_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from graphmem.app import open_memory
    from graphmem.cli import main
    from graphmem.settings import load_settings

    def factory(data_dir: Path | None, *, check_model: bool = True) -> MemoryService:
        return open_memory(load_settings(data_dir=data_dir), embedder=HashEmbedder(256))

    data_dir = tmp_path / "data"
    memory = factory(data_dir)
    memory.remember("Commit f031136: refund payments twice on retry", category="event")
    memory.close()
    monkeypatch.setattr(main, "SERVICE_FACTORY", factory)
    runner = CliRunner()
    where = ["--data-dir", str(data_dir), "--project", str(tmp_path)]

    text = runner.invoke(main.cli, [*where, "context", REFUND])
    data = json.loads(runner.invoke(main.cli, [*where, "context", REFUND, "--json"]).output)

    assert text.exit_code == 0, text.output
    assert f"_{REFUND} is not in the graph: nothing is linked to it" in text.output
    assert "### Events" not in text.output and "[event] Commit f031136" in text.output
    assert data["found"] is False and data["entity"] is None and data["groups"] == {}
    assert data["notes"][0].startswith(f"{REFUND} is not in the graph")


def test_the_budget_goes_to_what_was_remembered_about_the_target_before_derived_facts(
    memory_service: MemoryService,
) -> None:
    decision = memory_service.remember(
        "We decided !123 retries payments 3 times with backoff because the gateway times out under load",
        category="decision",
    )
    memory_service.remember("!123 builds with Python 3.11", source="bootstrap:pyproject.toml#fact:python")

    bundle = memory_service.get_context("!123", max_tokens=105)

    assert _group_ids(bundle.groups) == [decision.memory.id]
    assert bundle.omitted_about == 1


# -- a ref in a repository that is not on GitLab --------------------------------------------------

NOT_CONFIGURED = "#4554 is not enriched: GitLab is not configured (see docs/gitlab.md)."


def _checkout(path: Path, origin: str) -> str:
    repo = new_repo(path)
    git(repo, "remote", "add", "origin", origin)
    return str(repo.resolve())


def test_a_ref_in_a_github_checkout_says_graphmem_enriches_gitlab_only(
    memory_service: MemoryService, tmp_path: Path
) -> None:
    shop = _checkout(tmp_path / "shop", "git@github.com:acme/shop.git")

    notes = memory_service.get_context("#4554", project=shop).notes

    assert (
        "#4554 is not enriched: github.com/acme/shop is a GitHub repository, and graphmem enriches "
        "GitLab's merge requests, issues and epics only."
    ) in notes
    assert not any("GitLab is not configured" in note for note in notes)


def test_a_ref_in_a_github_checkout_that_names_another_project_is_gitlabs_as_before(
    memory_service: MemoryService, tmp_path: Path
) -> None:
    shop = _checkout(tmp_path / "shop", "https://github.com/acme/shop")

    notes = memory_service.get_context("acme/backend#4554", project=shop).notes

    assert "acme/backend#4554 is not enriched: GitLab is not configured (see docs/gitlab.md)." in notes


def test_a_ref_in_a_gitlab_checkout_still_says_gitlab_is_not_configured(
    memory_service: MemoryService, git_project: str
) -> None:
    assert NOT_CONFIGURED in memory_service.get_context("#4554", project=git_project).notes


def test_a_github_checkouts_ref_shows_nothing_gitlab_said_of_a_project_of_the_same_path(
    memory_service: MemoryService, tmp_path: Path
) -> None:
    shop = _checkout(tmp_path / "shop", "git@github.com:acme/shop.git")
    memory_service.remember("Retries land in !12", category="fact", project=shop)
    key, at = "MergeRequest:acme/shop!12", datetime(2026, 5, 1, tzinfo=UTC)
    mr = MergeRequestData(
        project="acme/shop", iid=12, title="GitLab's acme/shop!12", state="merged", draft=False, author=None,
        assignees=(), reviewers=(), labels=(), milestone=None, source_branch="x", target_branch="main",
        merged_at=at, created_at=at, updated_at=at, description="", web_url="https://gitlab.com/acme/shop",
        changed_files=(), changed_files_total=0, closes=(),
    )  # fmt: skip
    assert memory_service.enricher is not None
    # what a graphmem that did not tell forges apart fetched from gitlab.com/acme/shop
    memory_service.enricher.graph.apply(edit_for(GitLabAnswer(key, mr, 0, at, at + timedelta(days=1))))

    bundle = memory_service.get_context("!12", project=shop)

    assert (
        "!12 is not enriched: github.com/acme/shop is a GitHub repository, and graphmem enriches "
        "GitLab's merge requests, issues and epics only."
    ) in bundle.notes
    assert "### Merge request" not in bundle.markdown
    assert "merged" not in bundle.markdown
