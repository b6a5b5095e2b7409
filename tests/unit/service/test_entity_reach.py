"""Recall follows code and GitLab edges up to two hops from what a query names, and says which.

On the in-memory store with its code graph and GitLab graph (``tests/support/memory_service.py``):
GitLab's facts are saved into the GitLab graph as enrichment saves them, the code graph is
bootstrapped from a small Python file. Each memory shares no word with its query, so only the
edges can find it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from graphmem.core.enrichment import target_key
from graphmem.core.fusion import PLANS, Plan
from graphmem.core.gitlab import ChangedFile, EpicData, IssueData, IssueRefData, MergeRequestData
from graphmem.core.gitlab_edits import GitLabAnswer, edit_for
from graphmem.core.models import Entity, EntityKind, Hit
from graphmem.core.timeparse import utc_now
from graphmem.core.views import hit_view, why
from graphmem.service.entity_reach import CODE_NEIGHBOUR_LIMIT, reach
from graphmem.service.memory import MemoryService

T0 = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
LATER = T0 + timedelta(days=1)
NAMESPACE = "group/sub/proj"  # the git_project fixture's origin
MR = target_key(EntityKind.MERGE_REQUEST, NAMESPACE, 12)
ISSUE = target_key(EntityKind.ISSUE, NAMESPACE, 34)
EPIC = target_key(EntityKind.EPIC, "group/sub", 5)
ORDERS = """
def refund_all(order):
    return order


def cancel(order):
    refund_all(order)


class Order:
    def close(self):
        cancel(self)
"""


def _mr() -> MergeRequestData:
    return MergeRequestData(
        project=NAMESPACE,
        iid=12,
        title="Refund in one go",
        state="merged",
        draft=False,
        author=None,
        assignees=(),
        reviewers=(),
        labels=(),
        milestone=None,
        source_branch="refund",
        target_branch="main",
        merged_at=T0,
        created_at=T0,
        updated_at=T0,
        description="",
        web_url="https://gitlab.example.com/group/sub/proj/-/merge_requests/12",
        changed_files=(ChangedFile("src/app.py", "src/app.py"),),
        changed_files_total=1,
        closes=(IssueRefData(NAMESPACE, 34, "Refunds are slow", "closed"),),
    )


def _issue() -> IssueData:
    return IssueData(
        project=NAMESPACE,
        iid=34,
        title="Refunds are slow",
        state="closed",
        author=None,
        assignees=(),
        labels=(),
        milestone=None,
        created_at=T0,
        updated_at=T0,
        closed_at=T0,
        description="",
        web_url="https://gitlab.example.com/group/sub/proj/-/issues/34",
        epic=("group/sub", 5),
        related_merge_requests=(),
    )


def _epic() -> EpicData:
    return EpicData(
        group="group/sub",
        iid=5,
        title="Payments",
        state="opened",
        author=None,
        labels=(),
        created_at=T0,
        updated_at=T0,
        description="",
        web_url="https://gitlab.example.com/groups/group/sub/-/epics/5",
        parent=None,
        child_issues=(IssueRefData(NAMESPACE, 34, "Refunds are slow", "closed"),),
        child_epics=(),
    )


def enriched(memory: MemoryService, project: str, symbols: list[str] | None = None) -> None:
    """&5 contains #34, which !12 closes; !12 changed src/app.py: as ``enrich`` stores them."""
    assert memory.enricher is not None
    graph = memory.enricher.graph
    memory.store.upsert_entities(  # as a memory naming them creates them
        [
            Entity(EPIC, EntityKind.EPIC, "&5", project),
            Entity(ISSUE, EntityKind.ISSUE, "#34", project),
            Entity(MR, EntityKind.MERGE_REQUEST, "!12", project),
        ]
    )
    local = (NAMESPACE, project)
    graph.apply(edit_for(GitLabAnswer(EPIC, _epic(), hops=0, fetched_at=T0, next_attempt=LATER)))
    graph.apply(
        edit_for(GitLabAnswer(ISSUE, _issue(), local=local, hops=1, fetched_at=T0, next_attempt=LATER))
    )
    graph.apply(
        edit_for(
            GitLabAnswer(
                MR,
                _mr(),
                local=local,
                hops=2,
                fetched_at=T0,
                next_attempt=LATER,
                file_keys=[(f"File:{project}::src/app.py", "src/app.py")],
                symbol_keys=symbols or [],
            )
        )
    )


def hit_for(hits: list[Hit], memory_id: str) -> Hit:
    return next(h for h in hits if h.memory.id == memory_id)


def test_recall_follows_two_gitlab_edges_from_an_epic(
    memory_service: MemoryService, git_project: str
) -> None:
    about_mr = memory_service.remember("Alice merged !12 after a long review", project=git_project).memory
    enriched(memory_service, git_project)
    hits = memory_service.recall("what happened in &5", project=git_project).hits
    assert about_mr.id in {h.memory.id for h in hits}
    assert "mentions !12, which closes #34, which is part of &5" in why(hit_for(hits, about_mr.id))


def test_one_hop_plans_stop_at_the_issue(memory_service: MemoryService, git_project: str) -> None:
    about_mr = memory_service.remember("Alice merged !12 after a long review", project=git_project).memory
    enriched(memory_service, git_project)
    one_hop = Plan("one-hop", PLANS["hybrid"].weights, entity_hops=1)
    found = memory_service.recall("what happened in &5", project=git_project, plan=one_hop).hits
    assert about_mr.id not in {h.memory.id for h in found}


def test_two_hops_rank_below_one_hop(memory_service: MemoryService, git_project: str) -> None:
    about_mr = memory_service.remember("Alice merged !12 after a long review", project=git_project).memory
    about_issue = memory_service.remember(
        "Finance reported the cent error in #34", project=git_project
    ).memory
    enriched(memory_service, git_project)
    hits = memory_service.recall("what happened in &5", project=git_project).hits
    entity = {h.memory.id: next(c for c in h.channels if c.channel == "entity") for h in hits}
    assert entity[about_issue.id].score > entity[about_mr.id].score
    assert entity[about_issue.id].rank < entity[about_mr.id].rank


def test_an_mr_hit_names_the_changed_file_in_words_and_in_json(
    memory_service: MemoryService, git_project: str
) -> None:
    about_file = memory_service.remember("src/app.py prints a greeting", project=git_project).memory
    enriched(memory_service, git_project)
    hits = memory_service.recall("what did !12 do", project=git_project).hits
    hit = hit_for(hits, about_file.id)
    assert "mentions `src/app.py`, which was changed by !12" in why(hit)
    view = hit_view(hit, now=utc_now())["why"]
    entity = next(c for c in view["channels"] if c["channel"] == "entity")
    assert [(s["from"], s["edge"], s["to"], s["forward"]) for s in entity["steps"]] == [
        (MR, "CHANGES", f"File:{git_project}::src/app.py", True),
        (f"File:{git_project}::src/app.py", "ABOUT", about_file.id, False),
    ]
    assert entity["steps"][0]["text"] == "MR !12 changed src/app.py"
    assert view["path"] == [MR, "CHANGES", f"File:{git_project}::src/app.py", "ABOUT", about_file.id]


def test_a_hit_about_the_named_entity_says_so(memory_service: MemoryService, git_project: str) -> None:
    about_mr = memory_service.remember("Alice merged !12 after a long review", project=git_project).memory
    hits = memory_service.recall("what did !12 do", project=git_project).hits
    assert "mentions !12" in why(hit_for(hits, about_mr.id))


@pytest.fixture
def shop(memory_service: MemoryService, git_project: str) -> str:
    """``git_project`` with ``src/orders.py`` (Order.close calls cancel, cancel calls refund_all),
    bootstrapped."""
    (Path(git_project) / "src" / "orders.py").write_text(ORDERS, "utf-8")
    memory_service.bootstrap(git_project, history=0)
    return git_project


def test_a_hit_through_a_call_names_the_call(memory_service: MemoryService, shop: str) -> None:
    about = memory_service.remember("Refunds must be idempotent: `refund_all` may run twice", project=shop)
    hits = memory_service.recall("what does `cancel` do", project=shop).hits
    hit = hit_for(hits, about.memory.id)
    assert "mentions `refund_all`, which is called by `cancel`" in why(hit)


def test_a_hit_through_a_caller_names_the_call_against_its_direction(
    memory_service: MemoryService, shop: str
) -> None:
    about = memory_service.remember("Cancelling is final once `cancel` returns", project=shop)
    hits = memory_service.recall("why is `refund_all` slow", project=shop).hits
    assert "mentions `cancel`, which calls `refund_all`" in why(hit_for(hits, about.memory.id))


def test_recall_never_follows_two_calls_in_a_row(memory_service: MemoryService, shop: str) -> None:
    about = memory_service.remember("Refunds must be idempotent: `refund_all` may run twice", project=shop)
    hits = memory_service.recall("why is `Order.close` slow", project=shop).hits
    assert not any(c.channel == "entity" for h in hits if h.memory.id == about.memory.id for c in h.channels)


def test_recall_follows_a_call_from_a_symbol_an_mr_changed(memory_service: MemoryService, shop: str) -> None:
    about = memory_service.remember("Refunds must be idempotent: `refund_all` may run twice", project=shop)
    enriched(memory_service, shop, symbols=[f"Symbol:{shop}::src/orders.py::cancel"])
    hits = memory_service.recall("what did !12 do", project=shop).hits
    assert "mentions `refund_all`, which is called by `cancel`, which was changed by !12" in why(
        hit_for(hits, about.memory.id)
    )


def test_a_graph_hit_two_hops_away_names_both_hops(memory_service: MemoryService, git_project: str) -> None:
    first = memory_service.remember("Payments retry five times, see !12", project=git_project).memory
    middle = memory_service.remember("!12 and #34 were planned together", project=git_project).memory
    last = memory_service.remember("Finance tracks #34 weekly", project=git_project).memory
    hits = memory_service.recall("payments retry five times", project=git_project).hits
    graph = [h for h in hits if h.memory.id == last.id]
    assert graph, "the memory two hops away is lifted by the graph"
    assert graph[0].path == (first.id, MR, middle.id, ISSUE, last.id)
    assert "2 hops via !12 → #34" in why(graph[0])


def test_each_hop_adds_at_most_its_limits_of_entities(
    memory_service: MemoryService, git_project: str
) -> None:
    callers = "\n".join(f"def caller_{n}():\n    hub()\n" for n in range(60))
    (Path(git_project) / "src" / "hub.py").write_text(f"def hub():\n    pass\n\n\n{callers}", "utf-8")
    memory_service.bootstrap(git_project, history=0)
    hub = memory_service.entities_in("`hub`", git_project)
    assert memory_service.code is not None
    near = reach(memory_service.code, None, hub, 2)
    assert len(near.keys(1)) == CODE_NEIGHBOUR_LIMIT
    assert near.keys(2) == ()  # callers of callers are not followed
