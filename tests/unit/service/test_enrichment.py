"""The enrichment queue (``service/enrichment.py``) on the in-memory GitLab graph, against a
scripted GitLab client: what it stores, what it asks again, and how it meets GitLab's faults
(401 pauses, 404 marks missing, 429 waits, 5xx backs off) without touching what is stored."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from graphmem.adapters.fake_gitlab_graph import FakeGitLabGraph
from graphmem.adapters.fake_store import FakeGraphStore
from graphmem.core.enrichment import EnrichState, target_key
from graphmem.core.gitlab import EpicData, GitLabProbe, IssueData, MergeRequestData
from graphmem.core.models import Entity, EntityKind
from graphmem.errors import (
    ConfigError,
    GitLabAuthError,
    GitLabNotFoundError,
    GitLabRateLimitedError,
    GitLabUnavailableError,
)
from graphmem.service.enrichment import Enricher, EnrichmentConfig

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
PROJECT = "group/proj"
MR_KEY = target_key(EntityKind.MERGE_REQUEST, PROJECT, 12)
Answer = MergeRequestData | Exception


def merge_request(title: str = "Retry payments with back-off", updated: datetime = T0) -> MergeRequestData:
    return MergeRequestData(
        project=PROJECT, iid=12, title=title, state="opened", draft=False, author=None, assignees=(),
        reviewers=(), labels=("payments",), milestone=None, source_branch="retry", target_branch="main",
        merged_at=None, created_at=T0, updated_at=updated, description="", web_url="https://gitlab.example.com/x",
        changed_files=(), changed_files_total=0, closes=(),
    )  # fmt: skip


class ScriptedGitLab:
    """A GitLab client answering merge requests from a script, one answer per call."""

    url = "https://gitlab.example.com"

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.asked: list[tuple[str, int]] = []

    def probe(self) -> GitLabProbe:
        return GitLabProbe(self.url, "17.0.0", "alice")

    def merge_request(self, project: str, iid: int) -> MergeRequestData:
        self.asked.append((project, iid))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def issue(self, project: str, iid: int) -> IssueData:
        raise GitLabNotFoundError(f"no issue {project}#{iid}")

    def epic(self, group: str, iid: int) -> EpicData:
        raise GitLabNotFoundError(f"no epic {group}&{iid}")

    def clear_cache(self) -> None:
        """Nothing cached."""


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def graph() -> Iterator[FakeGitLabGraph]:
    store = FakeGraphStore(dimension=8)
    store.upsert_entities([Entity(MR_KEY, EntityKind.MERGE_REQUEST, f"{PROJECT}!12")])
    yield FakeGitLabGraph(store)
    store.close()


def enricher(
    graph: FakeGitLabGraph, client: ScriptedGitLab | None, clock: Clock
) -> tuple[Enricher, list[float]]:
    slept: list[float] = []
    made = Enricher(
        graph, client, EnrichmentConfig(token_set=client is not None), namespace=lambda _: PROJECT,
        clock=clock, sleep=slept.append,
    )  # fmt: skip
    return made, slept


def state(graph: FakeGitLabGraph) -> EnrichState:
    return graph.rows([MR_KEY])[MR_KEY].state


def test_a_named_merge_request_is_fetched_and_stored(graph: FakeGitLabGraph, clock: Clock) -> None:
    gitlab = ScriptedGitLab(merge_request())
    queue, _ = enricher(graph, gitlab, clock)

    report = queue.enrich([MR_KEY])

    assert report.counts == {"fetched": 1}
    assert gitlab.asked == [(PROJECT, 12)]
    assert state(graph) is EnrichState.OK


def test_within_the_ttl_gitlab_is_not_asked_again_unless_refreshed(
    graph: FakeGitLabGraph, clock: Clock
) -> None:
    gitlab = ScriptedGitLab(merge_request(), merge_request(title="Retry payments, capped"))
    queue, _ = enricher(graph, gitlab, clock)
    queue.enrich([MR_KEY])
    clock.now += timedelta(hours=1)

    again = queue.enrich([MR_KEY])
    refreshed = queue.enrich([MR_KEY], refresh=True)

    assert again.counts == {"fresh": 1}
    assert refreshed.counts == {"fetched": 1}
    assert len(gitlab.asked) == 2


def test_a_missing_merge_request_is_marked_and_named_in_the_problems(
    graph: FakeGitLabGraph, clock: Clock
) -> None:
    queue, _ = enricher(graph, ScriptedGitLab(GitLabNotFoundError("404 Not Found")), clock)

    report = queue.enrich([MR_KEY])

    assert report.counts == {"missing": 1}
    assert report.problems == [f"{PROJECT}!12: 404 Not Found"]
    assert state(graph) is EnrichState.MISSING


def test_a_rejected_token_pauses_the_queue_and_says_how_to_fix_it(
    graph: FakeGitLabGraph, clock: Clock
) -> None:
    gitlab = ScriptedGitLab(GitLabAuthError("401 Unauthorized"))
    queue, _ = enricher(graph, gitlab, clock)

    report = queue.enrich([MR_KEY])
    clock.now += timedelta(hours=1)
    background = queue.run_due()

    assert report.counts == {"deferred": 1}
    assert report.paused is not None and "rejected the token (401)" in report.paused
    assert background == 0
    assert len(gitlab.asked) == 1  # no retry storm
    assert state(graph) is EnrichState.PENDING


def test_a_short_rate_limit_is_waited_out_once(graph: FakeGitLabGraph, clock: Clock) -> None:
    gitlab = ScriptedGitLab(GitLabRateLimitedError("429", retry_after_s=5), merge_request())
    queue, slept = enricher(graph, gitlab, clock)

    report = queue.enrich([MR_KEY])

    assert slept == [5.0]
    assert report.counts == {"fetched": 1}


def test_an_unavailable_gitlab_backs_off_and_keeps_what_was_stored(
    graph: FakeGitLabGraph, clock: Clock
) -> None:
    gitlab = ScriptedGitLab(merge_request(), GitLabUnavailableError("502 Bad Gateway"), merge_request())
    queue, _ = enricher(graph, gitlab, clock)
    queue.enrich([MR_KEY])
    clock.now += timedelta(days=2)  # past the TTL: due again

    failed = queue.run_due()
    right_after = queue.run_due()
    clock.now += timedelta(days=1)  # past the back-off
    later = queue.run_due()

    assert (failed, right_after, later) == (1, 0, 1)
    assert state(graph) is EnrichState.OK  # the 502 never unset what was fetched


def test_a_key_the_graph_does_not_show_is_fetched_and_nothing_of_it_stored(
    graph: FakeGitLabGraph, clock: Clock
) -> None:
    hidden = target_key(EntityKind.MERGE_REQUEST, PROJECT, 13)  # another's private MR, on a team's store
    gitlab = ScriptedGitLab(merge_request(), GitLabNotFoundError("404 Not Found"))
    queue, _ = enricher(graph, gitlab, clock)

    fetched = queue.enrich([hidden])
    missing = queue.enrich([hidden], named={hidden: Entity(hidden, EntityKind.MERGE_REQUEST, "!13")})

    assert (fetched.counts, missing.counts) == ({"fetched": 1}, {"missing": 1})
    assert missing.problems == ["!13: 404 Not Found"]  # as for a row it shows
    assert graph.rows([hidden]) == {} and graph.entities([hidden]) == {}


def test_refs_asked_for_are_queued_then_fetched(graph: FakeGitLabGraph, clock: Clock) -> None:
    named = target_key(EntityKind.MERGE_REQUEST, PROJECT, 13)
    queue, _ = enricher(graph, ScriptedGitLab(merge_request()), clock)

    report = queue.enrich_refs([Entity(named, EntityKind.MERGE_REQUEST, "!13", "/src/proj")])

    assert report.counts == {"fetched": 1}
    assert graph.rows([named])[named].state is EnrichState.OK


def test_without_a_client_enrich_says_how_to_configure_gitlab(graph: FakeGitLabGraph, clock: Clock) -> None:
    queue, _ = enricher(graph, None, clock)

    with pytest.raises(ConfigError, match="token"):
        queue.enrich([MR_KEY])
    assert queue.run_due() == 0
