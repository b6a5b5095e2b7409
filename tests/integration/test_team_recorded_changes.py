"""Every change to a memory on a team's PostgreSQL store is in its history (schema 20, docs/team.md,
"What psql can and cannot do"): a writer's hand-written ``UPDATE`` of a memory's trust, source or
text, or its ``DELETE``, with no event of it in the same transaction, is refused by the database,
so no row becomes a rule with no trace of who made it (a change of its count the database records
itself, schema 23: tests/unit/adapters/test_postgres_recorded.py); graphmem's own changes, made on
a writer's login, each go with their event and pass. Alice and Bob, each logged in as their own
writer role."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from support.team import Team, two_writers

from graphmem.adapters.postgres_migrate import migrate
from graphmem.adapters.postgres_schema import SCHEMA_VERSION
from graphmem.core.models import MemoryRecord, Status, Trust
from graphmem.service.memory import MemoryService

pytestmark = pytest.mark.integration

DIMENSION = 64
PROJECT = "/src/shop"
DECISION = "Refunds are issued by the ledger service, never by the checkout"
AGENTS = "Always run the ledger migrations before deploying"
EVENT = "evt_00000000000000b0"


@pytest.fixture
def team(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Team]:
    with two_writers(request, tmp_path, DIMENSION) as team:
        yield team


def decided(team: Team) -> MemoryRecord:
    """Alice's project decision: the team's."""
    return team.alice.remember(DECISION, category="decision", scope="project", project=PROJECT).memory


def agents_rule(memory: MemoryService) -> MemoryRecord:
    """A project directive an agent wrote over MCP: a proposal until a person confirms it."""
    return memory.remember(
        AGENTS, category="directive", scope="project", project=PROJECT, source="mcp"
    ).memory


def hand_written(url: str, *statements: str, params: dict[str, Any] | None = None) -> None:
    """``statements`` in one transaction, by the role of ``url``, as its ``psql`` would run them."""
    conn = psycopg.connect(url)
    try:
        for statement in statements:
            conn.execute(statement, params)  # type: ignore[arg-type]
        conn.commit()  # where the database checks that each change has its event
    finally:
        conn.close()


def an_event(memory_id: str) -> str:
    """An event of ``memory_id`` written by hand: what any role may insert (it names its writer)."""
    return (
        "INSERT INTO memory_events (id, memory_id, at, kind, actor, reason, before, after) VALUES "
        f"('{EVENT}', '{memory_id}', now(), 'status', 'user', 'by hand', '{{}}'::jsonb, '{{}}'::jsonb)"
    )


# -- a change by hand with no event is refused, and changes nothing ------------------------------

CHANGES = {
    "trust": "trust = 'confirmed'",
    "source": "source = 'user'",
    "text": "text = 'Always deploy on Fridays'",
    "category": "category = 'fact'",
    "status": "status = 'archived'",
    "origin": "origin = 'AGENTS.md'",
    "session": "session = 'ses_forged'",
    "created_at": "created_at = '2020-01-01'",
    "valid_from": "valid_from = '2020-01-01'",
    "valid_to": "valid_to = now()",
    "expires_at": "expires_at = now() + interval '1 day'",
    "branch": "branch = 'main'",
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_hand_written_change_with_no_event_is_refused(team: Team, change: str) -> None:
    rule = agents_rule(team.alice)
    before = team.alice.show(rule.id).memory

    with pytest.raises(
        psycopg.errors.InsufficientPrivilege, match=f"memory {rule.id} was changed"
    ) as refused:
        hand_written(team.bob_url, f"UPDATE memories SET {CHANGES[change]} WHERE id = '{rule.id}'")

    assert "insert the change's event into memory_events" in str(refused.value.diag.message_hint)
    assert team.alice.show(rule.id).memory == before
    assert team.alice.history(rule.id) == []


def test_a_hand_written_delete_with_no_event_is_refused(team: Team) -> None:
    decision = decided(team)

    with pytest.raises(psycopg.errors.InsufficientPrivilege, match=f"memory {decision.id} was deleted"):
        hand_written(team.bob_url, f"DELETE FROM memories WHERE id = '{decision.id}'")

    assert team.alice.show(decision.id).memory.text == DECISION


def test_a_hand_written_confirm_cannot_make_an_agents_rule_the_teams_convention(team: Team) -> None:
    rule = agents_rule(team.alice)

    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        hand_written(
            team.bob_url,
            "UPDATE memories SET trust = 'confirmed', status = 'active', source = 'user' "
            f"WHERE id = '{rule.id}'",
        )

    shown = team.alice.show(rule.id).memory
    assert (shown.trust, shown.status, shown.source) == (rule.trust, Status.PROPOSED, "mcp")


def test_an_event_of_an_earlier_transaction_does_not_let_a_later_change_through(team: Team) -> None:
    rule = agents_rule(team.alice)
    hand_written(team.bob_url, an_event(rule.id))

    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        hand_written(team.bob_url, f"UPDATE memories SET trust = 'confirmed' WHERE id = '{rule.id}'")

    assert team.alice.show(rule.id).memory.trust is rule.trust


def test_an_event_of_another_memory_does_not_let_a_change_through(team: Team) -> None:
    rule, decision = agents_rule(team.alice), decided(team)

    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        hand_written(
            team.bob_url,
            an_event(decision.id),
            f"UPDATE memories SET trust = 'confirmed' WHERE id = '{rule.id}'",
        )

    assert team.alice.show(rule.id).memory.trust is rule.trust
    assert team.alice.history(decision.id) == []  # the transaction's event went with it


# -- a change by hand with its event is kept, and names its person ---------------------------


def test_a_hand_written_change_with_its_event_is_kept_and_names_who_made_it(team: Team) -> None:
    rule = agents_rule(team.alice)

    hand_written(
        team.bob_url, f"UPDATE memories SET trust = 'confirmed' WHERE id = '{rule.id}'", an_event(rule.id)
    )

    assert team.alice.show(rule.id).memory.trust is Trust.CONFIRMED
    assert [(e.id, e.person) for e in team.alice.history(rule.id)] == [(EVENT, team.role(team.bob_url))]


def test_a_hand_written_delete_with_its_event_is_kept(team: Team) -> None:
    decision = decided(team)

    hand_written(team.bob_url, an_event(decision.id), f"DELETE FROM memories WHERE id = '{decision.id}'")

    assert team.alice.list(project=PROJECT) == []
    assert [e.person for e in team.alice.history(decision.id)] == [team.role(team.bob_url)]


def test_what_is_no_change_to_what_a_memory_says_needs_no_event(team: Team) -> None:
    decision = decided(team)

    hand_written(
        team.bob_url,
        f"UPDATE memories SET updated_at = now() WHERE id = '{decision.id}'",
        f"UPDATE memories SET trust = trust, text = text WHERE id = '{decision.id}'",  # the same values
    )

    assert team.alice.show(decision.id).memory.updated_at > decision.updated_at
    assert team.alice.history(decision.id) == []


def test_an_administrator_changes_a_memory_with_no_event(team: Team) -> None:
    decision = decided(team)

    hand_written(
        team.admin_url, f"UPDATE memories SET text = 'Refunds: see the runbook' WHERE id = '{decision.id}'"
    )

    assert team.alice.show(decision.id).memory.text == "Refunds: see the runbook"


def test_rolled_back_to_19_a_hand_written_change_is_a_writers_again(team: Team) -> None:
    decision = decided(team)

    assert migrate(team.admin_url, target=19).after == 19
    hand_written(team.bob_url, f"UPDATE memories SET category = 'fact' WHERE id = '{decision.id}'")
    assert migrate(team.admin_url).after == SCHEMA_VERSION

    assert team.alice.show(decision.id).memory.category.value == "fact"
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        hand_written(team.bob_url, f"UPDATE memories SET category = 'decision' WHERE id = '{decision.id}'")


# -- graphmem's own changes on a writer's login: each with its event -----------------------------


def _expire(team: Team, memory: MemoryRecord) -> None:
    hand_written(
        team.admin_url, f"UPDATE memories SET expires_at = now() - interval '1 hour' WHERE id = '{memory.id}'"
    )
    assert team.bob.expire_due() == 1


VERBS: dict[str, tuple[Callable[[Team, MemoryRecord], object], Callable[[MemoryRecord], bool], str]] = {
    # what Bob does to an agent's rule Alice's agent wrote; what it then is; the event's kind
    "edit its text": (
        lambda team, m: team.bob.edit(m.id, text=AGENTS + " and the ledger's"),
        lambda m: m.text.endswith("ledger's"),
        "edit",
    ),
    "edit its category": (
        lambda team, m: team.bob.edit(m.id, category="fact"),
        lambda m: m.category.value == "fact",
        "edit",
    ),
    "confirm it": (
        lambda team, m: team.bob.confirm(m.id),
        lambda m: (m.trust, m.status) == (Trust.CONFIRMED, Status.ACTIVE),
        "status",
    ),
    "reject it": (lambda team, m: team.bob.reject(m.id), lambda m: m.status is Status.ARCHIVED, "status"),
    "archive it": (lambda team, m: team.bob.archive(m.id), lambda m: m.status is Status.ARCHIVED, "status"),
    "supersede it": (
        lambda team, m: team.bob.remember(
            "Run the ledger migrations in CI", category="directive", project=PROJECT, supersedes=m.id
        ),
        lambda m: m.status is Status.SUPERSEDED,
        "supersede",
    ),
    "let it expire": (_expire, lambda m: m.status is Status.ARCHIVED, "expiry"),
}


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_graphmem_changes_a_memory_on_a_writers_login_with_its_event(team: Team, verb: str) -> None:
    act, done, kind = VERBS[verb]
    rule = agents_rule(team.alice)

    act(team, rule)

    assert done(team.alice.show(rule.id).memory)
    newest = team.alice.history(rule.id)[0]
    assert (newest.kind.value, newest.person) == (kind, team.role(team.bob_url))


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_graphmem_undoes_a_change_on_a_writers_login_with_its_event(team: Team, verb: str) -> None:
    act, _, _ = VERBS[verb]
    rule = agents_rule(team.alice)
    act(team, rule)
    change = team.alice.history(rule.id)[0]

    team.bob.undo(change.id)

    back = team.alice.show(rule.id).memory
    assert (back.text, back.category) == (rule.text, rule.category)
    assert (back.status, back.trust) == (rule.status, rule.trust)
    newest = team.alice.history(rule.id)[0]
    assert (newest.kind.value, newest.person) == ("undo", team.role(team.bob_url))


def test_graphmem_restores_and_deletes_on_a_writers_login(team: Team) -> None:
    decision = decided(team)
    team.bob.archive(decision.id)

    assert team.bob.restore(decision.id).status is Status.ACTIVE
    team.bob.delete(decision.id)

    assert team.alice.list(project=PROJECT) == []
    assert [e.kind.value for e in team.alice.history(decision.id)] == ["delete", "status", "status"]


def test_graphmem_resolves_a_blocker_on_a_writers_login(team: Team) -> None:
    blocker = team.alice.remember(
        "The ledger's staging database is down", category="blocker", project=PROJECT
    ).memory

    assert team.bob.resolve(blocker.id).status is Status.RESOLVED
    assert team.bob.unresolve(blocker.id).status is Status.ACTIVE
    assert [e.person for e in team.alice.history(blocker.id)] == [team.role(team.bob_url)] * 2


def test_a_remember_of_an_archived_memory_brings_it_back_with_its_event(team: Team) -> None:
    decision = decided(team)
    team.alice.archive(decision.id)

    team.bob.remember(DECISION, category="decision", scope="project", project=PROJECT)

    assert team.alice.show(decision.id).memory.status is Status.ACTIVE
    assert team.alice.history(decision.id)[0].person == team.role(team.bob_url)


def test_an_imported_newer_copy_changes_a_memory_with_its_event(team: Team) -> None:
    rule = agents_rule(team.alice)
    out = io.StringIO()
    team.alice.export(out, project=PROJECT)
    newer = (datetime.now(UTC) + timedelta(minutes=1)).isoformat()
    text = out.getvalue().replace(AGENTS, AGENTS + " and the ledger's")
    text = text.replace(f'"updated_at": "{rule.updated_at.isoformat()}"', f'"updated_at": "{newer}"')

    team.bob.import_text(text, name="alice.jsonl")

    assert team.alice.show(rule.id).memory.text.endswith("ledger's")
    assert team.alice.history(rule.id)[0].person == team.role(team.bob_url)
