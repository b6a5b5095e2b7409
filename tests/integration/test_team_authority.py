"""Who may change what on a team's PostgreSQL store (docs/team.md, "Who changed what"): a person's
own global memory never hides the team's, every change in a memory's history names the person
(the role) who made it, and one person's agent sessions and claims are not another's to end.
Two people, each logged in as their own role, on one database."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from support.postgres import PostgresServer
from support.stores import postgres_url, writer_role

from graphmem.adapters.embedders import HashEmbedder
from graphmem.adapters.postgres_coordination import PgCoordinator
from graphmem.adapters.postgres_migrate import migrate
from graphmem.adapters.postgres_store import PostgresGraphStore
from graphmem.app import open_memory
from graphmem.core.models import LinkKind, Status
from graphmem.errors import NotAllowedError
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings

pytestmark = pytest.mark.integration

DIMENSION = 256
PROJECT = "/src/shop"
DECISION = "Refunds are issued by the ledger service, never by the checkout"


@dataclass
class Team:
    admin_url: str
    alice_url: str
    bob_url: str
    alice: MemoryService
    bob: MemoryService

    def role(self, url: str) -> str:
        return url.split("//")[1].split("@")[0]


@pytest.fixture
def team(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Team]:
    admin_url = postgres_url(request)
    PostgresGraphStore(admin_url, dimension=DIMENSION).close()  # the owner sizes the vector column
    database = admin_url.rsplit("/", 1)[1]  # roles are the cluster's: one pair per database
    alice_url = writer_role(admin_url, f"alice_{database}")
    bob_url = writer_role(admin_url, f"bob_{database}")

    def on(url: str, name: str) -> MemoryService:
        settings = load_settings(data_dir=tmp_path / name, store={"url": url})
        return open_memory(settings, embedder=HashEmbedder(DIMENSION))

    alice, bob = on(alice_url, "alice"), on(bob_url, "bob")
    yield Team(admin_url, alice_url, bob_url, alice, bob)
    alice.close()
    bob.close()


def decided(team: Team) -> str:
    return team.alice.remember(DECISION, category="decision", scope="project", project=PROJECT).memory.id


# -- a person's own global memory never hides the team's ---------------------------------------


def test_a_global_memory_cannot_supersede_the_teams_project_decision(team: Team) -> None:
    decision = decided(team)

    with pytest.raises(NotAllowedError, match=f"{decision} is the team's") as refused:
        team.bob.remember("Refunds go through checkout now", scope="global", supersedes=decision)

    assert "without --scope global" in str(refused.value)  # how to do it instead
    assert team.alice.show(decision).memory.status is Status.ACTIVE
    assert team.alice.history(decision) == []
    assert team.bob.list(project=None) == []  # nothing of the refused call was kept


def test_widening_the_teams_project_memory_is_refused_and_says_how_to_keep_a_copy(team: Team) -> None:
    decision = decided(team)

    with pytest.raises(NotAllowedError, match="graphmem remember --scope global --category decision"):
        team.bob.widen(decision)

    assert team.alice.show(decision).memory.status is Status.ACTIVE
    assert team.bob.list(project=None) == []


def test_linking_a_global_memory_as_superseding_the_teams_is_refused_and_changes_nothing(team: Team) -> None:
    decision = decided(team)
    mine = team.bob.remember("Refunds: ask Bob first", category="preference", scope="global").memory.id

    with pytest.raises(NotAllowedError, match=f"graphmem link {mine} {decision} --kind related"):
        team.bob.link(mine, decision, "supersedes")

    assert team.alice.show(decision).memory.status is Status.ACTIVE
    assert team.bob.show(decision).links == () and team.alice.history(decision) == []


def test_an_import_cannot_hide_the_teams_decision_behind_a_global_memory(team: Team) -> None:
    decision = decided(team)
    header = {"type": "header", "format": "graphmem-export", "version": 1, "project": None, "counts": {}}
    mine = {
        "type": "memory", "id": "mem_1111111111111111", "text": "Refunds go through checkout now",
        "category": "fact", "scope": "global", "status": "active", "created_at": "2026-01-01T00:00:00Z",
    }  # fmt: skip
    link = {"type": "link", "source": mine["id"], "target": decision, "kind": "supersedes"}

    summary = team.bob.import_text("\n".join(json.dumps(r) for r in (header, mine, link)), name="bob.jsonl")

    assert (summary.memories_added, summary.links, summary.links_refused) == (1, 0, 1)
    assert team.alice.show(decision).memory.status is Status.ACTIVE
    assert team.bob.show(decision).links == () and team.alice.history(decision) == []


def test_an_import_cannot_hide_its_new_team_memory_behind_a_global_one_stored_before(team: Team) -> None:
    mine = team.bob.remember("Refunds: ask Bob first", category="preference", scope="global").memory.id
    header = {"type": "header", "format": "graphmem-export", "version": 1, "project": None, "counts": {}}
    shared = {
        "type": "memory", "id": "mem_2222222222222222", "text": "Refunds go through the ledger",
        "category": "fact", "scope": "project", "project": PROJECT, "status": "active",
        "created_at": "2026-01-01T00:00:00Z",
    }  # fmt: skip
    link = {"type": "link", "source": mine, "target": shared["id"], "kind": "supersedes"}

    summary = team.bob.import_text("\n".join(json.dumps(r) for r in (header, shared, link)), name="bob.jsonl")

    assert (summary.memories_added, summary.links, summary.links_refused) == (1, 0, 1)
    assert team.alice.show(shared["id"]).memory.status is Status.ACTIVE


def test_a_teammates_project_memory_still_supersedes_the_teams_and_everyone_sees_both(team: Team) -> None:
    decision = decided(team)

    newer = team.bob.remember(
        "Refunds are issued by the payments service",
        category="decision",
        project=PROJECT,
        supersedes=decision,
    ).memory

    shown = team.alice.show(decision)
    assert shown.memory.status is Status.SUPERSEDED
    assert [(x.source, x.kind) for x in shown.links] == [(newer.id, LinkKind.SUPERSEDES)]
    [event] = team.alice.history(decision)
    assert (event.kind.value, event.person) == ("supersede", team.role(team.bob_url))


def test_a_global_memory_does_not_replace_a_team_wide_one_on_its_own(team: Team) -> None:
    shared = team.alice.remember("Prefer yarn over npm", category="preference", scope="global").memory.id
    with psycopg.connect(team.admin_url, autocommit=True) as conn:  # an administrator makes it team-wide
        conn.execute("UPDATE memories SET owner = NULL WHERE id = %s", (shared,))

    mine = team.bob.remember("Prefer pnpm over npm", category="preference", scope="global")

    assert mine.created and mine.superseded == ()
    assert team.alice.show(shared).memory.status is Status.ACTIVE


# -- who made each change ------------------------------------------------------------------------


def test_each_change_in_a_memorys_history_names_the_person_who_made_it(team: Team) -> None:
    decision = decided(team)
    team.alice.edit(decision, text=DECISION + ", within a day")
    team.bob.archive(decision)

    events = team.alice.history(decision)

    assert [(e.kind.value, e.person) for e in events] == [
        ("status", team.role(team.bob_url)),
        ("edit", team.role(team.alice_url)),
    ]
    assert team.bob.history(decision) == events  # the team's history: the same for everyone


def test_a_deleted_memorys_history_says_who_deleted_it(team: Team) -> None:
    decision = decided(team)

    team.bob.delete(decision)

    [event] = team.alice.history(decision)
    assert (event.kind.value, event.actor, event.person) == ("delete", "user", team.role(team.bob_url))


def test_a_writer_cannot_write_another_person_into_the_history(team: Team) -> None:
    decision = decided(team)
    team.alice.archive(decision)
    alice = team.role(team.alice_url)
    with psycopg.connect(team.bob_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO memory_events (id, memory_id, at, kind, actor, reason, before, after, person) "
            "VALUES ('evt_00000000000000ff', %s, now(), 'status', 'user', '', '{}', '{}', %s)",
            (decision, alice),
        )
        conn.execute("UPDATE memory_events SET person = %s WHERE person <> %s", ("bob", alice))

    people = [(e.id, e.person) for e in team.alice.history(decision)]

    assert people[0] == ("evt_00000000000000ff", team.role(team.bob_url))  # the database's, not his word
    assert people[1][1] == alice  # kept


# -- one person's sessions and claims ------------------------------------------------------------


@pytest.fixture
def sessions(team: Team) -> Iterator[tuple[PgCoordinator, PgCoordinator]]:
    stores = [PostgresGraphStore(url, dimension=DIMENSION) for url in (team.alice_url, team.bob_url)]
    clock = lambda: datetime(2026, 1, 1, 12, tzinfo=UTC)  # noqa: E731
    yield (
        PgCoordinator(stores[0], clock, timedelta(minutes=5)),
        PgCoordinator(stores[1], clock, timedelta(minutes=5)),
    )
    for store in stores:
        store.close()


def test_another_person_cannot_end_a_session_or_release_its_claims(
    team: Team, sessions: tuple[PgCoordinator, PgCoordinator]
) -> None:
    alice, bob = sessions
    hers = alice.start("opencode/build", PROJECT, owner="mcp")
    alice.claim(hers.id, "!12")

    with pytest.raises(NotAllowedError, match=f"is {team.role(team.alice_url)}'s, not yours"):
        bob.release(hers.id, "!12", owner="mcp")
    with pytest.raises(NotAllowedError, match=f"graphmem session end {hers.id} --force"):
        bob.end(hers.id, owner="mcp")

    assert [c.item for c in bob.claims(PROJECT)] == ["!12"]
    assert alice.release(hers.id, "!12", owner="mcp") is True  # her own client may


def test_a_forced_release_or_end_is_recorded_with_who_forced_it(
    team: Team, sessions: tuple[PgCoordinator, PgCoordinator]
) -> None:
    alice, bob = sessions
    hers = alice.start("opencode/build", PROJECT, owner="mcp")
    alice.claim(hers.id, "!12")

    assert bob.release(hers.id, "!12", owner="person", force=True) is True
    bob.end(hers.id, owner="person", force=True)

    with psycopg.connect(team.admin_url) as conn:
        rows = conn.execute("SELECT act, session, item, holder, person FROM agent_overrides ORDER BY seq")
        alice_role, bob_role = team.role(team.alice_url), team.role(team.bob_url)
        assert rows.fetchall() == [
            ("release", hers.id, "!12", alice_role, bob_role),
            ("end", hers.id, None, alice_role, bob_role),
        ]


# -- the migration ---------------------------------------------------------------------------------


def test_migrate_takes_a_store_at_schema_12_to_13_and_back_keeping_every_row(
    postgres_server: PostgresServer,
) -> None:
    url = postgres_server.new_database()
    migrate(url, target=12)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO memory_events (id, memory_id, at, kind, actor, reason, before, after) "
            "VALUES ('evt_0000000000000001', 'mem_0000000000000001', now(), 'edit', 'user', 'typo', "
            "'{}', '{}')"
        )
        conn.execute(
            "INSERT INTO agent_sessions (id, agent, started_at, last_seen, expires_at) "
            "VALUES ('ses_000000000001', 'old-agent', now(), now(), now() + interval '1 hour')"
        )

    assert migrate(url, target=13).after == 13
    with psycopg.connect(url, autocommit=True) as conn:
        event = conn.execute("SELECT reason, person FROM memory_events").fetchall()
        session = conn.execute("SELECT agent, owner, person FROM agent_sessions").fetchall()
        assert event == [("typo", None)]  # who made it is not known from before
        assert session == [("old-agent", None, None)]  # anyone's to end, as before
        conn.execute(
            "INSERT INTO memory_events (id, memory_id, at, kind, actor, reason, before, after) "
            "VALUES ('evt_0000000000000002', 'mem_0000000000000001', now(), 'edit', 'user', '', '{}', '{}')"
        )
        assert conn.execute(
            "SELECT person FROM memory_events WHERE id = 'evt_0000000000000002'"
        ).fetchone() == ("postgres",)

    assert migrate(url, target=12).after == 12
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM memory_events").fetchone() == (2,)
        assert conn.execute("SELECT to_regclass('agent_overrides')").fetchone() == (None,)
    assert migrate(url, target=13).after == 13
