"""Long-lived FastMCP clients for many calls: one event loop in a thread, so that
table-driven tests call tools synchronously without reconnecting each time, and several
clients can call at the same moment."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from fastmcp import Client
from fastmcp.exceptions import ToolError

T = TypeVar("T")
CALL_TIMEOUT_S = 90.0  # a hang fails the case instead of blocking the suite
_STOPPED_LOOPS: list[asyncio.AbstractEventLoop] = []  # see McpLoop.close


class Outcome:
    """What a tool call came back with: ``ok`` and its structured content, or an error text."""

    def __init__(self, ok: bool, value: Any) -> None:
        self.ok = ok
        self.value = value

    def __repr__(self) -> str:
        return f"Outcome(ok={self.ok}, value={str(self.value)[:300]!r})"


class McpLoop:
    """An event loop in a thread that owns every connected client."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._clients: list[Session] = []

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float = CALL_TIMEOUT_S) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)

    def connect(self, client: Client[Any]) -> Session:
        self.run(client.__aenter__())
        session = Session(self, client)
        self._clients.append(session)
        return session

    def together(self, *calls: tuple[Session, str, dict[str, Any]]) -> list[Outcome]:
        """Start every call at once (each on its own client) and wait for all."""

        async def go() -> list[Outcome]:
            return list(await asyncio.gather(*(s.outcome(tool, args) for s, tool, args in calls)))

        return self.run(go())

    def close(self) -> None:
        try:
            for session in self._clients:
                self.run(session.client.__aexit__(None, None, None), timeout=30)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            # Stopped, and kept: a loop collected unclosed warns (so does its self-pipe, a Unix
            # socket) in whatever test runs then, and a closed one breaks the clients'
            # transports, which fastmcp's StdioTransport.__del__ still signals when collected.
            _STOPPED_LOOPS.append(self._loop)


class Session:
    """One connected client; ``call(tool, arguments)`` from synchronous test code."""

    def __init__(self, loop: McpLoop, client: Client[Any]) -> None:
        self.loop = loop
        self.client = client

    async def outcome(self, tool: str, arguments: dict[str, Any]) -> Outcome:
        try:
            result = await self.client.call_tool(tool, arguments)
        except ToolError as exc:
            return Outcome(False, str(exc))
        except Exception as exc:  # a protocol-level refusal (McpError) is an error answer too
            return Outcome(False, f"{type(exc).__name__}: {exc}")
        return Outcome(True, result.structured_content)

    def call(self, tool: str, arguments: dict[str, Any]) -> Outcome:
        return self.loop.run(self.outcome(tool, arguments))
