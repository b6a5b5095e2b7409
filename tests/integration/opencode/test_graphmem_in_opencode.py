"""graphmem inside the real OpenCode client: installed by `graphmem install opencode`,
connected through `graphmem mcp`, called by the (fake) model in whole `opencode run` turns.

The turn that remembers and the one that recalls go to one `opencode serve` (`opencode run
--attach`), as a TUI sends a user's turns to one OpenCode process: its `graphmem mcp` is started
once, and a new OpenCode process is about 8 s of CPU the test is not about."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.daemons import http, read_info, sandbox_env, stop_serving
from support.fake_llm import FakeLLM, Text, ToolCall, tool_messages
from support.opencode import OpenCodeSandbox

pytestmark = pytest.mark.integration


def graphmem(data_dir: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "graphmem", "--data-dir", str(data_dir), *args],
        env=sandbox_env(data_dir),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def installed(opencode: OpenCodeSandbox, tmp_path: Path) -> Iterator[tuple[OpenCodeSandbox, Path]]:
    """OpenCode with graphmem installed in its project, on a store of its own."""
    data_dir = tmp_path / "graphmem-data"
    done = graphmem(data_dir, "install", "opencode", "--project", str(opencode.project))
    assert done.returncode == 0, done.stderr
    opencode.extra_env.update(
        GRAPHMEM_CONFIG=str(tmp_path / "no-such-config.toml"),
        GRAPHMEM_SERVER__PORT="0",  # never the user's port
    )
    yield opencode, data_dir
    stop_serving(data_dir)


def _tool_result(request: dict[str, Any]) -> dict[str, Any]:
    [message] = tool_messages(request)
    content = message["content"]
    text = content if isinstance(content, str) else "".join(part.get("text", "") for part in content)
    result: dict[str, Any] = json.loads(text)  # the model gets JSON, never a Python repr
    return result


def test_opencode_lists_graphmem_connected(installed: tuple[OpenCodeSandbox, Path]) -> None:
    opencode, _ = installed
    config = json.loads((opencode.project / "opencode.json").read_text("utf-8"))
    assert config["mcp"]["graphmem"]["command"][-1] == "mcp"
    assert "`graphmem_<tool>`" in (opencode.project / "AGENTS.md").read_text("utf-8")

    servers = opencode.mcp_list()

    assert servers["graphmem"].status == "connected", servers


def test_a_turn_remembers_through_the_daemon_and_the_next_recalls_it(
    installed: tuple[OpenCodeSandbox, Path], fake_llm: FakeLLM
) -> None:
    opencode, data_dir = installed
    decision = "We use Postgres 16 for the billing service because we need logical replication"
    fake_llm.script(ToolCall("graphmem_remember", {"text": decision, "category": "decision"}), Text("Noted."))

    with opencode.serve() as server:
        done = server.run_turn("Remember our billing database decision.", timeout=180)

        assert "Noted." in done.stdout
        first, second = fake_llm.requests[:2]
        assert "graphmem_remember" in json.dumps(first.get("tools", []))
        stored = _tool_result(second)
        assert stored["created"] is True and stored["memory"]["category"] == "decision"
        assert stored["memory"]["project"] == str(opencode.project.resolve())
        info = read_info(data_dir)
        assert info is not None, "graphmem mcp should have started the daemon"
        metrics = http("GET", f"{info['url']}/metrics")[2].decode()
        assert 'graphmem_tool_calls_total{outcome="ok",tool="remember"} 1.0' in metrics

        # the CLI sees the same memory, through the daemon that owns the store
        listed = graphmem(data_dir, "list", "--json", cwd=opencode.project)
        assert listed.returncode == 0, listed.stderr
        # (the plugin also has graphmem learn from the session once it is idle: source "opencode",
        # and its summary "summary:opencode")
        learned = ("opencode", "summary:opencode")
        mine = [m["id"] for m in json.loads(listed.stdout)["memories"] if m["source"] not in learned]
        assert mine == [stored["id"]]

        fake_llm.reset(
            ToolCall("graphmem_recall", {"query": "which database does billing use"}), Text("Postgres 16.")
        )
        server.run_turn("Which database does billing use?", timeout=180)
        assert server.instances() == 1  # both turns went to one OpenCode instance

    recalled = _tool_result(fake_llm.requests[1])
    assert recalled["hits"][0]["id"] == stored["id"]
    assert recalled["hits"][0]["why"]["summary"]
