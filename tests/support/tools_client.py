"""The MCP tools called the way a client calls them, in memory: FastMCP's ``Client(server)``.

``Tools(server, runtime).ok(name, **arguments)`` is the JSON of a success,
``.refused(name, **arguments)`` the message of a failure; both go through the argument
check, the tool and the error presentation as a real client's call does.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from dataclasses import dataclass
from typing import Any

from fastmcp import Client, FastMCP

from graphmem.server.runtime import Runtime
from graphmem.server.tools import build_mcp

# Seconds one call may take before the test fails: a tool that blocks must not hang the suite.
CALL_TIMEOUT_S = 30


@dataclass
class Tools:
    """The tools of one server, called through an in-memory MCP client."""

    server: FastMCP
    runtime: Runtime

    def call(self, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        """(whether the call failed, the text the client got)."""

        async def run() -> tuple[bool, str]:
            async with Client(self.server) as client:
                result = await asyncio.wait_for(
                    client.call_tool(name, arguments, raise_on_error=False), CALL_TIMEOUT_S
                )
                return result.is_error, result.content[0].text  # type: ignore[union-attr]

        return asyncio.run(run())

    def ok(self, name: str, **arguments: Any) -> dict[str, Any]:
        failed, text = self.call(name, arguments)
        assert not failed, text
        answer: dict[str, Any] = json.loads(text)
        return answer

    def refused(self, name: str, **arguments: Any) -> str:
        failed, text = self.call(name, arguments)
        assert failed, text
        return text

    def listing(self) -> dict[str, Any]:
        """The tools a client lists, by name."""

        async def run() -> dict[str, Any]:
            async with Client(self.server) as client:
                return {tool.name: tool for tool in await client.list_tools()}

        return asyncio.run(run())


_SERVERS: weakref.WeakKeyDictionary[Runtime, FastMCP] = weakref.WeakKeyDictionary()


def server_for(runtime: Runtime) -> FastMCP:
    """The tools' server bound to ``runtime``, built once per runtime (building it takes a while)."""
    server = _SERVERS.get(runtime)
    if server is None:
        server = _SERVERS[runtime] = build_mcp(runtime)
    return server
