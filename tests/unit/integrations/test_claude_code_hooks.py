"""Claude Code's hooks: the boot context once per session, each prompt's recall, what compaction
keeps, learning the session when it stops or ends; hostile input adds nothing and logs one line."""

from __future__ import annotations

import io
import json
import logging
import os
import stat
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from support.claude_transcript import TranscriptWriter

from graphmem.integrations import claude_code, hook_command
from graphmem.integrations.claude_code import ClaudeCodeHooks

SESSION = "0b5c3e8e-3f5a-4c43-9a0e-1f2d3c4b5a69"
BLOCK = '<memory source="graphmem">\n- [fact] The staging database listens on port 5433.\n</memory>'
BOOT = '<memory source="graphmem">\n## Conventions\n- [directive] Never push to main.\n</memory>'
BOOT_SHOWN = f"mem_{'b' * 16}:{'c' * 12}"


class Daemon:
    """Stands in for ``HookClient``: records each call, answers what the route would."""

    def __init__(self, data_dir: Path) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self._data_dir = data_dir
        self.silent = False

    def data_dir(self) -> tuple[Path, str | None]:
        return self._data_dir, None

    def call(self, path: str, body: Mapping[str, Any], deadline_s: float) -> dict[str, Any]:
        self.calls.append((path, dict(body)))
        if self.silent:
            return {}
        if path == "/plugin/boot":
            return {"block": BOOT, "shown": [BOOT_SHOWN]}
        if path == "/plugin/turn":
            newest = body["messages"][-1]["id"]
            return {"blocks": {newest: BLOCK}, "shown": [f"mem_{len(self.calls):016x}:{'a' * 12}"]}
        if path == "/plugin/compaction":
            return {"context": ["Keep: never push to main."]}
        return {"queued": True}


@pytest.fixture
def daemon(tmp_path: Path) -> Daemon:
    return Daemon(tmp_path / "data")


@pytest.fixture
def claude_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(folder))
    monkeypatch.delenv("GRAPHMEM_PLUGIN", raising=False)
    return folder


def hook(daemon: Daemon, event: str, **given: Any) -> str:
    body = {"session_id": SESSION, "cwd": "/home/me/shop", **given}
    return ClaudeCodeHooks(daemon).answer(event, io.BytesIO(json.dumps(body).encode()))  # type: ignore[arg-type]


def turns(daemon: Daemon) -> list[dict[str, Any]]:
    """What each ``/plugin/turn`` call sent, in order."""
    return [body for path, body in daemon.calls if path == "/plugin/turn"]


def context(answer: str) -> str:
    output = json.loads(answer)["hookSpecificOutput"]
    assert set(output) == {"hookEventName", "additionalContext"}
    return str(output["additionalContext"])


@pytest.mark.parametrize("source", ["startup", "clear", "compact"])
def test_a_session_that_starts_gets_the_boot_context(daemon: Daemon, claude_dir: Path, source: str) -> None:
    assert context(hook(daemon, "session-start", source=source)) == BOOT
    assert daemon.calls == [("/plugin/boot", {"session_id": SESSION, "directory": "/home/me/shop"})]


def test_a_resumed_session_gets_no_second_boot_context(daemon: Daemon, claude_dir: Path) -> None:
    assert hook(daemon, "session-start", source="resume") == ""
    assert daemon.calls == []


def test_each_prompt_gets_its_recall_and_names_the_earlier_prompts(daemon: Daemon, claude_dir: Path) -> None:
    hook(daemon, "session-start", source="startup")
    first = hook(daemon, "user-prompt-submit", prompt="Where does staging listen?", prompt_id="p-1")
    second = hook(daemon, "user-prompt-submit", prompt="And production?", prompt_id="p-2")
    assert context(first) == BLOCK and context(second) == BLOCK
    assert json.loads(first)["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    named = [m["id"] for m in turns(daemon)[1]["messages"]]
    assert named == ["p-1", "p-2"]
    assert turns(daemon)[1]["text"] == "And production?"


def test_what_the_boot_block_and_each_prompts_block_showed_is_named_to_the_daemon_with_later_prompts(
    daemon: Daemon, claude_dir: Path
) -> None:
    hook(daemon, "session-start", source="startup")
    hook(daemon, "user-prompt-submit", prompt="Where does staging listen?", prompt_id="p-1")
    hook(daemon, "user-prompt-submit", prompt="And production?", prompt_id="p-2")

    first_turn_shown = f"mem_{2:016x}:{'a' * 12}"  # the daemon's answer to its second call
    assert daemon.calls[1][1]["shown"] == [BOOT_SHOWN]
    assert daemon.calls[2][1]["shown"] == [BOOT_SHOWN, first_turn_shown]  # a restarted daemon hears it too


def test_a_journal_naming_what_is_no_memory_as_shown_sends_only_the_memories(
    daemon: Daemon, claude_dir: Path
) -> None:
    journal = daemon.data_dir()[0] / "hook-journal" / "claude-code" / f"{SESSION}.json"
    journal.parent.mkdir(parents=True)
    rows = [["p-1", "h", False, ["../../x", 7, f"mem_{'d' * 16}:{'e' * 12}"]]]
    journal.write_text(json.dumps({"v": 2, "boot": "not a list", "messages": rows}))

    hook(daemon, "user-prompt-submit", prompt="And production?", prompt_id="p-2")

    assert turns(daemon)[0]["shown"] == [BOOT_SHOWN, f"mem_{'d' * 16}:{'e' * 12}"]


def test_a_prompt_the_daemon_did_not_answer_goes_bare_and_the_daemon_hears_so(
    daemon: Daemon, claude_dir: Path
) -> None:
    daemon.silent = True
    assert hook(daemon, "user-prompt-submit", prompt="first", prompt_id="p-1") == ""
    daemon.silent = False
    hook(daemon, "user-prompt-submit", prompt="second", prompt_id="p-2")
    first_hash = turns(daemon)[0]["messages"][0]["hash"]
    assert turns(daemon)[1]["messages"][0] == {"id": "p-1", "hash": first_hash, "bare": True}


def test_a_one_megabyte_prompt_is_sent_cut(daemon: Daemon, claude_dir: Path) -> None:
    assert context(hook(daemon, "user-prompt-submit", prompt="x" * 1_000_000, prompt_id="p-1")).endswith(
        BLOCK
    )
    assert len(turns(daemon)[0]["text"]) == claude_code.MAX_TEXT_CHARS


def test_a_session_whose_start_got_no_boot_block_gets_it_with_its_first_answered_prompt(
    daemon: Daemon, claude_dir: Path
) -> None:
    daemon.silent = True  # no daemon yet when the session started, nor at its first prompt
    assert hook(daemon, "session-start", source="startup") == ""
    assert hook(daemon, "user-prompt-submit", prompt="first", prompt_id="p-1") == ""
    daemon.silent = False

    second = hook(daemon, "user-prompt-submit", prompt="Where does staging listen?", prompt_id="p-2")
    third = hook(daemon, "user-prompt-submit", prompt="And production?", prompt_id="p-3")

    assert context(second) == f"{BOOT}\n{BLOCK}"  # the conventions first, then what the prompt asked
    assert context(third) == BLOCK  # once: the journal says it was delivered
    paths = [path for path, _ in daemon.calls]
    assert paths == [
        "/plugin/boot",
        "/plugin/boot",
        "/plugin/turn",
        "/plugin/boot",
        "/plugin/turn",
        "/plugin/turn",
    ]
    assert turns(daemon)[1]["shown"] == [BOOT_SHOWN]  # the turn's block leaves out what the boot block shows


def test_a_session_started_with_nothing_to_show_or_journaled_before_asks_no_boot_block_again(
    daemon: Daemon, claude_dir: Path
) -> None:
    folder = daemon.data_dir()[0] / "hook-journal" / "claude-code"
    folder.mkdir(parents=True)
    (folder / "older-session.json").write_text(json.dumps({"v": 2, "boot": [BOOT_SHOWN], "messages": []}))

    hook(daemon, "user-prompt-submit", session_id="older-session", prompt="hi", prompt_id="p-1")
    assert [path for path, _ in daemon.calls] == ["/plugin/turn"]


def test_a_session_whose_boot_block_was_empty_asks_for_it_no_more(claude_dir: Path, tmp_path: Path) -> None:
    class Empty(Daemon):
        def call(self, path: str, body: Mapping[str, Any], deadline_s: float) -> dict[str, Any]:
            answer = super().call(path, body, deadline_s)
            return {"block": "", "shown": []} if path == "/plugin/boot" else answer

    daemon = Empty(tmp_path / "data")
    hook(daemon, "session-start", source="startup")
    hook(daemon, "user-prompt-submit", prompt="hi", prompt_id="p-1")

    assert [path for path, _ in daemon.calls] == ["/plugin/boot", "/plugin/turn"]


@pytest.mark.parametrize("event", ["session-start", "user-prompt-submit", "pre-compact"])
def test_a_subagents_hook_gets_nothing(daemon: Daemon, claude_dir: Path, event: str) -> None:
    assert hook(daemon, event, source="startup", prompt="hi", agent_id="agent-1") == ""
    assert daemon.calls == []


def test_a_session_id_with_dot_dot_adds_nothing_and_says_why(
    daemon: Daemon, claude_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="graphmem.integrations.claude_code"):
        assert hook(daemon, "user-prompt-submit", session_id="../../etc/passwd", prompt="hi") == ""
    assert daemon.calls == [] and not (daemon.data_dir()[0] / "hook-journal").exists()
    assert "session_id '../../etc/passwd' is not an id" in caplog.text
    assert "Traceback" not in caplog.text


def test_input_that_is_not_json_adds_nothing(
    daemon: Daemon, claude_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="graphmem.integrations.claude_code"):
        assert ClaudeCodeHooks(daemon).answer("stop", io.BytesIO(b"{not json")) == ""  # type: ignore[arg-type]
    assert "not JSON" in caplog.text


def test_compaction_gets_what_must_survive_as_text(daemon: Daemon, claude_dir: Path) -> None:
    assert hook(daemon, "pre-compact", trigger="auto") == "Keep: never push to main."


def test_a_session_that_stops_is_named_to_the_daemon_to_learn(daemon: Daemon, claude_dir: Path) -> None:
    session = TranscriptWriter(claude_dir / "projects", SESSION, "/home/me/shop")
    assert hook(daemon, "stop", transcript_path=str(session.path)) == ""
    assert daemon.calls == [("/plugin/ingest", {
        "client": "claude-code", "session_id": SESSION, "directory": "/home/me/shop",
        "transcript_path": str(session.path),
    })]  # fmt: skip


def test_a_transcript_outside_claude_codes_sessions_is_not_sent(
    daemon: Daemon, claude_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    elsewhere = TranscriptWriter(tmp_path / "elsewhere", SESSION, "/home/me/shop")
    with caplog.at_level(logging.WARNING, logger="graphmem.integrations.claude_code"):
        assert hook(daemon, "session-end", transcript_path=str(elsewhere.path), reason="other") == ""
    assert daemon.calls == []
    assert "outside Claude Code's sessions" in caplog.text


def test_graphmem_plugin_off_turns_the_hooks_off(
    daemon: Daemon, claude_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRAPHMEM_PLUGIN", "off")
    assert hook(daemon, "session-start", source="startup") == ""
    assert daemon.calls == []


def test_the_command_answers_on_stdout_and_exits_0(
    tmp_path: Path, claude_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(hook_command, "HookClient", lambda data_dir: Daemon(tmp_path / "data"))
    monkeypatch.setattr(
        "sys.stdin",
        io.TextIOWrapper(io.BytesIO(json.dumps({"session_id": SESSION, "source": "startup"}).encode())),
    )
    assert claude_code.main(["session-start"]) == 0
    assert context(capsys.readouterr().out) == BOOT
    assert claude_code.main(["no-such-event"]) == 0
    assert capsys.readouterr().out == ""
    assert "unknown event 'no-such-event'" in (tmp_path / "data" / "hooks.log").read_text()
    for handler in logging.getLogger("graphmem").handlers[:]:  # the command's log, for this process only
        if getattr(handler, "baseFilename", "").startswith(str(tmp_path)):
            logging.getLogger("graphmem").removeHandler(handler)
            handler.close()


@pytest.mark.parametrize(
    ("module", "args", "stdin"),
    [
        ("graphmem.integrations.claude_code", ["no-such-event"], b"{}"),
        ("graphmem.integrations.codex_hook", [], b"not json"),
    ],
)
def test_the_hooks_log_is_private_whatever_umask_the_client_runs_them_with(
    tmp_path: Path, module: str, args: list[str], stdin: bytes
) -> None:
    data_dir = tmp_path / "data"
    done = subprocess.run(
        [sys.executable, "-m", module, *args, "--data-dir", str(data_dir)],
        input=stdin,
        capture_output=True,
        timeout=60,
        preexec_fn=lambda: os.umask(0o022),
        env={**os.environ, "HOME": str(tmp_path), "GRAPHMEM_CONFIG": str(tmp_path / "none.toml")},
    )

    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE((data_dir / "hooks.log").stat().st_mode) == 0o600
