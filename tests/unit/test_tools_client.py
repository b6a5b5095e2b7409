"""The MCP tools' test client (``support/tools_client.py``): one session for every call inside a
``with``, opened by the first call, and nothing of it left running once the ``with`` ends."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fastmcp.server.middleware import Middleware, MiddlewareContext
from support.memory_service import in_memory_service
from support.tools_client import Tools

from graphmem.core.timeparse import utc_now
from graphmem.server.runtime import Runtime
from graphmem.server.tools import build_mcp
from graphmem.service.coordination import Coordinator

PROJECT = "/work/shop"


class Sessions(Middleware):
    """Counts the sessions a server is asked to open: a client's first request of each is
    ``initialize`` or, in the protocol's later era, ``server/discover``."""

    def __init__(self) -> None:
        self.opened = 0

    async def on_initialize(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        self.opened += 1
        return await call_next(context)

    async def on_discover(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        self.opened += 1
        return await call_next(context)


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Runtime]:
    memory = in_memory_service(tmp_path / "data")
    served = memory.serving(Coordinator(utc_now, timedelta(minutes=5)))
    yield Runtime(served, log_hint="the test's log", resolve_project=lambda path: path, version="t")
    memory.close()


def test_the_calls_inside_one_with_share_one_session_which_the_first_call_opens(runtime: Runtime) -> None:
    server, sessions = build_mcp(runtime), Sessions()
    server.add_middleware(sessions)

    with Tools(server, runtime) as tools:
        assert sessions.opened == 0  # a test that takes the tools and calls none pays for no session
        tools.ok("remember", text="We chose Kùzu for the graph store", project=PROJECT)
        assert "recall" in tools.listing()
        assert tools.ok("recall", query="Kùzu graph store", project=PROJECT)["hits"]
        tools.refused("recall", query="deploys", bogus=1)
        assert sessions.opened == 1
    with Tools(server, runtime) as tools:
        tools.ok("memory_status")
    assert sessions.opened == 2


def test_nothing_of_a_session_is_left_running_after_its_with(runtime: Runtime) -> None:
    before = set(threading.enumerate())

    with Tools(build_mcp(runtime), runtime) as tools:
        tools.ok("remember", text="We chose Kùzu for the graph store", project=PROJECT)  # on a worker thread
        tools.ok("memory_status")

    started = [thread for thread in threading.enumerate() if thread not in before]
    for thread in started:  # a thread told to stop may still be on its way out
        thread.join(10)
    assert [thread.name for thread in started if thread.is_alive()] == []
    with pytest.raises(RuntimeError, match="inside `with Tools"):
        tools.ok("memory_status")


def test_a_call_outside_the_with_is_refused_before_any_session_opens(runtime: Runtime) -> None:
    server, sessions = build_mcp(runtime), Sessions()
    server.add_middleware(sessions)

    with pytest.raises(RuntimeError, match="inside `with Tools"):
        Tools(server, runtime).listing()
    assert sessions.opened == 0


def test_a_tools_failure_reaches_the_test_as_the_clients_text(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the store went away")

    monkeypatch.setattr(runtime.memory, "recall", broken)
    with Tools(build_mcp(runtime), runtime) as tools:
        assert "the test's log" in tools.refused("recall", query="deploys", project=PROJECT)
        with pytest.raises(AssertionError, match="the test's log"):
            tools.ok("recall", query="deploys", project=PROJECT)
        assert "memories" in tools.ok("memory_status")  # the session outlives a failed call
