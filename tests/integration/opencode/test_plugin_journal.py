"""The OpenCode plugin replays what it injected from its journal, in every OpenCode process: a
daemon that is gone, restarted or slow never changes an earlier user message nor the boot
block of the system prompt; only the newest message may go without its recall. What the journal
says the session showed goes to the daemon with each turn, checked and bounded as the daemon
checks it: a tampered journal can leave memories out, never make the daemon refuse the turn.

Each ``run_plugin`` is a new Node process loading the plugin as OpenCode does (one process per
``opencode run`` turn); what it prints is what OpenCode would send, and every request it made to
the daemon (path, status, body).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from support.daemons import Daemon, remembered, start_daemon
from support.opencode_plugin_node import PLUGIN_FILE, remember_over_rpc, run_plugin_in_node

from graphmem.core.keys import MAX_SHOWN_KEYS, SHOWN_KEY, shown_key
from graphmem.core.text import content_hash

pytestmark = pytest.mark.integration

SESSION = "ses_journal"
DIRECTIVE = "Always run ruff format before committing any Python change."
FACT = "The staging database listens on port 5433 behind the bastion host."
ASKS = (
    "Which port does the staging database listen on?",
    "Write a haiku about autumn leaves.",
    "And what about the staging database again?",
)
# Runs one model call's hooks for the user messages named (oldest first) and prints what goes out.
DRIVER = """
const requests = [];
const realFetch = globalThis.fetch;
globalThis.fetch = (url, init) => {
  const seen = { path: new URL(String(url)).pathname, status: 0 };
  if (seen.path !== "/identity") seen.body = JSON.parse(init?.body ?? "null");
  requests.push(seen);
  return realFetch(url, init).then((response) => { seen.status = response.status; return response; });
};
const { default: plugin } = await import(process.argv[1]);
const asked = JSON.parse(process.argv[3]);
const logged = [];
const client = { app: { log: async (entry) => { logged.push(entry.body.message); } } };
const hooks = await plugin.server({ client, directory: process.argv[2] });
const out = [];
for (const call of asked.calls) {
  const system = { system: ["You are OpenCode."] };
  await hooks["experimental.chat.system.transform"]({ sessionID: call.session }, system);
  const messages = { messages: call.asks.map((text, i) => ({
    info: { id: `msg_${i + 1}`, role: "user", sessionID: call.session, agent: "build" },
    parts: [{ type: "text", text }] })) };
  await hooks["experimental.chat.messages.transform"]({}, messages);
  out.push({ system: system.system, messages: messages.messages.map((m) => m.parts.map((p) => p.text)) });
}
console.log(JSON.stringify({ out, logged, requests }));
"""


def run_calls(
    data_dir: Path, project: Path, *calls: tuple[str, tuple[str, ...]], timeout_ms: int = 300
) -> Any:
    """What the driver prints: ``out`` (each call as it goes out), ``logged``, ``requests``."""
    asked = {"calls": [{"session": session, "asks": list(asks)} for session, asks in calls]}
    args = ["--input-type=module", "-e", DRIVER, PLUGIN_FILE.as_uri(), str(project), json.dumps(asked)]
    return run_plugin_in_node(args, data_dir, project, timeout_ms=timeout_ms)


def run_plugin(
    data_dir: Path, project: Path, *calls: tuple[str, tuple[str, ...]], timeout_ms: int = 300
) -> Any:
    return run_calls(data_dir, project, *calls, timeout_ms=timeout_ms)["out"]


def remember(daemon: Daemon, project: Path, text: str, category: str) -> None:
    remember_over_rpc(daemon.url, project, text, category)


def test_earlier_messages_and_the_boot_block_are_replayed_with_the_daemon_gone_and_restarted(
    tmp_path: Path, project: Path
) -> None:
    data_dir = tmp_path / "data"
    daemon = start_daemon(data_dir, GRAPHMEM_INGEST__ENABLED="false")
    try:
        remember(daemon, project, DIRECTIVE, "directive")
        remember(daemon, project, FACT, "fact")
        [first] = run_plugin(data_dir, project, (SESSION, ASKS[:1]), timeout_ms=10_000)
    finally:
        daemon.stop()
    assert any(DIRECTIVE in part for part in first["system"][1:])  # the boot block
    assert any(FACT in part for part in first["messages"][0][1:])  # the first turn's recall

    [gone] = run_plugin(data_dir, project, (SESSION, ASKS[:2]))  # no daemon at all

    assert gone["system"] == first["system"]
    assert gone["messages"][0] == first["messages"][0]
    assert gone["messages"][1] == [ASKS[1]]  # only the newest went without recall

    again = start_daemon(data_dir, GRAPHMEM_INGEST__ENABLED="false")
    try:
        [restarted] = run_plugin(data_dir, project, (SESSION, ASKS), timeout_ms=10_000)
    finally:
        again.stop()

    assert restarted["system"] == first["system"]
    assert restarted["messages"][:2] == gone["messages"]  # the whole previous request, byte for byte
    assert restarted["messages"][2][0] == ASKS[2]


def test_a_boot_block_the_daemon_was_too_slow_for_is_never_added_later(tmp_path: Path, project: Path) -> None:
    data_dir = tmp_path / "data"
    [before] = run_plugin(data_dir, project, (SESSION, ASKS[:1]))  # no daemon yet: decided without one
    daemon = start_daemon(data_dir, GRAPHMEM_INGEST__ENABLED="false")
    try:
        remember(daemon, project, DIRECTIVE, "directive")
        [after] = run_plugin(data_dir, project, (SESSION, ASKS[:2]), timeout_ms=10_000)
    finally:
        daemon.stop()

    assert after["system"] == before["system"] == ["You are OpenCode."]
    assert after["messages"][0] == before["messages"][0]


def test_the_journal_is_private_and_bounded(tmp_path: Path, project: Path) -> None:
    data_dir = tmp_path / "data"
    sessions = [(f"ses_{n:03d}", ASKS[:1]) for n in range(205)]

    run_plugin(data_dir, project, *sessions)

    journal = data_dir / "plugin-journal"
    files = sorted(journal.iterdir())
    assert len(files) == 200 and files[-1].name == "ses_204.json"
    assert stat.S_IMODE(journal.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(os.stat(f).st_mode) == 0o600 for f in files)
    assert json.loads(files[-1].read_text("utf-8"))["boot"] == ""


INVOICES = "Invoice PDFs are rendered with WeasyPrint from Jinja templates in billing/templates."
# Earlier user messages whose blocks the tampered journal says showed 50 memories each: 3,000 keys.
EARLIER = tuple(f"Earlier question number {n}." for n in range(60))
NEWEST = "Which port does the staging database listen on, and how are invoice PDFs rendered?"
PLACEHOLDER = '<memory source="graphmem">\n(an earlier block)\n</memory>'


def message_key(n: int, text: str) -> str:
    """The journal's key of user message ``msg_<n>`` with ``text``, as the plugin makes it."""
    return f"msg_{n}|{hashlib.sha256(text.encode()).hexdigest()[:32]}"


def filler(n: int) -> str:
    return f"mem_{n:016x}:{'a' * 12}"


def test_a_tampered_journal_only_leaves_memories_out_and_never_costs_the_turn(
    tmp_path: Path, project: Path
) -> None:
    data_dir = tmp_path / "data"
    daemon = start_daemon(data_dir, GRAPHMEM_INGEST__ENABLED="false")
    try:
        fact = shown_key(remembered(data_dir, project, FACT, category="fact"), content_hash(FACT))
        invoices = shown_key(remembered(data_dir, project, INVOICES, category="fact"), content_hash(INVOICES))
        junk = ["../x", 7, None, "mem_1:XYZXYZXYZXYZ", f"{'a' * 65}:{'a' * 12}", fact + "\n"]
        blocks, shown = {}, {}
        for n, text in enumerate(EARLIER, 1):
            blocks[message_key(n, text)] = PLACEHOLDER
            shown[message_key(n, text)] = [*junk, *(filler(n * 100 + i) for i in range(50))]
        shown[message_key(len(EARLIER), EARLIER[-1])].insert(0, fact)  # the newest earlier block's first
        gone = message_key(999, "A message since reverted.")  # no longer in the conversation
        blocks[gone], shown[gone] = PLACEHOLDER, [invoices]
        journal = {"v": 1, "boot": "", "blocks": blocks, "shown": shown, "owed": []}
        folder = data_dir / "plugin-journal"
        folder.mkdir(mode=0o700)
        (folder / f"{SESSION}.json").write_text(json.dumps(journal), "utf-8")

        run = run_calls(data_dir, project, (SESSION, (*EARLIER, NEWEST)), timeout_ms=10_000)
    finally:
        daemon.stop()

    [turn] = [r for r in run["requests"] if r["path"] == "/plugin/turn"]
    named = turn["body"]["shown"]
    assert turn["status"] == 200
    assert len(named) == MAX_SHOWN_KEYS and all(SHOWN_KEY.fullmatch(key) for key in named)
    assert fact in named and filler(60 * 100) in named  # the newest blocks' keys are kept
    assert filler(1 * 100) not in named  # the oldest go first
    assert invoices not in named  # a block no longer in the conversation hides nothing
    [call] = run["out"]
    newest = call["messages"][-1]
    assert newest[0] == NEWEST and len(newest) == 2
    assert INVOICES in newest[1] and FACT not in newest[1]
