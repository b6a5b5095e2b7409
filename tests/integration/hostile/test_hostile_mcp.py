"""Hostile input through MCP: every tool, called by a real FastMCP client over HTTP (and a
few over stdio through ``graphmem mcp``), with what an agent talked into attacking the user
would send. After each case the daemon is healthy, no file outside its folders changed, no
answer leaked a traceback or a file's secret, and the stored memories are unchanged, or
changed exactly as the tool's success answer says.

The tables live in ``tests/support/mcp_cases.py``; run the suite with
``.venv/bin/python -m pytest -q -p no:cacheprovider tests/integration/hostile``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from support.daemons import http, sandbox_env
from support.hostile import (
    SECRET,
    Snapshot,
    Stage,
    assert_clear,
    assert_healthy,
    assert_no_internal_failures,
    snapshot,
)
from support.mcp_cases import CASES, RAW_CASES, Case, Ctx, RawCase
from support.mcp_loop import McpLoop, Outcome, Session

pytestmark = pytest.mark.integration

MIN_CASES = 150
LEAKED = (SECRET, "root:x:0:0")  # the planted secret, /etc/passwd's first line


@pytest.fixture(scope="module")
def loop() -> Iterator[McpLoop]:
    running = McpLoop()
    yield running
    running.close()


@pytest.fixture(scope="module")
def mcp(loop: McpLoop, stage: Stage) -> Session:
    return loop.connect(Client(stage.daemon.mcp_url, auth=stage.daemon.token))


@pytest.fixture(scope="module")
def other(loop: McpLoop, stage: Stage) -> Session:
    """A second agent's client, for conflicting calls at the same moment."""
    return loop.connect(Client(stage.daemon.mcp_url, auth=stage.daemon.token))


def test_the_suite_covers_every_tool_with_at_least_150_cases(mcp: Session) -> None:
    tools = {tool.name for tool in mcp.loop.run(mcp.client.list_tools())}
    assert {case.tool for case in CASES} == tools
    assert len(CASES) + len(RAW_CASES) + len(STDIO_CASES) + len(CONFLICTS) + 1 >= MIN_CASES


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_tool_call(case: Case, stage: Stage, mcp: Session) -> None:
    arguments = case.arguments(Ctx(stage, mcp))
    files, before = stage.untouched(), snapshot(stage.daemon)
    outcome = mcp.call(case.tool, arguments)
    judge(case, arguments, outcome, stage, before, files)


@pytest.mark.parametrize("case", RAW_CASES, ids=[c.name for c in RAW_CASES])
def test_hostile_json_rpc_body(case: RawCase, stage: Stage) -> None:
    """What a client library would never send: the MCP route gets the bytes themselves."""
    files, before = stage.untouched(), snapshot(stage.daemon)
    status, _, raw = http(
        "POST",
        stage.daemon.mcp_url,
        case.body,
        {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
    )
    assert status < 500, raw[:500]
    text = raw.decode("utf-8", "replace")
    if not raw:  # a message the server takes for a notification gets no answer
        assert status == 202 and case.silent, f"{status} with no body"
        assert_unchanged(stage, before, files)
        return
    assert_clear(text)
    answer = json.loads(raw) if raw else {}
    if isinstance(answer, dict) and isinstance(answer.get("result"), dict):
        result = answer["result"]
        if not result.get("isError"):
            assert case.may_succeed, f"accepted: {text[:300]}"
            check_acknowledged(
                case.tool, result.get("structuredContent") or {}, before, snapshot(stage.daemon)
            )
            return
    else:
        assert status >= 400 or "error" in answer, text[:300]
    assert_unchanged(stage, before, files)


def judge(
    case: Case,
    arguments: dict[str, Any],
    outcome: Outcome,
    stage: Stage,
    before: Snapshot,
    files: dict[str, bytes],
) -> None:
    assert_healthy(stage.daemon)
    shown = json.dumps(outcome.value, ensure_ascii=False) if outcome.ok else str(outcome.value)
    for secret in LEAKED:
        assert secret not in shown, f"the answer reveals {secret!r}"
    assert stage.untouched() == files, "a file outside graphmem's folders changed"
    if case.expect == "error":
        assert not outcome.ok, f"accepted: {shown[:300]}"
    elif case.expect == "ok":
        assert outcome.ok, f"refused: {shown[:300]}"
    if not outcome.ok:
        assert_clear(shown)
        assert case.says.lower() in shown.lower(), f"{case.says!r} not in {shown[:300]!r}"
        assert snapshot(stage.daemon) == before, "a refused call changed the store"
    else:
        check_acknowledged(case.tool, outcome.value, before, snapshot(stage.daemon))


def assert_unchanged(stage: Stage, before: Snapshot, files: dict[str, bytes]) -> None:
    assert_healthy(stage.daemon)
    assert stage.untouched() == files
    assert snapshot(stage.daemon) == before


def check_acknowledged(tool: str, result: dict[str, Any], before: Snapshot, after: Snapshot) -> None:
    """A success changed exactly what it says it did, and nothing else."""
    named = set(_named(tool, result))
    rest_before, rest_after = before, after
    for memory_id in named:
        rest_before, rest_after = rest_before.without(memory_id), rest_after.without(memory_id)
    if tool == "import_memories":
        added = set(after.memories) - set(before.memories)
        assert len(added) == (0 if result["dry_run"] else result["memories_added"])
        assert set(before.memories) <= set(after.memories)
        changed = [i for i in before.memories if before.memories[i] != after.memories[i]]
        assert len(changed) <= (0 if result["dry_run"] else result["memories_updated"])
        return
    assert rest_after == rest_before, f"{tool} changed memories it did not name"
    if tool == "remember":
        stored = after.memories[result["id"]]
        assert stored[0] == result["memory"]["text"] and stored[4] == result["memory"]["status"]
        assert result["created"] == (result["id"] not in before.memories)
    elif tool == "update_memory" and "memory" in result:
        stored = after.memories[result["memory"]["id"]]
        assert stored[0] == result["memory"]["text"] and stored[4] == result["memory"]["status"]
    elif tool == "delete_memory":
        assert result["deleted"]["id"] in before.memories and result["deleted"]["id"] not in after.memories
    elif tool == "session_end" and result.get("summary_memory_id"):
        assert result["summary_memory_id"] in after.memories
    elif not named:
        assert after == before, f"{tool} answered without naming a change, yet the store changed"


def _named(tool: str, result: dict[str, Any]) -> Iterator[str]:
    """The memory ids a success answer says it created or changed."""
    if tool == "remember":
        yield result["id"]
        yield from result.get("superseded", [])
        if result.get("duplicate_of"):
            yield result["duplicate_of"]
    elif tool == "update_memory":
        for key in ("memory", "target"):
            if key in result:
                yield result[key]["id"]
        for key in ("source", "target"):
            if isinstance(result.get(key), str):
                yield result[key]
        if "link" in result:
            yield result["link"]["source"]
            yield result["link"]["target"]
    elif tool == "delete_memory":
        yield result["deleted"]["id"]
    elif tool == "session_end" and result.get("summary_memory_id"):
        yield result["summary_memory_id"]


# -- two agents at once ----------------------------------------------------------------------

CONFLICTS = ["edit-vs-delete", "edit-vs-edit", "archive-vs-restore-vs-delete", "claim-vs-claim"]


@pytest.mark.parametrize("round_", range(3))
@pytest.mark.parametrize("conflict", CONFLICTS)
def test_conflicting_calls_at_the_same_moment(
    conflict: str, round_: int, stage: Stage, mcp: Session, other: Session
) -> None:
    text = f"Victim {conflict} round {round_}: the cache TTL is 30 s"
    victim = mcp.call("remember", {"text": text, "project": str(stage.project)})
    assert victim.ok, victim
    vid = victim.value["id"]
    before = snapshot(stage.daemon)
    if conflict == "claim-vs-claim":
        first = mcp.call("session_start", {"agent": "a/one"}).value["session"]["id"]
        second = other.call("session_start", {"agent": "b/two"}).value["session"]["id"]
        results = mcp.loop.together(
            (mcp, "claim_item", {"session_id": first, "item": f"!9{round_}"}),
            (other, "claim_item", {"session_id": second, "item": f"!9{round_}"}),
        )
        assert all(r.ok for r in results), results  # a conflict is an answer, not an error
        held = [r.value for r in results if r.value["claim"] is not None]
        refused = [r.value["conflict"] for r in results if r.value["claim"] is None]
        assert len(held) == 1 and len(refused) == 1, results  # exactly one holder
        assert refused[0]["session"] == held[0]["claim"]["session"]
        assert_clear(refused[0]["message"])
        assert snapshot(stage.daemon) == before
        return
    calls: list[tuple[Session, str, dict[str, Any]]]
    if conflict == "edit-vs-delete":
        calls = [
            (mcp, "update_memory", {"id": vid, "action": "edit", "text": "The cache TTL is 60 s"}),
            (other, "delete_memory", {"id": vid, "confirm": True}),
        ]
    elif conflict == "edit-vs-edit":
        calls = [
            (mcp, "update_memory", {"id": vid, "action": "edit", "text": "The cache TTL is 60 s"}),
            (other, "update_memory", {"id": vid, "action": "edit", "text": "The cache TTL is 90 s"}),
        ]
    else:
        calls = [
            (mcp, "update_memory", {"id": vid, "action": "archive"}),
            (other, "update_memory", {"id": vid, "action": "restore"}),
            (mcp, "delete_memory", {"id": vid, "confirm": True}),
        ]
    results = mcp.loop.together(*calls)
    assert_healthy(stage.daemon)
    after = snapshot(stage.daemon)
    for result in results:
        if not result.ok:
            assert_clear(result.value)
            assert "No memory" in result.value, result  # only losing the race to a delete may fail
    assert after.without(vid) == before.without(vid)
    deleted = any(r.ok and "deleted" in r.value for r in results)
    assert (vid not in after.memories) == deleted
    if not deleted:
        acknowledged = {before.memories[vid][0]} | {
            r.value["memory"]["text"] for r in results if r.ok and "memory" in r.value
        }
        assert after.memories[vid][0] in acknowledged


# -- over stdio, through graphmem mcp --------------------------------------------------------

STDIO_CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("nul-project", "recall", {"query": "x", "project": "/tmp/a\x00b"}),
    ("import-etc-passwd", "import_memories", {"path": "/etc/passwd", "dry_run": True}),
    ("import-fifo", "import_memories", {"path": "pipe.jsonl"}),
    ("export-bashrc", "export_memories", {"path": "~/.bashrc", "overwrite": True}),
    ("huge-text", "remember", {"text": "x" * 1_000_000}),
    ("padded-unknown-id", "delete_memory", {"id": " mem_0000000000000000 ", "confirm": True}),
    ("unknown-tool", "drop_everything", {}),
    ("context-ref-garbage", "enrich_entity", {"ref": "&99999999999999999999"}),
]


def test_hostile_calls_through_the_stdio_proxy(stage: Stage, loop: McpLoop) -> None:
    env = sandbox_env(stage.daemon.data_dir, HOME=str(stage.home), **stage.store_env)
    transport = StdioTransport(sys.executable, ["-m", "graphmem", "mcp"], env=env, cwd=str(stage.project))
    proxy = loop.connect(Client(transport))
    for name, tool, arguments in STDIO_CASES:
        if tool == "import_memories" and arguments.get("path") == "pipe.jsonl":
            arguments = {**arguments, "path": str(stage.fifo)}
        files, before = stage.untouched(), snapshot(stage.daemon)
        outcome = proxy.call(tool, arguments)
        assert not outcome.ok, (name, outcome)
        assert_clear(str(outcome.value))
        assert all(secret not in str(outcome.value) for secret in LEAKED), name
        assert_unchanged(stage, before, files)


PING = b'{"jsonrpc": "2.0", "id": 7, "method": "ping"}\n'


def through_the_proxy(stage: Stage, line: bytes) -> list[dict[str, Any]]:
    """``line``, then a ping, sent to ``graphmem mcp`` as a client sends them; its replies, once
    it checked the proxy said nothing of a traceback and answered the ping (it kept serving)."""
    done = subprocess.run(
        [sys.executable, "-m", "graphmem", "mcp"],
        input=line + b"\n" + PING,
        env=sandbox_env(stage.daemon.data_dir, HOME=str(stage.home), **stage.store_env),
        cwd=stage.project,
        capture_output=True,
        timeout=120,
    )
    replies: list[dict[str, Any]] = [json.loads(reply) for reply in done.stdout.splitlines()]
    assert b"Traceback" not in done.stderr, done.stderr[-2000:]
    assert any(r.get("id") == 7 and "result" in r for r in replies), replies
    return replies


def test_the_stdio_proxy_answers_a_message_nested_too_deep_and_keeps_serving(stage: Stage) -> None:
    """An MCP client's line of 100,000 brackets is a parse error for that line, not the proxy's end."""
    replies = through_the_proxy(stage, b"[" * 100_000)

    assert replies[0]["error"]["code"] == -32700 and "JSON" in replies[0]["error"]["message"]


def test_a_line_that_is_not_utf8_is_a_parse_error_never_stored_with_replacement_characters(
    stage: Stage,
) -> None:
    """``graphmem mcp`` used to read stdin with errors="replace": the bytes became U+FFFD and were stored."""
    call = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {
            "name": "remember",
            "arguments": {"text": "Deploys need the QUOKKA flag", "category": "fact"},
        },
    }

    replies = through_the_proxy(stage, json.dumps(call).encode().replace(b"QUOKKA", b"QUO\xffKKA"))

    assert replies[0]["error"]["code"] == -32700 and "not valid UTF-8: byte" in replies[0]["error"]["message"]
    assert not any("KKA" in memory[0] for memory in snapshot(stage.daemon).memories.values())


def test_no_call_ever_failed_inside(stage: Stage) -> None:
    """Counted by the daemon itself: no HTTP 500 and no tool that failed with an unexpected error."""
    assert_no_internal_failures(stage.daemon)
