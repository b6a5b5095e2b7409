"""The hooks' journal (graphmem/integrations/hook_journal.py): bounded in prompts per session, in
sessions per client, and in what a turn names as shown; what it cannot use it drops. What
compaction must keep, as every client's hook asks it: what the daemon's answer cannot give is "".
What a hook session's calls name."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from graphmem.integrations import hook_journal
from graphmem.integrations.hook_journal import HookSession, Journal


def key(n: int) -> str:
    return f"mem_{n:016x}:{'a' * 12}"


def test_a_client_keeps_the_journals_of_its_newest_sessions_only(tmp_path: Path) -> None:
    folder = tmp_path / "hook-journal" / "codex"
    for n in range(hook_journal.MAX_JOURNAL_SESSIONS + 5):
        Journal(tmp_path, "codex", f"s{n:03d}").add("p", "h", bare=False)
        os.utime(folder / f"s{n:03d}.json", (1_000_000 + n, 1_000_000 + n))  # written in this order
    (folder / ".s000.123.tmp").write_text("{")  # a hook killed mid-write, long ago
    os.utime(folder / ".s000.123.tmp", (1_000_000, 1_000_000))

    Journal(tmp_path, "codex", "newest").add("p", "h", bare=False)

    kept = sorted(p.name for p in folder.iterdir())
    assert len(kept) == hook_journal.MAX_JOURNAL_SESSIONS and "newest.json" in kept
    assert "s000.json" not in kept and "s005.json" not in kept and "s006.json" in kept
    assert not any(name.endswith(".tmp") for name in kept)


def test_a_session_keeps_its_newest_prompts(tmp_path: Path) -> None:
    journal = Journal(tmp_path, "claude-code", "s1")
    for n in range(hook_journal.MAX_JOURNAL_MESSAGES + 20):
        journal.add(f"p{n}", "h", bare=False, shown=[key(n)])

    messages = journal.messages()

    assert len(messages) == hook_journal.MAX_JOURNAL_MESSAGES and messages[-1]["id"] == "p219"
    assert key(19) not in journal.shown() and key(20) in journal.shown()


def test_what_a_turn_names_as_shown_is_bounded_and_keeps_the_boot_blocks(tmp_path: Path) -> None:
    journal = Journal(tmp_path, "claude-code", "s1")
    journal.booted([key(10_000 + n) for n in range(hook_journal.MAX_SHOWN_PER_BLOCK + 5)])
    for n in range(hook_journal.MAX_JOURNAL_MESSAGES):
        journal.add(f"p{n}", "h", bare=False, shown=[key(n * 100 + i) for i in range(20)])

    shown = journal.shown()

    assert len(shown) == hook_journal.MAX_SHOWN
    assert key(10_000) in shown and key(10_000 + hook_journal.MAX_SHOWN_PER_BLOCK) not in shown
    assert key(199 * 100 + 19) in shown and key(0) not in shown


@pytest.mark.parametrize(
    ("answer", "kept"),
    [
        ({"context": ["Keep: never push to main.", "", 7, "Open: the flaky login test."]},
         "Keep: never push to main.\n\nOpen: the flaky login test."),
        ({"context": []}, ""),  # nothing to keep
        ({"context": "Keep: never push to main."}, ""),  # not the route's shape
        ({}, ""),  # no daemon, a slow one, a refusal: HookClient's {}
    ],
)  # fmt: skip
def test_what_compaction_must_keep_is_the_daemons_texts_and_nothing_it_cannot_use(
    answer: dict[str, Any], kept: str
) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []

    def call(path: str, body: dict[str, Any], deadline_s: float) -> dict[str, Any]:
        calls.append((path, body))
        return answer

    assert hook_journal.ask_compaction(call, "s1", "/home/me/shop") == kept
    assert calls == [("/plugin/compaction", {"session_id": "s1", "directory": "/home/me/shop"})]


def test_a_hook_session_names_its_session_and_directory_in_every_call_and_journals_its_prompts(
    tmp_path: Path,
) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []

    def call(path: str, body: dict[str, Any], deadline_s: float) -> dict[str, Any]:
        calls.append((path, body))
        return {"shown": []} if path == "/plugin/boot" else {}

    asking = HookSession(call, "codex", tmp_path, "s1", "/home/me/shop", {"agent": ""})
    asking.prompt("Why is checkout slow?", "t1", boot_deadline_s=1.0, turn_deadline_s=0.5)
    asking.ingest("/sessions/s1.jsonl", check=lambda path, session: None, deadline_s=1.0)

    where = {"session_id": "s1", "directory": "/home/me/shop"}
    assert [path for path, _ in calls] == ["/plugin/boot", "/plugin/turn", "/plugin/ingest"]
    assert calls[0][1] == {**where, "agent": ""}  # the session lacked its boot block: asked first
    assert {k: calls[1][1][k] for k in (*where, "text")} == {**where, "text": "Why is checkout slow?"}
    assert calls[2][1] == {"client": "codex", **where, "transcript_path": "/sessions/s1.jsonl"}
    journal = Journal(tmp_path, "codex", "s1")
    assert journal.has_booted()
    assert journal.messages() == [
        {"id": "t1", "hash": hook_journal.prompt_digest("Why is checkout slow?"), "bare": True}
    ]
