"""On a team's PostgreSQL store, GitLab's rows go with the entities they name (docs/team.md,
"Entities"): a person is shown an MR's, issue's or epic's GitLab answer when they see its
entity, and an edge between two only when they see both ends. An issue only Bob's own global
memory names is Bob's: the team's MR that closes it shows Alice neither the issue nor the edge,
in the graph's reads, recall's walk of the GitLab graph or ``get_context``.

The writes keep to the same rule: what an answer about Bob's private issue finds (its epic, its
people, an MR) is Bob's until something the team sees names it (``core.gitlab_edits.owner_after``),
and Alice's ``enrich`` of Bob's private issue fetches it for her as an unknown one, changing
nothing of his row; her daemon never fetches, marks or saves an answer on a row Bob owns, even
one a memory of hers shows her (``core.gitlab_edits.writes_on``), and her status never counts it
as hers to fetch. Two people, each logged in
as their own role, on one database; what each one's daemon fetched from GitLab is stored as
enrichment stores it (``core.gitlab_edits.edit_for``), or fetched by the real enricher from the
fixture GitLab (``support/fake_gitlab.py``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from support.fake_gitlab import TOKEN, FakeGitLab, shop_checkout
from support.stores import postgres_url, writer_role
from support.tools_client import Tools
from unit.adapters.test_gitlab_graph_contract import T0, epic_data, issue_data, mr_data

from graphmem.adapters.embedders import HashEmbedder
from graphmem.adapters.postgres_gitlab import PostgresGitLabGraph
from graphmem.adapters.postgres_store import PostgresGraphStore
from graphmem.app import open_memory
from graphmem.cli.gitlab import status_lines
from graphmem.core import keys
from graphmem.core.enrichment import Attempt, EnrichState, target_key
from graphmem.core.gitlab import IssueRefData, Person
from graphmem.core.gitlab_edits import GitLabAnswer, GitLabData, edit_for
from graphmem.core.gitlab_ports import GitLabGraph
from graphmem.core.models import EntityKind
from graphmem.core.views import why
from graphmem.server.runtime import Runtime
from graphmem.server.tools import build_mcp
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
TEAMS_ISSUE = target_key(EntityKind.ISSUE, "acme/shop", 5)
FOUND_EPIC = target_key(EntityKind.EPIC, "finance", 9)  # first known through Bob's #4
FOUND_MR = target_key(EntityKind.MERGE_REQUEST, "acme/shop", 15)
CAROL = Person("carol", "Carol C", "https://gl/carol")
CAROLS = keys.person_key(username="carol")
PRIVATE_NOTE = "Waiting on acme/shop#4 before the refund change"


@dataclass
class Team:
    alice: MemoryService
    bob: MemoryService
    admin: PostgresGraphStore
    about_epic: str = ""  # the team's memory about finance&7
    shop: str = ""  # a checkout of acme/shop/backend, when the fixture GitLab answers

    def graph(self, who: MemoryService) -> GitLabGraph:
        """The GitLab graph ``who``'s daemon reads and writes, as their role."""
        assert who.enricher is not None
        return who.enricher.graph


@contextmanager
def two_people(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Team]:
    admin_url = postgres_url(request)
    admin = PostgresGraphStore(admin_url, dimension=DIMENSION)  # the owner sizes the vector column
    database = admin_url.rsplit("/", 1)[1]  # roles are the cluster's: one pair per database

    def on(name: str) -> MemoryService:
        url = writer_role(admin_url, f"{name}_{database}")
        settings = load_settings(data_dir=tmp_path / name, store={"url": url})
        return open_memory(settings, embedder=HashEmbedder(DIMENSION))

    team = Team(on("alice"), on("bob"), admin)
    try:
        yield team
    finally:
        for closing in (team.alice, team.bob, admin):
            closing.close()


@pytest.fixture
def team(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Team]:
    with two_people(request, tmp_path) as team:
        yield team


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


# -- writes: what Bob's private issue leads to is Bob's --------------------------------


def stored(team: Team, key: str) -> list[tuple[object, ...]]:
    """All the store keeps of ``key``'s entity and queue row, whoever's (read as the administrator)."""
    return team.admin.db.rows(
        "SELECT e.name, e.project, e.title, e.owner, n.state, n.hops, n.gl_state, n.data IS NOT NULL "
        "FROM entities e LEFT JOIN gitlab_nodes n ON n.key = e.key WHERE e.key = %s",
        (key,),
    )


def private_issue(**changes: object) -> GitLabData:
    """GitLab's answer about #4: by Carol, in epic finance&9, related to !15 (none of them stored)."""
    values: dict[str, object] = {
        "project": "acme/shop", "epic": ("finance", 9), "related_merge_requests": (("acme/shop", 15),),
        "author": CAROL, "assignees": (),
    }  # fmt: skip
    return issue_data(**{**values, **changes})


@pytest.fixture
def found(team: Team) -> Team:
    """Bob's daemon fetched #4, which only his own global memory names."""
    team.bob.remember(PRIVATE_NOTE, scope="global")
    fetched(team.graph(team.bob), ISSUE, private_issue())
    return team


def test_what_bobs_private_issue_leads_to_is_bobs(found: Team) -> None:
    led_to = [FOUND_EPIC, FOUND_MR, CAROLS]

    assert found.alice.store.get_entities(led_to) == {}
    assert set(found.bob.store.get_entities(led_to)) == set(led_to)


def test_alices_daemon_never_queues_what_bobs_issue_found(found: Team) -> None:
    assert {FOUND_EPIC, FOUND_MR}.isdisjoint(row.key for row in found.graph(found.alice).all_rows())
    assert {FOUND_EPIC, FOUND_MR} <= {row.key for row in found.graph(found.bob).due(T0, 50)}


def test_alice_is_not_shown_the_epic_bobs_daemon_fetched_through_his_issue(found: Team) -> None:
    epic = {"group": "finance", "iid": 9, "title": "Payments reorg", "child_issues": (), "child_epics": ()}
    fetched(found.graph(found.bob), FOUND_EPIC, epic_data(**epic))

    assert found.graph(found.alice).epic(FOUND_EPIC) is None
    assert "Payments reorg" not in found.alice.get_context("finance&9", project=PROJECT).markdown
    his = found.graph(found.bob).epic(FOUND_EPIC)
    assert his is not None and his.title == "Payments reorg"


def test_a_memory_the_team_sees_makes_what_bobs_issue_found_the_teams(found: Team) -> None:
    found.alice.remember("Planning for finance&9 slipped a quarter", scope="project", project=PROJECT)

    assert FOUND_EPIC in found.graph(found.alice).entities([FOUND_EPIC])


def test_the_teams_answer_makes_what_bobs_issue_found_the_teams(found: Team) -> None:
    found.alice.remember("The refund change waits on acme/shop#5", scope="project", project=PROJECT)
    fetched(found.graph(found.alice), TEAMS_ISSUE, private_issue(iid=5, related_merge_requests=()))

    mine = found.graph(found.alice).issue(TEAMS_ISSUE)
    assert mine is not None and mine.epic == ("finance", 9) and mine.author == CAROL
    assert found.graph(found.alice).entities([FOUND_EPIC])  # a node to fetch, for her daemon too


def test_the_teams_answer_leaves_an_issue_bobs_memory_names_his(found: Team) -> None:
    found.alice.remember("Reviews of acme/shop!12 go to the payments team", scope="project", project=PROJECT)
    fetched(found.graph(found.alice), MR, mr_data(project="acme/shop", closes=(ISSUE_REF,)))

    assert found.graph(found.alice).entities([ISSUE]) == {}
    assert stored(found, ISSUE)[0][3] == found.bob.store.login_role().name


def test_bobs_private_answer_leaves_the_teams_person_the_teams(team: Team) -> None:
    team.alice.remember("Reviews of acme/shop!12 go to the payments team", scope="project", project=PROJECT)
    shared = mr_data(project="acme/shop", author=CAROL, assignees=(), reviewers=(), closes=())
    fetched(team.graph(team.alice), MR, shared)
    team.bob.remember(PRIVATE_NOTE, scope="global")
    fetched(team.graph(team.bob), ISSUE, private_issue())

    mine = team.graph(team.alice).merge_request(MR)
    assert mine is not None and mine.author == CAROL


def test_bobs_answer_changes_nothing_of_alices_private_mr(team: Team) -> None:
    team.alice.remember("acme/shop!15 is my retry spike, not for review", scope="global")
    before = stored(team, FOUND_MR)
    team.bob.remember(PRIVATE_NOTE, scope="global")
    fetched(team.graph(team.bob), ISSUE, private_issue())

    assert stored(team, FOUND_MR) == before  # no queue row, no hops, still hers alone
    assert team.graph(team.bob).entities([FOUND_MR]) == {}


def test_alices_daemon_marks_no_attempt_on_bobs_private_issue(team: Team) -> None:
    team.bob.remember(PRIVATE_NOTE, scope="global")
    before = stored(team, ISSUE)

    team.graph(team.alice).mark(ISSUE, Attempt(EnrichState.FORBIDDEN, "403", 1, T0 + timedelta(days=7), T0))

    assert stored(team, ISSUE) == before


# -- enrichment against the fixture GitLab (acme/shop/backend) -----------------------------

SHOP_ISSUE = target_key(EntityKind.ISSUE, "acme/shop/backend", 34)
SHOP_EPIC = target_key(EntityKind.EPIC, "acme/shop", 5)
SHOP_MR = target_key(EntityKind.MERGE_REQUEST, "acme/shop/backend", 12)
BOBS_NOTE = "Waiting on acme/shop/backend#34 before the refund change"


@pytest.fixture
def gitlab(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitLab]:
    """The fixture GitLab, the token and its URL in each person's environment."""
    with FakeGitLab() as server:
        monkeypatch.delenv("GITLAB_TOKEN", raising=False)
        monkeypatch.setenv("GRAPHMEM_GITLAB_TOKEN", TOKEN)
        monkeypatch.setenv("GRAPHMEM_GITLAB__URL", server.url)
        monkeypatch.setenv("GRAPHMEM_GITLAB__TIMEOUT_SECONDS", "1")
        yield server


@pytest.fixture
def enriching(request: pytest.FixtureRequest, tmp_path: Path, gitlab: FakeGitLab) -> Iterator[Team]:
    """Alice and Bob, each with their daemon's enricher; Alice works in a checkout of
    acme/shop/backend; #34 is named only by Bob's own global memory."""
    with two_people(request, tmp_path) as team:
        team.shop = shop_checkout(tmp_path)
        team.bob.remember(BOBS_NOTE, scope="global")
        yield team


def test_what_bobs_daemon_finds_through_his_private_issue_stays_his(enriching: Team) -> None:
    enriching.bob.enrich(["acme/shop/backend#34"])
    enriching.bob.enrich()  # and what that found: its epic, the MR related to it

    led_to = [SHOP_EPIC, SHOP_MR, CAROLS]
    assert set(enriching.bob.store.get_entities(led_to)) == set(led_to)
    assert enriching.alice.store.get_entities(led_to) == {}
    assert (
        "Refunds without surprises" not in enriching.alice.get_context("&5", project=enriching.shop).markdown
    )


def test_alices_enrich_of_bobs_private_issue_reports_as_for_an_unknown_one(enriching: Team) -> None:
    assert enriching.alice.enrich(["#34"], project=enriching.shop).counts == {"fetched": 1}
    assert enriching.alice.enrich(["#35"], project=enriching.shop).counts == {"fetched": 1}  # no one's


def test_alices_enrich_leaves_bobs_private_issue_as_it_was(enriching: Team) -> None:
    before = stored(enriching, SHOP_ISSUE)

    enriching.alice.enrich(["#34"], project=enriching.shop)

    assert stored(enriching, SHOP_ISSUE) == before  # its name, project, owner, queue: his
    assert enriching.graph(enriching.alice).rows([SHOP_ISSUE]) == {}
    assert enriching.admin.get_entities([SHOP_EPIC]) == {}  # nothing of the answer was kept
    assert enriching.graph(enriching.bob).rows([SHOP_ISSUE])[SHOP_ISSUE].state is EnrichState.PENDING


def test_alices_failed_fetch_of_bobs_private_issue_reports_as_for_an_unknown_one(
    enriching: Team, gitlab: FakeGitLab
) -> None:
    gitlab.fail(404, route="issues/3")  # #34, and #35 no one named
    before = stored(enriching, SHOP_ISSUE)

    his = enriching.alice.enrich(["#34"], project=enriching.shop)
    unknown = enriching.alice.enrich(["#35"], project=enriching.shop)

    assert his.counts == unknown.counts == {"missing": 1}
    assert [p.replace("#34", "#N") for p in his.problems] == [
        p.replace("#35", "#N") for p in unknown.problems
    ]
    assert stored(enriching, SHOP_ISSUE) == before  # not marked missing for Bob


@contextmanager
def daemon_tools(who: MemoryService) -> Iterator[Tools]:
    """The MCP tools of ``who``'s daemon, serving their service as the daemon does."""
    assert who.coordinator is not None
    served = who.serving(who.coordinator)
    runtime = Runtime(served, log_hint="the test's log", resolve_project=lambda path: path, version="test")
    with Tools(build_mcp(runtime), runtime) as tools:
        yield tools


def test_enrich_entity_reports_alices_fetch_of_bobs_private_issue(enriching: Team) -> None:
    with daemon_tools(enriching.alice) as tools:
        answer = tools.ok("enrich_entity", ref="#34", project=enriching.shop)

    assert answer["outcome"] == "fetched" and answer["counts"] == {"fetched": 1}


# -- a row Alice is shown through her own memory, but Bob owns --------------------------------

ALICES_NOTE = "I review acme/shop/backend#34 on Fridays"


@pytest.fixture
def shown(enriching: Team) -> Team:
    """Alice's own global memory names #34 too: she is shown Bob's row, which stays his."""
    enriching.alice.remember(ALICES_NOTE, scope="global")
    assert enriching.graph(enriching.alice).rows([SHOP_ISSUE])  # shown to her
    assert stored(enriching, SHOP_ISSUE)[0][3] == enriching.bob.store.login_role().name
    return enriching


def test_alices_daemon_never_fetches_a_row_she_is_shown_but_bob_owns(shown: Team, gitlab: FakeGitLab) -> None:
    shown.alice.remember("Refunds wait on acme/shop/backend#35", scope="project", project=shown.shop)
    teams = target_key(EntityKind.ISSUE, "acme/shop/backend", 35)
    before = stored(shown, SHOP_ISSUE)

    due = {row.key for row in shown.graph(shown.alice).due(T0 + timedelta(days=3650), 50)}
    assert SHOP_ISSUE not in due and teams in due  # the team's row is hers to fetch
    assert shown.alice.enricher is not None
    shown.alice.enricher.run_due()

    assert gitlab.count("issues/34") == 0  # #34 never asked for with her token
    assert gitlab.count("issues/35") >= 1
    assert stored(shown, SHOP_ISSUE) == before


def test_bobs_daemon_fetches_his_row_alice_is_shown(shown: Team, gitlab: FakeGitLab) -> None:
    assert SHOP_ISSUE in {row.key for row in shown.graph(shown.bob).due(T0 + timedelta(days=3650), 50)}
    assert shown.bob.enricher is not None
    shown.bob.enricher.run_due()

    assert gitlab.count("issues/34") >= 1
    (row,) = stored(shown, SHOP_ISSUE)
    assert row[3] == shown.bob.store.login_role().name and row[4] == "ok" and row[7] is True


def test_a_403_to_alice_leaves_bobs_row_she_is_shown_as_it_was(shown: Team, gitlab: FakeGitLab) -> None:
    gitlab.fail(403, route="issues/3")
    before = stored(shown, SHOP_ISSUE)

    assert shown.alice.enrich(["#34"], project=shown.shop).counts == {"forbidden": 1}  # reported to her

    assert stored(shown, SHOP_ISSUE) == before  # not marked forbidden for Bob


def test_alices_answer_about_bobs_row_she_is_shown_stores_nothing(shown: Team) -> None:
    before = stored(shown, SHOP_ISSUE)

    assert shown.alice.enrich(["#34"], project=shown.shop).counts == {"fetched": 1}

    assert stored(shown, SHOP_ISSUE) == before  # no facts, no queue state, no title
    assert shown.admin.get_entities([SHOP_EPIC]) == {}  # nothing the answer names was kept


def test_alices_daemon_marks_no_attempt_on_bobs_row_she_is_shown(shown: Team) -> None:
    before = stored(shown, SHOP_ISSUE)

    shown.graph(shown.alice).mark(
        SHOP_ISSUE, Attempt(EnrichState.FORBIDDEN, "403", 1, T0 + timedelta(days=7), T0)
    )

    assert stored(shown, SHOP_ISSUE) == before


def test_alices_status_waits_only_for_what_her_daemon_fetches(shown: Team) -> None:
    shown.alice.remember("Refunds wait on acme/shop/backend#35", scope="project", project=shown.shop)

    status = shown.alice.gitlab_status()

    assert (status.pending, status.by_state) == (1, {"pending": 1})  # the team's #35, not Bob's #34
    assert "  waiting for enrichment: 1; by state: pending 1" in status_lines(status)  # graphmem status
    assert shown.bob.gitlab_status().pending == 2  # his #34 waits for his daemon, and the team's #35


def test_alices_status_counts_no_answer_bobs_daemon_stored_on_his_row(shown: Team) -> None:
    assert shown.bob.enricher is not None
    shown.bob.enricher.run_due()
    assert shown.graph(shown.alice).rows([SHOP_ISSUE])[SHOP_ISSUE].state is EnrichState.OK  # shown to her

    assert shown.alice.gitlab_status().by_state == {}
    assert shown.bob.gitlab_status().by_state["ok"] == 1  # his daemon fetched it


def test_memory_status_of_alices_daemon_counts_no_row_bob_owns(shown: Team) -> None:
    with daemon_tools(shown.alice) as tools:
        gitlab = tools.ok("memory_status")["gitlab"]

    assert (gitlab["pending"], gitlab["by_state"]) == (0, {})


def test_get_context_tells_alice_bobs_row_she_is_shown_waits_for_his_daemon(shown: Team) -> None:
    alices = shown.alice.get_context("#34", project=shown.shop).markdown
    bobs = shown.bob.get_context("acme/shop/backend#34").markdown

    assert "#34 is not enriched yet: another person's daemon enriches it, not yours." in alices
    assert "graphmem enrich" not in alices  # hers would ask GitLab and store nothing
    assert "it is queued (`graphmem enrich` fetches it now)" in bobs  # his daemon's to fetch


def test_alices_enrich_all_asks_gitlab_only_about_rows_her_daemon_fetches(
    shown: Team, gitlab: FakeGitLab
) -> None:
    shown.alice.remember("Refunds wait on acme/shop/backend#35", scope="project", project=shown.shop)
    before = stored(shown, SHOP_ISSUE)

    shown.alice.enrich(all=True)

    assert gitlab.count("issues/34") == 0  # Bob's, shown to her: never asked with her token
    assert gitlab.count("issues/35") >= 1  # the team's
    assert stored(shown, SHOP_ISSUE) == before


def test_alices_enrich_all_counts_no_fetch_of_bobs_row_she_is_shown(shown: Team) -> None:
    assert shown.alice.enrich(all=True).counts == {}  # `graphmem enrich --all`: nothing to enrich
    assert shown.bob.enrich(all=True).counts.get("fetched", 0) >= 1  # his daemon's to fetch
