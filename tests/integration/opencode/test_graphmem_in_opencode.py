"""graphmem inside the real OpenCode client: installed by `graphmem install opencode`,
connected through `graphmem mcp`, called by the (fake) model in whole `opencode run` turns.

One OpenCode process (``served``, a module fixture), as a TUI runs one: the MCP servers' status
read from it as `opencode mcp list` prints it, then the turn that remembers and the one that
recalls, sent by `opencode run --attach`. Its `graphmem mcp` is started once, and a new OpenCode
process is about 8 s of CPU the tests are not about: each test reads its part of the run."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.daemons import http, read_info, sandbox_env, stop_serving
from support.fake_llm import FakeLLM, Text, ToolCall, tool_messages
from support.opencode import OpenCodeSandbox

pytestmark = pytest.mark.integration

DECISION = "We use Postgres 16 for the billing service because we need logical replication"


def graphmem(data_dir: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "graphmem", "--data-dir", str(data_dir), *args],
        env=sandbox_env(data_dir),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


@dataclass(frozen=True)
class Session:
    project: Path
    mcp: dict[str, dict[str, Any]]  # each MCP server's status, before the first turn
    remembering: subprocess.CompletedProcess[str]  # the turn that remembers: what it printed
    remembering_requests: list[dict[str, Any]]
    info: dict[str, Any] | None  # daemon.json after that turn
    metrics: str  # the daemon's /metrics after that turn
    listed: subprocess.CompletedProcess[str]  # `graphmem list --json` after that turn
    recalling_requests: list[dict[str, Any]]  # the turn that recalls
    instances: int


@pytest.fixture(scope="module")
def served(opencode_binary: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    """OpenCode with graphmem installed in its project, on a store of its own, and one
    `opencode serve`: the MCP servers' status, a turn that remembers (then what the daemon and the
    CLI say), a turn that recalls."""
    root = tmp_path_factory.mktemp("graphmem-in-opencode")
    data_dir = root / "graphmem-data"
    with FakeLLM() as llm:
        opencode = OpenCodeSandbox.create(opencode_binary, root / "opencode", llm)
        done = graphmem(data_dir, "install", "opencode", "--project", str(opencode.project))
        assert done.returncode == 0, done.stderr
        opencode.extra_env.update(
            GRAPHMEM_CONFIG=str(root / "no-such-config.toml"),
            GRAPHMEM_SERVER__PORT="0",  # never the user's port
        )
        llm.script(ToolCall("graphmem_remember", {"text": DECISION, "category": "decision"}), Text("Noted."))
        try:
            with opencode.serve() as server:
                mcp = server.mcp_status()
                remembering = server.run_turn("Remember our billing database decision.", timeout=180)
                remembering_requests = list(llm.requests)
                info = read_info(data_dir)
                metrics = http("GET", f"{info['url']}/metrics")[2].decode() if info is not None else ""
                # the CLI, through the daemon that owns the store
                listed = graphmem(data_dir, "list", "--json", cwd=opencode.project)
                llm.reset(
                    ToolCall("graphmem_recall", {"query": "which database does billing use"}),
                    Text("Postgres 16."),
                )
                server.run_turn("Which database does billing use?", timeout=180)
                recalling_requests = list(llm.requests)
                instances = server.instances()
        finally:
            stop_serving(data_dir)
    yield Session(
        opencode.project,
        mcp,
        remembering,
        remembering_requests,
        info,
        metrics,
        listed,
        recalling_requests,
        instances,
    )


def _tool_result(request: dict[str, Any]) -> dict[str, Any]:
    [message] = tool_messages(request)
    content = message["content"]
    text = content if isinstance(content, str) else "".join(part.get("text", "") for part in content)
    result: dict[str, Any] = json.loads(text)  # the model gets JSON, never a Python repr
    return result


def test_opencode_lists_graphmem_connected(served: Session) -> None:
    config = json.loads((served.project / "opencode.json").read_text("utf-8"))
    assert config["mcp"]["graphmem"]["command"][-1] == "mcp"
    assert "`graphmem_<tool>`" in (served.project / "AGENTS.md").read_text("utf-8")

    assert served.mcp["graphmem"]["status"] == "connected", served.mcp


def test_a_turn_remembers_through_the_daemon_and_the_next_recalls_it(served: Session) -> None:
    assert "Noted." in served.remembering.stdout
    first, second = served.remembering_requests[:2]
    assert "graphmem_remember" in json.dumps(first.get("tools", []))
    stored = _tool_result(second)
    assert stored["created"] is True and stored["memory"]["category"] == "decision"
    assert stored["memory"]["project"] == str(served.project.resolve())
    assert served.info is not None, "graphmem mcp should have started the daemon"
    assert 'graphmem_tool_calls_total{outcome="ok",tool="remember"} 1.0' in served.metrics

    # the CLI sees the same memory, through the daemon that owns the store
    assert served.listed.returncode == 0, served.listed.stderr
    # (the plugin also has graphmem learn from the session once it is idle: source "opencode",
    # and its summary "summary:opencode")
    learned = ("opencode", "summary:opencode")
    mine = [m["id"] for m in json.loads(served.listed.stdout)["memories"] if m["source"] not in learned]
    assert mine == [stored["id"]]

    assert served.instances == 1  # both turns went to one OpenCode instance
    recalled = _tool_result(served.recalling_requests[1])
    assert recalled["hits"][0]["id"] == stored["id"]
    assert recalled["hits"][0]["why"]["summary"]
