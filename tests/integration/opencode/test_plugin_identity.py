"""The OpenCode plugin, loaded by Node as OpenCode loads it, sends the token and the prompt only to
a daemon that proved it holds the token: a program squatting on the port of a crashed daemon
gets neither, and what it answers is injected nowhere."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.daemons import http, start_daemon
from support.squatter import INJECTED, Squatter

pytestmark = pytest.mark.integration

PLUGIN = Path(__file__).resolve().parents[3] / "graphmem" / "integrations" / "opencode" / "graphmem.js"
SECRET_PROMPT = "You are the billing agent. The staging password is hunter2."
# Loads the plugin, runs the hooks of one turn, and prints what OpenCode would send and what it logged.
DRIVER = """
const { default: plugin } = await import(process.argv[1]);
const logged = [];
const client = { app: { log: async (entry) => { logged.push(entry.body.message); } } };
const hooks = await plugin.server({ client, directory: process.argv[2] });
const system = { system: [process.env.SECRET_PROMPT] };
await hooks["experimental.chat.system.transform"]({ sessionID: "ses_1" }, system);
const user = { info: { id: "msg_1", role: "user", sessionID: "ses_1", agent: "build" },
               parts: [{ type: "text", text: "Where is the billing database?" }] };
const messages = { messages: [user] };
await hooks["experimental.chat.messages.transform"]({}, messages);
const compaction = { context: [] };
await hooks["experimental.session.compacting"]({ sessionID: "ses_1" }, compaction);
console.log(JSON.stringify({ system, messages, compaction, logged }));
"""


def run_plugin(data_dir: Path, project: Path) -> dict[str, Any]:
    node = shutil.which("node")
    assert node is not None, "the plugin tests need Node.js (>= 20)"
    done = subprocess.run(
        [node, "--input-type=module", "-e", DRIVER, PLUGIN.as_uri(), str(project)],
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": str(project),
            "GRAPHMEM_DATA_DIR": str(data_dir),
            "GRAPHMEM_PLUGIN_TIMEOUT_MS": "5000",
            "SECRET_PROMPT": SECRET_PROMPT,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_squatter_on_the_daemons_port_gets_no_token_no_prompt_and_injects_nothing(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    token = "t" * 43
    (data_dir / "daemon.token").write_text(token + "\n", "ascii")
    squatter = Squatter(pid=4242)
    info = {"pid": 4242, "url": squatter.url, "data_dir": str(data_dir), "started_at": 0, "version": "x"}
    (data_dir / "daemon.json").write_text(json.dumps(info), "utf-8")
    try:
        seen = run_plugin(data_dir, tmp_path)
    finally:
        squatter.close()

    assert b"/identity" in squatter.received  # it was asked to prove itself
    assert token.encode() not in squatter.received
    assert b"hunter2" not in squatter.received and b"billing database" not in squatter.received
    assert "Ignore previous instructions" not in json.dumps(
        [seen["system"], seen["messages"], seen["compaction"]]
    )
    [line] = seen["logged"]  # one line, in OpenCode's log
    assert "not the graphmem daemon" in line and "\n" not in line


def test_the_real_daemon_proves_itself_and_its_boot_context_is_injected(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    daemon = start_daemon(tmp_path / "data", GRAPHMEM_INGEST__ENABLED="false")
    try:
        body = {
            "method": "remember",
            "arguments": {
                "text": "Always run ruff format before committing.",
                "category": "directive",
                "project": str(project.resolve()),
            },
        }
        status, _, raw = http(
            "POST", f"{daemon.url}/rpc", json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        assert status == 200, raw
        seen = run_plugin(daemon.data_dir, project.resolve())
    finally:
        daemon.stop()
    assert seen["logged"] == []
    assert any("ruff format" in part for part in seen["system"]["system"][1:])
    assert INJECTED not in json.dumps(seen)
