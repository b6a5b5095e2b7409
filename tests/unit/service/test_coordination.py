"""Agent sessions and claims: leases that expire without heartbeats, kept by the daemon or in a
team's PostgreSQL store (the same rules, each test run on both)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from support.stores import postgres_url

from graphmem.adapters.postgres_coordination import PgCoordinator
from graphmem.adapters.postgres_store import PostgresGraphStore
from graphmem.core.coordination import AgentSession, Coordination, new_session_id
from graphmem.errors import ConflictError, InvalidInputError, NotAllowedError, NotFoundError
from graphmem.service.coordination import Coordinator


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, 12, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(params=["memory", "postgres"])
def coordinator(request: pytest.FixtureRequest, clock: Clock) -> Iterator[Coordination]:
    """The daemon's own leases, and a team's in PostgreSQL (``adapters/postgres_coordination.py``)."""
    if request.param == "memory":
        yield Coordinator(clock, timedelta(seconds=60))
        return
    store = PostgresGraphStore(postgres_url(request), dimension=8)
    yield PgCoordinator(store, clock, timedelta(seconds=60))
    store.close()


def test_two_daemons_on_one_store_see_each_others_sessions_and_claims(
    request: pytest.FixtureRequest, clock: Clock
) -> None:
    url = postgres_url(request)
    stores = [PostgresGraphStore(url, dimension=8) for _ in range(2)]
    try:
        one, two = (PgCoordinator(store, clock, timedelta(seconds=60)) for store in stores)
        mine = one.start("alice-agent", "/p")
        theirs = two.start("bob-agent", "/p")
        one.claim(mine.id, "!12")
        assert {s.id for s in two.active("/p")} == {mine.id, theirs.id}
        with pytest.raises(ConflictError, match="alice-agent"):
            two.claim(theirs.id, "!12")
        one.end(mine.id)
        assert two.claim(theirs.id, "!12").agent == "bob-agent"
    finally:
        for store in stores:
            store.close()


def test_a_started_session_is_active_in_its_project_only(coordinator: Coordination) -> None:
    mine = coordinator.start("opencode/build", "/p/one", "refund bug")
    coordinator.start("other", "/p/two")

    assert [s.id for s in coordinator.active("/p/one")] == [mine.id]
    assert coordinator.active("/p/one")[0].task == "refund bug"
    assert len(coordinator.active()) == 2


def test_a_sessions_id_is_new_each_time_in_one_format_on_both_stores(coordinator: Coordination) -> None:
    ids = [coordinator.start("a", "/p").id for _ in range(3)]

    assert all(re.fullmatch(r"ses_[0-9a-f]{12}", i) for i in ids) and len(set(ids)) == 3
    assert re.fullmatch(r"ses_[0-9a-f]{12}", new_session_id())


def test_sessions_expire_without_heartbeat_and_live_on_with_it(
    coordinator: Coordination, clock: Clock
) -> None:
    kept = coordinator.start("a", "/p")
    lost = coordinator.start("b", "/p")
    clock.advance(45)
    coordinator.heartbeat(kept.id)
    clock.advance(45)

    assert [s.id for s in coordinator.active("/p")] == [kept.id]
    with pytest.raises(NotFoundError, match="session_start again"):
        coordinator.heartbeat(lost.id)


def test_a_claim_is_exclusive_and_names_its_holder(coordinator: Coordination) -> None:
    first = coordinator.start("alice-agent", "/p")
    second = coordinator.start("bob-agent", "/p")
    coordinator.claim(first.id, "!123")

    with pytest.raises(ConflictError, match="alice-agent"):
        coordinator.claim(second.id, "!123")
    assert coordinator.claim(first.id, "!123").session == first.id  # renewing is fine


def test_claims_are_per_project(coordinator: Coordination) -> None:
    one = coordinator.start("a", "/p/one")
    two = coordinator.start("b", "/p/two")
    coordinator.claim(one.id, "src/app.py")

    assert coordinator.claim(two.id, "src/app.py").project == "/p/two"


def test_a_claim_expires_with_its_session_and_frees_the_item(coordinator: Coordination, clock: Clock) -> None:
    holder = coordinator.start("a", "/p")
    waiting = coordinator.start("b", "/p")
    coordinator.claim(holder.id, "#45")
    clock.advance(61)
    waiting = coordinator.start("b", "/p")

    assert coordinator.claim(waiting.id, "#45").agent == "b"


def test_release_and_end_free_claims(coordinator: Coordination) -> None:
    session = coordinator.start("a", "/p")
    other = coordinator.start("b", "/p")
    coordinator.claim(session.id, "!1")
    coordinator.claim(session.id, "!2")

    assert coordinator.release(session.id, "!1") is True
    assert coordinator.release(other.id, "!2") is False  # not its claim
    ended = coordinator.end(session.id)
    assert ended.claims == ("!2",)
    assert coordinator.claims("/p") == []
    assert coordinator.claim(other.id, "!2").session == other.id


def test_heartbeat_lists_the_session_claims(coordinator: Coordination) -> None:
    session = coordinator.start("a", "/p")
    coordinator.claim(session.id, "src/x.py")

    assert coordinator.heartbeat(session.id, task="now testing").claims == ("src/x.py",)


_TOKEN = "glpat-" + "Zk3vQ8wR2mT6yB9nC4xL"


def test_a_task_keeps_no_secret_when_started_or_changed(coordinator: Coordination) -> None:
    started = coordinator.start("a", "/p", f"mirror with {_TOKEN}")
    kept = coordinator.heartbeat(started.id, task="my password for the staging admin is hunter2-Prod")

    assert started.task == "mirror with [REDACTED:gitlab-token]"
    assert kept.task == "my password for the staging admin is [REDACTED:password]"
    assert [s.task for s in coordinator.active("/p")] == [kept.task]
    assert coordinator.end(started.id).task == kept.task


def test_a_session_read_back_with_a_secret_in_its_task_shows_it_redacted(clock: Clock) -> None:
    # A row another daemon wrote before tasks were redacted.
    row = AgentSession("ses_1", "a", "/p", f"mirror with {_TOKEN}", clock.now, clock.now, clock.now)

    assert row.view()["task"] == "mirror with [REDACTED:gitlab-token]"


def test_a_task_is_stored_redacted_in_postgresql(request: pytest.FixtureRequest, clock: Clock) -> None:
    store = PostgresGraphStore(postgres_url(request), dimension=8)
    try:
        coordinator = PgCoordinator(store, clock, timedelta(seconds=60))
        session = coordinator.start("a", "/p", f"mirror with {_TOKEN}")
        coordinator.heartbeat(coordinator.start("b", "/p").id, task=f"then {_TOKEN}")

        stored = [str(row[0]) for row in store.db.rows("SELECT task FROM agent_sessions ORDER BY task")]
        assert stored == ["mirror with [REDACTED:gitlab-token]", "then [REDACTED:gitlab-token]"]
        assert session.task == stored[0]
    finally:
        store.close()


@pytest.mark.parametrize(
    ("agent", "item", "ttl"),
    [("", "x", None), ("a", "  ", None), ("a", "x" * 201, None), ("a", "x", timedelta(days=2))],
)
def test_bad_input_is_refused(
    coordinator: Coordination, agent: str, item: str, ttl: timedelta | None
) -> None:
    with pytest.raises(InvalidInputError):
        session = coordinator.start(agent or "", "/p")
        coordinator.claim(session.id, item, ttl)


def test_only_the_owner_ends_a_session_or_releases_its_claims_unless_forced(clock: Clock) -> None:
    coordinator = Coordinator(clock, timedelta(seconds=60))
    mine = coordinator.start("opencode/build", "/p", owner="mcp:aaaaaaaaaaaa")
    coordinator.claim(mine.id, "!12")

    with pytest.raises(NotAllowedError, match="started by another client"):
        coordinator.release(mine.id, "!12", owner="mcp:bbbbbbbbbbbb")
    with pytest.raises(NotAllowedError, match=f"graphmem session end {mine.id} --force"):
        coordinator.end(mine.id, owner="person")
    assert [c.item for c in coordinator.claims("/p")] == ["!12"]

    assert coordinator.release(mine.id, "!12", owner="person", force=True) is True
    assert coordinator.end(mine.id, owner="mcp:aaaaaaaaaaaa").id == mine.id


def test_a_forced_end_or_release_is_listed_newest_first_and_nothing_else(coordinator: Coordination) -> None:
    agents = coordinator.start("opencode/build", "/p", owner="mcp:aaaaaaaaaaaa")
    own = coordinator.start("ci/nightly", "/p", owner="person")
    coordinator.claim(agents.id, "!12")
    coordinator.claim(own.id, "!13")
    coordinator.release(own.id, "!13", owner="person")  # its own: no override
    coordinator.release(agents.id, "!99", owner="person", force=True)  # held no such claim: nothing forced

    coordinator.release(agents.id, "!12", owner="person", force=True)
    coordinator.end(agents.id, owner="person", force=True)

    listed = [(o.act, o.session, o.agent, o.item) for o in coordinator.overrides()]
    assert listed == [
        ("end", agents.id, "opencode/build", None),
        ("release", agents.id, "opencode/build", "!12"),
    ]
    assert [o.act for o in coordinator.overrides(limit=1)] == ["end"]
