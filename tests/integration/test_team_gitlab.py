"""On a team's PostgreSQL store, GitLab's rows go with the entities they name (docs/team.md,
"Entities"): a person is shown an MR's, issue's or epic's GitLab answer when they see its
entity, and an edge between two only when they see both ends. An issue only Bob's own global
memory names is Bob's: the team's MR that closes it shows Alice neither the issue nor the edge,
in the graph's reads, recall's walk of the GitLab graph or ``get_context``. Two people, each
logged in as their own role, on one database; what each one's daemon fetched from GitLab is
stored as enrichment stores it (``core.gitlab_edits.edit_for``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from support.stores import postgres_url, writer_role
from unit.adapters.test_gitlab_graph_contract import T0, epic_data, issue_data, mr_data

from graphmem.adapters.embedders import HashEmbedder
from graphmem.adapters.postgres_gitlab import PostgresGitLabGraph
from graphmem.adapters.postgres_store import PostgresGraphStore
from graphmem.app import open_memory
from graphmem.core.enrichment import target_key
from graphmem.core.gitlab import IssueRefData
from graphmem.core.gitlab_edits import GitLabAnswer, GitLabData, edit_for
from graphmem.core.models import EntityKind
from graphmem.core.ports import GitLabGraph
from graphmem.core.views import why
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings

pytestmark = pytest.mark.integration

DIMENSION = 256
PROJECT = "/src/shop"  # the team's checkout of acme/shop
MR = target_key(EntityKind.MERGE_REQUEST, "acme/shop", 12)
BOBS_MR = target_key(EntityKind.MERGE_REQUEST, "acme/shop", 13)
ISSUE = target_key(EntityKind.ISSUE, "acme/shop", 4)
EPIC = target_key(EntityKind.EPIC, "finance", 7)
FILE = f"File:{PROJECT}::src/app.py"
ISSUE_REF = IssueRefData("acme/shop", 4, "Payments fail under load", "opened")


@dataclass
class Team:
    alice: MemoryService
    bob: MemoryService
    admin: PostgresGraphStore
    about_epic: str = ""  # the team's memory about finance&7

    def graph(self, who: MemoryService) -> GitLabGraph:
        """The GitLab graph ``who``'s daemon reads and writes, as their role."""
        assert who.enricher is not None
        return who.enricher.graph


@pytest.fixture
def team(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Team]:
    admin_url = postgres_url(request)
    admin = PostgresGraphStore(admin_url, dimension=DIMENSION)  # the owner sizes the vector column
    database = admin_url.rsplit("/", 1)[1]  # roles are the cluster's: one pair per database

    def on(name: str) -> MemoryService:
        url = writer_role(admin_url, f"{name}_{database}")
        settings = load_settings(data_dir=tmp_path / name, store={"url": url})
        return open_memory(settings, embedder=HashEmbedder(DIMENSION))

    team = Team(on("alice"), on("bob"), admin)
    yield team
    for closing in (team.alice, team.bob, admin):
        closing.close()


def fetched(graph: GitLabGraph, key: str, data: GitLabData, files: Sequence[tuple[str, str]] = ()) -> None:
    """Store GitLab's answer about ``key`` as the enricher of ``graph``'s daemon does."""
    answer = GitLabAnswer(
        key, data, 0, T0, T0 + timedelta(days=1), local=("acme/shop", PROJECT), file_keys=files
    )
    graph.apply(edit_for(answer))


@pytest.fixture
def closed(team: Team) -> Team:
    """The team's MR !12 closes #4, which only Bob's own global memory names and Bob's daemon
    fetched (part of the team's epic finance&7); Bob's own MR !13 changed a file !12 changed."""
    team.alice.remember("Reviews of acme/shop!12 go to the payments team", scope="project", project=PROJECT)
    epic_note = team.alice.remember(
        "Planning for finance&7 slipped a quarter", scope="project", project=PROJECT
    )
    team.about_epic = epic_note.memory.id
    team.bob.remember("Waiting on acme/shop#4 before the refund change", scope="global")
    team.bob.remember("acme/shop!13 is my retry experiment, not for review", scope="global")
    mr = {
        "project": "acme/shop",
        "closes": (ISSUE_REF,),
        "web_url": "https://gl/acme/shop/-/merge_requests/12",
    }
    fetched(team.graph(team.alice), MR, mr_data(**mr), [(FILE, "src/app.py")])
    epic = {"group": "finance", "parent": None, "child_issues": (ISSUE_REF,), "child_epics": ()}
    fetched(team.graph(team.alice), EPIC, epic_data(**epic))
    issue = {"project": "acme/shop", "epic": ("finance", 7), "related_merge_requests": (("acme/shop", 12),)}
    fetched(team.graph(team.bob), ISSUE, issue_data(**issue))
    fetched(
        team.graph(team.bob), BOBS_MR, mr_data(project="acme/shop", iid=13, closes=()), [(FILE, "src/app.py")]
    )
    return team


def test_the_teams_mr_shows_alice_no_issue_only_bobs_memory_names(closed: Team) -> None:
    alice, bob = closed.graph(closed.alice), closed.graph(closed.bob)

    mine = alice.merge_request(MR)
    assert mine is not None and mine.closes == ()
    his = bob.merge_request(MR)
    assert his is not None and his.closes == (ISSUE_REF,)


def test_alice_is_not_shown_bobs_issues_gitlab_answer(closed: Team) -> None:
    alice, bob = closed.graph(closed.alice), closed.graph(closed.bob)

    assert alice.issue(ISSUE) is None and alice.merge_requests_closing(ISSUE) == []
    assert bob.issue(ISSUE) is not None and [e.key for e in bob.merge_requests_closing(ISSUE)] == [MR]


def test_the_teams_epic_lists_alice_no_child_issue_only_bobs_memory_names(closed: Team) -> None:
    alice, bob = closed.graph(closed.alice), closed.graph(closed.bob)

    mine, his = alice.epic(EPIC), bob.epic(EPIC)
    assert mine is not None and mine.child_issues == ()
    assert his is not None and [(i.project, i.iid) for i in his.child_issues] == [("acme/shop", 4)]


def test_an_edge_is_walked_only_by_whoever_sees_both_its_ends(closed: Team) -> None:
    def ends(graph: GitLabGraph, key: str) -> set[str]:
        return {step.end for step in graph.related_edges([key], 50)}

    alice, bob = closed.graph(closed.alice), closed.graph(closed.bob)
    admin = PostgresGitLabGraph(closed.admin)
    assert ISSUE not in ends(alice, MR) | ends(alice, EPIC)
    assert FILE in ends(alice, MR)  # the team's ends stay
    assert ISSUE in ends(bob, MR) & ends(bob, EPIC)
    assert ISSUE in ends(admin, MR)  # an administrator sees every row


def test_a_file_lists_alice_only_the_mrs_she_sees(closed: Team) -> None:
    alice, bob = closed.graph(closed.alice), closed.graph(closed.bob)

    assert [mr.key for mr, _, _ in alice.changed_by(FILE, 10)] == [MR]
    assert {mr.key for mr, _, _ in bob.changed_by(FILE, 10)} == {MR, BOBS_MR}


def test_alices_recall_does_not_walk_through_bobs_issue(closed: Team) -> None:
    query = "what did acme/shop!12 do"

    found = closed.alice.recall(query, project=PROJECT).hits
    assert closed.about_epic not in {hit.memory.id for hit in found}  # two edges away only through #4
    assert not any("#4" in why(hit) for hit in found)
    his = closed.bob.recall(query, project=PROJECT).hits
    assert closed.about_epic in {hit.memory.id for hit in his}


def test_get_context_of_the_teams_mr_does_not_name_bobs_issue_to_alice(closed: Team) -> None:
    assert "acme/shop#4" not in closed.alice.get_context("acme/shop!12", project=PROJECT).markdown
    assert "acme/shop#4" in closed.bob.get_context("acme/shop!12", project=PROJECT).markdown


def test_the_stored_edge_shows_once_a_memory_alice_sees_names_the_issue(closed: Team) -> None:
    closed.alice.remember("The refund change waits on acme/shop#4", scope="project", project=PROJECT)

    mine = closed.graph(closed.alice).merge_request(MR)
    assert mine is not None and mine.closes == (ISSUE_REF,)  # nothing GitLab said was lost meanwhile


def test_the_pages_graph_around_the_teams_mr_shows_alice_no_edge_to_bobs_issue(closed: Team) -> None:
    def ends(who: MemoryService) -> set[str]:
        around = who.parts.neighbourhood.around(MR)
        return {node.key for node in around.nodes} | {e.target for e in around.edges}

    assert ISSUE not in ends(closed.alice) and FILE in ends(closed.alice)
    assert ISSUE in ends(closed.bob)


def test_get_context_of_bobs_issue_tells_alice_nothing_gitlab_said(closed: Team) -> None:
    mine = closed.alice.get_context("acme/shop#4", project=PROJECT)
    assert mine.code == [] and ISSUE_REF.title not in mine.markdown
    assert dict(closed.bob.get_context("acme/shop#4", project=PROJECT).code).get("Issue")
