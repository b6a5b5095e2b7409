"""graphmem inside the real Codex CLI (``@openai/codex@0.169.0``), against the Responses stand-in.

``graphmem install codex`` writes the MCP server and the hooks into the sandbox project's
``.codex/config.toml``; a daemon of the test's own serves the store (with the sandbox's
``CODEX_HOME``, so it reads only the sandbox's session files). What graphmem does is read from
what reaches the model: the request bodies the stand-in records. The six-turn session is the
package's ``scenario_with_graphmem``, the prompt cache's "on" run (``test_prompt_cache.py``); the
session that decides something is the package's ``decided``, whose decision reaches OpenCode's
next session too (``test_shared_with_opencode.py``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.codex import CodexSandbox, Decided, PlayedScenario, learned_from
from support.daemons import Daemon, graphmem_cli, remembered, start_daemon
from support.fake_llm import Text
from support.fake_responses import (
    FakeResponses,
    input_items,
    last_user_index,
    offered_tools,
    raw_input,
    text_of,
    texts,
)
from support.session_scenario import TURNS

pytestmark = pytest.mark.integration

BLOCK_OPEN = '<memory source="graphmem">'


def remember(daemon: Daemon, project: Path, text: str, category: str) -> str:
    return remembered(daemon.data_dir, project, text, category=category)


@pytest.fixture
def served(codex: CodexSandbox, tmp_path: Path) -> Iterator[tuple[CodexSandbox, Daemon]]:
    """graphmem installed in the sandbox project (MCP server and hooks) and its daemon serving."""
    data_dir = tmp_path / "graphmem-data"
    done = graphmem_cli(data_dir, "install", "codex", "--project", str(codex.project))
    assert done.returncode == 0, done.stderr
    daemon = start_daemon(
        data_dir, "--port", "0", GRAPHMEM_INGEST__ENABLED="false", CODEX_HOME=str(codex.codex_home)
    )
    codex.extra_env.update(
        GRAPHMEM_CONFIG=str(tmp_path / "no-such-config.toml"),
        GRAPHMEM_PLUGIN_TIMEOUT_MS="5000",  # a loaded machine: what is asserted is where memory goes
    )
    yield codex, daemon
    daemon.stop()


def developer_blocks(body: dict[str, Any]) -> list[tuple[int, str]]:
    """graphmem's blocks in a request: (index in ``input``, text)."""
    return [
        (i, text_of(item))
        for i, item in enumerate(input_items(body))
        if item.get("role") == "developer" and text_of(item).startswith(BLOCK_OPEN)
    ]


def hook_log(daemon: Daemon) -> str:
    path = daemon.data_dir / "hooks.log"
    return path.read_text("utf-8") if path.exists() else ""


def test_graphmems_tools_are_listed_and_a_stored_memory_reaches_the_model_with_no_tool_call(
    served: tuple[CodexSandbox, Daemon], fake_model: FakeResponses
) -> None:
    codex, daemon = served
    directive = remember(
        daemon, codex.project, "Always run ruff format before committing any Python change.", "directive"
    )
    fact = remember(
        daemon, codex.project, "The staging database listens on port 5433 behind the bastion.", "fact"
    )
    fake_model.script(Text("Port 5433."))

    # `codex exec` does not wait for a server that is not required before its first request.
    run = codex.exec(
        "Which port does the staging database listen on?", "-c", "mcp_servers.graphmem.required=true"
    )

    assert "Port 5433." in run.stdout
    [request] = fake_model.requests  # one model call: no tool was called
    tools = offered_tools(request)
    assert {"recall", "remember", "get_context"} <= set(tools["mcp__graphmem"])
    [(boot_at, boot), (turn_at, turn)] = developer_blocks(request)
    user_at = last_user_index(request)
    assert boot_at < user_at < turn_at  # the boot context before the message, recall right after it
    assert directive in boot and "not instructions" in boot
    assert fact in turn and "5433" in turn and directive not in turn
    assert texts(request, "user")[-1] == "Which port does the staging database listen on?", hook_log(daemon)


def test_a_six_turn_session_keeps_every_earlier_request_as_a_byte_identical_prefix(
    scenario_with_graphmem: PlayedScenario,
) -> None:
    played = scenario_with_graphmem
    boot_id, facts = played.boot_id, played.facts
    requests, raw = played.requests, played.raw
    assert len(requests) == len(TURNS)
    assert len({r["prompt_cache_key"] for r in requests}) == 1
    for (before, before_raw), (now, now_raw) in itertools.pairwise(zip(requests, raw, strict=True)):
        # the whole previous request is the start of this one up to its newest user message, byte for byte
        head = input_items(now)[: len(input_items(before))]
        assert head == input_items(before)
        assert len(input_items(before)) <= last_user_index(now)
        assert raw_input(now_raw).startswith(raw_input(before_raw))
        assert now["tools"] == before["tools"] and now.get("instructions") == before.get("instructions")
    for turn, body in enumerate(requests):
        blocks = developer_blocks(body)
        newest = last_user_index(body)
        assert texts(body, "user")[-1] == TURNS[turn][0]
        assert sum(boot_id in text for _, text in blocks) == 1  # the boot context once, from turn 1 on
        for fact_turn, fact_id in facts.items():
            where = [i for i, text in blocks if fact_id in text]
            if fact_turn == turn:
                assert where == [newest + 1], played.hooks_log  # right after this turn's message
            elif fact_turn > turn:
                assert where == []
            else:
                assert len(where) == 1 and where[0] < newest  # as it was sent, not again
        if TURNS[turn][1] is None:
            assert all(i < newest for i, _ in blocks)  # nothing cleared the floor: nothing added


def test_compaction_gets_nothing_and_what_must_be_kept_comes_back_after_it(
    served: tuple[CodexSandbox, Daemon], fake_model: FakeResponses
) -> None:
    codex, daemon = served
    decision = remember(daemon, codex.project, "We decided to keep money in integer cents.", "decision")
    fake_model.script(Text("First answer."), Text("Summary of the conversation."), Text("Second answer."))
    fake_model.input_tokens = 100_000  # past the limit below: Codex compacts before the next turn
    first = codex.exec("How do we store money?")

    codex.exec(
        "And how do we round it?", "-c", "model_auto_compact_token_limit=1000", resume=first.session_id
    )

    _, compaction, after = fake_model.requests
    # Codex's own compaction call (no user turn, no hook) gets no block of graphmem's.
    assert texts(compaction, "user")[-1].startswith("You are performing a CONTEXT CHECKPOINT COMPACTION")
    assert len(developer_blocks(compaction)) == len(developer_blocks(fake_model.requests[0]))
    # After it, before the next message: what compaction must keep (the decision among it).
    kept = [
        text_of(i) for i in input_items(after) if text_of(i).startswith("graphmem: the user's conventions")
    ]
    assert len(kept) == 1 and decision in kept[0], hook_log(daemon)
    assert texts(after, "user")[-1] == "And how do we round it?"


def test_what_a_session_decides_is_learned_when_it_ends_and_reaches_the_next_session(
    decided: Decided,
) -> None:
    codex, daemon, decision = decided.codex, decided.daemon, decided.decision
    assert "Postgres 16" in decision["text"] and decision["source"] == "codex"
    assert decision["session"] == decided.session

    codex.model.reset(Text("Postgres 16."))
    codex.exec("Which database should the billing service use?")

    [request] = codex.model.requests
    assert any(decision["id"] in text for _, text in developer_blocks(request)), hook_log(daemon)
    again = learned_from(daemon, codex.project, decided.session)
    assert len([m for m in again if m["category"] == "decision"]) == 1  # learned once, however often asked
