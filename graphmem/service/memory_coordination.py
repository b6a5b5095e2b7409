"""``MemoryService``'s coordination verbs: sessions other agents see, and claims on items.

The sessions and claims are leases in the memory of the process that serves them (see
``service/coordination.py``): only a daemon, which outlives each call, sets a
``Coordinator`` here. Without one the verbs say to start it.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, cast

from graphmem.core.models import Category
from graphmem.errors import InvalidInputError
from graphmem.service.coordination import ActiveSessions, AgentSession, Claim, Coordinator, EndedSession

if TYPE_CHECKING:
    from graphmem.service.memory import MemoryService

NO_DAEMON = (
    "Sessions and claims live in the graphmem daemon, which other agents reach too: start it "
    "with `graphmem serve` (or let an MCP client start it), then try again."
)


class CoordinationVerbs:
    """Sessions and claims (mixed into ``MemoryService``)."""

    coordinator: Coordinator | None = None  # set by the daemon

    def _service(self) -> MemoryService:
        return cast("MemoryService", self)

    def _coordinator(self) -> Coordinator:
        if self.coordinator is None:
            raise InvalidInputError(NO_DAEMON)
        return self.coordinator

    def session_start(
        self, agent: str, *, project: str | None = None, task: str | None = None
    ) -> AgentSession:
        """Announce a working session other agents on the project see; it expires without
        ``session_heartbeat``."""
        return self._coordinator().start(agent, self._service()._own(project), task)

    def session_heartbeat(self, session_id: str, *, task: str | None = None) -> AgentSession:
        """Keep a session and its claims alive for another TTL (and change its task)."""
        return self._coordinator().heartbeat(session_id, task)

    def session_end(
        self, session_id: str, *, summary: str | None = None, source: str = "user"
    ) -> EndedSession:
        """End a session, release its claims, and store ``summary`` as an event memory."""
        session = self._coordinator().end(session_id)
        stored = None
        if summary and summary.strip():
            result = self._service().remember(
                summary, category=Category.EVENT, project=session.project, session=session.id, source=source
            )
            stored = result.memory.id
        return EndedSession(session, stored)

    def active_sessions(self, *, project: str | None = None, all_projects: bool = False) -> ActiveSessions:
        """The live sessions and claims of ``project`` (and of none), or of every project."""
        coordinator = self._coordinator()
        resolved = None if all_projects else self._service()._own(project)
        return ActiveSessions(coordinator.active(resolved), coordinator.claims(resolved))

    def claim_item(self, session_id: str, item: str, *, ttl_seconds: int | None = None) -> Claim:
        """Claim ``item`` for the session; a ``ClaimConflictError`` names the holder when
        another live session holds it."""
        ttl = timedelta(seconds=ttl_seconds) if ttl_seconds else None
        return self._coordinator().claim(session_id, item, ttl)

    def release_item(self, session_id: str, item: str) -> bool:
        """Release an item the session claimed; False when it did not hold it."""
        return self._coordinator().release(session_id, item)
