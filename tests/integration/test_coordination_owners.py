"""On a real daemon, a session belongs to the MCP client that started it: another client can
neither end it nor release its claims; a person can, with --force, through the CLI, and
`graphmem session overrides` lists what was forced."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.daemons import rpc, sandbox_env, start_daemon

pytestmark = pytest.mark.integration


def tool(url: str, client: str, name: str, **arguments: Any) -> dict[str, Any]:
    status, answer = rpc(
        url, "tools/call", {"name": name, "arguments": arguments}, **{"X-Graphmem-Client": client}
    )
    assert status == 200, answer
    result: dict[str, Any] = answer["result"]
    return result


def test_only_the_client_that_started_a_session_ends_it_or_a_person_with_force(tmp_path: Path) -> None:
    daemon = start_daemon(tmp_path / "data", GRAPHMEM_INGEST__ENABLED="false")
    try:
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
    finally:
        daemon.stop()


def test_a_persons_forced_end_is_listed_by_session_overrides_through_the_daemon(tmp_path: Path) -> None:
    daemon = start_daemon(tmp_path / "data", GRAPHMEM_INGEST__ENABLED="false")
    try:
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
        [override] = json.loads(listed.stdout)["overrides"]
        assert (override["act"], override["session"], override["agent"]) == ("end", session, "opencode/build")
    finally:
        daemon.stop()
