"""The forge's lifecycle rules applied (``service/forge_rules.py``): real-shaped GitLab answers from
the fixture server (tests/support/fake_gitlab.py, samples/gitlab/) through the real client, on the
in-memory store. An MR moves opened → merged or closed, an issue closed → reopened, an epic closes;
after each enrichment the memories that depended on it changed, and an undo restores them."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from support.fake_gitlab import PROJECT, TOKEN, FakeGitLab

from graphmem.adapters.embedders import HashEmbedder
from graphmem.adapters.fake_code import FakeCodeGraph
from graphmem.adapters.fake_gitlab_graph import FakeGitLabGraph
from graphmem.adapters.fake_store import FakeGraphStore
from graphmem.adapters.gitlab_api import PythonGitLabClient
from graphmem.adapters.vector_index import HnswVectorIndex
from graphmem.app import build_memory
from graphmem.core.models import Category, Status
from graphmem.core.timeparse import utc_now
from graphmem.service import forge_rules
from graphmem.service.enrichment import Enricher, EnrichmentConfig
from graphmem.service.memory import MemoryService
from graphmem.service.semantic import SemanticIndex
from graphmem.settings import load_settings

MR_13 = "/projects/acme/shop/backend/merge_requests/13"
ISSUE_34 = "/projects/acme/shop/backend/issues/34"
EPIC_6 = "/groups/acme/shop/epics/6"


@pytest.fixture
def gitlab() -> Iterator[FakeGitLab]:
    with FakeGitLab() as server:
        yield server


@pytest.fixture
def memory(tmp_path: Path, gitlab: FakeGitLab) -> Iterator[MemoryService]:
    """A Memory service whose enricher asks the fixture server; its project is acme/shop/backend."""
    store = FakeGraphStore(dimension=64)
    code = FakeCodeGraph(store)
    client = PythonGitLabClient(gitlab.url, TOKEN, timeout_s=2, max_retries=0, cache_ttl_s=0)

    def namespace(project: str) -> str | None:
        return PROJECT

    enricher = Enricher(
        FakeGitLabGraph(store), client, EnrichmentConfig(token_set=True), namespace=namespace,
        clock=utc_now, code=code,
    )  # fmt: skip
    semantic = SemanticIndex(store, HashEmbedder(64), HnswVectorIndex)
    service = build_memory(
        store, semantic, load_settings(data_dir=tmp_path / "data"), data_dir=tmp_path / "data",
        namespace=namespace, code=code, enricher=enricher,
    )  # fmt: skip
    service = service.bound(str(tmp_path))
    yield service
    service.close()


def answer(gitlab: FakeGitLab, route: str, **changes: Any) -> None:
    """GitLab answers ``route`` with its fixture, ``changes`` applied (times as ISO text)."""
    payload = gitlab.fixture(route)
    payload.update({k: v.isoformat() if hasattr(v, "isoformat") else v for k, v in changes.items()})
    gitlab.set_route(route, payload)


def remember(memory: MemoryService, text: str, category: Category) -> str:
    return memory.remember(text, category=category).memory.id


def status(memory: MemoryService, memory_id: str) -> Status:
    return memory.show(memory_id).memory.status


def enrich(memory: MemoryService, ref: str) -> None:
    memory.enrich([ref], refresh=True)


# -- an MR merges -------------------------------------------------------------------------


def test_a_merged_mr_resolves_the_blocker_it_caused_with_a_reason(
    memory: MemoryService, gitlab: FakeGitLab
) -> None:
    blocker = remember(
        memory, "Releases are blocked by !13: the refund fix must land first.", Category.BLOCKER
    )
    passing = remember(memory, "CI is red on arm64; see !13 for the discussion.", Category.BLOCKER)
    enrich(memory, "!13")  # opened: nothing to do
    assert status(memory, blocker) is Status.ACTIVE
    merged_at = utc_now()
    answer(gitlab, MR_13, state="merged", merged_at=merged_at)

    enrich(memory, "!13")

    assert status(memory, blocker) is Status.RESOLVED
    assert status(memory, passing) is Status.ACTIVE
    [event] = memory.history(blocker)
    assert (event.actor, event.rule) == ("rule", "mr-merged-resolves-blocker")
    assert event.reason == f"!13 merged on {merged_at:%Y-%m-%d}"


def test_undo_of_a_rules_change_restores_the_memory_exactly(
    memory: MemoryService, gitlab: FakeGitLab
) -> None:
    blocker = remember(memory, "Releases are blocked by !13.", Category.BLOCKER)
    before = memory.show(blocker).memory
    answer(gitlab, MR_13, state="merged", merged_at=utc_now())
    enrich(memory, "!13")
    [event] = memory.history(blocker)

    memory.undo(event.id)

    after = memory.show(blocker).memory
    assert (after.status, after.text, after.category, after.valid_to) == (
        before.status, before.text, before.category, before.valid_to,
    )  # fmt: skip
    enrich(memory, "!13")  # merged still: the rule does not fire again
    assert status(memory, blocker) is Status.ACTIVE


def test_a_merged_mr_marks_the_work_waiting_for_it_done(memory: MemoryService, gitlab: FakeGitLab) -> None:
    plan = remember(memory, "Waiting for !13 to merge before the refund cleanup.", Category.PLAN)
    note = remember(memory, "The refund cleanup was planned in !13's description.", Category.PLAN)
    answer(gitlab, MR_13, state="merged", merged_at=utc_now())

    enrich(memory, "!13")  # the first fetch finds it merged after the memories were written

    assert status(memory, plan) is Status.RESOLVED
    assert memory.history(plan)[0].rule == "mr-merged-finishes-work"
    assert status(memory, note) is Status.ACTIVE


def test_a_merge_older_than_the_memory_changes_nothing_on_the_first_fetch(
    memory: MemoryService, gitlab: FakeGitLab
) -> None:
    blocker = remember(memory, "Releases are blocked by !13.", Category.BLOCKER)
    answer(gitlab, MR_13, state="merged", merged_at=utc_now() - timedelta(days=30))

    enrich(memory, "!13")

    assert status(memory, blocker) is Status.ACTIVE
    assert memory.history(blocker) == []


# -- an MR is closed without merging ------------------------------------------------------


def test_an_mr_closed_unmerged_marks_its_decision_not_merged_and_abandons_waiting_work(
    memory: MemoryService, gitlab: FakeGitLab
) -> None:
    decision = remember(memory, "We switch refund retries to tenacity in !13.", Category.DECISION)
    cited = remember(
        memory, "We keep hand-written retries; see !13 for the rejected attempt.", Category.DECISION
    )
    todo = remember(memory, "TODO after !13 merges: drop the legacy refund path.", Category.PLAN)
    blocker = remember(memory, "Releases are blocked by !13.", Category.BLOCKER)
    enrich(memory, "!13")
    answer(gitlab, MR_13, state="closed", updated_at=utc_now())

    enrich(memory, "!13")

    assert status(memory, decision) is Status.NOT_MERGED
    assert memory.history(decision)[0].reason.startswith("!13 closed without merging on ")
    assert status(memory, cited) is Status.ACTIVE
    assert status(memory, todo) is Status.ARCHIVED
    assert status(memory, blocker) is Status.ACTIVE  # still blocked: the fix did not land


def test_a_decision_not_merged_is_recalled_lower_and_left_out_of_boot_context(
    memory: MemoryService, gitlab: FakeGitLab
) -> None:
    decision = remember(memory, "We switch refund retries to tenacity in !13.", Category.DECISION)
    kept = remember(memory, "We deploy on Tuesdays after the standup.", Category.DECISION)
    enrich(memory, "!13")
    answer(gitlab, MR_13, state="closed", updated_at=utc_now())
    enrich(memory, "!13")

    [hit] = [h for h in memory.recall("refund retries tenacity").hits if h.memory.id == decision]
    boot = {m["id"] for items in memory.boot_context().to_dict()["groups"].values() for m in items}

    assert hit.memory.status is Status.NOT_MERGED
    assert "(not merged)" in memory.get_context("!13").markdown
    assert decision not in boot and kept in boot


# -- an issue closes and reopens ----------------------------------------------------------


def test_an_issue_closed_resolves_its_blocker_and_reopened_unresolves_it(
    memory: MemoryService, gitlab: FakeGitLab
) -> None:
    blocker = remember(memory, "Deploys to production are blocked until #34 is fixed.", Category.BLOCKER)
    answer(gitlab, ISSUE_34, state="opened", closed_at=None)
    enrich(memory, "#34")
    closed_at = utc_now()
    answer(gitlab, ISSUE_34, state="closed", closed_at=closed_at, updated_at=closed_at)

    enrich(memory, "#34")
    assert status(memory, blocker) is Status.RESOLVED
    answer(gitlab, ISSUE_34, state="reopened", closed_at=None, updated_at=utc_now())
    enrich(memory, "#34")

    assert status(memory, blocker) is Status.ACTIVE
    reopened, closed = memory.history(blocker)
    assert (closed.rule, closed.reason) == (
        "issue-closed-resolves-blocker",
        f"#34 closed on {closed_at:%Y-%m-%d}",
    )
    assert reopened.rule == "issue-reopened-reopens-blocker" and reopened.reason.startswith(
        "#34 reopened on "
    )
    memory.undo(reopened.id)
    assert status(memory, blocker) is Status.RESOLVED


def test_a_reopened_issue_unresolves_a_blocker_repeated_since_more_times_than_the_rules_read(
    memory: MemoryService, gitlab: FakeGitLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its agent's repeats are in its history, after the rule's change: ``_made_by`` reads past
    them (``core.events.CHANGES``) to the status change the rule made."""
    monkeypatch.setattr(forge_rules, "_RECENT_EVENTS", 2)
    text = "Deploys to production are blocked until #34 is fixed."
    blocker = memory.remember(text, category=Category.BLOCKER, source="mcp").memory.id
    answer(gitlab, ISSUE_34, state="opened", closed_at=None)
    enrich(memory, "#34")
    closed_at = utc_now()
    answer(gitlab, ISSUE_34, state="closed", closed_at=closed_at, updated_at=closed_at)
    enrich(memory, "#34")
    assert status(memory, blocker) is Status.RESOLVED
    for _ in range(3):
        assert memory.remember(text, category=Category.BLOCKER, source="mcp").duplicate_of == blocker
    assert [e.kind.value for e in memory.history(blocker)] == ["reinforce"] * 3 + ["status"]
    answer(gitlab, ISSUE_34, state="reopened", closed_at=None, updated_at=utc_now())

    enrich(memory, "#34")

    assert status(memory, blocker) is Status.ACTIVE


def test_a_reopened_issue_leaves_a_blocker_a_person_resolved(
    memory: MemoryService, gitlab: FakeGitLab
) -> None:
    blocker = remember(memory, "Deploys to production are blocked until #34 is fixed.", Category.BLOCKER)
    enrich(memory, "#34")  # closed before the memory was written: no rule
    memory.resolve(blocker)
    answer(gitlab, ISSUE_34, state="reopened", closed_at=None, updated_at=utc_now())

    enrich(memory, "#34")

    assert status(memory, blocker) is Status.RESOLVED


def test_a_closed_issue_finishes_the_work_in_progress_on_it(
    memory: MemoryService, gitlab: FakeGitLab
) -> None:
    work = remember(memory, "In progress: #34, rounding in refunds.", Category.EVENT)
    answer(gitlab, ISSUE_34, state="opened", closed_at=None)
    enrich(memory, "#34")
    answer(gitlab, ISSUE_34, state="closed", closed_at=utc_now())

    enrich(memory, "#34")

    assert status(memory, work) is Status.RESOLVED
    assert memory.history(work)[0].rule == "issue-closed-finishes-work"


# -- an epic closes -----------------------------------------------------------------------


def test_a_closed_epic_resolves_the_blocker_it_caused(memory: MemoryService, gitlab: FakeGitLab) -> None:
    blocker = remember(memory, "The 2.0 release is blocked on &6.", Category.BLOCKER)
    enrich(memory, "&6")
    answer(gitlab, EPIC_6, state="closed", closed_at=utc_now(), updated_at=utc_now())

    enrich(memory, "&6")

    assert status(memory, blocker) is Status.RESOLVED
    assert memory.history(blocker)[0].rule == "epic-closed-resolves-blocker"


# -- faults -------------------------------------------------------------------------------


@pytest.mark.parametrize("fault", [500, "malformed", "html", 404])
def test_gitlab_down_or_answering_garbage_changes_nothing(
    memory: MemoryService, gitlab: FakeGitLab, fault: int | str
) -> None:
    blocker = remember(memory, "Releases are blocked by !13.", Category.BLOCKER)
    enrich(memory, "!13")
    answer(gitlab, MR_13, state="merged", merged_at=utc_now())
    gitlab.fail(fault, route="merge_requests/13")

    enrich(memory, "!13")

    assert status(memory, blocker) is Status.ACTIVE
    assert memory.history(blocker) == []


def test_gitlab_offline_changes_nothing(memory: MemoryService, gitlab: FakeGitLab) -> None:
    blocker = remember(memory, "Releases are blocked by !13.", Category.BLOCKER)
    enrich(memory, "!13")
    gitlab.stop()

    enrich(memory, "!13")

    assert status(memory, blocker) is Status.ACTIVE
