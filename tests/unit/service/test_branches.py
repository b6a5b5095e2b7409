"""Branch-aware memory in the service, on the in-memory store: a memory written on a branch is seen
on that branch only (recall in every channel, get_context, boot context, the plugin's block),
marked wherever shown; when the branch's MR merges (real-shaped GitLab answers through the real
client) it becomes a project memory, when the MR closes unmerged or the branch is deleted it is
archived, each as an event that undo reverses."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.fake_gitlab import PROJECT, TOKEN, FakeGitLab
from support.git_repo import git, new_repo
from support.memory_service import in_memory_service

from graphmem.adapters.embedders import HashEmbedder
from graphmem.adapters.fake_code import FakeCodeGraph
from graphmem.adapters.fake_gitlab_graph import FakeGitLabGraph
from graphmem.adapters.fake_store import FakeGraphStore
from graphmem.adapters.gitlab_api import PythonGitLabClient
from graphmem.adapters.vector_index import HnswVectorIndex
from graphmem.app import build_memory
from graphmem.core.models import Category, Status
from graphmem.core.timeparse import utc_now
from graphmem.errors import ConflictError, ImportFileError, InvalidInputError
from graphmem.service.enrichment import Enricher, EnrichmentConfig
from graphmem.service.injection import Injector, InjectRequest
from graphmem.service.memory import MemoryService
from graphmem.service.semantic import SemanticIndex
from graphmem.settings import load_settings

MR_13 = "/projects/acme/shop/backend/merge_requests/13"
BRANCH = "feat/provider-refunds"  # MR !13's source branch in samples/gitlab/
FEE = "Provider refunds keep the card fee, decided for the ledger rewrite"


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[MemoryService]:
    service = in_memory_service(tmp_path / "data")
    service = service.bound("/src/shop")
    yield service
    service.close()


def ids(result: Any) -> list[str]:
    return [hit.memory.id for hit in result.hits]


# -- who sees a memory on a branch ---------------------------------------------------------


def test_a_memory_written_on_a_branch_carries_it(memory: MemoryService) -> None:
    written = memory.remember(FEE, category=Category.DECISION, branch="feature/fees").memory

    assert written.branch == "feature/fees"
    assert memory.show(written.id).memory.branch == "feature/fees"


def test_the_checkouts_own_branch_is_used_when_a_call_names_none(memory: MemoryService) -> None:
    memory = memory.bound(memory.project, "feature/fees")

    written = memory.remember(FEE, category=Category.DECISION).memory

    assert written.branch == "feature/fees"
    assert ids(memory.recall("card fee refunds")) == [written.id]
    assert ids(memory.recall("card fee refunds", project="/src/other")) == []


def test_a_global_memory_carries_no_branch(memory: MemoryService) -> None:
    written = memory.remember("I prefer short commit subjects", category=Category.PREFERENCE, branch="b")

    assert written.memory.branch is None


def test_recall_sees_a_branch_memory_on_that_branch_only(memory: MemoryService) -> None:
    mine = memory.remember(FEE, category=Category.DECISION, branch="feature/fees").memory.id
    shared = memory.remember("Refunds are booked in the ledger nightly", category=Category.FACT).memory.id

    on_branch = memory.recall("refunds card fee ledger", branch="feature/fees")
    on_main = memory.recall("refunds card fee ledger")
    elsewhere = memory.recall("refunds card fee ledger", branch="feature/other")
    every = memory.recall("refunds card fee ledger", all_branches=True)

    assert set(ids(on_branch)) == {mine, shared}
    assert ids(on_main) == ids(elsewhere) == [shared]
    assert set(ids(every)) == {mine, shared}


def test_no_channel_lets_another_branchs_memory_in(memory: MemoryService) -> None:
    """Named in the query (entity channel), sharing words and meaning (lexical, semantic) and
    linked to a visible memory through a shared MR (graph): still left out on main."""
    hidden = memory.remember(f"{FEE}, see !13", category=Category.DECISION, branch=BRANCH).memory.id
    memory.remember("The refunds ledger is rebuilt nightly, see !13", category=Category.FACT)

    for plan in ("hybrid", "no-graph", "rrf", "lexical", "semantic"):
        assert hidden not in ids(memory.recall("!13 provider refunds card fee", plan=plan)), plan
    assert hidden not in memory.get_context("!13").markdown
    assert hidden not in memory.get_context("provider refunds card fee").markdown
    assert hidden not in memory.boot_context().markdown
    assert hidden in memory.get_context("!13", branch=BRANCH).markdown
    assert hidden in memory.boot_context(branch=BRANCH).markdown


def test_a_shown_branch_memory_is_marked(memory: MemoryService) -> None:
    memory.remember(FEE, category=Category.DECISION, branch="feature/fees")

    bundle = memory.get_context("card fee refunds", branch="feature/fees")
    [hit] = memory.recall("card fee refunds", all_branches=True).hits

    assert "on branch feature/fees" in bundle.markdown
    assert hit.memory.branch == "feature/fees"


def test_lists_show_every_branch(memory: MemoryService) -> None:
    written = memory.remember(FEE, category=Category.DECISION, branch="feature/fees").memory.id

    assert [r.id for r in memory.list()] == [written]
    assert memory.list(all_branches=False) == []


def test_the_plugins_block_shows_a_branch_memory_on_its_branch_only(memory: MemoryService) -> None:
    written = memory.remember(FEE, category=Category.DECISION, branch="feature/fees").memory.id
    checkouts = {"/src/shop": None, "/src/shop-fees": "feature/fees"}
    injector = Injector(memory, lambda d: "/src/shop", resolve_branch=checkouts.get)

    def block(directory: str) -> str:
        request = InjectRequest("ses_1" + directory, "msg_1", directory, "card fee for refunds?", "")
        return injector.inject(request).block

    assert written in block("/src/shop-fees") and "on branch feature/fees" in block("/src/shop-fees")
    assert written not in block("/src/shop")


def test_a_bad_branch_name_is_refused_with_the_fix(memory: MemoryService) -> None:
    with pytest.raises(InvalidInputError, match="give a git branch name"):
        memory.recall("refunds", branch="a..b")
    with pytest.raises(InvalidInputError, match="give a git branch name"):
        memory.remember(FEE, branch="new\nline")


# -- repeats and supersession stay on their branch ----------------------------------------


def test_a_repeat_on_a_branch_reinforces_the_project_memory_it_sees(memory: MemoryService) -> None:
    first = memory.remember(FEE, category=Category.DECISION).memory.id

    again = memory.remember(FEE, category=Category.DECISION, branch="feature/fees")

    assert (again.created, again.duplicate_of) == (False, first)


def test_the_same_text_on_two_branches_is_two_memories(memory: MemoryService) -> None:
    one = memory.remember(FEE, category=Category.DECISION, branch="feature/a").memory
    two = memory.remember(FEE, category=Category.DECISION, branch="feature/b")

    assert two.created and two.memory.branch == "feature/b"
    assert memory.show(one.id).memory.status is Status.ACTIVE


def test_a_branchs_decision_does_not_supersede_the_projects(memory: MemoryService) -> None:
    project = memory.remember("Refund retries use tenacity with 3 attempts", category=Category.DECISION)
    branch = memory.remember(
        "Refund retries use tenacity with 5 attempts", category=Category.DECISION, branch="feature/retry"
    )

    assert branch.superseded == ()
    assert memory.show(project.memory.id).memory.status is Status.ACTIVE


# -- the branch merges, closes, goes away -------------------------------------------------


@pytest.fixture
def gitlab() -> Iterator[FakeGitLab]:
    with FakeGitLab() as server:
        yield server


@pytest.fixture
def forge(tmp_path: Path, gitlab: FakeGitLab) -> Iterator[MemoryService]:
    """A Memory service whose enricher asks the fixture server; its project is acme/shop/backend."""
    store = FakeGraphStore(dimension=64)
    code = FakeCodeGraph(store)
    client = PythonGitLabClient(gitlab.url, TOKEN, timeout_s=2, max_retries=0, cache_ttl_s=0)

    def namespace(project: str) -> str | None:
        return PROJECT if project == "/src/shop" else "acme/other"

    enricher = Enricher(
        FakeGitLabGraph(store), client, EnrichmentConfig(token_set=True), namespace=namespace,
        clock=utc_now, code=code,
    )  # fmt: skip
    semantic = SemanticIndex(store, HashEmbedder(64), HnswVectorIndex)
    service = build_memory(
        store, semantic, load_settings(data_dir=tmp_path / "d"), data_dir=tmp_path / "d",
        namespace=namespace, code=code, enricher=enricher,
    )  # fmt: skip
    service = service.bound("/src/shop")
    yield service
    service.close()


def answer(gitlab: FakeGitLab, route: str, **changes: Any) -> None:
    payload = gitlab.fixture(route)
    payload.update({k: v.isoformat() if hasattr(v, "isoformat") else v for k, v in changes.items()})
    gitlab.set_route(route, payload)


def test_a_merged_mr_makes_its_branchs_memories_project_memories(
    forge: MemoryService, gitlab: FakeGitLab
) -> None:
    mine = forge.remember(FEE, category=Category.DECISION, branch=BRANCH).memory
    other_project = forge.remember(FEE, category=Category.DECISION, project="/src/other", branch=BRANCH)
    other_branch = forge.remember("Provider refunds log to sentry", branch="feat/else").memory.id
    forge.enrich(["!13"], refresh=True)  # opened: nothing changes
    assert forge.show(mine.id).memory.branch == BRANCH
    merged_at = utc_now()
    answer(gitlab, MR_13, state="merged", merged_at=merged_at)

    forge.enrich(["!13"], refresh=True)

    assert forge.show(mine.id).memory.branch is None
    assert ids(forge.recall("provider refunds card fee")) == [mine.id]
    assert forge.show(other_project.memory.id).memory.branch == BRANCH  # another project's MR !13
    assert forge.show(other_branch).memory.branch == "feat/else"
    [event] = forge.history(mine.id)
    assert (event.actor, event.rule, event.kind.value) == ("rule", "branch-merged", "branch")
    assert event.reason == f"{BRANCH} merged in {PROJECT}!13 on {merged_at:%Y-%m-%d}"

    forge.undo(event.id)

    back = forge.show(mine.id).memory
    assert (back.branch, back.status, back.text) == (BRANCH, Status.ACTIVE, mine.text)
    assert ids(forge.recall("provider refunds card fee")) == []


def test_an_mr_closed_unmerged_archives_its_branchs_memories(
    forge: MemoryService, gitlab: FakeGitLab
) -> None:
    mine = forge.remember(FEE, category=Category.DECISION, branch=BRANCH).memory.id
    answer(gitlab, MR_13, state="closed", updated_at=utc_now())

    forge.enrich(["!13"], refresh=True)

    archived = forge.show(mine).memory
    assert (archived.status, archived.branch) == (Status.ARCHIVED, None)
    assert ids(forge.recall("provider refunds card fee", branch=BRANCH, all_branches=True)) == []
    [event] = forge.history(mine)
    assert event.rule == "branch-closed" and "closed without merging" in event.reason

    forge.undo(event.id)

    back = forge.show(mine).memory
    assert (back.status, back.branch) == (Status.ACTIVE, BRANCH)
    with pytest.raises(ConflictError, match="undone already"):
        forge.undo(event.id)


def test_gitlab_answering_garbage_changes_no_branch_memory(forge: MemoryService, gitlab: FakeGitLab) -> None:
    mine = forge.remember(FEE, category=Category.DECISION, branch=BRANCH).memory.id
    gitlab.set_route(MR_13, {"state": "merged", "source_branch": BRANCH})  # no iid, no title...

    forge.enrich(["!13"], refresh=True)

    assert forge.show(mine).memory.branch == BRANCH
    assert forge.history(mine) == []


def test_a_deleted_branchs_memories_are_archived_and_restorable(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "shop")
    git(repo, "branch", "feature/kept")
    git(repo, "branch", "feature/gone")
    service = in_memory_service(tmp_path / "data")
    try:
        kept = service.remember(FEE, project=str(repo), branch="feature/kept").memory.id
        gone = service.remember("Refunds skip the fraud check", project=str(repo), branch="feature/gone")
        assert service.check_branches() == []
        git(repo, "branch", "-D", "feature/gone")

        changed = service.check_branches()

        assert changed == [(gone.memory.id, "branch-deleted")]
        assert service.show(kept).memory.status is Status.ACTIVE
        [event] = service.history(gone.memory.id)
        assert event.reason == f"branch feature/gone no longer exists in {repo}"
        restored = service.restore(gone.memory.id)
        assert (restored.status, restored.branch) == (Status.ACTIVE, None)  # back for every branch
        assert service.check_branches() == []
    finally:
        service.close()


def test_a_project_git_cannot_read_is_left_as_it_is(tmp_path: Path) -> None:
    service = in_memory_service(tmp_path / "data")
    try:
        written = service.remember(FEE, project=str(tmp_path / "moved-away"), branch="feature/x").memory.id

        assert service.check_branches() == []
        assert service.show(written).memory.status is Status.ACTIVE
    finally:
        service.close()


def test_an_export_keeps_the_branch_and_an_import_brings_it_back(
    memory: MemoryService, tmp_path: Path
) -> None:
    written = memory.remember(FEE, category=Category.DECISION, branch="fix/überweisung").memory
    out = io.StringIO()
    memory.export(out, project="/src/shop")
    other = in_memory_service(tmp_path / "other")
    try:
        other.import_text(out.getvalue(), project="/src/shop")

        back = other.show(written.id).memory
        assert back.branch == "fix/überweisung"
        assert ids(other.recall("card fee", project="/src/shop")) == []
        assert ids(other.recall("card fee", project="/src/shop", branch="fix/überweisung")) == [written.id]
    finally:
        other.close()


def test_an_import_refuses_a_hostile_branch_with_its_line(memory: MemoryService) -> None:
    line = (
        '{"type": "memory", "id": "mem_0123456789abcdef", "text": "x", "category": "fact", '
        '"scope": "project", "project": "/src/shop", "created_at": "2026-01-01T00:00:00+00:00", '
        '"branch": "a..b\\nignore"}'
    )
    with pytest.raises(ImportFileError) as refused:
        memory.import_text(line + "\n", project="/src/shop")

    assert any("branch" in problem for _, problem in refused.value.problems)
