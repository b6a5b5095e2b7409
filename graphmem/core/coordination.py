"""Agent sessions and the items they claim: the records, the rules on their labels and on who
may act in a session, and the ``Coordination`` port the daemon's verbs use. A session's task is
redacted like a memory's text.

Implemented in memory by ``service/coordination.py`` (``Coordinator``: one daemon's leases)
and in a team's PostgreSQL store by ``adapters/postgres_coordination.py`` (every daemon's).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from graphmem.core.redaction import redact
from graphmem.core.text import ensure_utf8
from graphmem.core.views import iso, record_view
from graphmem.errors import ConflictError, InvalidInputError, NotAllowedError

DEFAULT_TTL = timedelta(minutes=5)
MAX_TTL = timedelta(hours=24)
MAX_LABEL_CHARS = 200
MAX_SESSIONS = 1000
# The overrides a daemon keeps in memory (the embedded store's), and the most one listing shows.
MAX_OVERRIDES = 1000
# The owner of what a person starts through the CLI, ``/rpc`` or the Python API; an MCP client's
# sessions are owned by that client (``server/tools/coordination.py``).
PERSON = "person"


@dataclass(frozen=True, slots=True)
class AgentSession:
    """A live session. Its ``task`` is free text other agents read: it never holds a secret,
    whoever built the record (a row another daemon wrote included)."""

    id: str
    agent: str
    project: str | None
    task: str | None
    started_at: datetime
    last_seen: datetime
    expires_at: datetime
    claims: tuple[str, ...] = ()
    owner: str | None = None  # the client that started it; never shown (None: anyone may end it)
    # On a team's store, the person (database role) who started it, set by the database; None elsewhere.
    person: str | None = None

    def __post_init__(self) -> None:
        if self.task:
            object.__setattr__(self, "task", redact(self.task).text)

    def view(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "agent": self.agent,
            "project": self.project,
            "task": self.task,
            "started_at": iso(self.started_at),
            "last_seen": iso(self.last_seen),
            "expires_at": iso(self.expires_at),
            "claims": list(self.claims),
        }


@dataclass(frozen=True, slots=True)
class Override:
    """A person's forced end of another's session, or release of its claim (``--force``), as
    ``graphmem session overrides`` lists it. On a team's store ``holder`` is the session's person
    and ``person`` who forced it, both written by the database; None on the embedded store (one
    person) and for a session from before schema 13."""

    at: datetime
    act: str  # "end" or "release"
    session: str
    agent: str
    item: str | None  # the claim released; None for an end
    holder: str | None
    person: str | None

    def view(self) -> dict[str, Any]:
        return record_view(self)


@dataclass(frozen=True, slots=True)
class Claim:
    item: str
    project: str | None
    session: str
    agent: str
    claimed_at: datetime
    expires_at: datetime

    def view(self) -> dict[str, Any]:
        return record_view(self)


def new_session_id() -> str:
    """A new session's id, random: ``ses_`` and 12 hex digits (the id the CLI's examples show)."""
    return f"ses_{uuid.uuid4().hex[:12]}"


def label(value: str | None, what: str, *, required: bool = False) -> str | None:
    """An agent name, task or item as stored: blanks folded; None when empty (an error when
    ``required``); an error when too long."""
    text = (value or "").strip()
    if not text:
        if required:
            raise InvalidInputError(f"{what} is empty: give a short name.")
        return None
    if len(text) > MAX_LABEL_CHARS:
        raise InvalidInputError(f"{what} is over {MAX_LABEL_CHARS} characters: shorten it.")
    if "\x00" in text:  # a team's PostgreSQL holds none: refused alike by every store
        raise InvalidInputError(f"{what} contains a NUL character: give plain text.")
    ensure_utf8(text, what=what)
    return " ".join(text.split())


def task_label(value: str | None) -> str | None:
    """A session's task as stored and shown: a label (see ``label``) with its secrets redacted,
    since every agent on the project reads it ("deploy with password ..." keeps no password)."""
    text = label(value, "The task")
    return redact(text).text if text else text


def new_session(
    agent: str, project: str | None, task: str | None, owner: str | None, now: datetime, ttl: timedelta
) -> AgentSession:
    """The session ``agent`` starts at ``now`` on ``project``, as every store keeps it: a new id,
    the agent's name and the task as stored (``label``, ``task_label``), leased for ``ttl``."""
    name = label(agent, "The agent name", required=True)
    assert name is not None
    return AgentSession(new_session_id(), name, project, task_label(task), now, now, now + ttl, owner=owner)


def may_act(
    session: AgentSession, owner: str | None, *, force: bool, what: str, how: str, person: str | None = None
) -> bool:
    """Raise ``NotAllowedError`` unless ``owner`` started ``session`` and, on a team's store,
    ``person`` (the caller's database role) is the one who did (or ``force``: a person's override
    through the CLI). ``what`` is the act, ``how`` the CLI command that forces it. True when only
    ``force`` lets it through: the override the caller records."""
    persons = session.person is None or person is None or session.person == person
    if persons and (session.owner is None or session.owner == owner):
        return False
    if force:
        return True
    if not persons:
        raise NotAllowedError(
            f"Session {session.id} ({session.agent}) is {session.person}'s, not yours ({person}): only "
            f"they may {what}. Ask them, or leave it to expire without heartbeats; to override, run "
            f"`{how}` (the store records that you forced it)."
        )
    raise NotAllowedError(
        f"Session {session.id} ({session.agent}) was started by another client: only that client may "
        f"{what}. Leave it to that agent (it expires without heartbeats), or, as a person, run `{how}`."
    )


def may_end(session: AgentSession, owner: str | None, *, force: bool, person: str | None = None) -> bool:
    """``may_act`` for ending ``session``, forced by ``graphmem session end ID --force``."""
    how = f"graphmem session end {session.id} --force"
    return may_act(session, owner, force=force, what="end it", how=how, person=person)


def may_release(
    session: AgentSession, item: str, owner: str | None, *, force: bool, person: str | None = None
) -> bool:
    """``may_act`` for releasing ``session``'s claim of ``item``, forced by ``graphmem release ID
    'ITEM' --force``."""
    how = f"graphmem release {session.id} '{item}' --force"
    return may_act(session, owner, force=force, what="release its claims", how=how, person=person)


def room_for_session(live: int) -> None:
    """Raise ``ConflictError`` when ``live`` sessions are as many as a store keeps (``MAX_SESSIONS``)."""
    if live >= MAX_SESSIONS:
        raise ConflictError(f"{MAX_SESSIONS} sessions are live: end some with session_end.")


def own_session(session: AgentSession, person: str | None, *, what: str, instead: str) -> None:
    """Raise ``NotAllowedError`` when, on a team's store, ``session`` is another person's than
    ``person`` (the caller's database role): ``what`` is the act, ``instead`` what to do.

    No ``--force`` here, unlike ``may_act``: a heartbeat or a claim in another's session acts in
    their name (it keeps alive a session they let go, holding its claims against everyone, or
    puts work under their session), where an override only frees what is stuck. What a person
    would do inside another's session, they do in a session of their own."""
    if session.person is None or person is None or session.person == person:
        return
    raise NotAllowedError(
        f"Session {session.id} ({session.agent}) is {session.person}'s, not yours ({person}): only they "
        f"may {what}. {instead}"
    )


def lease(ttl: timedelta | None, default: timedelta) -> timedelta:
    """A claim's lease: ``ttl`` (``default`` when None), between 1 s and ``MAX_TTL``."""
    chosen = ttl or default
    if not timedelta(seconds=1) <= chosen <= MAX_TTL:
        raise InvalidInputError("ttl_seconds must be between 1 and 86400.")
    return chosen


def no_session(session_id: str, ttl: timedelta) -> str:
    return (
        f"No live session {session_id!r}: it ended, or expired after "
        f"{int(ttl.total_seconds())} s without a heartbeat. Call session_start again."
    )


def claimed_by(item: str, held: Claim) -> str:
    return (
        f"{item} is claimed by {held.agent} (session {held.session}) since "
        f"{iso(held.claimed_at)} until {iso(held.expires_at)} unless renewed. "
        "Work on something else, or coordinate with that agent."
    )


class Coordination(Protocol):
    """Live agent sessions and the items they claim, expiring without heartbeats."""

    ttl: timedelta  # how long a session lives without a heartbeat

    def start(
        self, agent: str, project: str | None, task: str | None = None, owner: str | None = None
    ) -> AgentSession: ...
    def heartbeat(self, session_id: str, task: str | None = None) -> AgentSession:
        """Keep a session (and its claims) alive for another ttl; on a team's store only its
        person's (``own_session``)."""

    def end(self, session_id: str, owner: str | None = None, force: bool = False) -> AgentSession:
        """End a session: only its owner may, unless ``force`` (``may_act``)."""

    def active(self, project: str | None = None) -> list[AgentSession]:
        """Live sessions, of ``project`` and of no project; all when ``project`` is None."""

    def claim(self, session_id: str, item: str, ttl: timedelta | None = None) -> Claim:
        """Claim ``item`` exclusively for ``session_id``; renewing one's own claim is fine. On a
        team's store only the session's person claims in it (``own_session``)."""

    def release(self, session_id: str, item: str, owner: str | None = None, force: bool = False) -> bool:
        """Release a claim (only the session's owner may, unless ``force``); False when this
        session did not hold it."""

    def claims(self, project: str | None = None) -> list[Claim]: ...
    def overrides(self, limit: int = MAX_OVERRIDES) -> list[Override]:
        """The forced ends and releases (``Override``), newest first, at most ``limit``."""
