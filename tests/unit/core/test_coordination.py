"""Who may end a session or release its claims (``core/coordination.py``, ``may_act``): its client,
and on a team's store its person; anyone else only by force, which the caller records. And how
many sessions a store keeps (``room_for_session``) and what a session starts as (``new_session``),
for the daemon's and the team's alike; and how a claim and an override show."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from graphmem.core.coordination import (
    MAX_SESSIONS,
    AgentSession,
    Claim,
    Override,
    may_act,
    may_end,
    may_release,
    new_session,
    room_for_session,
)
from graphmem.errors import ConflictError, InvalidInputError, NotAllowedError

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
HERS = AgentSession(
    "ses_000000000001", "opencode/build", "/p", None, NOW, NOW, NOW, owner="mcp", person="alice"
)


def test_another_person_is_refused_even_from_a_client_of_the_same_id() -> None:
    with pytest.raises(NotAllowedError, match=r"is alice's, not yours \(bob\).*--force"):
        may_act(
            HERS,
            "mcp",
            force=False,
            what="end it",
            how="graphmem session end ses_000000000001 --force",
            person="bob",
        )


def test_the_same_person_and_client_may_and_a_forced_act_says_it_was_forced() -> None:
    assert may_act(HERS, "mcp", force=False, what="end it", how="-", person="alice") is False
    assert may_act(HERS, "person", force=True, what="end it", how="-", person="bob") is True


def test_a_session_from_before_the_person_was_recorded_is_its_clients_as_before() -> None:
    old = AgentSession("ses_000000000002", "bot", "/p", None, NOW, NOW, NOW, owner=None, person=None)
    assert may_act(old, "mcp", force=False, what="end it", how="-", person="bob") is False


def test_a_refused_end_names_the_command_that_forces_it() -> None:
    with pytest.raises(
        NotAllowedError, match=r"may end it\. .*`graphmem session end ses_000000000001 --force`"
    ):
        may_end(HERS, "mcp:other", force=False)


def test_a_refused_release_names_the_command_that_forces_it_for_that_item() -> None:
    with pytest.raises(
        NotAllowedError, match=r"release its claims\. .*`graphmem release ses_000000000001 '!12' --force`"
    ):
        may_release(HERS, "!12", "mcp", force=False, person="bob")
    assert may_release(HERS, "!12", "person", force=True, person="bob") is True


def test_a_store_keeps_at_most_max_sessions() -> None:
    room_for_session(MAX_SESSIONS - 1)
    with pytest.raises(ConflictError, match=f"{MAX_SESSIONS} sessions are live: end some with session_end"):
        room_for_session(MAX_SESSIONS)


def test_a_new_session_is_leased_from_now_with_its_name_and_task_as_stored() -> None:
    session = new_session(
        "  opencode/build ",
        "/p",
        "deploy  with password hunter2-secret-value",
        "mcp",
        NOW,
        timedelta(minutes=5),
    )
    assert session.id.startswith("ses_") and session.agent == "opencode/build" and session.project == "/p"
    assert (session.started_at, session.last_seen, session.expires_at) == (
        NOW,
        NOW,
        NOW + timedelta(minutes=5),
    )
    assert session.owner == "mcp" and session.claims == () and session.person is None
    assert session.task is not None and "hunter2-secret-value" not in session.task
    assert new_session("a", None, None, None, NOW, timedelta(minutes=5)).id != session.id
    with pytest.raises(InvalidInputError, match="The agent name is empty"):
        new_session(" ", "/p", None, None, NOW, timedelta(minutes=5))


@pytest.mark.parametrize(
    ("agent", "task", "said"),
    [
        ("build\x00", None, "The agent name contains a NUL"),
        ("build", "fix\x00 the cache", "The task contains a NUL"),
        ("caf\ud83d", None, "The agent name is not valid UTF-8"),
    ],
)
def test_a_name_or_task_no_store_holds_is_refused_when_the_session_starts(
    agent: str, task: str | None, said: str
) -> None:
    """A NUL in an agent's name or task was kept by the daemon's sessions and refused by a team's
    PostgreSQL (a store error, not what to fix): every store now refuses it when it starts."""
    with pytest.raises(InvalidInputError, match=said):
        new_session(agent, "/p", task, None, NOW, timedelta(minutes=5))


def test_a_claim_and_an_override_show_every_field_their_times_in_iso() -> None:
    at = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)
    claim = Claim("src/db.py", "/src/shop", "ses_1", "opencode/build", at, at + timedelta(minutes=5))
    override = Override(at, "release", "ses_1", "opencode/build", "src/db.py", "alice", "bob")

    assert claim.view() == {
        "item": "src/db.py",
        "project": "/src/shop",
        "session": "ses_1",
        "agent": "opencode/build",
        "claimed_at": "2026-05-01T09:30:00+00:00",
        "expires_at": "2026-05-01T09:35:00+00:00",
    }
    assert list(override.view().items()) == [
        ("at", "2026-05-01T09:30:00+00:00"),
        ("act", "release"),
        ("session", "ses_1"),
        ("agent", "opencode/build"),
        ("item", "src/db.py"),
        ("holder", "alice"),
        ("person", "bob"),
    ]
