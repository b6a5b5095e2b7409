"""What a person's own psql session may do to the team's agent sessions and claims (docs/team.md,
"What psql can and cannot do"): the database holds graphmem's rules (schema 17). A writer role
changes only its own sessions and claims, and deletes another person's only once expired, or with
an override recorded in the same transaction; graphmem's own verbs work as before. Two people,
each logged in as their own role, on one database."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from support.postgres import PostgresServer
from support.stores import writer_role
from support.team import Team, two_writers

from graphmem.adapters.postgres_coordination import PgCoordinator
from graphmem.adapters.postgres_migrate import migrate
from graphmem.adapters.postgres_store import PostgresGraphStore
from graphmem.core.coordination import AgentSession
from graphmem.errors import ClaimConflictError

pytestmark = pytest.mark.integration

DIMENSION = 256
PROJECT = "/src/shop"
TTL = timedelta(minutes=5)
# Clocks of the daemons, against the server's own: a session started at LIVE has not expired
# by the server's clock, one started LONG_AGO has, whatever day the tests run.
LIVE = datetime(2100, 1, 1, 12, tzinfo=UTC)
LONG_AGO = datetime(2000, 1, 1, 12, tzinfo=UTC)
REFUSED = "row-level security"


@pytest.fixture
def team(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Team]:
    with two_writers(request, tmp_path, DIMENSION) as team:
        yield team


@pytest.fixture
def stores(team: Team) -> Iterator[tuple[PostgresGraphStore, PostgresGraphStore]]:
    """Alice's and Bob's stores below their services (their daemons' coordinators sit on them)."""
    alice, bob = (PostgresGraphStore(url, dimension=DIMENSION) for url in (team.alice_url, team.bob_url))
    yield alice, bob
    alice.close()
    bob.close()


@pytest.fixture
def alice(stores: tuple[PostgresGraphStore, PostgresGraphStore]) -> PgCoordinator:
    return PgCoordinator(stores[0], lambda: LIVE, TTL)


@pytest.fixture
def bob(stores: tuple[PostgresGraphStore, PostgresGraphStore]) -> PgCoordinator:
    return PgCoordinator(stores[1], lambda: LIVE, TTL)


@pytest.fixture
def hers(alice: PgCoordinator) -> AgentSession:
    """Alice's live session, holding !12."""
    session = alice.start("opencode/build", PROJECT, "refund bug", owner="mcp")
    alice.claim(session.id, "!12")
    return session


def rows(team: Team) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Every session and claim, as an administrator reads them."""
    with psycopg.connect(team.admin_url) as conn:
        sessions = conn.execute("SELECT id, task, expires_at, person FROM agent_sessions ORDER BY id")
        claims = conn.execute("SELECT item, session, expires_at FROM agent_claims ORDER BY item")
        return sessions.fetchall(), claims.fetchall()


def override(conn: psycopg.Connection[Any], act: str, session: str, item: str | None, holder: str) -> None:
    conn.execute(
        "INSERT INTO agent_overrides (at, act, session, agent, item, holder) "
        "VALUES (now(), %s, %s, 'opencode/build', %s, %s)",
        (act, session, item, holder),
    )


# -- what a writer's psql session cannot do to another person's ---------------------------------


def test_a_writer_cannot_end_another_persons_live_session_with_a_delete(
    team: Team, bob: PgCoordinator, hers: AgentSession
) -> None:
    mine = bob.start("opencode/plan", PROJECT, owner="mcp")

    with psycopg.connect(team.bob_url, autocommit=True) as conn:
        deleted = conn.execute("DELETE FROM agent_sessions").rowcount

    assert deleted == 1  # his own, and only his
    [live] = bob.active(PROJECT)
    assert (live.id, live.claims) == (hers.id, ("!12",))
    assert mine.id not in {s.id for s in bob.active()}


def test_a_writer_cannot_release_another_persons_live_claim_with_a_delete(
    team: Team, bob: PgCoordinator, hers: AgentSession
) -> None:
    with psycopg.connect(team.bob_url, autocommit=True) as conn:
        deleted = conn.execute("DELETE FROM agent_claims WHERE item = '!12'").rowcount

    assert deleted == 0
    assert [(c.item, c.session) for c in bob.claims(PROJECT)] == [("!12", hers.id)]


CHANGES = {
    "take over a claim": "UPDATE agent_claims SET session = %(mine)s, agent = 'plan' WHERE item = '!12'",
    "let a claim lapse": "UPDATE agent_claims SET expires_at = '2000-01-01' WHERE item = '!12'",
    "disown a claim": "UPDATE agent_claims SET person = current_user WHERE item = '!12'",
    "let a session lapse": "UPDATE agent_sessions SET expires_at = '2000-01-01' WHERE id = %(hers)s",
    "retell a session's task": "UPDATE agent_sessions SET task = 'nothing' WHERE id = %(hers)s",
    "take a session": "UPDATE agent_sessions SET person = current_user WHERE id = %(hers)s",
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_writer_cannot_change_another_persons_session_or_claim(
    team: Team, bob: PgCoordinator, hers: AgentSession, change: str
) -> None:
    mine = bob.start("opencode/plan", PROJECT, owner="mcp")
    before = rows(team)

    refused = pytest.raises(psycopg.errors.InsufficientPrivilege, match=REFUSED)
    with psycopg.connect(team.bob_url, autocommit=True) as conn, refused:
        conn.execute(CHANGES[change], {"mine": mine.id, "hers": hers.id})

    assert rows(team) == before


def test_a_writer_cannot_claim_in_another_persons_session_with_an_insert(
    team: Team, bob: PgCoordinator, hers: AgentSession
) -> None:
    refused = pytest.raises(psycopg.errors.InsufficientPrivilege, match=REFUSED)
    with psycopg.connect(team.bob_url, autocommit=True) as conn, refused:
        conn.execute(
            "INSERT INTO agent_claims (project_key, item, project, session, agent, claimed_at, expires_at) "
            "VALUES (%s, '!13', %s, %s, 'opencode/build', now(), 'infinity')",
            (PROJECT, PROJECT, hers.id),
        )

    assert [c.item for c in bob.claims(PROJECT)] == ["!12"]


def test_a_writer_granted_every_privilege_still_cannot_empty_the_sessions(
    team: Team, hers: AgentSession
) -> None:
    bob = team.role(team.bob_url)
    with psycopg.connect(team.admin_url, autocommit=True) as conn:
        conn.execute(f"GRANT ALL ON agent_sessions, agent_claims TO {bob}")
    before = rows(team)

    with psycopg.connect(team.bob_url, autocommit=True) as conn:
        for table in ("agent_claims", "agent_sessions CASCADE"):
            with pytest.raises(
                psycopg.errors.InsufficientPrivilege, match="only an administrator may truncate"
            ):
                conn.execute(f"TRUNCATE {table}")

    assert rows(team) == before


# -- an override, recorded in the same transaction, is what frees another's ------------------------


def test_a_writer_may_end_another_persons_session_in_the_transaction_that_records_the_override(
    team: Team, bob: PgCoordinator, hers: AgentSession
) -> None:
    alice_role, bob_role = team.role(team.alice_url), team.role(team.bob_url)

    with psycopg.connect(team.bob_url) as conn, conn.transaction():
        override(conn, "end", hers.id, None, alice_role)
        ended = conn.execute("DELETE FROM agent_sessions WHERE id = %s", (hers.id,)).rowcount

    assert ended == 1 and bob.active() == [] and bob.claims() == []
    assert [(o.act, o.session, o.holder, o.person) for o in bob.overrides()] == [
        ("end", hers.id, alice_role, bob_role)
    ]


def test_an_override_recorded_in_an_earlier_transaction_frees_nothing(
    team: Team, bob: PgCoordinator, hers: AgentSession
) -> None:
    alice_role = team.role(team.alice_url)
    with psycopg.connect(team.bob_url, autocommit=True) as conn:
        override(conn, "end", hers.id, None, alice_role)
        override(conn, "release", hers.id, "!12", alice_role)

        assert conn.execute("DELETE FROM agent_claims").rowcount == 0
        assert conn.execute("DELETE FROM agent_sessions").rowcount == 0

    [live] = bob.active(PROJECT)
    assert (live.id, live.claims) == (hers.id, ("!12",))


@pytest.mark.parametrize(
    ("act", "item", "holder"),
    [
        ("release", "!13", "alice"),  # another item's
        ("end", None, "alice"),  # an end frees no claim of a session that stays
        ("release", "!12", "nobody"),  # a record that does not say whose it was
    ],
)
def test_only_an_override_of_that_claim_naming_its_person_releases_it(
    team: Team, bob: PgCoordinator, hers: AgentSession, act: str, item: str | None, holder: str
) -> None:
    named = team.role(team.alice_url) if holder == "alice" else holder

    with psycopg.connect(team.bob_url) as conn, conn.transaction():
        override(conn, act, hers.id, item, named)
        released = conn.execute("DELETE FROM agent_claims WHERE item = '!12'").rowcount

    assert released == 0
    assert [c.item for c in bob.claims(PROJECT)] == ["!12"]


def test_an_administrator_may_still_remove_any_session(
    team: Team, bob: PgCoordinator, hers: AgentSession
) -> None:
    with psycopg.connect(team.admin_url, autocommit=True) as conn:
        assert conn.execute("DELETE FROM agent_sessions").rowcount == 1

    assert bob.active() == [] and bob.claims() == []


# -- graphmem's own verbs, on live sessions, under the database's rules -----------------------------


def test_graphmems_forced_release_and_end_of_a_live_session_go_through_and_are_recorded(
    team: Team, alice: PgCoordinator, bob: PgCoordinator, hers: AgentSession
) -> None:
    assert bob.release(hers.id, "!12", owner="person", force=True) is True
    assert bob.end(hers.id, owner="person", force=True).id == hers.id

    assert alice.active() == [] and alice.claims() == []
    alice_role, bob_role = team.role(team.alice_url), team.role(team.bob_url)
    assert [(o.act, o.item, o.holder, o.person) for o in alice.overrides()] == [
        ("end", None, alice_role, bob_role),
        ("release", "!12", alice_role, bob_role),
    ]


def test_a_forced_release_of_an_item_the_session_does_not_hold_records_nothing(
    bob: PgCoordinator, hers: AgentSession
) -> None:
    assert bob.release(hers.id, "!99", owner="person", force=True) is False

    assert bob.overrides() == []
    assert [c.item for c in bob.claims(PROJECT)] == ["!12"]


def test_a_persons_own_sessions_and_claims_work_as_before(alice: PgCoordinator, bob: PgCoordinator) -> None:
    mine = alice.start("opencode/build", PROJECT, "refund bug", owner="mcp")
    first = alice.claim(mine.id, "!12")
    renewed = alice.claim(mine.id, "!12", ttl=timedelta(hours=1))
    kept = alice.heartbeat(mine.id, task="refund bug, tests")

    assert (renewed.claimed_at, renewed.expires_at) == (first.claimed_at, LIVE + timedelta(hours=1))
    assert (kept.task, kept.claims) == ("refund bug, tests", ("!12",))
    assert alice.release(mine.id, "!12", owner="mcp") is True
    assert alice.end(mine.id, owner="mcp").id == mine.id
    assert bob.active() == [] and bob.overrides() == []


def test_claiming_an_item_another_person_holds_is_a_conflict_naming_the_holder(
    bob: PgCoordinator, hers: AgentSession
) -> None:
    mine = bob.start("opencode/plan", PROJECT, owner="mcp")

    with pytest.raises(ClaimConflictError, match=f"claimed by opencode/build \\(session {hers.id}\\)"):
        bob.claim(mine.id, "!12")

    assert [(c.item, c.session) for c in bob.claims(PROJECT)] == [("!12", hers.id)]


def test_every_daemon_still_removes_another_persons_expired_session_and_its_claims(
    team: Team, stores: tuple[PostgresGraphStore, PostgresGraphStore], bob: PgCoordinator
) -> None:
    gone = PgCoordinator(stores[0], lambda: LONG_AGO, TTL)
    lapsed = gone.start("opencode/build", PROJECT, owner="mcp")
    gone.claim(lapsed.id, "!12")

    assert bob.active() == []
    assert rows(team) == ([], [])


def test_another_persons_expired_claim_in_a_live_session_goes_to_whoever_claims_it(
    team: Team,
    stores: tuple[PostgresGraphStore, PostgresGraphStore],
    alice: PgCoordinator,
    bob: PgCoordinator,
) -> None:
    session = alice.start("opencode/build", PROJECT, owner="mcp")
    PgCoordinator(stores[0], lambda: LONG_AGO, TTL).claim(session.id, "!12")  # its lease long over
    mine = bob.start("opencode/plan", PROJECT, owner="mcp")

    assert bob.claim(mine.id, "!12").session == mine.id
    assert {s.id for s in bob.active(PROJECT)} == {session.id, mine.id}  # hers lives on


# -- the migration ---------------------------------------------------------------------------------


def test_migrate_takes_a_store_at_schema_16_to_17_and_back_keeping_every_row(
    postgres_server: PostgresServer,
) -> None:
    url = postgres_server.new_database()
    migrate(url, target=12)
    with psycopg.connect(url, autocommit=True) as conn:  # a session from before schema 13: no person
        conn.execute(
            "INSERT INTO agent_sessions (id, agent, started_at, last_seen, expires_at) "
            "VALUES ('ses_000000000002', 'old-agent', now(), now(), 'infinity')"
        )
        conn.execute(
            "INSERT INTO agent_claims (project_key, item, session, agent, claimed_at, expires_at) "
            "VALUES ('', '!13', 'ses_000000000002', 'old-agent', now(), 'infinity')"
        )
    migrate(url, target=16)
    database = url.rsplit("/", 1)[1]
    alice, bob_url = f"alice_{database}", writer_role(url, f"bob_{database}")
    with psycopg.connect(url, autocommit=True) as conn:  # an administrator writes whose it is
        conn.execute(
            "INSERT INTO agent_sessions (id, agent, started_at, last_seen, expires_at, person) "
            "VALUES ('ses_000000000001', 'opencode/build', now(), now(), 'infinity', %s)",
            (alice,),
        )
        conn.execute(
            "INSERT INTO agent_claims (project_key, item, session, agent, claimed_at, expires_at) "
            "VALUES ('', '!12', 'ses_000000000001', 'opencode/build', now(), 'infinity')"
        )
        conn.execute(
            "INSERT INTO agent_overrides (at, act, session, agent, holder, person) "
            "VALUES (now(), 'end', 'ses_000000000009', 'gone', %s, 'carol')",
            (alice,),
        )

    assert migrate(url, target=17).after == 17
    with psycopg.connect(url, autocommit=True) as conn:
        claims = conn.execute("SELECT item, person FROM agent_claims ORDER BY item").fetchall()
        assert claims == [("!12", alice), ("!13", None)]  # its session's person; from before 13, anyone's
        assert conn.execute("SELECT act, xact FROM agent_overrides").fetchall() == [("end", None)]
    with psycopg.connect(bob_url, autocommit=True) as conn:
        assert conn.execute("DELETE FROM agent_claims").rowcount == 1  # !13, of the session from before 13
        assert conn.execute("DELETE FROM agent_sessions").rowcount == 1  # that session

    assert migrate(url, target=16).after == 16
    with psycopg.connect(bob_url, autocommit=True) as conn:  # as schema 16 was: the hole is back
        assert conn.execute("SELECT count(*) FROM agent_overrides").fetchone() == (1,)
        assert conn.execute("SELECT item, session FROM agent_claims").fetchall() == [
            ("!12", "ses_000000000001")
        ]
        assert conn.execute("DELETE FROM agent_sessions").rowcount == 1
    assert migrate(url, target=17).after == 17
    postgres_server.drop_database(url)
