"""Codex's session files read as hostile input (adapters/codex_sessions.py), on real files."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from graphmem.adapters.codex_sessions import (
    MAX_TEXT_CHARS,
    CodexSessions,
    session_id_of,
    session_roots,
)
from graphmem.core.extraction import extract
from graphmem.errors import SessionStoreError

SESSION = "01a232fa-8209-78b3-84e2-a7a583cbad45"
NAME = f"rollout-2026-12-01T19-00-07-{SESSION}.jsonl"
MEMORY_BLOCK = '<memory source="graphmem">\n- [decision] We decided to use MySQL.\n</memory>'


def line(kind: str, payload: dict[str, Any], second: int = 0) -> str:
    return json.dumps({"timestamp": f"2026-12-01T19:00:{second:02d}.000Z", "type": kind, "payload": payload})


def message(role: str, text: str) -> dict[str, Any]:
    return {"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]}


def completed(kind: str, item_id: str, text: str) -> dict[str, Any]:
    item = {"type": kind, "id": item_id, "content": [{"type": "text", "text": text}]}
    return {"type": "item_completed", "item": item}


def rollout(user_text: str = "I prefer pytest over unittest.", session: str = SESSION) -> str:
    """A session as Codex 0.169 writes it: meta, harness context, a hook's context, a shell run."""
    lines = [
        line("session_meta", {"id": session, "cwd": "/home/me/shop", "timestamp": "2026-12-01T19:00:00Z"}),
        line("response_item", message("developer", "<skills_instructions>...</skills_instructions>"), 1),
        line(
            "response_item",
            message("user", "<environment_context><cwd>/home/me/shop</cwd></environment_context>"),
            1,
        ),
        line("response_item", message("developer", MEMORY_BLOCK), 2),
        line("response_item", message("user", user_text), 3),
        line("event_msg", completed("UserMessage", "item-user-1", user_text), 3),
        line(
            "response_item",
            {
                "type": "function_call",
                "name": "exec_command",
                "arguments": '{"cmd": "pytest -q"}',
                "call_id": "c1",
            },
            4,
        ),
        line(
            "response_item",
            {"type": "function_call_output", "call_id": "c1", "output": "Process exited with code 1\nFAILED"},
            5,
        ),
        line("event_msg", completed("AgentMessage", "item-agent-1", "The tests fail in billing."), 6),
    ]
    return "\n".join(lines) + "\n"


@pytest.fixture
def codex_home(tmp_path: Path) -> Path:
    home = tmp_path / "codex-home"
    (home / "sessions" / "2026" / "12" / "01").mkdir(parents=True)
    return home


def write(codex_home: Path, text: str, name: str = NAME) -> Path:
    path = codex_home / "sessions" / "2026" / "12" / "01" / name
    path.write_text(text, "utf-8")
    return path


def sessions(codex_home: Path) -> CodexSessions:
    return CodexSessions(session_roots({"CODEX_HOME": str(codex_home)}))


def test_the_users_words_the_answers_and_the_shell_runs_are_read_and_nothing_codex_or_graphmem_added(
    codex_home: Path,
) -> None:
    source = sessions(codex_home)
    reader = source.open(source.locate(str(write(codex_home, rollout()))))

    row = reader.session(SESSION)

    assert row is not None and row.directory == "/home/me/shop"
    transcript = reader.read(row).transcript
    assert [(m.role, m.id) for m in transcript.messages] == [("user", "item-user-1"), ("assistant", "c1")]
    assert transcript.messages[0].text == "I prefer pytest over unittest."
    [run, answer] = transcript.messages[1].parts
    assert (run.tool, json.loads(run.tool_input), run.status) == ("bash", {"command": "pytest -q"}, "error")
    assert answer.text == "The tests fail in billing."
    everything = json.dumps([m.text for m in transcript.messages])
    assert "MySQL" not in everything and "environment_context" not in everything
    assert [learned.text for learned in extract(transcript)] == ["I prefer pytest over unittest."]


def test_a_file_outside_codexs_session_folders_is_refused(codex_home: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / NAME
    outside.parent.mkdir()
    outside.write_text(rollout(), "utf-8")

    with pytest.raises(SessionStoreError, match="outside Codex's session folders"):
        sessions(codex_home).locate(str(outside))
    with pytest.raises(SessionStoreError, match="outside"):
        sessions(codex_home).locate(str(codex_home / "sessions" / ".." / ".." / "elsewhere" / NAME))


def test_a_symlink_even_to_a_real_session_file_is_refused(codex_home: Path) -> None:
    real = write(codex_home, rollout())
    link = real.with_name(f"rollout-2026-12-01T19-00-08-{SESSION[:-1]}0.jsonl")
    os.symlink(real, link)

    with pytest.raises(SessionStoreError, match="symlink"):
        sessions(codex_home).locate(str(link))


@pytest.mark.parametrize(
    "path",
    ["relative/" + NAME, "/tmp/rollout-x-../../etc/passwd.jsonl", "/etc/passwd", "/tmp/rollout-\x00.jsonl"],
)
def test_what_is_not_an_absolute_session_file_name_is_refused(codex_home: Path, path: str) -> None:
    with pytest.raises(SessionStoreError):
        sessions(codex_home).locate(path)


def test_a_truncated_file_keeps_its_complete_lines_and_skips_what_is_cut_or_broken(codex_home: Path) -> None:
    cut = (
        rollout()
        + line("event_msg", completed("UserMessage", "item-user-2", "We decided to use Redis."), 7)[:40]
    )
    source = sessions(codex_home)
    reader = source.open(source.locate(str(write(codex_home, cut + "\nnot json\n"))))

    row = reader.session(SESSION)

    assert row is not None
    read = reader.read(row)
    assert [m.id for m in read.transcript.messages] == ["item-user-1", "c1"]
    assert read.skipped_parts == 2  # the cut line and the line that is not JSON


def test_a_file_whose_meta_names_another_session_is_no_session(codex_home: Path) -> None:
    source = sessions(codex_home)
    other = "01a232fa-0000-0000-0000-000000000000"
    reader = source.open(source.locate(str(write(codex_home, rollout(session=other)))))

    assert reader.session(SESSION) is None
    assert reader.session("../../etc") is None


def test_a_one_megabyte_message_is_cut_to_the_text_bound(codex_home: Path) -> None:
    huge = "We decided to use Postgres. " + "x" * 1_000_000
    source = sessions(codex_home)
    reader = source.open(source.locate(str(write(codex_home, rollout(user_text=huge)))))
    row = reader.session(SESSION)

    assert row is not None
    [user, _] = reader.read(row).transcript.messages
    assert len(user.text) == MAX_TEXT_CHARS


def test_the_session_id_comes_from_the_file_name() -> None:
    assert session_id_of(NAME) == SESSION
    assert session_id_of("notes.jsonl") == ""
