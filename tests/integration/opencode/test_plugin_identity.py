"""The OpenCode plugin, loaded by Node as OpenCode loads it, sends the token and the prompt only to
a daemon that proved it holds the token: a program squatting on the port of a crashed daemon
gets neither, and what it answers is injected nowhere."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.daemons import start_daemon
from support.opencode_plugin_node import PLUGIN_FILE, remember_over_rpc, run_plugin_in_node
from support.squatter import INJECTED, Squatter

pytestmark = pytest.mark.integration

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
    args = ["--input-type=module", "-e", DRIVER, PLUGIN_FILE.as_uri(), str(project)]
    result: dict[str, Any] = run_plugin_in_node(
        args, data_dir, project, timeout_ms=5000, SECRET_PROMPT=SECRET_PROMPT
    )
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


def test_the_real_daemon_proves_itself_and_its_boot_context_is_injected(
    tmp_path: Path, project: Path
) -> None:
    daemon = start_daemon(tmp_path / "data", GRAPHMEM_INGEST__ENABLED="false")
    try:
        remember_over_rpc(daemon.url, project, "Always run ruff format before committing.", "directive")
        seen = run_plugin(daemon.data_dir, project)
    finally:
        daemon.stop()
    assert seen["logged"] == []
    assert any("ruff format" in part for part in seen["system"]["system"][1:])
    assert INJECTED not in json.dumps(seen)
