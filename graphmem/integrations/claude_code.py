"""Claude Code's hooks: graphmem's memory in every session, with no tool call.

``python -P -m graphmem.integrations.claude_code EVENT`` is the command ``graphmem install
claude-code`` registers for each hook (``-P``: a ``graphmem/`` folder in the project is never
imported); Claude Code runs it with the hook's JSON on stdin (``@anthropic-ai/claude-code@2.1.328``:
``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name``, and per event ``source``,
``prompt`` / ``prompt_id``, ``trigger``, ``reason``; a subagent's hooks also carry ``agent_id``).

==================  ===========================================================================
``session-start``   the boot context, as ``additionalContext``: on ``startup`` and ``clear``, and
                    after ``compact`` (compaction dropped it); never on ``resume``, whose
                    transcript already holds the one the session started with
``user-prompt-      what recall finds for the prompt, as ``additionalContext``; the prompt's id,
submit``            a hash of its text and what its block showed are journaled per session so a
                    memory shown on an earlier turn is not shown again, also by a daemon that
                    restarted since
``pre-compact``     the conventions, decisions and open blockers compaction must keep, printed
                    as text (Claude Code adds a PreCompact hook's output to its compaction
                    instructions)
``stop``,           asks the daemon to learn the session from its transcript (queued; the
``session-end``     daemon reads the file, confined to Claude Code's sessions folder)
==================  ===========================================================================

Where Claude Code puts ``additionalContext`` keeps the prompt cache: both hooks' context becomes
a ``<system-reminder>`` text block of the user message it was given for (before the prompt),
stored in the transcript as an attachment of that message and sent again, byte for byte, on
every later request of the session (``--continue`` and ``--resume`` included). Nothing graphmem
adds ever changes the system prompt, the tools, or an earlier message.

The hook never breaks the turn: whatever goes wrong (bad input, no daemon, a slow one) it adds
nothing, exits 0 and writes one line to ``hooks.log`` in graphmem's data dir.
``GRAPHMEM_PLUGIN=off`` in Claude Code's environment turns it off.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from graphmem.integrations.hook_client import HookClient
from graphmem.integrations.hook_command import AnswerGuard, run_hook, turned_off
from graphmem.integrations.hook_input import HookInputError, path_text, read_input, session_id, text
from graphmem.integrations.hook_journal import HookSession, context, deadline, prompt_digest

log = logging.getLogger("graphmem.integrations.claude_code")  # also when run as __main__

CLIENT = "claude-code"
EVENTS = ("session-start", "user-prompt-submit", "pre-compact", "stop", "session-end")
# The most a call waits (the daemon answers in tens of ms); GRAPHMEM_PLUGIN_TIMEOUT_MS
# (50-10000) in Claude Code's environment sets the turn's and the boot context's.
TURN_DEADLINE_S = 0.3
BOOT_DEADLINE_S = 1.0
INGEST_DEADLINE_S = 2.0
# The prompt as the daemon reads it (recall reads its first 1,000 characters).
MAX_TEXT_CHARS = 100_000
# Claude Code keeps 10,000 characters of a PreCompact hook's output.
MAX_COMPACTION_CHARS = 9_000
BOOT_SOURCES = frozenset({"startup", "clear", "compact"})


class ClaudeCodeHooks:
    """Answers one hook event; never raises."""

    def __init__(self, client: HookClient) -> None:
        self._client = client
        self._handlers: dict[str, Callable[[Mapping[str, Any]], str]] = {
            "session-start": self._session_start,
            "user-prompt-submit": self._user_prompt,
            "pre-compact": self._pre_compact,
            "stop": self._learn,
            "session-end": self._learn,
        }

    def answer(self, event: str, stream: IO[bytes]) -> str:
        """What to print on stdout for ``event`` with the hook's input on ``stream`` ("" for nothing)."""
        with AnswerGuard(log, event):
            if turned_off():
                return ""
            given = read_input(stream)
            if given.get("agent_id"):
                return ""  # a subagent's turn: the memory is the main session's
            return self._handlers[event](given)
        return ""

    # -- events ------------------------------------------------------------------------------

    def _session_start(self, given: Mapping[str, Any]) -> str:
        if given.get("source") not in BOOT_SOURCES:
            return ""
        asking = self._asking(session_id(given.get("session_id")), given)
        return context("SessionStart", asking.boot(deadline(BOOT_DEADLINE_S)))

    def _user_prompt(self, given: Mapping[str, Any]) -> str:
        session = session_id(given.get("session_id"))
        prompt = text(given.get("prompt"), MAX_TEXT_CHARS)
        prompt_id = given.get("prompt_id")
        if isinstance(prompt_id, str) and _is_id(prompt_id):
            ident = prompt_id
        else:
            ident = f"p{prompt_digest(prompt)[:24]}"
        return self._asking(session, given).prompt(
            prompt,
            ident,
            boot_deadline_s=deadline(BOOT_DEADLINE_S),
            turn_deadline_s=deadline(TURN_DEADLINE_S),
        )

    def _pre_compact(self, given: Mapping[str, Any]) -> str:
        kept = self._asking(session_id(given.get("session_id")), given).compaction()
        return kept[:MAX_COMPACTION_CHARS]  # as text: Claude Code adds it to the compaction's instructions

    def _learn(self, given: Mapping[str, Any]) -> str:
        from graphmem.adapters.claude_code_transcripts import confined_transcript

        session = session_id(given.get("session_id"))
        transcript = path_text(given.get("transcript_path"), "transcript_path")
        if transcript is None:
            raise HookInputError("no transcript_path: nothing to learn from")
        self._asking(session, given).ingest(
            transcript,
            check=confined_transcript,  # in Claude Code's sessions folder, named <session_id>.jsonl
            deadline_s=INGEST_DEADLINE_S,
        )
        return ""

    def _asking(self, session: str, given: Mapping[str, Any]) -> HookSession:
        """The session ``session`` in the hook's ``cwd``, asked about through the daemon's client."""
        directory = path_text(given.get("cwd"), "cwd")
        return HookSession(self._client.call, CLIENT, self._client.data_dir()[0], session, directory)


def _is_id(value: str) -> bool:
    try:
        session_id(value)
    except HookInputError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    """``python -P -m graphmem.integrations.claude_code EVENT [--data-dir DIR]``: read the hook's
    input on stdin, print the answer (if any) on stdout; always 0."""
    return run_hook(CLIENT, "graphmem.integrations.claude_code", argv, _answer)


def _answer(daemon: HookClient, event: str, _: Path) -> str:
    if event not in EVENTS:
        log.warning("unknown event %r (one of %s); added nothing", event[:40], ", ".join(EVENTS))
        return ""
    return ClaudeCodeHooks(daemon).answer(event, sys.stdin.buffer)


if __name__ == "__main__":  # pragma: no cover - run by Claude Code, tested through main()
    raise SystemExit(main())
