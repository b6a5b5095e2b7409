"""What a GitLab answer means for the graph (``core.gitlab_edits.edit_for``), decided once.

The stores apply the edit as it is; ``tests/unit/adapters/test_gitlab_graph_contract.py``
checks they do. Here: which edges an answer replaces, who and what it names, how far.
"""

from __future__ import annotations

from datetime import UTC, datetime

from graphmem.core.enrichment import MAX_HOPS, EnrichState, target_key
from graphmem.core.gitlab import ChangedFile, EpicData, IssueData, IssueRefData, MergeRequestData, Person
from graphmem.core.gitlab_edits import (
    Edge,
    EdgeScope,
    GitLabAnswer,
    Held,
    changed_file_keys,
    edit_for,
    owner_after,
    writes_on,
)
from graphmem.core.models import EntityKind

T0 = datetime(2025, 6, 1, tzinfo=UTC)
LOCAL = ("group/proj", "/src/proj")
MR = target_key(EntityKind.MERGE_REQUEST, "group/proj", 12)
ISSUE = target_key(EntityKind.ISSUE, "group/proj", 4)
OTHER_ISSUE = target_key(EntityKind.ISSUE, "group/other", 9)
EPIC = target_key(EntityKind.EPIC, "group", 7)
ALICE = Person("alice", "Alice A")


def merge_request(**changes: object) -> MergeRequestData:
    values: dict[str, object] = {
        "project": "group/proj", "iid": 12, "title": "Retry", "state": "merged", "draft": False,
        "author": ALICE, "assignees": (ALICE,), "reviewers": (Person(""),), "labels": (),
        "milestone": None, "source_branch": "retry", "target_branch": "main", "merged_at": T0,
        "created_at": T0, "updated_at": T0, "description": "", "web_url": "",
        "changed_files": (ChangedFile("src/app.py", "src/app.py"),), "changed_files_total": 1,
        "closes": (IssueRefData("group/proj", 4, "Fails", "opened"), IssueRefData("group/other", 9)),
    }  # fmt: skip
    values.update(changes)
    return MergeRequestData(**values)  # type: ignore[arg-type]


def answer(data: MergeRequestData | IssueData | EpicData, key: str, hops: int = 0) -> GitLabAnswer:
    files = changed_file_keys(data, LOCAL) if isinstance(data, MergeRequestData) else []
    return GitLabAnswer(
        key, data, hops, T0, T0, LOCAL, files, ["Symbol:/src/proj::src/app.py::main", "bogus"]
    )


def test_a_merge_request_replaces_its_own_edges_and_its_people() -> None:
    edit = edit_for(answer(merge_request(), MR))
    assert set(edit.drop) == {
        EdgeScope("CHANGES", MR), EdgeScope("CLOSES", MR), EdgeScope("AUTHORED", MR, into=True),
        EdgeScope("ASSIGNED", MR, into=True), EdgeScope("REVIEWS", MR, into=True),
    }  # fmt: skip
    assert edit.people == (ALICE,)  # once, and never a person without a username
    assert Edge("CHANGES", MR, "Symbol:/src/proj::src/app.py::main") in edit.edges
    assert all(edge.target != "bogus" for edge in edit.edges)
    assert {e for e in edit.edges if e.rel == "CLOSES"} == {
        Edge("CLOSES", MR, ISSUE),
        Edge("CLOSES", MR, OTHER_ISSUE),
    }


def test_named_entities_are_queued_near_and_only_linked_far_in_the_local_project_only() -> None:
    near = {n.key: n for n in edit_for(answer(merge_request(), MR)).nodes}
    assert (near[ISSUE].queue, near[ISSUE].hops, near[ISSUE].project, near[ISSUE].title) == (
        EnrichState.PENDING, 1, "/src/proj", "Fails",
    )  # fmt: skip
    assert near[OTHER_ISSUE].project is None  # GitLab's project is not the checkout's
    assert near["File:/src/proj::src/app.py"].project == "/src/proj"
    assert near["File:/src/proj::src/app.py"].queue is None
    far = {n.key: n for n in edit_for(answer(merge_request(), MR, hops=MAX_HOPS)).nodes}
    assert far[ISSUE].queue is EnrichState.LINKED


def test_an_issue_has_no_reviewers_and_an_epic_no_people_edges() -> None:
    issue = IssueData(
        project="group/proj", iid=4, title="Fails", state="opened", author=ALICE, assignees=(), labels=(),
        milestone=None, created_at=T0, updated_at=T0, closed_at=None, description="", web_url="",
        epic=("group", 7), related_merge_requests=(),
    )  # fmt: skip
    drops = edit_for(answer(issue, ISSUE)).drop
    assert EdgeScope("REVIEWS", ISSUE, into=True) not in drops
    epic = EpicData(
        group="group", iid=7, title="Payments", state="opened", author=ALICE, labels=(), created_at=T0,
        updated_at=T0, description="", web_url="", parent=None, child_issues=(), child_epics=(("group", 8),),
    )  # fmt: skip
    edit = edit_for(answer(epic, EPIC))
    assert set(edit.drop) == {EdgeScope("PART_OF", EPIC), EdgeScope("PART_OF", EPIC, into=True)}
    assert edit.people == ()
    assert edit.edges == (Edge("PART_OF", target_key(EntityKind.EPIC, "group", 8), EPIC),)


# -- who owns what an answer names (a team's store) -------------------------------------


def test_what_an_answer_creates_is_owned_like_the_node_it_is_about() -> None:
    assert owner_after("bob", None) == "bob"  # through Bob's private issue: Bob's
    assert owner_after(None, None) is None  # through the team's: the team's


def test_the_teams_answer_makes_what_only_answers_found_the_teams() -> None:
    assert owner_after(None, Held("bob", found=True, own=False)) is None
    assert owner_after(None, Held("bob", found=False, own=False)) == "bob"  # his memory named it


def test_a_private_answer_publishes_nothing_and_takes_nothing_from_the_team() -> None:
    assert owner_after("bob", Held("alice", found=True, own=False)) == "alice"
    assert owner_after("bob", Held(None, found=True, own=False)) is None


def test_an_answer_writes_on_no_row_another_person_owns_unless_it_makes_it_the_teams() -> None:
    theirs = Held("alice", found=False, own=False)  # shown to the writer or not: ownership decides
    assert not writes_on(theirs, owner_after("bob", theirs))
    assert writes_on(None, "bob") and writes_on(Held("alice", found=False, own=True), "alice")
    assert writes_on(Held(None, found=False, own=False), None)  # the team's
    found = Held("bob", found=True, own=False)
    assert writes_on(found, owner_after(None, found))
