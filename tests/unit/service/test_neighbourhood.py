"""The graph view's neighbourhoods: a memory's entities and links, an entity's memories and
GitLab and code edges, each kind of edge capped with the rest counted, bad keys refused."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from support.records import memory as record

from graphmem.core.enrichment import target_key
from graphmem.core.gitlab import ChangedFile, IssueRefData, MergeRequestData
from graphmem.core.gitlab_edits import GitLabAnswer, edit_for
from graphmem.core.keys import file_key
from graphmem.core.models import Category, Entity, EntityKind, MemoryRecord, Scope
from graphmem.errors import InvalidInputError, NotFoundError
from graphmem.service import linked_memories
from graphmem.service.memory import MemoryService
from graphmem.service.neighbourhood import EDGE_LIMIT, NeighbourhoodReader
from graphmem.service.stores import Stores

T0 = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
NAMESPACE = "group/sub/proj"  # the git_project fixture's origin
MR = target_key(EntityKind.MERGE_REQUEST, NAMESPACE, 12)
ISSUE = target_key(EntityKind.ISSUE, NAMESPACE, 34)


def reader(memory: MemoryService) -> NeighbourhoodReader:
    return memory.parts.neighbourhood  # built by graphmem.app on the service's Stores


def merged_mr(memory: MemoryService, project: str, files: list[str]) -> None:
    """!12 changed ``files`` and closes #34, stored as enrichment stores them."""
    assert memory.enricher is not None
    memory.store.upsert_entities([Entity(MR, EntityKind.MERGE_REQUEST, "!12", project)])
    data = MergeRequestData(
        project=NAMESPACE, iid=12, title="Refund in one go", state="merged", draft=False, author=None,
        assignees=(), reviewers=(), labels=(), milestone=None, source_branch="refund",
        target_branch="main", merged_at=T0, created_at=T0, updated_at=T0, description="",
        web_url="https://gitlab.example.com/group/sub/proj/-/merge_requests/12",
        changed_files=tuple(ChangedFile(path, path) for path in files), changed_files_total=len(files),
        closes=(IssueRefData(NAMESPACE, 34, "Refunds are slow", "closed"),),
    )  # fmt: skip
    memory.enricher.graph.apply(
        edit_for(
            GitLabAnswer(
                MR,
                data,
                local=(NAMESPACE, project),
                hops=0,
                fetched_at=T0,
                next_attempt=T0 + timedelta(days=1),
                file_keys=[(file_key(project, path), path) for path in files],
                symbol_keys=[],
            )
        )
    )


def test_a_memory_shows_what_it_is_about_and_what_it_links_to(
    memory_service: MemoryService, git_project: str
) -> None:
    first = memory_service.remember("!12 moved refunds into src/app.py", project=git_project).memory
    second = memory_service.remember("Refunds run nightly", project=git_project).memory
    memory_service.link(second.id, first.id, "extends")

    found = reader(memory_service).around(first.id)

    assert found.center.key == first.id and found.center.kind == "Memory"
    kinds = {node.kind for node in found.nodes}
    assert {"MergeRequest", "File", "Memory"} <= kinds
    edges = {(e.source, e.relation, e.target) for e in found.edges}
    assert (second.id, "extends", first.id) in edges
    assert (first.id, "ABOUT", file_key(git_project, "src/app.py")) in edges


def test_an_mr_shows_its_files_its_closed_issue_and_its_memories(
    memory_service: MemoryService, git_project: str
) -> None:
    about = memory_service.remember("Alice merged !12 after a long review", project=git_project).memory
    merged_mr(memory_service, git_project, ["src/app.py", "README.md"])

    found = reader(memory_service).around(MR)

    labels = {node.label for node in found.nodes}
    assert {"src/app.py", "README.md"} <= labels
    edges = {(e.source, e.relation, e.target) for e in found.edges}
    assert (MR, "CHANGES", file_key(git_project, "src/app.py")) in edges
    assert (about.id, "ABOUT", MR) in edges
    assert any(e.relation == "CLOSES" and e.target == ISSUE for e in found.edges)


def test_the_graph_view_draws_an_entity_as_the_services_stores_show_it(
    memory_service: MemoryService, git_project: str
) -> None:
    """Whether GitLab's title and edges of a ref are drawn is ``Stores``' to say (``shown``,
    ``another_projects``), not the view's: here they call a GitLab checkout's MR another project's."""
    about = memory_service.remember("Alice merged !12 after a long review", project=git_project).memory
    merged_mr(memory_service, git_project, ["src/app.py"])
    assert memory_service.enricher is not None

    def theirs(entity: Entity, project: str | None) -> bool:
        return entity.key == MR

    stores = Stores(
        memory_service.store, code=memory_service.code, gitlab=memory_service.enricher.graph,
        another_projects=theirs,
    )  # fmt: skip
    mr = NeighbourhoodReader(stores).around(MR)
    memory = NeighbourhoodReader(stores).around(about.id)

    assert reader(memory_service).around(MR).center.title == "Refund in one go"  # the service's own
    assert mr.center.title == "" and {e.relation for e in mr.edges} == {"ABOUT"}
    assert {node.key: node.title for node in memory.nodes}[MR] == ""


ORDERS = """
def refund_all(order):
    return order


def cancel(order):
    refund_all(order)
"""


def test_a_file_shows_its_symbols_and_a_symbol_its_calls(
    memory_service: MemoryService, git_project: str
) -> None:
    (Path(git_project) / "src" / "orders.py").write_text(ORDERS, "utf-8")
    memory_service.bootstrap(git_project, history=0)
    cancel = f"Symbol:{git_project}::src/orders.py::cancel"
    refund_all = f"Symbol:{git_project}::src/orders.py::refund_all"

    the_file = reader(memory_service).around(file_key(git_project, "src/orders.py"))
    the_symbol = reader(memory_service).around(cancel)

    assert {n.label for n in the_file.nodes if n.kind == "Symbol"} == {"cancel", "refund_all"}
    assert (file_key(git_project, "src/orders.py"), "CONTAINS", cancel) in {
        (e.source, e.relation, e.target) for e in the_file.edges
    }
    assert the_symbol.center.label == "cancel"
    assert (cancel, "CALLS", refund_all) in {(e.source, e.relation, e.target) for e in the_symbol.edges}


def test_a_hub_shows_a_bounded_number_of_neighbours_and_counts_the_rest(
    memory_service: MemoryService, git_project: str
) -> None:
    for n in range(EDGE_LIMIT + 6):
        memory_service.remember(f"Note {n} about src/app.py number {n * 7919}", project=git_project)

    found = reader(memory_service).around(file_key(git_project, "src/app.py"))

    memories = [node for node in found.nodes if node.kind == "Memory"]
    assert len(memories) == EDGE_LIMIT and found.more == 6


FIRST_LIMIT = 8  # what the page asks for first (graphmem/server/ui/graph.js)


def commits_about(memory: MemoryService, project: str, path: str, count: int, at: datetime) -> None:
    """``count`` commit memories about ``path``, as a history bootstrap stores them, the newest at ``at``."""
    entity = Entity(file_key(project, path), EntityKind.FILE, path, project)
    commits: list[MemoryRecord] = [
        record(
            f"mem_{n:016x}",
            f"Commit {n}: tidy {path}",
            category=Category.EVENT,
            scope=Scope.PROJECT,
            project=project,
            source=f"git:{n:040x}",
            created_at=at - timedelta(hours=n),
            updated_at=at - timedelta(hours=n),
            valid_from=at - timedelta(hours=n),
        )
        for n in range(count)
    ]
    memory.store.upsert_entities([entity])
    memory.store.add_memories(commits)
    memory.store.link_about([(c.id, entity) for c in commits])


def remembered_about_app(memory: MemoryService, project: str) -> set[str]:
    """The user's decision and blocker about src/app.py; their ids."""
    decision = memory.remember(
        "Decision: src/app.py keeps refunds synchronous", category="decision", project=project
    )
    blocker = memory.remember(
        "Blocker: src/app.py times out on bulk refunds", category="blocker", project=project
    )
    return {decision.memory.id, blocker.memory.id}


def test_what_the_user_remembered_is_drawn_before_many_older_commits_stored_first(
    memory_service: MemoryService, git_project: str
) -> None:
    commits_about(memory_service, git_project, "src/app.py", FIRST_LIMIT * 4 + 10, at=T0)
    mine = remembered_about_app(memory_service, git_project)

    found = reader(memory_service).around(file_key(git_project, "src/app.py"), limit=FIRST_LIMIT)

    memories = [node.key for node in found.nodes if node.kind == "Memory"]
    assert set(memories[:2]) == mine and len(memories) == FIRST_LIMIT
    assert found.more == FIRST_LIMIT * 4 + 10 + 2 - FIRST_LIMIT


def test_what_the_user_remembered_comes_before_newer_commits(
    memory_service: MemoryService, git_project: str
) -> None:
    mine = remembered_about_app(memory_service, git_project)
    commits_about(memory_service, git_project, "src/app.py", 20, at=datetime.now(UTC) + timedelta(days=30))

    found = reader(memory_service).around(file_key(git_project, "src/app.py"), limit=FIRST_LIMIT)

    assert {node.key for node in found.nodes[:2]} == mine


def test_a_hub_too_large_to_read_whole_still_draws_what_the_user_remembered_and_the_newest_commits(
    memory_service: MemoryService, git_project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(linked_memories, "RANKED_READ_MAX", 20)
    commits_about(memory_service, git_project, "src/app.py", 60, at=T0)
    mine = remembered_about_app(memory_service, git_project)

    found = reader(memory_service).around(file_key(git_project, "src/app.py"), limit=FIRST_LIMIT)

    memories = [node.key for node in found.nodes if node.kind == "Memory"]
    assert set(memories[:2]) == mine
    assert memories[2:] == [f"mem_{n:016x}" for n in range(FIRST_LIMIT - 2)]  # the newest commits
    assert found.more == 60 + 2 - FIRST_LIMIT


def test_a_long_memory_is_cut_in_its_label(memory_service: MemoryService) -> None:
    memory = memory_service.remember("word " * 200).memory
    node = reader(memory_service).around(memory.id).center
    assert len(node.label) <= 80 and node.label.endswith("…")


@pytest.mark.parametrize("key", ["", "   ", "x" * 1001, "mem_\x00"])
def test_a_bad_key_is_refused_with_what_a_key_is(memory_service: MemoryService, key: str) -> None:
    with pytest.raises(InvalidInputError, match="memory id"):
        reader(memory_service).around(key)


@pytest.mark.parametrize("limit", [0, -1, 101])
def test_a_limit_out_of_range_is_refused(memory_service: MemoryService, limit: int) -> None:
    with pytest.raises(InvalidInputError, match="limit"):
        reader(memory_service).around("mem_0000000000000000", limit=limit)


@pytest.mark.parametrize("key", ["mem_0000000000000000", "MergeRequest:nope!1", "File:/x::y.py"])
def test_an_unknown_node_is_not_found(memory_service: MemoryService, key: str) -> None:
    with pytest.raises(NotFoundError):
        reader(memory_service).around(key)
