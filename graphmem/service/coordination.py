"""Coordination between agents sharing one memory: live sessions and exclusive claims.

Sessions and claims are leases held in the daemon's memory: an agent that stops
sending heartbeats loses them after ``ttl``. Nothing here is persisted — a
session's lasting trace is the summary it leaves as an event memory when it ends.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from graphmem.core.views import iso
from graphmem.errors import ClaimConflictError, ConflictError, InvalidInputError, NotFoundError

DEFAULT_TTL = timedelta(minutes=5)
MAX_TTL = timedelta(hours=24)
MAX_LABEL_CHARS = 200
MAX_SESSIONS = 1000
# What the service's session and claim verbs say when no daemon set a Coordinator.
NO_DAEMON = (
    "Sessions and claims live in the graphmem daemon, which other agents reach too: start it "
    "with `graphmem serve` (or let an MCP client start it), then try again."
)


@dataclass(frozen=True, slots=True)
class AgentSession:
    id: str
    agent: str
    project: str | None
    task: str | None
    started_at: datetime
    last_seen: datetime
    expires_at: datetime
    claims: tuple[str, ...] = ()

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
class Claim:
    item: str
    project: str | None
    session: str
    agent: str
    claimed_at: datetime
    expires_at: datetime

    def view(self) -> dict[str, Any]:
        return {
            "item": self.item,
            "project": self.project,
            "session": self.session,
            "agent": self.agent,
            "claimed_at": iso(self.claimed_at),
            "expires_at": iso(self.expires_at),
        }


def _label(value: str | None, what: str, *, required: bool = False) -> str | None:
    text = (value or "").strip()
    if not text:
        if required:
            raise InvalidInputError(f"{what} is empty: give a short name.")
        return None
    if len(text) > MAX_LABEL_CHARS:
        raise InvalidInputError(f"{what} is over {MAX_LABEL_CHARS} characters: shorten it.")
    return " ".join(text.split())


@dataclass(frozen=True, slots=True)
class EndedSession:
    """What ``session_end`` did: the session as it ended and the summary memory it left."""

    session: AgentSession
    summary_memory_id: str | None = None


@dataclass(frozen=True, slots=True)
class ActiveSessions:
    """The live sessions and their claims (of one project and of none, or of all)."""

    sessions: list[AgentSession]
    claims: list[Claim]


@dataclass
class Coordinator:
    """Live agent sessions and the items they claim, expiring without heartbeats."""

    clock: Callable[[], datetime]
    ttl: timedelta = DEFAULT_TTL
    _sessions: dict[str, AgentSession] = field(default_factory=dict)
    _claims: dict[tuple[str | None, str], Claim] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _expire(self, now: datetime) -> None:
        for session_id, session in list(self._sessions.items()):
            if session.expires_at <= now:
                del self._sessions[session_id]
        for key, claim in list(self._claims.items()):
            if claim.expires_at <= now or claim.session not in self._sessions:
                del self._claims[key]

    def _live(self, session_id: str, now: datetime) -> AgentSession:
        session = self._sessions.get((session_id or "").strip())
        if session is None:
            raise NotFoundError(
                f"No live session {session_id!r}: it ended, or expired after "
                f"{int(self.ttl.total_seconds())} s without a heartbeat. Call session_start again."
            )
        return session

    def start(self, agent: str, project: str | None, task: str | None = None) -> AgentSession:
        now = self.clock()
        name = _label(agent, "The agent name", required=True)
        assert name is not None
        with self._lock:
            self._expire(now)
            if len(self._sessions) >= MAX_SESSIONS:
                raise ConflictError(f"{MAX_SESSIONS} sessions are live: end some with session_end.")
            session_id = f"ses_{uuid.uuid4().hex[:12]}"
            session = AgentSession(
                session_id, name, project, _label(task, "The task"), now, now, now + self.ttl
            )
            self._sessions[session_id] = session
            return session

    def heartbeat(self, session_id: str, task: str | None = None) -> AgentSession:
        """Keep a session (and its claims) alive for another ``ttl``."""
        now = self.clock()
        with self._lock:
            self._expire(now)
            session = self._live(session_id, now)
            changes: dict[str, Any] = {"last_seen": now, "expires_at": now + self.ttl}
            if task is not None:
                changes["task"] = _label(task, "The task")
            session = replace(session, **changes)
            self._sessions[session.id] = session
            for key, claim in list(self._claims.items()):
                if claim.session == session.id:
                    self._claims[key] = replace(claim, expires_at=max(claim.expires_at, now + self.ttl))
            return self._with_claims(session)

    def end(self, session_id: str) -> AgentSession:
        now = self.clock()
        with self._lock:
            self._expire(now)
            session = self._with_claims(self._live(session_id, now))
            del self._sessions[session.id]
            self._expire(now)
            return session

    def active(self, project: str | None = None) -> list[AgentSession]:
        """Live sessions, of ``project`` and of no project; all when ``project`` is None."""
        now = self.clock()
        with self._lock:
            self._expire(now)
            sessions = [
                self._with_claims(s)
                for s in self._sessions.values()
                if project is None or s.project in (project, None)
            ]
        return sorted(sessions, key=lambda s: s.started_at)

    def claim(self, session_id: str, item: str, ttl: timedelta | None = None) -> Claim:
        """Claim ``item`` exclusively for ``session_id``; renewing one's own claim is fine."""
        now = self.clock()
        name = _label(item, "The item", required=True)
        assert name is not None
        lease = ttl or self.ttl
        if not timedelta(seconds=1) <= lease <= MAX_TTL:
            raise InvalidInputError("ttl_seconds must be between 1 and 86400.")
        with self._lock:
            self._expire(now)
            session = self._live(session_id, now)
            key = (session.project, name)
            held = self._claims.get(key)
            if held is not None and held.session != session.id:
                raise ClaimConflictError(
                    f"{name} is claimed by {held.agent} (session {held.session}) since "
                    f"{iso(held.claimed_at)} until {iso(held.expires_at)} unless renewed. "
                    "Work on something else, or coordinate with that agent.",
                    held.view(),
                )
            claim = Claim(name, session.project, session.id, session.agent, now, now + lease)
            if held is not None:
                claim = replace(claim, claimed_at=held.claimed_at)
            self._claims[key] = claim
            return claim

    def release(self, session_id: str, item: str) -> bool:
        """Release a claim; False when this session did not hold it."""
        now = self.clock()
        name = _label(item, "The item", required=True)
        with self._lock:
            self._expire(now)
            session = self._live(session_id, now)
            held = self._claims.get((session.project, name or ""))
            if held is None or held.session != session.id:
                return False
            del self._claims[(session.project, name or "")]
            return True

    def claims(self, project: str | None = None) -> list[Claim]:
        now = self.clock()
        with self._lock:
            self._expire(now)
            return [c for c in self._claims.values() if project is None or c.project in (project, None)]

    def _with_claims(self, session: AgentSession) -> AgentSession:
        items = tuple(sorted(c.item for c in self._claims.values() if c.session == session.id))
        return replace(session, claims=items)
