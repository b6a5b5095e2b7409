"""On a real daemon, a session belongs to the MCP client that started it: another client can
neither end it nor release its claims; a person can, with --force, through the CLI, and
`graphmem session overrides` lists what was forced.

One daemon serves the module (a daemon start is about 2.5 s of CPU): each test starts sessions of
its own, and reads only what was forced on them."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from support.daemons import Daemon, rpc, sandbox_env, start_daemon

pytestmark = pytest.mark.integration


def tool(url: str, client: str, name: str, **arguments: Any) -> dict[str, Any]:
    status, answer = rpc(
        url, "tools/call", {"name": name, "arguments": arguments}, **{"X-Graphmem-Client": client}
    )
    assert status == 200, answer
    result: dict[str, Any] = answer["result"]
    return result


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    running = start_daemon(tmp_path_factory.mktemp("owners") / "data", GRAPHMEM_INGEST__ENABLED="false")
    yield running
    running.stop()


def test_only_the_client_that_started_a_session_ends_it_or_a_person_with_force(daemon: Daemon) -> None:
    started = tool(daemon.mcp_url, "a" * 32, "session_start", agent="opencode/build")
    session = started["structuredContent"]["session"]["id"]
    tool(daemon.mcp_url, "a" * 32, "claim_item", session_id=session, item="!12")

    released = tool(daemon.mcp_url, "b" * 32, "release_item", session_id=session, item="!12")
    ended = tool(daemon.mcp_url, "b" * 32, "session_end", session_id=session)
    assert released["isError"] and "started by another client" in released["content"][0]["text"]
    assert ended["isError"] and "--force" in ended["content"][0]["text"]

    cli = [sys.executable, "-m", "graphmem", "session", "end", session]
    env = sandbox_env(daemon.data_dir)
    refused = subprocess.run(cli, env=env, capture_output=True, text=True, timeout=120)
    forced = subprocess.run([*cli, "--force"], env=env, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 4 and "started by another client" in refused.stderr
    assert forced.returncode == 0 and forced.stdout.strip() == f"ended {session}", forced.stderr


def test_a_persons_forced_end_is_listed_by_session_overrides_through_the_daemon(daemon: Daemon) -> None:
    started = tool(daemon.mcp_url, "a" * 32, "session_start", agent="opencode/build")
    session = started["structuredContent"]["session"]["id"]
    env = sandbox_env(daemon.data_dir)

    def graphmem(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "graphmem", *args]
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)

    forced = graphmem("session", "end", session, "--force")
    listed = graphmem("session", "overrides", "--json")

    assert forced.returncode == 0, forced.stderr
    assert listed.returncode == 0, listed.stderr
    # (the module's other test forces the end of a session of its own on this daemon)
    [override] = [o for o in json.loads(listed.stdout)["overrides"] if o["session"] == session]
    assert (override["act"], override["session"], override["agent"]) == ("end", session, "opencode/build")
