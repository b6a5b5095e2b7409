"""Coordination between agents sharing one memory: live sessions and exclusive claims.

Sessions and claims are leases held in the daemon's memory: an agent that stops
sending heartbeats loses them after ``ttl``. Nothing here is persisted — a
session's lasting trace is the summary it leaves as an event memory when it ends; a person's
forced end or release (an ``Override``) is kept as long as the daemon runs. On a
team's PostgreSQL store they are kept there instead, for every daemon
(``adapters/postgres_coordination.py``, the same ``core.coordination.Coordination`` port).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from graphmem.core.coordination import (
    DEFAULT_TTL,
    MAX_OVERRIDES,
    AgentSession,
    Claim,
    Coordination,
    Override,
    claimed_by,
    label,
    lease,
    may_end,
    may_release,
    new_session,
    no_session,
    room_for_session,
    task_label,
)
from graphmem.errors import ClaimConflictError, NotFoundError

__all__ = ["DEFAULT_TTL", "NO_DAEMON", "AgentSession", "Claim", "Coordination", "Coordinator", "Override"]

log = logging.getLogger(__name__)

# What the service's session and claim verbs say when no daemon set a Coordinator.
NO_DAEMON = (
    "Sessions and claims live in the graphmem daemon, which other agents reach too: start it "
    "with `graphmem serve` (or let an MCP client start it), then try again."
)
_label = label


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
    # The forced ends and releases, newest last: kept as long as the daemon, like its sessions.
    _overrides: deque[Override] = field(default_factory=lambda: deque(maxlen=MAX_OVERRIDES))
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
            raise NotFoundError(no_session(session_id, self.ttl))
        return session

    def start(
        self, agent: str, project: str | None, task: str | None = None, owner: str | None = None
    ) -> AgentSession:
        now = self.clock()
        session = new_session(agent, project, task, owner, now, self.ttl)
        with self._lock:
            self._expire(now)
            room_for_session(len(self._sessions))
            self._sessions[session.id] = session
            return session

    def heartbeat(self, session_id: str, task: str | None = None) -> AgentSession:
        """Keep a session (and its claims) alive for another ``ttl``."""
        now = self.clock()
        with self._lock:
            self._expire(now)
            session = self._live(session_id, now)
            changes: dict[str, Any] = {"last_seen": now, "expires_at": now + self.ttl}
            if task is not None:
                changes["task"] = task_label(task)
            session = replace(session, **changes)
            self._sessions[session.id] = session
            for key, claim in list(self._claims.items()):
                if claim.session == session.id:
                    self._claims[key] = replace(claim, expires_at=max(claim.expires_at, now + self.ttl))
            return self._with_claims(session)

    def end(self, session_id: str, owner: str | None = None, force: bool = False) -> AgentSession:
        now = self.clock()
        with self._lock:
            self._expire(now)
            session = self._with_claims(self._live(session_id, now))
            if may_end(session, owner, force=force):
                log.info("session %s (%s) ended by force, by %s", session.id, session.agent, owner)
                self._overrides.append(Override(now, "end", session.id, session.agent, None, None, None))
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
        leased = lease(ttl, self.ttl)
        with self._lock:
            self._expire(now)
            session = self._live(session_id, now)
            key = (session.project, name)
            held = self._claims.get(key)
            if held is not None and held.session != session.id:
                raise ClaimConflictError(claimed_by(name, held), held.view())
            claim = Claim(name, session.project, session.id, session.agent, now, now + leased)
            if held is not None:
                claim = replace(claim, claimed_at=held.claimed_at)
            self._claims[key] = claim
            return claim

    def release(self, session_id: str, item: str, owner: str | None = None, force: bool = False) -> bool:
        """Release a claim (only the session's owner may, unless ``force``); False when this
        session did not hold it."""
        now = self.clock()
        name = _label(item, "The item", required=True)
        with self._lock:
            self._expire(now)
            session = self._live(session_id, now)
            forced = may_release(session, str(name), owner, force=force)
            held = self._claims.get((session.project, name or ""))
            if held is None or held.session != session.id:
                return False
            del self._claims[(session.project, name or "")]
            if forced:
                log.info("claim of %s (%s) released by force, by %s", session.id, session.agent, owner)
                self._overrides.append(Override(now, "release", session.id, session.agent, name, None, None))
            return True

    def claims(self, project: str | None = None) -> list[Claim]:
        now = self.clock()
        with self._lock:
            self._expire(now)
            return [c for c in self._claims.values() if project is None or c.project in (project, None)]

    def overrides(self, limit: int = MAX_OVERRIDES) -> list[Override]:
        """The forced ends and releases since the daemon started, newest first."""
        with self._lock:
            return list(reversed(self._overrides))[: max(limit, 0)]

    def _with_claims(self, session: AgentSession) -> AgentSession:
        items = tuple(sorted(c.item for c in self._claims.values() if c.session == session.id))
        return replace(session, claims=items)
