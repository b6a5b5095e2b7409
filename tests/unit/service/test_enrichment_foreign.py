"""Refs of a repository on another forge (a GitHub checkout's ``#12``) are never asked of GitLab:
not by the background worker, not by ``enrich``, not when they were queued before; a GitLab
checkout's refs in the same store still are. The GitLab here answers every MR asked for, as a
GitLab holding a project of the same path would: anything it is asked is a wrong answer."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from graphmem.adapters.fake_gitlab_graph import FakeGitLabGraph
from graphmem.adapters.fake_store import FakeGraphStore
from graphmem.core.enrichment import EnrichState, target_key
from graphmem.core.gitlab import EpicData, GitLabProbe, IssueData, MergeRequestData
from graphmem.core.models import Entity, EntityKind
from graphmem.core.projects import ForeignRemote, foreign_remote
from graphmem.errors import ConfigError, GitLabNotFoundError
from graphmem.service.enrichment import Enricher, EnrichmentConfig

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
SHOP, API = "/src/shop", "/src/api"  # checkouts: github.com/acme/shop, gitlab.com/acme/api
REMOTES = {SHOP: "github.com/acme/shop", API: "gitlab.com/acme/api"}
GITHUB_MR = target_key(EntityKind.MERGE_REQUEST, "acme/shop", 12)
GITLAB_MR = target_key(EntityKind.MERGE_REQUEST, "acme/api", 12)
WHY = (
    "github.com/acme/shop is a GitHub repository, and graphmem enriches GitLab's merge requests, "
    "issues and epics only."
)


class SameNameGitLab:
    """A GitLab that answers every MR it is asked for, and records what it was asked."""

    url = "https://gitlab.com"

    def __init__(self) -> None:
        self.asked: list[tuple[str, int]] = []

    def probe(self) -> GitLabProbe:
        return GitLabProbe(self.url, "17.0.0", "alice")

    def merge_request(self, project: str, iid: int) -> MergeRequestData:
        self.asked.append((project, iid))
        return MergeRequestData(
            project=project, iid=iid, title=f"GitLab's {project}!{iid}", state="merged", draft=False,
            author=None, assignees=(), reviewers=(), labels=(), milestone=None, source_branch="x",
            target_branch="main", merged_at=T0, created_at=T0, updated_at=T0, description="",
            web_url="https://gitlab.com/x", changed_files=(), changed_files_total=0, closes=(),
        )  # fmt: skip

    def issue(self, project: str, iid: int) -> IssueData:
        self.asked.append((project, iid))
        raise GitLabNotFoundError(f"no issue {project}#{iid}")

    def epic(self, group: str, iid: int) -> EpicData:
        self.asked.append((group, iid))
        raise GitLabNotFoundError(f"no epic {group}&{iid}")

    def clear_cache(self) -> None:
        """Nothing cached."""


@pytest.fixture
def graph() -> Iterator[FakeGitLabGraph]:
    store = FakeGraphStore(dimension=8)
    yield FakeGitLabGraph(store)
    store.close()


def named(graph: FakeGitLabGraph, key: str, project: str) -> None:
    """The MR as a memory written in ``project`` names it."""
    graph.queue([Entity(key, EntityKind.MERGE_REQUEST, "!" + key.rpartition("!")[2], project)])


def enricher(graph: FakeGitLabGraph, client: SameNameGitLab | None, now: list[datetime]) -> Enricher:
    def remote(project: str) -> ForeignRemote | None:
        return foreign_remote(REMOTES.get(project))

    return Enricher(
        graph, client, EnrichmentConfig(token_set=client is not None), namespace=lambda _: None,
        clock=lambda: now[0], foreign=remote,
    )  # fmt: skip


def test_the_worker_asks_nothing_of_a_github_checkouts_ref_and_fetches_a_gitlab_ones(
    graph: FakeGitLabGraph,
) -> None:
    named(graph, GITHUB_MR, SHOP)
    named(graph, GITLAB_MR, API)
    gitlab = SameNameGitLab()
    worker = enricher(graph, gitlab, [T0])

    worker.run_due()

    assert gitlab.asked == [("acme/api", 12)]
    rows = graph.rows([GITHUB_MR, GITLAB_MR])
    assert rows[GITLAB_MR].state is EnrichState.OK
    assert (rows[GITHUB_MR].state, rows[GITHUB_MR].error) == (EnrichState.UNRESOLVABLE, WHY.rstrip("."))
    assert graph.merge_request(GITHUB_MR) is None  # no other project's facts on the GitHub ref
    assert GITHUB_MR not in {r.key for r in graph.due(T0 + timedelta(days=30), 10)}
    assert graph.waiting() == 0


def test_a_step_full_of_github_refs_does_not_starve_a_gitlab_one(graph: FakeGitLabGraph) -> None:
    for iid in range(1, 13):
        named(graph, target_key(EntityKind.MERGE_REQUEST, "acme/shop", iid), SHOP)
    named(graph, GITLAB_MR, API)
    gitlab = SameNameGitLab()
    worker = enricher(graph, gitlab, [T0])

    steps = [worker.run_due(limit=10) for _ in range(3)]

    assert gitlab.asked == [("acme/api", 12)]
    assert steps[-1] == 0  # nothing left to do: the GitHub refs are set aside, not due again


def test_a_github_ref_queued_before_is_not_fetched_again_and_keeps_what_was_stored(
    graph: FakeGitLabGraph,
) -> None:
    named(graph, GITHUB_MR, SHOP)
    now = [T0]
    older = Enricher(  # an older graphmem, which asked GitLab whatever the forge
        graph,
        SameNameGitLab(),
        EnrichmentConfig(token_set=True),
        namespace=lambda _: None,
        clock=lambda: now[0],
    )
    older.enrich([GITHUB_MR])
    before = graph.merge_request(GITHUB_MR)
    gitlab = SameNameGitLab()
    worker = enricher(graph, gitlab, now)
    now[0] = T0 + timedelta(days=2)  # past the TTL: due again

    tried = worker.run_due()

    assert (tried, gitlab.asked) == (1, [])
    assert graph.rows([GITHUB_MR])[GITHUB_MR].state is EnrichState.UNRESOLVABLE
    assert graph.merge_request(GITHUB_MR) == before is not None  # the store's data otherwise as it was
    assert worker.run_due() == 0


def test_enrich_of_a_github_ref_says_why_and_neither_asks_nor_queues_it(graph: FakeGitLabGraph) -> None:
    gitlab = SameNameGitLab()

    report = enricher(graph, gitlab, [T0]).enrich_refs(
        [Entity(GITHUB_MR, EntityKind.MERGE_REQUEST, "!12", SHOP)]
    )

    assert report.counts == {"foreign": 1}
    assert report.problems == [f"!12: {WHY}"]
    assert not report.failed  # an answer, not a fault: the command exits 0
    assert gitlab.asked == []
    assert graph.rows([GITHUB_MR]) == {}


def test_enrich_of_a_github_ref_says_why_even_without_gitlab_configured(graph: FakeGitLabGraph) -> None:
    queue = enricher(graph, None, [T0])

    report = queue.enrich_refs([Entity(GITHUB_MR, EntityKind.MERGE_REQUEST, "!12", SHOP)])

    assert (report.counts, report.problems) == ({"foreign": 1}, [f"!12: {WHY}"])
    with pytest.raises(ConfigError, match="GitLab is not configured"):  # a GitLab ref beside it needs GitLab
        queue.enrich_refs([
            Entity(GITHUB_MR, EntityKind.MERGE_REQUEST, "!12", SHOP),
            Entity(GITLAB_MR, EntityKind.MERGE_REQUEST, "!12", API),
        ])  # fmt: skip


def test_enrich_from_a_github_checkout_of_a_ref_stored_under_a_gitlab_one_asks_nothing(
    graph: FakeGitLabGraph,
) -> None:
    named(graph, GITHUB_MR, API)  # the store keeps it under another checkout: the one asking counts too
    gitlab = SameNameGitLab()

    report = enricher(graph, gitlab, [T0]).enrich_refs(
        [Entity(GITHUB_MR, EntityKind.MERGE_REQUEST, "!12", SHOP)]
    )

    assert (report.counts, gitlab.asked) == ({"foreign": 1}, [])


def test_enrich_of_everything_waiting_sets_github_refs_aside_and_fetches_the_rest(
    graph: FakeGitLabGraph,
) -> None:
    named(graph, GITHUB_MR, SHOP)
    named(graph, GITLAB_MR, API)
    gitlab = SameNameGitLab()

    report = enricher(graph, gitlab, [T0]).enrich(None)

    assert report.counts == {"foreign": 1, "fetched": 1}
    assert gitlab.asked == [("acme/api", 12)]
