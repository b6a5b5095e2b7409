"""The coordination tools: sessions other agents see, and claims on items.

A session belongs to the MCP client that started it (``client_owner``): only that client may
end it or release its claims; another agent asking gets a ``NotAllowedError`` that says so.
"""

from __future__ import annotations

import re
from typing import Annotated

from fastmcp.server.dependencies import get_http_headers
from pydantic import Field

from graphmem.core.text import MAX_TEXT_CHARS
from graphmem.errors import ClaimConflictError
from graphmem.server.tools.params import Project, SessionId
from graphmem.server.tools.registry import ToolRegistry
from graphmem.server.tools.results import (
    Claimed,
    Released,
    SessionEnded,
    SessionKept,
    Sessions,
    SessionStarted,
)

# `graphmem mcp` sends its own random id with every call; an agent chooses no header.
CLIENT_HEADER = "x-graphmem-client"
CLIENT_ID = re.compile(r"[0-9A-Za-z_-]{8,64}")


def client_owner() -> str:
    """The MCP client making this call: ``mcp:<id>`` of its ``graphmem mcp`` process, or ``mcp``
    for a client that sends no id (all of those share one owner)."""
    sent = get_http_headers(include={CLIENT_HEADER}).get(CLIENT_HEADER, "")
    return f"mcp:{sent}" if CLIENT_ID.fullmatch(sent) else "mcp"


def add_coordination_tools(tools: ToolRegistry) -> None:
    """Register the tools agents working on the same project use to see and avoid each other."""

    @tools.tool()
    def session_start(
        agent: Annotated[
            str,
            Field(
                description="Who you are, e.g. 'opencode/build' or a model name.",
                min_length=1,
                max_length=200,
            ),
        ],
        task: Annotated[
            str | None, Field(description="What this session works on, in a few words.", max_length=200)
        ] = None,
        project: Project = None,
    ) -> SessionStarted:
        """Announce a working session so other agents on the project see it. Send
        session_heartbeat every few minutes; sessions and claims expire without it."""
        session = tools.memory.session_start(
            agent, project=tools.project_of(project), task=task, owner=client_owner()
        )
        return {"session": session.view(), "ttl_seconds": int(tools.runtime.coordinator.ttl.total_seconds())}

    @tools.tool()
    def session_heartbeat(
        session_id: SessionId,
        task: Annotated[str | None, Field(description="Update the task description.", max_length=200)] = None,
    ) -> SessionKept:
        """Keep a session and its claims alive for another TTL."""
        return {"session": tools.memory.session_heartbeat(session_id, task=task).view()}

    @tools.tool()
    def session_end(
        session_id: SessionId,
        summary: Annotated[
            str | None,
            Field(
                description="What was done, decided and left open; stored as an event memory.",
                max_length=MAX_TEXT_CHARS,
            ),
        ] = None,
    ) -> SessionEnded:
        """End a session you started, release its claims, and store its summary as an event
        memory. Another client's session cannot be ended here."""
        ended = tools.memory.session_end(session_id, summary=summary, source="mcp", owner=client_owner())
        return {"session": ended.session.view(), "summary_memory_id": ended.summary_memory_id}

    @tools.tool()
    def active_sessions(
        project: Project = None,
        all_projects: Annotated[bool, Field(description="Sessions of every project.")] = False,
    ) -> Sessions:
        """Other agents working now (on this project, or on all), with what they claim."""
        found = tools.memory.active_sessions(project=tools.project_of(project), all_projects=all_projects)
        return {"sessions": [s.view() for s in found.sessions], "claims": [c.view() for c in found.claims]}

    @tools.tool()
    def claim_item(
        session_id: SessionId,
        item: Annotated[
            str,
            Field(
                description="What to claim: '!123', '#45', a file path, a task name.",
                min_length=1,
                max_length=200,
            ),
        ],
        ttl_seconds: Annotated[
            int | None, Field(description="Lease length; default the session TTL.", ge=1, le=86_400)
        ] = None,
    ) -> Claimed:
        """Claim an item exclusively so other agents leave it alone (renewing your own
        claim is fine). When another live session holds it, nothing is claimed: the answer
        is {"claim": null, "conflict": {item, agent, session, claimed_at, expires_at,
        message}} naming the holder. The claim expires without heartbeats."""
        try:
            claim = tools.memory.claim_item(session_id, item, ttl_seconds=ttl_seconds)
        except ClaimConflictError as exc:
            return {"claim": None, "conflict": {**(exc.held or {}), "message": str(exc)}}
        return {"claim": claim.view(), "conflict": None}

    @tools.tool()
    def release_item(
        session_id: SessionId,
        item: Annotated[str, Field(description="The item claimed.", min_length=1, max_length=200)],
    ) -> Released:
        """Release an item a session you started claimed (another client's claims stay)."""
        return {"released": tools.memory.release_item(session_id, item, owner=client_owner()), "item": item}
