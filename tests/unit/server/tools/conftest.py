"""The MCP tools in memory: ``build_mcp`` on the in-memory store, called through FastMCP's
``Client(server)`` (``support/tools_client.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.tools_client import Tools

from graphmem.server.runtime import Runtime
from graphmem.server.tools import build_mcp
from graphmem.service.memory import MemoryService


@pytest.fixture
def runtime(memory_service: MemoryService) -> Runtime:
    """The daemon's state around the in-memory service (no worker thread: nothing runs behind a test)."""
    return Runtime(
        memory_service,
        log_hint="the test's log",
        resolve_project=lambda path: path,
        version="test",
    )


@pytest.fixture
def tools(runtime: Runtime) -> Iterator[Tools]:
    """The tools of a server on ``runtime``, in one client session closed after the test."""
    with Tools(build_mcp(runtime), runtime) as tools:
        yield tools
