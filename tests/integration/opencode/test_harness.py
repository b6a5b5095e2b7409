"""The OpenCode harness works: the real CLI runs turns against the fake model and a stand-in MCP server.

The first two tests check the fake model alone (no OpenCode); the others start OpenCode (the last
one `opencode serve`, which a multi-turn test sends its turns to). The two that read one plain
turn (what it printed, the title agent's request) read the same one (``said_hi``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.fake_llm import (
    EXHAUSTED_TEXT,
    TITLE_TEXT,
    FakeLLM,
    Text,
    ToolCall,
    is_title_request,
    offered_tools,
    system_prompt,
    tool_messages,
)
from support.opencode import OpenCodeSandbox

pytestmark = pytest.mark.integration

STAND_MCP = Path(__file__).resolve().parents[2] / "support" / "stand_mcp.py"


def _post(llm: FakeLLM, body: dict[str, Any]) -> bytes:
    request = urllib.request.Request(
        f"{llm.base_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        data: bytes = response.read()
        return data


def _sse_chunks(raw: bytes) -> list[Any]:
    lines = [line.removeprefix("data: ") for line in raw.decode().split("\n\n") if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    return [json.loads(line) for line in lines[:-1]]


def test_fake_llm_streams_scripted_replies_and_records_requests(fake_llm: FakeLLM) -> None:
    fake_llm.script(ToolCall("stand_echo", {"text": "ping"}), {"text": "done"})
    with urllib.request.urlopen(f"{fake_llm.base_url}/models", timeout=10) as response:
        assert json.load(response)["data"][0]["id"] == "fake-model"

    turn = {"model": "fake-model", "stream": True, "messages": [{"role": "user", "content": "go"}]}
    tools = [{"type": "function", "function": {"name": "x"}}]
    chunks = _sse_chunks(_post(fake_llm, {**turn, "tools": tools}))
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    calls = [tc for c in chunks for tc in c["choices"][0]["delta"].get("tool_calls", [])]
    assert calls[0]["function"]["name"] == "stand_echo"
    assert json.loads("".join(tc["function"]["arguments"] for tc in calls)) == {"text": "ping"}
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"

    chunks = _sse_chunks(_post(fake_llm, turn))
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks) == "done"
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"

    plain = json.loads(_post(fake_llm, {**turn, "stream": False}))
    assert plain["choices"][0]["message"]["content"] == EXHAUSTED_TEXT
    assert fake_llm.exhausted == 1
    assert len(fake_llm.requests) == 3
    assert offered_tools(fake_llm.requests[0]) == ["x"]


def test_fake_llm_answers_title_requests_without_consuming_the_script(fake_llm: FakeLLM) -> None:
    fake_llm.script(Text("scripted"))
    title = {
        "model": "fake-model",
        "stream": False,
        "messages": [
            {"role": "system", "content": "You are a title generator. You output ONLY a thread title."},
            {"role": "user", "content": "Generate a title for this conversation:\n"},
            {"role": "user", "content": "hello"},
        ],
    }
    assert json.loads(_post(fake_llm, title))["choices"][0]["message"]["content"] == TITLE_TEXT
    assert fake_llm.remaining == 1
    assert fake_llm.title_requests == [title]
    assert fake_llm.requests == []


@pytest.fixture(scope="module")
def said_hi(
    opencode_binary: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[OpenCodeSandbox, FakeLLM, subprocess.CompletedProcess[str]]]:
    """One ``opencode run "say hi"`` in a sandbox of its own, for the tests that only read what it
    did (a turn in a new sandbox is about 6 s of CPU): what it printed, what reached the model,
    the session it named."""
    with FakeLLM() as llm:
        opencode = OpenCodeSandbox.create(opencode_binary, tmp_path_factory.mktemp("said-hi"), llm)
        llm.script(Text("hello from the fake model"))
        yield opencode, llm, opencode.run_opencode(["run", "say hi"], timeout=120)


def test_run_prints_the_scripted_text(
    said_hi: tuple[OpenCodeSandbox, FakeLLM, subprocess.CompletedProcess[str]],
) -> None:
    _, fake_llm, done = said_hi

    assert done.returncode == 0, done.stderr
    assert "hello from the fake model" in done.stdout
    assert len(fake_llm.requests) == 1
    assert fake_llm.exhausted == 0
    request = fake_llm.requests[0]
    assert "You are opencode" in system_prompt(request)
    # `opencode run` quotes an argument that contains a space before sending it.
    assert request["messages"][-1] == {"role": "user", "content": '"say hi"'}


def test_title_agent_requests_are_recognised(
    said_hi: tuple[OpenCodeSandbox, FakeLLM, subprocess.CompletedProcess[str]],
) -> None:
    opencode, fake_llm, _ = said_hi

    # In `run` mode OpenCode's hidden title agent names the new session with its own model call.
    assert len(fake_llm.title_requests) == 1
    title_request = fake_llm.title_requests[0]
    assert is_title_request(title_request)
    assert "title generator" in system_prompt(title_request)
    assert not any(is_title_request(body) for body in fake_llm.requests)
    assert [s["title"] for s in opencode.sessions()] == [TITLE_TEXT]


def test_mcp_list_reports_the_stand_in_server_connected(opencode: OpenCodeSandbox) -> None:
    opencode.add_mcp("stand", {"type": "local", "command": [sys.executable, str(STAND_MCP)], "enabled": True})

    servers = opencode.mcp_list()

    assert servers["stand"].status == "connected", servers


def test_turn_calls_the_mcp_tool_and_sends_its_result_back(
    opencode: OpenCodeSandbox, fake_llm: FakeLLM
) -> None:
    opencode.add_mcp("stand", {"type": "local", "command": [sys.executable, str(STAND_MCP)], "enabled": True})
    fake_llm.script(ToolCall("stand_echo", {"text": "ping"}), Text("done"))

    done = opencode.run_turn("echo ping, please", timeout=120)

    assert "done" in done.stdout
    assert fake_llm.remaining == 0
    assert fake_llm.exhausted == 0
    first, second = fake_llm.requests
    assert "stand_echo" in offered_tools(first)
    assert first["messages"][-1] == {"role": "user", "content": "echo ping, please"}
    assert tool_messages(first) == []
    [result] = tool_messages(second)
    assert json.loads(result["content"]) == {"echo": "ping"}
    [assistant] = [m for m in second["messages"] if m["role"] == "assistant"]
    assert assistant["tool_calls"][0]["id"] == result["tool_call_id"]


def test_a_served_opencode_is_stopped_and_its_output_kept_when_the_block_fails(
    opencode: OpenCodeSandbox,
) -> None:
    with pytest.raises(RuntimeError) as failed, opencode.serve() as server:
        raise RuntimeError("the test failed")

    assert server.process.poll() is not None  # stopped, its MCP servers with it
    assert server.url.startswith("http://127.0.0.1:")
    [note] = failed.value.__notes__  # what the server printed, for the failure's message
    assert f"opencode server listening on {server.url}" in note
