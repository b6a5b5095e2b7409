"""The MCP tools called the way a client calls them, in memory: FastMCP's ``Client(server)``.

``with Tools(server, runtime) as tools:`` keeps one client session open to the end of the
``with`` (opening a session costs about 8 ms of CPU, a call in it 3.5: docs/testing.md). Inside it,
``tools.ok(name, **arguments)`` is the JSON of a success, ``.refused(name, **arguments)`` the
message of a failure; both go through the argument check, the tool and the error presentation
as a real client's call does. The session's event loop runs on the test's own thread during
each call, never on one of its own, so nothing of it outlives the ``with``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import Any, TypeVar

from fastmcp import Client, FastMCP

from graphmem.server.runtime import Runtime

# Seconds one call may take before the test fails: a tool that blocks must not hang the suite.
CALL_TIMEOUT_S = 30

T = TypeVar("T")


class Tools:
    """The tools of one server, called through one in-memory MCP client session."""

    def __init__(self, server: FastMCP, runtime: Runtime) -> None:
        self.server = server
        self.runtime = runtime
        self._open = False
        self._loop: asyncio.Runner | None = None
        self._client: Client[Any] | None = None

    def __enter__(self) -> Tools:
        if self._open:
            raise RuntimeError("this Tools' session is open already")
        self._open = True
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        loop, client = self._loop, self._client
        self._open, self._loop, self._client = False, None, None
        if loop is None or client is None:
            return
        try:
            loop.run(client.__aexit__(None, None, None))
        finally:
            loop.close()  # cancels what is left of the session and closes the loop

    def _in_session(self, call: Callable[[Client[Any]], Coroutine[Any, Any, T]]) -> T:
        """What ``call`` makes of the session, run on its loop (on the test's thread); the
        session is opened by the first call, as many tests take the tools and call none."""
        if not self._open:
            raise RuntimeError("call the tools inside `with Tools(server, runtime) as tools:`")
        if self._loop is None or self._client is None:
            loop, client = asyncio.Runner(), Client(self.server)
            try:
                loop.run(asyncio.wait_for(client.__aenter__(), CALL_TIMEOUT_S))
            except BaseException:
                loop.close()
                raise
            self._loop, self._client = loop, client
        return self._loop.run(asyncio.wait_for(call(self._client), CALL_TIMEOUT_S))

    def call(self, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        """(whether the call failed, the text the client got)."""

        async def run(client: Client[Any]) -> tuple[bool, str]:
            result = await client.call_tool(name, arguments, raise_on_error=False)
            return result.is_error, result.content[0].text  # type: ignore[union-attr]

        return self._in_session(run)

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

        async def run(client: Client[Any]) -> dict[str, Any]:
            return {tool.name: tool for tool in await client.list_tools()}

        return self._in_session(run)
