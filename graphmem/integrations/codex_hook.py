"""Codex CLI's hook command: graphmem's memory in Codex's turns, with no tool call.

``graphmem install codex`` registers ``python -P -m graphmem.integrations.codex_hook`` for four
events in Codex's ``config.toml``. Codex (0.169) runs it with one JSON object on stdin and reads
an ``additionalContext`` from its stdout, which it adds to the conversation as a developer
message right after what is there now, keeps in the session file, and sends again, byte for
byte, on every later request of the session (``codex exec resume`` included). So:

- ``SessionStart`` (``source`` ``startup`` or ``clear``): the boot context (``/plugin/boot``),
  once per session, before the first user message. ``resume`` and ``fork`` get nothing: the
  session already holds its boot context. ``compact``: what compaction must keep
  (``/plugin/compaction``: conventions, decisions, open blockers), since compaction replaced the
  conversation.
- ``UserPromptSubmit``: what recall finds for this message (``/plugin/turn``), right after it:
  never in a part of the prompt an earlier request sent. A subagent's prompt (``agent_id`` set)
  gets nothing. The session's earlier turns, and what they and the boot block showed, are named
  to the daemon (``hook_journal.Journal``) so a memory one of them showed is not shown again,
  also by a daemon that restarted since.
- ``Stop`` (the turn ended) and ``SessionEnd``: the daemon is asked to learn from the session
  file (``/plugin/ingest`` with ``client`` ``codex``); it queues the work and answers at once.
  A path that is not one of Codex's session files is refused here already, with its reason.

It never breaks a turn: the daemon is reached through ``HookClient`` (started when none runs,
proven before anything is sent, bounded deadlines, ``{}`` on any failure); bad input
(``hook_input``: a 1 MB prompt, a session id with ``../``, a path that is not absolute) is one
line in ``hooks.log`` in graphmem's data dir and no output; any other failure too. It always exits 0.
``GRAPHMEM_PLUGIN=off`` in Codex's environment turns it off.

Standard library and graphmem's stdlib-only modules: it starts on every user turn.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from graphmem.integrations import hook_input
from graphmem.integrations.hook_client import HookClient
from graphmem.integrations.hook_command import AnswerGuard, run_hook, turned_off
from graphmem.integrations.hook_input import HookInputError
from graphmem.integrations.hook_journal import HookSession, additional_context, context, deadline

log = logging.getLogger("graphmem.integrations.codex_hook")  # also when run as __main__

CLIENT = "codex"
# The most a turn waits for recall, and a session's start for its boot context (seconds);
# GRAPHMEM_PLUGIN_TIMEOUT_MS (50-10000) in Codex's environment sets both.
TURN_DEADLINE_S = 0.5
BOOT_DEADLINE_S = 1.0
INGEST_DEADLINE_S = 1.0  # the daemon only queues the session
MAX_TEXT_CHARS = 100_000  # what the daemon reads of a message
MAX_COMPACTION_CHARS = 40_000
BOOT_FIELDS = {"agent": ""}  # what /plugin/boot is asked for a Codex session: its agent named by no one


class CodexHook:
    """Answers one Codex hook event through a ``HookClient``; never raises."""

    def __init__(self, client: HookClient, data_dir: Path) -> None:
        self._client = client
        self._data_dir = data_dir

    def answer(self, stream: IO[bytes]) -> str:
        """What to print on stdout for the event on ``stream`` ("" for nothing)."""
        with AnswerGuard(log) as guard:  # never a traceback to Codex: one entry in the hooks' log
            given = hook_input.read_input(stream)
            guard.event = str(given.get("hook_event_name"))[:40]
            if turned_off():
                return ""
            return self.handle(given)
        return ""

    def handle(self, given: Mapping[str, Any]) -> str:
        """The answer to one event ("" for nothing). Raises ``HookInputError`` on bad input."""
        event = given.get("hook_event_name")
        session = hook_input.session_id(given.get("session_id"))
        directory = hook_input.path_text(given.get("cwd"), "cwd")
        asking = HookSession(self._client.call, CLIENT, self._data_dir, session, directory, BOOT_FIELDS)
        if event == "SessionStart":
            return self._start(asking, given.get("source"))
        if event == "UserPromptSubmit":
            return self._prompt(asking, given)
        if event in ("Stop", "SessionEnd"):
            self._learn(asking, given)
            return ""
        raise HookInputError(f"hook_event_name {str(event)[:40]!r} is not an event graphmem answers")

    def _start(self, asking: HookSession, source: Any) -> str:
        if source in ("startup", "clear"):
            return context("SessionStart", asking.boot(deadline(BOOT_DEADLINE_S)))
        if source == "compact":  # compaction replaced the conversation: what it must keep comes back
            kept = asking.compaction()
            return additional_context("SessionStart", kept[:MAX_COMPACTION_CHARS]) if kept else ""
        return ""  # resume, fork: the session already holds its boot context

    def _prompt(self, asking: HookSession, given: Mapping[str, Any]) -> str:
        if given.get("agent_id") or given.get("agent_type"):
            return ""  # a subagent's turn: nothing
        turn = hook_input.session_id(given.get("turn_id"), "turn_id")
        text = hook_input.text(given.get("prompt"), MAX_TEXT_CHARS)
        return asking.prompt(
            text, turn, boot_deadline_s=deadline(BOOT_DEADLINE_S), turn_deadline_s=deadline(TURN_DEADLINE_S)
        )

    def _learn(self, asking: HookSession, given: Mapping[str, Any]) -> None:
        from graphmem.adapters.codex_sessions import CodexSessions

        path = hook_input.path_text(given.get("transcript_path"), "transcript_path")
        if path is None:
            log.info("%s: no transcript_path (an ephemeral session): nothing to learn", asking.session)
            return
        asking.ingest(
            path,
            check=CodexSessions().locate,  # in Codex's session folders, rollout-<time>-<session_id>.jsonl
            deadline_s=INGEST_DEADLINE_S,
        )


def main(argv: list[str] | None = None) -> int:
    """Read the event on stdin, print the answer (if any) on stdout; always 0."""
    return run_hook(
        CLIENT,
        "graphmem.integrations.codex_hook",
        argv,
        lambda daemon, _, data_dir: CodexHook(daemon, data_dir).answer(sys.stdin.buffer),
    )


if __name__ == "__main__":  # pragma: no cover - run by Codex, tested through main()
    raise SystemExit(main())
