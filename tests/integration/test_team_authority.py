"""Who may change what on a team's PostgreSQL store (docs/team.md, "Who changed what"): a person's
own global memory never hides the team's, every change in a memory's history names the person
(the role) who made it, and one person's agent sessions and claims are not another's to end.
Two people, each logged in as their own role, on one database."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner, Result
from support.postgres import PostgresServer
from support.stores import writer_role
from support.team import Team, two_writers

from graphmem.adapters.embedders import HashEmbedder
from graphmem.adapters.postgres_coordination import PgCoordinator
from graphmem.adapters.postgres_migrate import migrate
from graphmem.adapters.postgres_store import PostgresGraphStore
from graphmem.app import open_memory
from graphmem.cli import main
from graphmem.core.models import LinkKind, Status
from graphmem.errors import NotAllowedError
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings

pytestmark = pytest.mark.integration

DIMENSION = 256
PROJECT = "/src/shop"
DECISION = "Refunds are issued by the ledger service, never by the checkout"


@pytest.fixture
def team(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Team]:
    with two_writers(request, tmp_path, DIMENSION) as team:
        yield team


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


def test_an_export_of_a_persons_own_store_cannot_hide_its_project_memory_from_the_team(
    team: Team, tmp_path: Path
) -> None:
    own = open_memory(load_settings(data_dir=tmp_path / "bob-own"), embedder=HashEmbedder(DIMENSION))
    ours = own.remember(DECISION, category="decision", scope="project", project=PROJECT).memory.id
    mine = own.remember("I ask Carol before any refund", category="fact", scope="global").memory.id
    own.link(mine, ours, "supersedes")  # his own embedded store: his to do
    out = io.StringIO()
    own.export(out, project=None)
    own.close()

    summary = team.bob.import_text(out.getvalue(), name="bob.jsonl")

    assert (summary.memories_added, summary.links, summary.links_refused) == (2, 0, 1)
    for person in (team.alice, team.bob):
        shown = person.show(ours)
        assert (shown.memory.status, shown.memory.valid_to, shown.links) == (Status.ACTIVE, None, ())
        assert person.history(ours) == []
    assert team.bob.show(mine).links == ()


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
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only"):
            conn.execute("UPDATE memory_events SET person = %s WHERE person <> %s", ("bob", alice))

    people = [(e.id, e.person) for e in team.alice.history(decision)]

    assert people[0] == ("evt_00000000000000ff", team.role(team.bob_url))  # the database's, not his word
    assert people[1][1] == alice  # kept


# -- the history is append-only ------------------------------------------------------------------

REWRITES = {
    "delete": "DELETE FROM memory_events WHERE memory_id = %(m)s",
    "reword": "UPDATE memory_events SET reason = 'nothing happened' WHERE memory_id = %(m)s",
    "redate": "UPDATE memory_events SET at = at - interval '1 year' WHERE memory_id = %(m)s",
    "retell": "UPDATE memory_events SET actor = 'agent' WHERE memory_id = %(m)s",
    "reorder": "UPDATE memory_events SET seq = seq + 1000 WHERE memory_id = %(m)s",
    "mark undone": "UPDATE memory_events SET undone_by = id WHERE memory_id = %(m)s",
}


@pytest.mark.parametrize("rewrite", sorted(REWRITES))
def test_a_writer_cannot_delete_or_rewrite_the_history(team: Team, rewrite: str) -> None:
    decision = decided(team)
    team.alice.edit(decision, text=DECISION + ", within a day")
    team.bob.archive(decision)
    before = team.alice.history(decision)

    refused = pytest.raises(psycopg.errors.InsufficientPrivilege, match="memory_events is append-only")
    with psycopg.connect(team.bob_url, autocommit=True) as conn, refused:
        conn.execute(REWRITES[rewrite], {"m": decision})

    assert team.alice.history(decision) == before and len(before) == 2


def test_a_writer_granted_every_privilege_still_cannot_empty_the_history(team: Team) -> None:
    decision = decided(team)
    team.bob.archive(decision)
    bob = team.role(team.bob_url)
    with psycopg.connect(team.admin_url, autocommit=True) as conn:
        conn.execute(f"GRANT ALL ON memory_events, agent_overrides TO {bob}")

    with psycopg.connect(team.bob_url, autocommit=True) as conn:
        for table in ("memory_events", "agent_overrides"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match=f"{table} is append-only"):
                conn.execute(f"TRUNCATE {table}")

    assert [e.kind.value for e in team.alice.history(decision)] == ["status"]


def test_undo_and_delete_through_graphmem_still_write_the_history(team: Team) -> None:
    decision = decided(team)
    archived = team.bob.archive(decision)
    [event] = team.alice.history(archived.id)

    undo = team.alice.undo(event.id)
    team.bob.delete(decision)

    events = team.alice.history(decision)
    assert [(e.kind.value, e.person) for e in events] == [
        ("delete", team.role(team.bob_url)),
        ("undo", team.role(team.alice_url)),
        ("status", team.role(team.bob_url)),
    ]
    assert events[2].undone_by == undo.id  # the one change graphmem makes to an event


def test_an_undo_marks_only_the_event_it_undoes(team: Team) -> None:
    decision = decided(team)
    team.alice.edit(decision, text=DECISION + ", within a day")
    team.bob.archive(decision)
    edit, status = sorted(team.alice.history(decision), key=lambda e: e.kind.value)
    undo = team.alice.undo(status.id)

    refused = pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only")
    with psycopg.connect(team.alice_url, autocommit=True) as conn, refused:
        conn.execute("UPDATE memory_events SET undone_by = %s WHERE id = %s", (undo.id, edit.id))

    assert next(e for e in team.bob.history(decision) if e.id == edit.id).undone_by is None


def test_an_administrator_may_still_remove_history(team: Team) -> None:
    decision = decided(team)
    team.bob.archive(decision)

    with psycopg.connect(team.admin_url, autocommit=True) as conn:
        assert conn.execute("DELETE FROM memory_events WHERE memory_id = %s", (decision,)).rowcount == 1

    assert team.alice.history(decision) == []


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


@pytest.fixture
def cli(team: Team, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Result]:
    """``graphmem ARGS`` in this process as ``who`` ("alice" or "bob"), on that person's login."""
    urls = {"alice": team.alice_url, "bob": team.bob_url}
    runner = CliRunner()

    def run(who: str, *args: str) -> Result:
        def factory(data_dir: Path | None, *, check_model: bool = True) -> MemoryService:
            settings = load_settings(data_dir=data_dir, store={"url": urls[who]})
            return open_memory(settings, embedder=HashEmbedder(DIMENSION))

        monkeypatch.setattr(main, "SERVICE_FACTORY", factory)
        return runner.invoke(main.cli, ["--data-dir", str(tmp_path / f"{who}-cli"), *args])

    return run


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


def test_another_person_cannot_heartbeat_a_session_or_claim_in_it(
    team: Team, sessions: tuple[PgCoordinator, PgCoordinator]
) -> None:
    alice, bob = sessions
    hers = alice.start("opencode/build", PROJECT, "refund bug", owner="mcp")
    alice.claim(hers.id, "!12")
    refused = f"is {team.role(team.alice_url)}'s, not yours \\({team.role(team.bob_url)}\\)"

    with pytest.raises(NotAllowedError, match=f"{refused}: only they may keep it alive") as kept:
        bob.heartbeat(hers.id, task="something else")
    with pytest.raises(NotAllowedError, match=f"{refused}: only they may claim items in it") as claimed:
        bob.claim(hers.id, "!13")

    assert "graphmem session start AGENT" in str(kept.value) and "--force" not in str(kept.value)
    assert "claim '!13' with it" in str(claimed.value) and "--force" not in str(claimed.value)
    [live] = bob.active(PROJECT)
    assert (live.task, live.claims) == ("refund bug", ("!12",))  # nothing of the refused calls
    mine = bob.start("opencode/plan", PROJECT, owner="mcp")  # what to do instead
    assert bob.claim(mine.id, "!13").session == mine.id
    assert alice.heartbeat(hers.id).id == hers.id and alice.claim(hers.id, "!14").session == hers.id


def test_the_cli_refuses_a_heartbeat_in_anothers_session_with_one_line(
    team: Team, cli: Callable[..., Result]
) -> None:
    hers = team.alice.session_start("opencode/build", project=PROJECT, owner="mcp")  # on the clock

    refused = cli("bob", "session", "heartbeat", hers.id)
    claimed = cli("bob", "claim", hers.id, "!12")

    assert refused.exit_code == 4 and claimed.exit_code == 4
    assert refused.stderr.startswith(f"error: Session {hers.id} (opencode/build) is ")
    assert "Start a session of your own" in refused.stderr and "Traceback" not in refused.output
    assert len(refused.stderr.strip().splitlines()) == 1
    assert team.alice.active_sessions(project=PROJECT).claims == []


def test_everyone_on_the_team_reads_who_forced_what(
    team: Team, sessions: tuple[PgCoordinator, PgCoordinator]
) -> None:
    alice, bob = sessions
    hers = alice.start("opencode/build", PROJECT, owner="mcp")
    alice.claim(hers.id, "!12")
    bob.release(hers.id, "!12", owner="person", force=True)
    bob.end(hers.id, owner="person", force=True)

    read = team.alice.session_overrides()

    alice_role, bob_role = team.role(team.alice_url), team.role(team.bob_url)
    assert [(o.act, o.session, o.agent, o.item, o.holder, o.person) for o in read] == [
        ("end", hers.id, "opencode/build", None, alice_role, bob_role),
        ("release", hers.id, "opencode/build", "!12", alice_role, bob_role),
    ]
    assert team.bob.session_overrides(limit=1) == read[:1]


def test_graphmem_session_overrides_lists_them_and_as_json(
    team: Team, sessions: tuple[PgCoordinator, PgCoordinator], cli: Callable[..., Result]
) -> None:
    alice, bob = sessions
    hers = alice.start("opencode/build", PROJECT, owner="mcp")
    alice.claim(hers.id, "!12")
    bob.release(hers.id, "!12", owner="person", force=True)

    listed = cli("alice", "session", "overrides")
    as_json = json.loads(cli("alice", "session", "overrides", "--json").stdout)

    alice_role, bob_role = team.role(team.alice_url), team.role(team.bob_url)
    assert listed.exit_code == 0
    assert listed.stdout.endswith(
        f"UTC · {bob_role} released !12 of {hers.id} (opencode/build, {alice_role}'s)\n"
    )
    assert [(o["act"], o["item"], o["holder"], o["person"]) for o in as_json["overrides"]] == [
        ("release", "!12", alice_role, bob_role)
    ]


def test_a_writer_cannot_remove_or_rewrite_the_record_of_an_override(
    team: Team, sessions: tuple[PgCoordinator, PgCoordinator]
) -> None:
    alice, bob = sessions
    hers = alice.start("opencode/build", PROJECT, owner="mcp")
    bob.end(hers.id, owner="person", force=True)

    with psycopg.connect(team.bob_url, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="agent_overrides is append-only"):
            conn.execute("DELETE FROM agent_overrides")
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="agent_overrides is append-only"):
            conn.execute("UPDATE agent_overrides SET act = 'expired'")

    assert [(o.act, o.person) for o in team.alice.session_overrides()] == [("end", team.role(team.bob_url))]


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


def test_migrate_takes_a_store_at_schema_15_to_16_and_back_keeping_the_history(
    postgres_server: PostgresServer,
) -> None:
    url = postgres_server.new_database()
    migrate(url, target=15)
    bob_url = writer_role(url, f"bob_{url.rsplit('/', 1)[1]}")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO memory_events (id, memory_id, at, kind, actor, reason, before, after) "
            "VALUES ('evt_0000000000000001', 'mem_0000000000000001', now(), 'edit', 'user', 'typo', "
            "'{}', '{}')"
        )

    assert migrate(url, target=16).after == 16
    refused = pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only")
    with psycopg.connect(bob_url, autocommit=True) as conn, refused:
        conn.execute("DELETE FROM memory_events")
    assert migrate(url, target=15).after == 15
    with psycopg.connect(bob_url, autocommit=True) as conn:  # as schema 15 was: the hole is back
        assert conn.execute("SELECT reason FROM memory_events").fetchall() == [("typo",)]
        assert conn.execute("DELETE FROM memory_events").rowcount == 1
    assert migrate(url, target=16).after == 16
    postgres_server.drop_database(url)
