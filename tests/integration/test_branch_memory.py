"""Branch-aware memory end to end: a real git repository in a temporary directory, a real Kùzu store,
the service as ``open_memory`` builds it, the real GitLab client against the fixture server.
Memories written on a branch are seen there only; the branch is merged with ``git merge`` and its
MR marked merged, and enrichment promotes them; an MR closed unmerged archives them; undo restores."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.fake_gitlab import PROJECT, TOKEN, FakeGitLab
from support.git_repo import commit, git, new_repo

from graphmem.adapters.embedders import HashEmbedder
from graphmem.app import open_memory
from graphmem.connect import resolve_branch, resolve_project
from graphmem.core.models import Category, Status
from graphmem.core.timeparse import utc_now
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings

pytestmark = pytest.mark.integration

MR_13 = "/projects/acme/shop/backend/merge_requests/13"
BRANCH = "feat/provider-refunds"  # MR !13's source branch in samples/gitlab/


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = new_repo(tmp_path / "shop")
    git(root, "remote", "add", "origin", f"git@gitlab.example.com:{PROJECT}.git")
    return root


@pytest.fixture
def gitlab() -> Iterator[FakeGitLab]:
    with FakeGitLab() as server:
        yield server


@pytest.fixture
def memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gitlab: FakeGitLab, repo: Path
) -> Iterator[MemoryService]:
    monkeypatch.delenv("GITLAB_TOKEN", raising=False)
    monkeypatch.setenv("GRAPHMEM_GITLAB_TOKEN", TOKEN)
    monkeypatch.setenv("GRAPHMEM_GITLAB__URL", gitlab.url)
    service = open_memory(load_settings(data_dir=tmp_path / "data"), embedder=HashEmbedder(64))
    service = service.bound(str(repo))
    yield service
    service.close()


def answer(gitlab: FakeGitLab, route: str, **changes: Any) -> None:
    payload = gitlab.fixture(route)
    payload.update({k: v.isoformat() if hasattr(v, "isoformat") else v for k, v in changes.items()})
    gitlab.set_route(route, payload)


def recalled(memory: MemoryService, checkout: Path, query: str, **options: Any) -> list[str]:
    """What recall finds from ``checkout``, as the CLI asks it there."""
    result = memory.recall(
        query, project=resolve_project(checkout), branch=resolve_branch(checkout), **options
    )
    return [hit.memory.id for hit in result.hits]


def test_a_branch_merged_with_git_merge_and_its_mr_merged_promotes_its_memories(
    memory: MemoryService, gitlab: FakeGitLab, repo: Path
) -> None:
    git(repo, "switch", "-q", "-c", BRANCH)
    commit(repo, "refunds.py")
    decision = memory.remember(
        "Provider refunds keep the card fee", category=Category.DECISION, branch=resolve_branch(repo)
    ).memory
    assert decision.branch == BRANCH
    assert recalled(memory, repo, "provider refunds card fee") == [decision.id]
    git(repo, "switch", "-q", "main")
    assert recalled(memory, repo, "provider refunds card fee") == []
    assert recalled(memory, repo, "provider refunds card fee", all_branches=True) == [decision.id]

    git(repo, "merge", "-q", "--no-ff", "-m", f"Merge {BRANCH}", BRANCH)
    answer(gitlab, MR_13, state="merged", merged_at=utc_now())
    memory.enrich(["!13"], refresh=True)

    promoted = memory.show(decision.id).memory
    assert (promoted.branch, promoted.status) == (None, Status.ACTIVE)
    assert recalled(memory, repo, "provider refunds card fee") == [decision.id]
    [event] = memory.history(decision.id)
    assert (event.rule, event.before, event.after) == ("branch-merged", {"branch": BRANCH}, {"branch": None})

    memory.undo(event.id)
    assert memory.show(decision.id).memory.branch == BRANCH
    assert recalled(memory, repo, "provider refunds card fee") == []


def test_an_mr_closed_unmerged_archives_and_undo_restores(
    memory: MemoryService, gitlab: FakeGitLab, repo: Path
) -> None:
    git(repo, "switch", "-q", "-c", BRANCH)
    decision = memory.remember(
        "Provider refunds keep the card fee", category=Category.DECISION, branch=resolve_branch(repo)
    ).memory
    git(repo, "switch", "-q", "main")
    answer(gitlab, MR_13, state="closed", updated_at=utc_now())

    memory.enrich(["!13"], refresh=True)

    assert memory.show(decision.id).memory.status is Status.ARCHIVED
    git(repo, "switch", "-q", BRANCH)
    assert recalled(memory, repo, "provider refunds card fee") == []
    [event] = memory.history(decision.id)

    memory.undo(event.id)

    back = memory.show(decision.id).memory
    assert (back.status, back.branch, back.text) == (Status.ACTIVE, BRANCH, decision.text)
    assert recalled(memory, repo, "provider refunds card fee") == [decision.id]


def test_worktrees_share_one_memory_and_each_sees_its_own_branch(
    memory: MemoryService, repo: Path, tmp_path: Path
) -> None:
    worktree = tmp_path / "shop-refunds"
    git(repo, "worktree", "add", "-q", "-b", BRANCH, str(worktree))
    assert resolve_project(worktree) == resolve_project(repo) == str(repo)
    shared = memory.remember("Refunds are booked nightly", project=resolve_project(repo)).memory.id
    staged = memory.remember(
        "Provider refunds keep the card fee",
        project=resolve_project(worktree),
        branch=resolve_branch(worktree),
    ).memory.id

    assert set(recalled(memory, worktree, "refunds card fee booked")) == {shared, staged}
    assert recalled(memory, repo, "refunds card fee booked") == [shared]


def test_deleting_the_branch_archives_its_memories_at_the_next_enrich(
    memory: MemoryService, repo: Path
) -> None:
    git(repo, "switch", "-q", "-c", "feature/abandoned")
    idea = memory.remember("Refunds could skip the fraud check", branch=resolve_branch(repo)).memory.id
    git(repo, "switch", "-q", "main")
    git(repo, "branch", "-D", "feature/abandoned")

    memory.enrich()

    assert memory.show(idea).memory.status is Status.ARCHIVED
    assert memory.history(idea)[0].rule == "branch-deleted"
