"""Agent sessions and claims in a team's PostgreSQL store: every daemon sees every agent's.

The ``core.coordination.Coordination`` port, with the in-memory ``Coordinator``'s rules
(``service/coordination.py``, held by ``tests/unit/service/test_coordination.py`` on both):
leases that expire after ``ttl`` without a heartbeat, one claim per item and project. Sessions
are rows of ``agent_sessions``, claims of ``agent_claims`` (keyed by project and item, gone with
their session); each verb is one transaction, and a claim two daemons make at once goes to one
of them (the primary key decides), the other told who holds it. Times come from ``clock``, as
in the daemon, not from the server.

A session is its client's (``owner``, as in the daemon) and its person's: ``person`` is the role
that started it, which the database sets (schema 13, ``current_user``). Only that person's client
ends it or releases its claims; a person's ``--force`` overrides, and is recorded in
``agent_overrides`` with who forced it (the database sets that ``person`` too), which
``overrides`` reads. Only that person heartbeats it or claims in it, with no override
(``core.coordination.own_session`` says why). ``agent_overrides`` is append-only for the team's
roles (schema 16, ``postgres_functions.APPEND_ONLY_16``).

The database holds the same rules for the team's roles (schema 17, row-level security,
``postgres_functions.SESSIONS_HELD_17``): a role changes only its own sessions and claims, and deletes
another's only once expired by the server's clock or with an override recorded in the same
transaction. So a forced end or release records its override before it deletes, and a daemon's
removal of the expired (``_expire``, by its own clock) skips another's that the server's clock
still counts live.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from graphmem.adapters.postgres_rows import utc
from graphmem.adapters.postgres_store import PostgresGraphStore
from graphmem.core.coordination import (
    DEFAULT_TTL,
    MAX_OVERRIDES,
    AgentSession,
    Claim,
    Override,
    claimed_by,
    label,
    lease,
    may_end,
    may_release,
    new_session,
    no_session,
    own_session,
    room_for_session,
    task_label,
)
from graphmem.errors import ClaimConflictError, NotFoundError

_SESSION = "id, agent, project, task, started_at, last_seen, expires_at, owner"
_READ_SESSION = f"SELECT {_SESSION}, person FROM agent_sessions"
_CLAIM = "item, project, session, agent, claimed_at, expires_at"
_OVERRIDE = "at, act, session, agent, item, holder, person"
# What to do instead of acting in another person's session (``own_session``).
_OWN = "Start a session of your own (`graphmem session start AGENT`, or the MCP tool session_start)"


def _claim(row: Sequence[Any]) -> Claim:
    item, project, session, agent, claimed_at, expires_at = row
    return Claim(str(item), project, str(session), str(agent), _at(claimed_at), _at(expires_at))


def _at(value: datetime) -> datetime:
    at = utc(value)
    assert at is not None
    return at


class PgCoordinator:
    """Live agent sessions and their claims, in PostgreSQL (see the module doc)."""

    def __init__(
        self, store: PostgresGraphStore, clock: Callable[[], datetime], ttl: timedelta = DEFAULT_TTL
    ) -> None:
        self._store = store
        self.clock = clock
        self.ttl = ttl
        self._me: str | None = None  # the login role, once asked (``_person``)

    def _expire(self, now: datetime) -> None:
        self._store.db.run("DELETE FROM agent_sessions WHERE expires_at <= %s", (now,))  # claims go too
        self._store.db.run("DELETE FROM agent_claims WHERE expires_at <= %s", (now,))

    def _session(self, row: Sequence[Any]) -> AgentSession:
        session_id, agent, project, task, started_at, last_seen, expires_at, owner, person = row
        items = self._store.db.rows(
            "SELECT item FROM agent_claims WHERE session = %s ORDER BY item", (session_id,)
        )
        return AgentSession(
            str(session_id),
            str(agent),
            project,
            task,
            _at(started_at),
            _at(last_seen),
            _at(expires_at),
            tuple(str(r[0]) for r in items),
            owner=owner,
            person=person,
        )

    def _live(self, session_id: str) -> AgentSession:
        rows = self._store.db.rows(f"{_READ_SESSION} WHERE id = %s FOR UPDATE", ((session_id or "").strip(),))
        if not rows:
            raise NotFoundError(no_session(session_id, self.ttl))
        return self._session(rows[0])

    def _own(self, session_id: str, now: datetime, *, what: str, instead: str) -> AgentSession:
        """The live session ``session_id`` (the expired by ``now`` removed first), when the caller's
        person may ``what`` in it (``own_session``; else ``instead`` after ``_OWN`` says what to do)."""
        self._expire(now)
        session = self._live(session_id)
        own_session(session, self._person(), what=what, instead=f"{_OWN} {instead}")
        return session

    def start(
        self, agent: str, project: str | None, task: str | None = None, owner: str | None = None
    ) -> AgentSession:
        now = self.clock()
        session = new_session(agent, project, task, owner, now, self.ttl)
        with self._store.transaction():
            self._expire(now)
            room_for_session(int(self._store.db.rows("SELECT count(*) FROM agent_sessions")[0][0]))
            self._store.db.run(
                f"INSERT INTO agent_sessions ({_SESSION}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                (session.id, session.agent, project, session.task, now, now, session.expires_at, owner),
            )
            return self._live(session.id)  # with its person, as the database set it

    def heartbeat(self, session_id: str, task: str | None = None) -> AgentSession:
        now = self.clock()
        with self._store.transaction():
            session = self._own(
                session_id,
                now,
                what="keep it alive",
                instead="and send its heartbeats; theirs expires without them.",
            )
            self._store.db.run(
                "UPDATE agent_sessions SET last_seen = %(now)s, expires_at = %(until)s, "
                "task = CASE WHEN %(change)s THEN %(task)s ELSE task END WHERE id = %(id)s",
                {
                    "now": now,
                    "until": now + self.ttl,
                    "change": task is not None,
                    "task": task_label(task) if task is not None else None,
                    "id": session.id,
                },
            )
            self._store.db.run(
                "UPDATE agent_claims SET expires_at = greatest(expires_at, %s) WHERE session = %s",
                (now + self.ttl, session.id),
            )
            return self._live(session.id)

    def end(self, session_id: str, owner: str | None = None, force: bool = False) -> AgentSession:
        now = self.clock()
        with self._store.transaction():
            self._expire(now)
            session = self._live(session_id)
            if may_end(session, owner, force=force, person=self._person()):
                self._overridden("end", session, None)
            self._store.db.run("DELETE FROM agent_sessions WHERE id = %s", (session.id,))  # and its claims
            return session

    def active(self, project: str | None = None) -> list[AgentSession]:
        with self._store.transaction():
            rows = self._live_rows(_READ_SESSION, project, "started_at, id")
            return [self._session(r) for r in rows]  # its claims, read in the same transaction

    def claim(self, session_id: str, item: str, ttl: timedelta | None = None) -> Claim:
        now = self.clock()
        name = label(item, "The item", required=True)
        leased = lease(ttl, self.ttl)
        with self._store.transaction():
            session = self._own(
                session_id, now, what="claim items in it", instead=f"and claim '{name}' with it."
            )
            params = {
                "key": session.project or "",
                "item": name,
                "project": session.project,
                "session": session.id,
                "agent": session.agent,
                "now": now,
                "until": now + leased,
            }
            # Renewing one's own claim keeps when it was first claimed; another's stays as it is.
            self._store.db.run(
                f"INSERT INTO agent_claims (project_key, {_CLAIM}) VALUES (%(key)s, %(item)s, %(project)s, "
                "%(session)s, %(agent)s, %(now)s, %(until)s) ON CONFLICT (project_key, item) DO UPDATE "
                "SET expires_at = EXCLUDED.expires_at WHERE agent_claims.session = EXCLUDED.session",
                params,
            )
            held = _claim(
                self._store.db.rows(
                    f"SELECT {_CLAIM} FROM agent_claims WHERE project_key = %(key)s AND item = %(item)s",
                    params,
                )[0]
            )
        if held.session != session.id:
            raise ClaimConflictError(claimed_by(str(name), held), held.view())
        return held

    def release(self, session_id: str, item: str, owner: str | None = None, force: bool = False) -> bool:
        now = self.clock()
        name = label(item, "The item", required=True)
        with self._store.transaction():
            self._expire(now)
            session = self._live(session_id)
            forced = may_release(session, str(name), owner, force=force, person=self._person())
            held = (session.project or "", name, session.id)
            # The override first: the database lets another's claim go only in the transaction
            # that recorded it (schema 17); one is recorded only for a claim there is to release.
            if forced and self._store.db.rows(
                "SELECT 1 FROM agent_claims WHERE project_key = %s AND item = %s AND session = %s FOR UPDATE",
                held,
            ):
                self._overridden("release", session, name)
            released = self._store.db.run(
                "DELETE FROM agent_claims WHERE project_key = %s AND item = %s AND session = %s", held
            )
            return released > 0

    def _person(self) -> str:
        """The caller's database role: who acts (``current_user``), asked once (every connection of
        the store logs in as one role)."""
        if self._me is None:
            self._me = str(self._store.db.rows("SELECT current_user::text")[0][0])
        return self._me

    def _overridden(self, act: str, session: AgentSession, item: str | None) -> None:
        """Record that the caller forced ``act`` on another's ``session`` (the database sets who)."""
        self._store.db.run(
            "INSERT INTO agent_overrides (at, act, session, agent, item, holder) "
            "VALUES (%s, %s, %s, %s, %s, %s)",
            (self.clock(), act, session.id, session.agent, item, session.person),
        )

    def overrides(self, limit: int = MAX_OVERRIDES) -> list[Override]:
        rows = self._store.db.rows(
            f"SELECT {_OVERRIDE} FROM agent_overrides ORDER BY seq DESC LIMIT %s", (max(limit, 0),)
        )
        return [
            Override(_at(at), str(act), str(session), str(agent), item, holder, person)
            for at, act, session, agent, item, holder, person in rows
        ]

    def claims(self, project: str | None = None) -> list[Claim]:
        with self._store.transaction():
            rows = self._live_rows(f"SELECT {_CLAIM} FROM agent_claims", project, "claimed_at, item")
        return [_claim(r) for r in rows]

    def _live_rows(self, select: str, project: str | None, order: str) -> list[tuple[Any, ...]]:
        """The rows of ``select`` (sessions or claims) not expired, in ``project`` or in none
        (every project's when ``project`` is None), by ``order``; in the caller's transaction."""
        self._expire(self.clock())
        return self._store.db.rows(
            f"{select} WHERE %(p)s::text IS NULL OR project = %(p)s OR project IS NULL ORDER BY {order}",
            {"p": project},
        )
