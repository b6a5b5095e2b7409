"""graphmem inside the real Claude Code (``@anthropic-ai/claude-code@2.1.328``), headless (``claude -p``),
against a local Anthropic-Messages stand-in that records every request: the tools are listed to the
model, an earlier session's memory reaches the model with no tool call, every request of a six-turn
session starts with the whole previous one, and what a session decided is recalled after it ends.
A test of several turns runs them in one process (``run_session``) where a user's session would,
and a new process continues a session (``--continue``) where the test is about a reopened one. The
six-turn session is the package's ``scenario_with_graphmem``, the prompt cache's "on" run
(``test_prompt_cache_share.py``); the tests of one new session in a project where graphmem is
installed start it in the module's sandbox (``asked``), one after another, each reading the
requests of its own session."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.claude_code import (
    ClaudeCodeSandbox,
    PlayedScenario,
    common_prefix_chars,
    prompt_prefix,
    sandbox,
    texts_of,
    tool_names,
)
from support.daemons import POLL_S, listed, remembered
from support.fake_llm import ToolCall
from support.session_scenario import TURNS

pytestmark = pytest.mark.integration

FACT = "The staging database listens on port 5433."
DIRECTIVE = "Never push directly to main; open a merge request."
BLOCK_OPEN = '<memory source="graphmem">'
LEARN_TIMEOUT_S = 120.0


def install(claude: ClaudeCodeSandbox) -> None:
    done = claude.graphmem("install", "claude-code")
    assert done.returncode == 0, done.stderr
    started = claude.graphmem("serve", "--detach")
    assert started.returncode == 0, started.stderr


def remember(claude: ClaudeCodeSandbox, text: str, category: str) -> None:
    remembered(claude.data_dir, claude.project, text, category=category)


def newest_user_texts(body: dict[str, Any]) -> list[str]:
    return texts_of(body["messages"][-1])


def system_text(body: dict[str, Any]) -> str:
    return json.dumps(body.get("system", []))


@dataclass(frozen=True)
class Asked:
    """The module's sandbox after its first turn."""

    claude: ClaudeCodeSandbox
    out: str  # what the turn's ``claude -p`` printed
    requests: list[dict[str, Any]]  # the requests of that turn


@pytest.fixture(scope="module")
def asked(claude_binary: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Asked]:
    """graphmem installed, an earlier session's fact and directive stored, and one turn asked about
    the fact: the sandbox, what ``claude -p`` printed and the requests of that turn, for the tests
    that only read them. The tests of a new session in an installed project (a subagent's, a
    compacted one's, one whose decision is learned) start theirs in it and read the requests from
    where they started (a sandbox of their own with its daemon was 2 to 3 s of CPU each)."""
    with sandbox(claude_binary, tmp_path_factory.mktemp("asked")) as claude:
        install(claude)
        remember(claude, FACT, "fact")
        remember(claude, DIRECTIVE, "directive")
        claude.api.script("It listens on 5433.")
        out = claude.run_turn("Which port does the staging database listen on?")
        yield Asked(claude, out, list(claude.api.requests))


def test_graphmems_tools_are_listed_to_the_model(asked: Asked) -> None:
    names = tool_names(asked.requests[0])
    assert {"mcp__graphmem__recall", "mcp__graphmem__remember", "mcp__graphmem__get_context"} <= set(names)


def test_an_earlier_sessions_memory_reaches_the_model_with_no_tool_call(asked: Asked) -> None:
    assert "5433" in asked.out
    (request,) = asked.requests  # one model call: no tool was called
    newest = "\n".join(newest_user_texts(request))
    assert FACT in newest, asked.claude.hooks_log()  # the turn's recall, in the prompt's own message
    assert DIRECTIVE in newest  # the boot context, in the session's first message
    assert BLOCK_OPEN not in system_text(request)  # never in the system prompt
    assert newest.index(FACT) < newest.index("Which port does the staging database listen on?")


def test_every_request_of_a_six_turn_session_starts_with_the_whole_previous_one(
    scenario_with_graphmem: PlayedScenario,
) -> None:
    """Three turns in one process, as an interactive session runs them; three more in a new process
    that continues the session (--continue), as a user who reopens it: the prefix must hold both ways."""
    requests, hooks_log = scenario_with_graphmem.requests, scenario_with_graphmem.hooks_log
    assert len(requests) == len(TURNS)
    for earlier, later in itertools.pairwise(requests):
        before, after = prompt_prefix(earlier), prompt_prefix(later)
        assert after[: len(before)] == before  # tools, system and every earlier message, byte for byte
        assert common_prefix_chars(earlier, later) == len("".join(before))
    for turn, needle in ((0, "5433"), (2, "WeasyPrint"), (4, "/var/cache/ci-wheels")):
        assert needle in str(TURNS[turn][1])  # the fact recall should bring to the turn
        assert needle in "\n".join(newest_user_texts(requests[turn])), f"turn {turn + 1}: {hooks_log}"
        assert all(needle not in "\n".join(newest_user_texts(r)) for r in requests[:turn])
    assert all(BLOCK_OPEN not in system_text(r) for r in requests)


def test_a_sessions_decision_is_recalled_after_it_ends(asked: Asked) -> None:
    claude = asked.claude
    claude.api.script("Noted.")
    claude.run_turn("We decided to use PostgreSQL 16 for the orders service because of logical replication.")
    deadline = time.monotonic() + LEARN_TIMEOUT_S
    found: list[dict[str, Any]] = []
    while time.monotonic() < deadline and not found:
        rows = listed(claude.data_dir, claude.project, categories=("decision",), limit=50)
        found = [m for m in rows if "PostgreSQL 16" in m.get("text", "")]
        if not found:
            time.sleep(POLL_S)
    assert found, f"nothing learned; hooks.log:\n{claude.hooks_log()}"
    assert found[0]["source"] == "claude-code" and found[0]["session"]
    recalled = claude.graphmem("recall", "which database does the orders service use", "--json")
    assert "PostgreSQL 16" in recalled.stdout
    session = found[0]["session"]
    assert (
        claude.transcripts / next(p.name for p in claude.transcripts.iterdir()) / f"{session}.jsonl"
    ).exists()


def test_a_subagents_calls_get_no_memory(asked: Asked) -> None:
    claude = asked.claude
    since = len(claude.api.requests)
    task = "Find which port the staging database listens on."
    claude.api.script(
        ToolCall(
            "Agent", {"description": "Find the port", "prompt": task, "subagent_type": "general-purpose"}
        ),
        "The subagent's answer: 5433.",
        "It listens on 5433.",
    )
    claude.run_turn("Which port does the staging database listen on? Ask a subagent.")
    requests = claude.api.requests[since:]
    subagent = [r for r in requests if task in "\n".join(texts_of(r["messages"][0]))]
    main = [r for r in requests if r not in subagent]
    assert subagent, [texts_of(r["messages"][0])[-1][:80] for r in requests]
    assert all(BLOCK_OPEN not in json.dumps(r) for r in subagent)
    assert FACT in "\n".join(newest_user_texts(main[0]))


def test_with_no_daemon_the_turn_goes_on_and_the_hooks_start_one(claude: ClaudeCodeSandbox) -> None:
    done = claude.graphmem("install", "claude-code")
    assert done.returncode == 0, done.stderr
    claude.extra_env["GRAPHMEM_PLUGIN_TIMEOUT_MS"] = "50"  # far less than a daemon takes to start
    claude.api.script("Hello.")
    assert "Hello." in claude.run_turn("Say hello.")
    assert claude.api.exhausted == 0 and len(claude.api.requests) == 1
    assert "Traceback" not in claude.hooks_log()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (claude.data_dir / "daemon.json").exists():
        time.sleep(POLL_S)
    assert (claude.data_dir / "daemon.json").exists()  # the hooks (or graphmem mcp) started one


def test_compaction_keeps_what_matters_and_the_boot_context_comes_back(asked: Asked) -> None:
    claude = asked.claude
    since = len(claude.api.requests)
    claude.api.script(
        "Hello.", "<analysis>Small talk.</analysis>\n<summary>The user said hello.</summary>", "Next."
    )
    claude.run_session(["Say hello.", "/compact", "What next?"])  # one process, as in the TUI
    requests = claude.api.requests[since:]
    compaction = next(r for r in requests if "Additional Instructions" in json.dumps(r))
    instructions = "\n".join(texts_of(compaction["messages"][-1]))
    assert DIRECTIVE in instructions.split("Additional Instructions", 1)[1]  # the PreCompact hook's text
    after = requests[-1]
    texts = [t for m in after["messages"] for t in texts_of(m)]  # compaction left one user message
    assert any("SessionStart hook additional context" in t and DIRECTIVE in t for t in texts)
