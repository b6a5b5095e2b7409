"""A team's role's change of a memory's count (``reinforced``) by hand is in its history (schema 23,
``postgres_recorded.py``): the database writes the ``reinforce`` event, with the count before and
after and the role as its person; graphmem's own repeat, which writes its event, is recorded
once. Alice and Bob, each logged in as their own writer role; Bob's ``psql`` is a connection of
his own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from support.team import Team, two_writers

from graphmem.adapters.postgres_migrate import migrate
from graphmem.adapters.postgres_recorded import COUNT_RECORDED_23, RECORDED_REASON
from graphmem.adapters.postgres_schema import SCHEMA_VERSION
from graphmem.core.events import USER
from graphmem.core.models import MemoryRecord

DIMENSION = 8
PROJECT = "/src/shop"
DECISION = "Refunds are issued by the ledger service, never by the checkout"
EVENT = "evt_00000000000000c0"


@pytest.fixture
def team(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Team]:
    with two_writers(request, tmp_path, DIMENSION) as team:
        yield team


def decided(team: Team) -> MemoryRecord:
    """Alice's project decision: the team's."""
    return team.alice.remember(DECISION, category="decision", scope="project", project=PROJECT).memory


def hand_written(url: str, *statements: str) -> None:
    """``statements`` in one transaction, by the role of ``url``, as its ``psql`` would run them."""
    conn = psycopg.connect(url)
    try:
        for statement in statements:
            conn.execute(statement)  # type: ignore[arg-type]
        conn.commit()  # where the database records each change of a count
    finally:
        conn.close()


def counts(team: Team, memory_id: str) -> list[tuple[str, object, object, str | None]]:
    """Each event of the memory as Alice reads it, newest first: its kind, count before and after,
    and person."""
    return [
        (e.kind.value, e.before.get("reinforced"), e.after.get("reinforced"), e.person)
        for e in team.alice.history(memory_id)
    ]


# -- a change of the count by hand is recorded ----------------------------------------------------


def test_a_hand_written_change_of_the_count_is_a_reinforce_event_of_its_role(team: Team) -> None:
    decision = decided(team)

    hand_written(team.bob_url, f"UPDATE memories SET reinforced = 1000 WHERE id = '{decision.id}'")

    assert team.alice.show(decision.id).memory.reinforced == 1000
    bob = team.role(team.bob_url)
    assert counts(team, decision.id) == [("reinforce", 0, 1000, bob)]
    event = team.alice.history(decision.id)[0]
    assert (event.actor, event.reason) == (USER, RECORDED_REASON)


def test_each_change_of_the_count_in_one_transaction_is_an_event_of_its_own(team: Team) -> None:
    decision = decided(team)
    change = f"UPDATE memories SET reinforced = reinforced + 1 WHERE id = '{decision.id}'"

    hand_written(team.bob_url, change, change)

    bob = team.role(team.bob_url)
    assert counts(team, decision.id) == [("reinforce", 1, 2, bob), ("reinforce", 0, 1, bob)]


def test_a_count_changed_back_and_again_in_one_transaction_is_three_events(team: Team) -> None:
    decision = decided(team)

    hand_written(
        team.bob_url,
        *(f"UPDATE memories SET reinforced = {n} WHERE id = '{decision.id}'" for n in (7, 0, 7)),
    )

    bob = team.role(team.bob_url)
    assert counts(team, decision.id) == [
        ("reinforce", 0, 7, bob),
        ("reinforce", 7, 0, bob),
        ("reinforce", 0, 7, bob),
    ]


def an_event(memory_id: str, kind: str, count: int) -> str:
    """An event of ``memory_id`` a role writes by hand, saying the count became ``count``."""
    return (
        "INSERT INTO memory_events (id, memory_id, at, kind, actor, reason, before, after) VALUES "
        f"('{EVENT}', '{memory_id}', now(), '{kind}', 'user', 'by hand', "
        f"""'{{"reinforced": 0}}', '{{"reinforced": {count}}}')"""
    )


def test_a_change_of_the_count_that_its_event_records_is_not_recorded_again(team: Team) -> None:
    decision = decided(team)

    hand_written(
        team.bob_url,
        an_event(decision.id, "reinforce", 7),
        f"UPDATE memories SET reinforced = 7 WHERE id = '{decision.id}'",
    )

    assert [e.id for e in team.alice.history(decision.id)] == [EVENT]


def test_an_event_of_a_kind_graphmem_does_not_read_does_not_record_the_count(team: Team) -> None:
    decision = decided(team)

    hand_written(
        team.bob_url,
        an_event(decision.id, "note", 7),  # left out of every read
        f"UPDATE memories SET reinforced = 7 WHERE id = '{decision.id}'",
    )

    assert counts(team, decision.id) == [("reinforce", 0, 7, team.role(team.bob_url))]


def test_the_databases_record_of_the_count_is_no_record_of_another_change(team: Team) -> None:
    decision = decided(team)

    with pytest.raises(psycopg.errors.InsufficientPrivilege, match=f"memory {decision.id} was changed"):
        hand_written(
            team.bob_url,
            f"UPDATE memories SET reinforced = 7 WHERE id = '{decision.id}'",
            f"UPDATE memories SET trust = 'low' WHERE id = '{decision.id}'",
        )

    kept = team.alice.show(decision.id).memory
    assert (kept.reinforced, kept.trust) == (decision.reinforced, decision.trust)
    assert team.alice.history(decision.id) == []


def test_a_hand_written_change_of_a_private_memorys_count_is_its_owners_alone(team: Team) -> None:
    his = team.bob.remember("I review every ledger change twice", category="preference", scope="global")

    hand_written(team.bob_url, f"UPDATE memories SET reinforced = 3 WHERE id = '{his.memory.id}'")

    assert [e.after for e in team.bob.history(his.memory.id)] == [{"reinforced": 3}]
    with psycopg.connect(team.alice_url) as conn:
        assert conn.execute("SELECT count(*) FROM memory_events").fetchone() == (0,)


def test_graphmem_undoes_a_change_of_the_count_made_by_hand(team: Team) -> None:
    decision = decided(team)
    hand_written(team.bob_url, f"UPDATE memories SET reinforced = 1000 WHERE id = '{decision.id}'")

    team.alice.undo(team.alice.history(decision.id)[0].id)

    assert team.alice.show(decision.id).memory.reinforced == 0
    assert [kind for kind, *_ in counts(team, decision.id)] == ["undo", "reinforce"]


def test_an_administrators_change_of_the_count_is_held_by_none_of_it(team: Team) -> None:
    decision = decided(team)

    hand_written(team.admin_url, f"UPDATE memories SET reinforced = 5 WHERE id = '{decision.id}'")

    assert team.alice.show(decision.id).memory.reinforced == 5
    assert team.alice.history(decision.id) == []


# -- graphmem's own changes of the count are recorded once -----------------------------------------


def test_graphmems_repeat_on_a_writers_login_is_one_event(team: Team) -> None:
    decision = decided(team)

    team.bob.remember(DECISION, category="decision", scope="project", project=PROJECT)

    assert counts(team, decision.id) == [("reinforce", 0, 1, team.role(team.bob_url))]
    assert team.alice.history(decision.id)[0].reason != RECORDED_REASON


def test_graphmems_undo_of_a_repeat_on_a_writers_login_is_one_event(team: Team) -> None:
    decision = decided(team)
    team.bob.remember(DECISION, category="decision", scope="project", project=PROJECT)

    team.bob.undo(team.alice.history(decision.id)[0].id)

    bob = team.role(team.bob_url)
    assert counts(team, decision.id) == [("undo", 1, 0, bob), ("reinforce", 0, 1, bob)]


# -- the migration ---------------------------------------------------------------------------------


def test_a_store_at_22_keeps_its_history_and_records_the_count_once_migrated(team: Team) -> None:
    decision = decided(team)
    team.bob.remember(DECISION, category="decision", scope="project", project=PROJECT)  # a repeat
    assert migrate(team.admin_url, target=SCHEMA_VERSION - 1).after == SCHEMA_VERSION - 1
    hand_written(team.bob_url, f"UPDATE memories SET reinforced = 9 WHERE id = '{decision.id}'")
    with pytest.raises(psycopg.errors.InsufficientPrivilege):  # schema 20's check, whole
        hand_written(team.bob_url, f"UPDATE memories SET trust = 'low' WHERE id = '{decision.id}'")
    at_22 = team.alice.history(decision.id)

    assert migrate(team.admin_url).after == SCHEMA_VERSION
    hand_written(team.bob_url, f"UPDATE memories SET reinforced = 10 WHERE id = '{decision.id}'")

    bob = team.role(team.bob_url)
    assert counts(team, decision.id) == [("reinforce", 9, 10, bob), ("reinforce", 0, 1, bob)]
    assert team.alice.history(decision.id)[1:] == at_22
    assert team.alice.show(decision.id).memory.reinforced == 10


def recorded_by(url: str) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    """The triggers on ``memories`` that check changes are recorded, and the index of events by
    their transaction, which they read."""
    with psycopg.connect(url) as conn:
        triggers = conn.execute(
            "SELECT tgname FROM pg_trigger WHERE tgrelid = 'memories'::regclass "
            "AND tgname LIKE 'graphmem_%_recorded' ORDER BY tgname"
        ).fetchall()
        indexes = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE tablename = 'memory_events' AND indexdef LIKE '%(xact)'"
        ).fetchall()
    return triggers, indexes


def test_the_migration_applied_again_leaves_one_of_each_and_one_record(team: Team) -> None:
    decision = decided(team)

    with psycopg.connect(team.admin_url, autocommit=True) as conn:
        conn.execute(COUNT_RECORDED_23)  # type: ignore[arg-type]
    hand_written(team.bob_url, f"UPDATE memories SET reinforced = 4 WHERE id = '{decision.id}'")

    triggers, indexes = recorded_by(team.admin_url)
    assert triggers == [("graphmem_change_recorded",), ("graphmem_removal_recorded",)]
    assert len(indexes) == 1 and "memory_events_xact" in indexes[0][0]
    assert counts(team, decision.id) == [("reinforce", 0, 4, team.role(team.bob_url))]


def test_rolled_back_to_22_the_index_of_events_by_transaction_goes(team: Team) -> None:
    assert len(recorded_by(team.admin_url)[1]) == 1

    assert migrate(team.admin_url, target=SCHEMA_VERSION - 1).after == SCHEMA_VERSION - 1

    assert recorded_by(team.admin_url) == (
        [("graphmem_change_recorded",), ("graphmem_removal_recorded",)],
        [],
    )
