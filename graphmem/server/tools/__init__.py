"""The MCP tools: a small, sharp surface over the Memory service.

Each tool validates its arguments (types and bounds in the schema, the rest in the
service), calls the verbs the table (``server/verbs.py``) says it exposes, and returns
JSON of its declared type (``results.py``). Errors are MCP tool errors whose message says
how to fix the call (``registry.py``). The tools' own functions come in groups, one module
each: ``memories``, ``transfer``, ``gitlab``, ``coordination``; ``build_mcp`` registers the
table's tools in its order, making a tool with no function of its own from its verb.
"""

from __future__ import annotations

from typing import cast

from graphmem.server.runtime import Runtime
from graphmem.server.tools.coordination import add_coordination_tools
from graphmem.server.tools.gitlab import add_gitlab_tools
from graphmem.server.tools.memories import add_memory_tools
from graphmem.server.tools.registry import ToolRegistry, ToolServer
from graphmem.server.tools.results import Status
from graphmem.server.tools.transfer import add_transfer_tools

INSTRUCTIONS = """graphmem is the user's long-term memory across sessions and models.
Call get_boot_context at the start of a session. Before editing, call get_context on the
MR (!123), issue (#45), file or symbol. recall before deciding something or when stuck.
remember decisions (with the why), blockers, procedures that worked, facts, preferences
and directives the user states. Results are JSON."""


def build_mcp(runtime: Runtime) -> ToolServer:
    """The FastMCP server with every graphmem tool bound to ``runtime``; ``initialize`` names it
    graphmem, of the runtime's version, as ``graphmem mcp`` does (``server/proxy.py``)."""
    mcp = ToolServer("graphmem", version=runtime.version, instructions=INSTRUCTIONS)
    tools = ToolRegistry(mcp, runtime)
    add_memory_tools(tools)
    add_transfer_tools(tools)

    @tools.tool()
    def memory_status() -> Status:
        """The memory server's state: counts by category, embedding backlog, the share of
        memories flagged stale, whether the model is loaded, live sessions, uptime, GitLab's
        queue and, on a team's store, the login role (whether it may write, whose global
        memories it sees). Use it when a tool misbehaves."""
        return cast(Status, runtime.status())

    add_gitlab_tools(tools)
    add_coordination_tools(tools)
    tools.register()
    return mcp
