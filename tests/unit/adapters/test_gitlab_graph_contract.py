"""The contract of ``core.gitlab_ports.GitLabGraph``, run against the Kùzu GitLab graph, the PostgreSQL one
and the in-memory one.

A new GitLab graph joins by adding itself to ``GRAPHS``. Orders where a store leaves them
open (NULL times) are not asserted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from support.stores import new_kuzu, postgres_url

from graphmem.adapters.fake_gitlab_graph import FakeGitLabGraph
from graphmem.adapters.fake_store import FakeGraphStore
from graphmem.adapters.kuzu_gitlab import KuzuGitLabGraph
from graphmem.adapters.postgres_gitlab import PostgresGitLabGraph
from graphmem.adapters.postgres_store import PostgresGraphStore
from graphmem.core.enrichment import Attempt, EnrichState, target_key
from graphmem.core.gitlab import ChangedFile, EpicData, IssueData, IssueRefData, MergeRequestData, Person
from graphmem.core.gitlab_edits import GitLabAnswer, edit_for
from graphmem.core.gitlab_ports import GitLabGraph
from graphmem.core.models import Category, Entity, EntityKind, MemoryRecord, Scope
from graphmem.core.ports import GraphStore

T0 = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
LATER = T0 + timedelta(days=1)
LOCAL = ("group/proj", "/src/proj")
MR = target_key(EntityKind.MERGE_REQUEST, "group/proj", 12)
MR2 = target_key(EntityKind.MERGE_REQUEST, "group/proj", 13)
ISSUE = target_key(EntityKind.ISSUE, "group/proj", 4)
EPIC = target_key(EntityKind.EPIC, "group", 7)
FILE = "File:/src/proj::src/app.py"
SYMBOL = "Symbol:/src/proj::src/app.py::main"
ALICE, BOB = Person("alice", "Alice A", "https://gl/alice"), Person("bob", "Bob B", "https://gl/bob")

GRAPHS: dict[str, Callable[[Path, pytest.FixtureRequest], tuple[GraphStore, GitLabGraph]]] = {
    "kuzu": lambda path, request: _kuzu(path, request),
    "memory": lambda path, _: _memory(),
    "postgres": lambda _, request: _postgres(request),
}


def _kuzu(path: Path, request: pytest.FixtureRequest) -> tuple[GraphStore, GitLabGraph]:
    store = new_kuzu(path / "data", request, 8)
    return store, KuzuGitLabGraph(store)


def _postgres(request: pytest.FixtureRequest) -> tuple[GraphStore, GitLabGraph]:
    store = PostgresGraphStore(postgres_url(request, 8), dimension=8)
    return store, PostgresGitLabGraph(store)


def _memory() -> tuple[GraphStore, GitLabGraph]:
    store = FakeGraphStore(dimension=8)
    return store, FakeGitLabGraph(store)


@pytest.fixture(params=sorted(GRAPHS))
def graphs(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[GraphStore, GitLabGraph]]:
    store, graph = GRAPHS[request.param](tmp_path, request)
    yield store, graph
    store.close()


def named(store: GraphStore, *keys: str) -> None:
    """The entities as a memory naming them creates them."""
    kinds = {"MergeRequest": EntityKind.MERGE_REQUEST, "Issue": EntityKind.ISSUE, "Epic": EntityKind.EPIC}
    store.upsert_entities([Entity(k, kinds[k.split(":")[0]], k.split(":", 1)[1], "/src/proj") for k in keys])


def remembered_about(store: GraphStore, key: str, kind: EntityKind) -> None:
    record = MemoryRecord(
        f"m-{key}", "a note", Category.FACT, Scope.GLOBAL, None, T0, T0, T0, content_hash=key
    )
    store.add_memories([record])
    store.link_about([(record.id, Entity(key, kind, key))])


def mr_data(**changes: object) -> MergeRequestData:
    values: dict[str, object] = {
        "project": "group/proj",
        "iid": 12,
        "title": "Retry payments",
        "state": "merged",
        "draft": False,
        "author": ALICE,
        "assignees": (BOB,),
        "reviewers": (BOB, ALICE),
        "labels": ("payments", "bug"),
        "milestone": "v2",
        "source_branch": "retry",
        "target_branch": "main",
        "merged_at": T0,
        "created_at": T0 - timedelta(days=2),
        "updated_at": T0,
        "description": "Retries with backoff.",
        "web_url": "https://gl/group/proj/-/merge_requests/12",
        "changed_files": (ChangedFile("src/app.py", "src/app.py", ranges=((1, 4),)),),
        "changed_files_total": 1,
        "closes": (IssueRefData("group/proj", 4, "Payments fail", "opened"),),
    }
    values.update(changes)
    return MergeRequestData(**values)  # type: ignore[arg-type]


def issue_data(**changes: object) -> IssueData:
    values: dict[str, object] = {
        "project": "group/proj",
        "iid": 4,
        "title": "Payments fail under load",
        "state": "opened",
        "author": BOB,
        "assignees": (ALICE,),
        "labels": ("bug",),
        "milestone": None,
        "created_at": T0,
        "updated_at": T0,
        "closed_at": None,
        "description": "They time out.",
        "web_url": "https://gl/group/proj/-/issues/4",
        "epic": ("group", 7),
        "related_merge_requests": (("group/proj", 13),),
    }
    values.update(changes)
    return IssueData(**values)  # type: ignore[arg-type]


def epic_data(**changes: object) -> EpicData:
    values: dict[str, object] = {
        "group": "group",
        "iid": 7,
        "title": "Reliable payments",
        "state": "opened",
        "author": ALICE,
        "labels": (),
        "created_at": T0,
        "updated_at": T0,
        "description": "",
        "web_url": "https://gl/groups/group/-/epics/7",
        "parent": ("group", 1),
        "child_issues": (IssueRefData("group/proj", 4, "Payments fail under load", "opened"),),
        "child_epics": (("group", 8),),
    }
    values.update(changes)
    return EpicData(**values)  # type: ignore[arg-type]


def save_mr(graph: GitLabGraph, key: str = MR, data: MergeRequestData | None = None, hops: int = 0) -> None:
    graph.apply(
        edit_for(
            GitLabAnswer(
                key,
                data or mr_data(),
                local=LOCAL,
                hops=hops,
                fetched_at=T0,
                next_attempt=LATER,
                file_keys=[(FILE, "src/app.py")],
                symbol_keys=[SYMBOL],
            )
        )
    )


# -- the queue --------------------------------------------------------------------------


def test_named_entities_wait_in_the_queue(graphs: tuple[GraphStore, GitLabGraph]) -> None:
    store, graph = graphs
    named(store, MR, ISSUE)
    rows = graph.rows([MR, ISSUE, "MergeRequest:group/proj!99", FILE])
    assert sorted(rows) == sorted([MR, ISSUE])
    assert (rows[MR].state, rows[MR].kind, rows[MR].attempts, rows[MR].fetched_at) == (
        EnrichState.PENDING,
        EntityKind.MERGE_REQUEST,
        0,
        None,
    )
    assert [r.key for r in graph.all_rows()] == [MR, ISSUE]
    assert graph.counts() == {"pending": 2}
    assert graph.waiting() == 2


def test_refs_asked_for_are_queued_and_a_known_one_renamed(graphs: tuple[GraphStore, GitLabGraph]) -> None:
    store, graph = graphs
    named(store, MR)
    graph.queue(
        [Entity(MR, EntityKind.MERGE_REQUEST, "!12", "/src/other"), Entity(ISSUE, EntityKind.ISSUE, "#4")]
    )
    rows = graph.rows([MR, ISSUE])
    assert (rows[MR].name, rows[MR].project, rows[ISSUE].state) == ("!12", "/src/other", EnrichState.PENDING)


def test_marks_record_an_attempt(graphs: tuple[GraphStore, GitLabGraph]) -> None:
    store, graph = graphs
    named(store, MR, ISSUE)
    graph.mark(MR, Attempt(EnrichState.ERROR, error="timeout", attempts=2, next_attempt=LATER, fetched_at=T0))
    graph.mark(ISSUE, Attempt(EnrichState.MISSING, error=None, attempts=1, next_attempt=LATER))
    row = graph.rows([MR])[MR]
    assert (row.state, row.error, row.attempts, row.next_attempt, row.fetched_at) == (
        EnrichState.ERROR,
        "timeout",
        2,
        LATER,
        T0,
    )
    assert graph.counts() == {"error": 1, "missing": 1}
    assert graph.waiting() == 1


def test_due_puts_the_never_fetched_first_and_waits_for_next_attempts(
    graphs: tuple[GraphStore, GitLabGraph],
) -> None:
    store, graph = graphs
    named(store, MR, MR2, ISSUE, EPIC)
    graph.mark(MR, Attempt(EnrichState.OK, error=None, attempts=0, next_attempt=T0, fetched_at=T0))
    graph.mark(MR2, Attempt(EnrichState.OK, error=None, attempts=0, next_attempt=LATER, fetched_at=T0))
    graph.mark(EPIC, Attempt(EnrichState.UNRESOLVABLE, error=None, attempts=0, next_attempt=None))
    due = graph.due(T0 + timedelta(hours=1), 10)
    assert [r.key for r in due] == [ISSUE, MR]
    assert [r.key for r in graph.due(T0 + timedelta(hours=1), 1)] == [ISSUE]
    assert {r.key for r in graph.due(LATER, 10)} == {ISSUE, MR, MR2}


def test_an_entity_set_aside_keeps_its_facts_and_is_never_due(graphs: tuple[GraphStore, GitLabGraph]) -> None:
    """What the enricher does with a ref of a repository on another forge (a GitHub checkout's)."""
    store, graph = graphs
    named(store, MR)
    save_mr(graph)
    stored, why = graph.merge_request(MR), "github.com/group/proj is a GitHub repository"
    graph.mark(MR, Attempt(EnrichState.UNRESOLVABLE, error=why, attempts=0, next_attempt=None))
    row = graph.rows([MR])[MR]
    assert (row.state, row.error, row.fetched_at, row.next_attempt) == (
        EnrichState.UNRESOLVABLE,
        why,
        T0,
        None,
    )
    assert stored is not None and graph.merge_request(MR) == stored
    assert MR not in {r.key for r in graph.due(LATER + timedelta(days=30), 10)}
    assert graph.counts()["unresolvable"] == 1
    pending = [r for r in graph.all_rows() if r.state is EnrichState.PENDING]
    assert graph.waiting() == len(pending)


def test_a_linked_entity_is_due_once_a_memory_is_about_it(graphs: tuple[GraphStore, GitLabGraph]) -> None:
    store, graph = graphs
    named(store, MR)
    save_mr(graph, hops=2)  # its closing issue is 3 hops away: linked, not queued
    assert graph.rows([ISSUE])[ISSUE].state is EnrichState.LINKED
    assert ISSUE not in {r.key for r in graph.due(T0, 10)}
    remembered_about(store, ISSUE, EntityKind.ISSUE)
    assert ISSUE in {r.key for r in graph.due(T0, 10)}
    assert graph.waiting() == 1


def test_a_linked_entity_found_again_nearer_is_queued(graphs: tuple[GraphStore, GitLabGraph]) -> None:
    store, graph = graphs
    named(store, MR, MR2)
    save_mr(graph, hops=2)
    save_mr(graph, MR2, mr_data(iid=13), hops=0)
    assert graph.rows([ISSUE])[ISSUE].state is EnrichState.PENDING


# -- saving and reading back ----------------------------------------------------------


def test_a_saved_merge_request_reads_back_as_gitlab_described_it(
    graphs: tuple[GraphStore, GitLabGraph],
) -> None:
    store, graph = graphs
    named(store, MR)
    store.upsert_entities([Entity(SYMBOL, EntityKind.SYMBOL, "main", "/src/proj")])
    save_mr(graph)
    read = graph.merge_request(MR)
    assert read == mr_data(
        reviewers=(ALICE, BOB), closes=(IssueRefData("group/proj", 4, "Payments fail", "opened"),)
    )
    row = graph.rows([MR])[MR]
    assert (row.state, row.fetched_at, row.next_attempt, row.attempts) == (EnrichState.OK, T0, LATER, 0)
    assert graph.entities([MR])[MR].title == "Retry payments"
    assert graph.changed_symbols(MR) == [SYMBOL]
    assert store.get_entities([FILE])[FILE].name == "src/app.py"
    assert store.get_entities(["Person:alice"])["Person:alice"].title == "Alice A"


def test_closing_issues_are_queued_in_the_local_project(graphs: tuple[GraphStore, GitLabGraph]) -> None:
    store, graph = graphs
    named(store, MR)
    save_mr(graph)
    row = graph.rows([ISSUE])[ISSUE]
    assert (row.state, row.hops, row.project) == (EnrichState.PENDING, 1, "/src/proj")
    assert graph.entities([ISSUE])[ISSUE].title == "Payments fail"
    assert [e.key for e in graph.merge_requests_closing(ISSUE)] == [MR]
    assert graph.issue(ISSUE) is None  # found, not yet described by GitLab


def test_saving_again_replaces_the_edges(graphs: tuple[GraphStore, GitLabGraph]) -> None:
    store, graph = graphs
    named(store, MR)
    save_mr(graph)
    graph.apply(
        edit_for(
            GitLabAnswer(
                MR,
                mr_data(author=BOB, assignees=(), reviewers=(), closes=()),
                local=LOCAL,
                hops=0,
                fetched_at=LATER,
                next_attempt=LATER,
                file_keys=[],
                symbol_keys=[],
            )
        )
    )
    read = graph.merge_request(MR)
    assert read is not None
    assert (read.author, read.assignees, read.reviewers, read.closes) == (BOB, (), (), ())
    assert graph.merge_requests_closing(ISSUE) == []
    assert graph.changed_by(FILE, 10) == []


def test_files_know_the_merge_requests_that_changed_them_latest_first(
    graphs: tuple[GraphStore, GitLabGraph],
) -> None:
    store, graph = graphs
    named(store, MR, MR2)
    save_mr(graph)
    save_mr(graph, MR2, mr_data(iid=13, title="Tune retries", merged_at=LATER, state="merged"))
    changed = graph.changed_by(FILE, 10)
    assert [(e.key, state, at) for e, state, at in changed] == [(MR2, "merged", LATER), (MR, "merged", T0)]
    assert [e.key for e, _, _ in graph.changed_by(FILE, 1)] == [MR2]


def test_a_saved_issue_reads_back_with_its_epic_and_related_merge_requests(
    graphs: tuple[GraphStore, GitLabGraph],
) -> None:
    store, graph = graphs
    named(store, ISSUE)
    graph.apply(
        edit_for(GitLabAnswer(ISSUE, issue_data(), local=LOCAL, hops=0, fetched_at=T0, next_attempt=LATER))
    )
    assert graph.issue(ISSUE) == issue_data()
    assert graph.rows([EPIC, MR2])[EPIC].state is EnrichState.PENDING
    assert graph.rows([MR2])[MR2].project == "/src/proj"
    assert graph.rows([EPIC])[EPIC].project is None


def test_a_saved_epic_reads_back_with_its_parent_and_children(graphs: tuple[GraphStore, GitLabGraph]) -> None:
    store, graph = graphs
    named(store, EPIC)
    graph.apply(edit_for(GitLabAnswer(EPIC, epic_data(), hops=0, fetched_at=T0, next_attempt=LATER)))
    assert graph.epic(EPIC) == epic_data(author=Person("alice"))
    parent = target_key(EntityKind.EPIC, "group", 1)
    assert graph.rows([parent])[parent].state is EnrichState.PENDING
    graph.apply(
        edit_for(GitLabAnswer(ISSUE, issue_data(), local=LOCAL, hops=1, fetched_at=T0, next_attempt=LATER))
    )
    read = graph.issue(ISSUE)
    assert read is not None and read.epic == ("group", 7)


def test_nothing_is_read_back_before_gitlab_described_it(graphs: tuple[GraphStore, GitLabGraph]) -> None:
    store, graph = graphs
    named(store, MR, ISSUE, EPIC)
    assert graph.merge_request(MR) is None
    assert graph.issue(ISSUE) is None
    assert graph.epic(EPIC) is None
    assert graph.merge_request("MergeRequest:group/proj!404") is None
    assert graph.related_edges([MR, ISSUE, FILE], 10) == []


def related(graph: GitLabGraph, keys: list[str], limit: int = 10) -> list[tuple[str, str, str, bool]]:
    return [(s.start, s.relation, s.end, s.forward) for s in graph.related_edges(keys, limit)]


def test_related_edges_walk_one_gitlab_edge_and_name_it(graphs: tuple[GraphStore, GitLabGraph]) -> None:
    store, graph = graphs
    named(store, MR)
    store.upsert_entities([Entity(SYMBOL, EntityKind.SYMBOL, "main", "/src/proj")])
    save_mr(graph)
    graph.apply(
        edit_for(GitLabAnswer(ISSUE, issue_data(), local=LOCAL, hops=1, fetched_at=T0, next_attempt=LATER))
    )
    assert related(graph, [MR]) == [
        (MR, "CLOSES", ISSUE, True),
        (MR, "CHANGES", FILE, True),
        (MR, "CHANGES", SYMBOL, True),
    ]
    assert related(graph, [MR], 1) == [(MR, "CLOSES", ISSUE, True)]
    assert related(graph, [ISSUE]) == [(ISSUE, "PART_OF", EPIC, True), (ISSUE, "CLOSES", MR, False)]
    assert related(graph, [FILE]) == [(FILE, "CHANGES", MR, False)]
    assert related(graph, [SYMBOL, MR]) == [(MR, "CLOSES", ISSUE, True), (MR, "CHANGES", FILE, True)]


def test_related_edges_walk_from_an_epic_to_its_issues_and_parent(
    graphs: tuple[GraphStore, GitLabGraph],
) -> None:
    store, graph = graphs
    named(store, EPIC)
    graph.apply(edit_for(GitLabAnswer(EPIC, epic_data(), hops=0, fetched_at=T0, next_attempt=LATER)))
    parent, child = target_key(EntityKind.EPIC, "group", 1), target_key(EntityKind.EPIC, "group", 8)
    assert related(graph, [EPIC]) == [
        (EPIC, "PART_OF", parent, True),
        (EPIC, "PART_OF", ISSUE, False),
        (EPIC, "PART_OF", child, False),
    ]


def test_a_merge_request_with_no_files_and_no_people_is_saved(graphs: tuple[GraphStore, GitLabGraph]) -> None:
    store, graph = graphs
    named(store, MR, ISSUE)
    bare = mr_data(author=None, assignees=(), reviewers=(), changed_files=(), changed_files_total=0)
    graph.apply(
        edit_for(
            GitLabAnswer(
                MR, bare, local=LOCAL, hops=0, fetched_at=T0, next_attempt=LATER, file_keys=[], symbol_keys=[]
            )
        )
    )
    graph.apply(
        edit_for(
            GitLabAnswer(
                ISSUE,
                issue_data(author=None, assignees=()),
                local=LOCAL,
                hops=0,
                fetched_at=T0,
                next_attempt=LATER,
            )
        )
    )
    # a closing issue is read with what its own save stored
    closes = (IssueRefData("group/proj", 4, "Payments fail under load", "opened"),)
    assert graph.merge_request(MR) == replace(bare, closes=closes)
    read = graph.issue(ISSUE)
    assert read is not None and (read.author, read.assignees) == (None, ())
