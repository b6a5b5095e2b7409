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
  gets nothing. The session's earlier turns are named to the daemon (from a small file per
  session in graphmem's data dir, ``codex-hook/<session>.json``) so a memory one of them showed
  is not shown again.
- ``Stop`` (the turn ended) and ``SessionEnd``: the daemon is asked to learn from the session
  file (``/plugin/ingest`` with ``client`` ``codex``); it queues the work and answers at once.

It never breaks a turn: the daemon is reached through ``HookClient`` (started when none runs,
proven before anything is sent, bounded deadlines, ``{}`` on any failure); bad input
(``hook_input``: a 1 MB prompt, a session id with ``../``, a path that is not absolute) is one
line in ``<data dir>/codex-hook.log`` and no output; any other failure too. It always exits 0.
``GRAPHMEM_PLUGIN=off`` in Codex's environment turns it off.

Standard library and graphmem's stdlib-only modules: it starts on every user turn.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import logging.handlers
import os
import sys
from pathlib import Path
from typing import Any

from graphmem.integrations import hook_input
from graphmem.integrations.hook_client import HookClient
from graphmem.integrations.hook_input import HookInputError

log = logging.getLogger("graphmem.codex_hook")

CLIENT = "codex"
LOG_FILENAME = "codex-hook.log"
STATE_FOLDER = "codex-hook"
# The most a turn waits for recall, and a session's start for its boot context (seconds);
# GRAPHMEM_PLUGIN_TIMEOUT_MS (50-10000) in Codex's environment sets both.
TURN_DEADLINE_S = 0.5
BOOT_DEADLINE_S = 1.0
COMPACTION_DEADLINE_S = 2.0
INGEST_DEADLINE_S = 1.0  # the daemon only queues the session
MAX_TEXT_CHARS = 100_000  # what the daemon reads of a message
MAX_BLOCK_CHARS = 40_000
MAX_TURNS_KEPT = 200  # earlier turns named to the daemon
BLOCK_OPEN = '<memory source="graphmem">'
OFF_VALUES = frozenset({"off", "0", "false", "no"})


def deadline(fallback: float) -> float:
    asked = os.environ.get("GRAPHMEM_PLUGIN_TIMEOUT_MS", "")
    try:
        value = int(asked)
    except ValueError:
        return fallback
    return value / 1000 if 50 <= value <= 10_000 else fallback


def answer(event: str, context: str) -> dict[str, Any]:
    """What Codex reads from the hook's stdout: ``context`` as the event's additional context."""
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}}


class CodexHook:
    """Answers one Codex hook event (``handle``), through a ``HookClient``."""

    def __init__(self, client: HookClient, state_dir: Path | None) -> None:
        self._client = client
        self._state_dir = state_dir

    def handle(self, data: dict[str, Any]) -> dict[str, Any] | None:
        """The hook's answer to ``data`` (None: nothing to add). Raises ``HookInputError``."""
        event = data.get("hook_event_name")
        session = hook_input.session_id(data.get("session_id"))
        directory = hook_input.path_text(data.get("cwd"), "cwd")
        if event == "SessionStart":
            return self._start(session, directory, data.get("source"))
        if event == "UserPromptSubmit":
            return self._prompt(session, directory, data)
        if event in ("Stop", "SessionEnd"):
            self._ingest(session, directory, data)
            return None
        raise HookInputError(f"hook_event_name {str(event)[:40]!r} is not an event graphmem answers")

    def _start(self, session: str, directory: str | None, source: Any) -> dict[str, Any] | None:
        if source in ("startup", "clear"):
            body = {"session_id": session, "directory": directory, "agent": ""}
            block = _block(self._client.call("/plugin/boot", body, deadline(BOOT_DEADLINE_S)).get("block"))
            return answer("SessionStart", block) if block else None
        if source == "compact":
            body = {"session_id": session, "directory": directory}
            done = self._client.call("/plugin/compaction", body, COMPACTION_DEADLINE_S)
            context = "\n".join(t for t in done.get("context") or [] if isinstance(t, str) and t)
            return answer("SessionStart", context[:MAX_BLOCK_CHARS]) if context else None
        return None  # resume, fork: the session already holds its boot context

    def _prompt(self, session: str, directory: str | None, data: dict[str, Any]) -> dict[str, Any] | None:
        if data.get("agent_id") or data.get("agent_type"):
            return None  # a subagent's turn: nothing
        turn = hook_input.session_id(data.get("turn_id"))
        text = hook_input.text(data.get("prompt"), MAX_TEXT_CHARS)
        digest = hashlib.sha256(text.encode("utf-8", errors="replace")).hexdigest()[:32]
        earlier = [t for t in self._turns(session) if t[0] != turn]
        messages = [{"id": i, "hash": h} for i, h in earlier] + [{"id": turn, "hash": digest}]
        body = {"session_id": session, "directory": directory, "messages": messages, "text": text}
        blocks = self._client.call("/plugin/turn", body, deadline(TURN_DEADLINE_S)).get("blocks")
        self._keep(session, [*earlier, (turn, digest)])
        block = _block(blocks.get(turn) if isinstance(blocks, dict) else None)
        return answer("UserPromptSubmit", block) if block else None

    def _ingest(self, session: str, directory: str | None, data: dict[str, Any]) -> None:
        path = hook_input.path_text(data.get("transcript_path"), "transcript_path")
        if path is None:
            log.info("%s: no transcript_path (an ephemeral session): nothing to learn", session)
            return
        body = {"client": CLIENT, "session_id": session, "directory": directory, "transcript_path": path}
        self._client.call("/plugin/ingest", body, INGEST_DEADLINE_S)

    # -- the session's earlier turns ----------------------------------------------------------

    def _state(self, session: str) -> Path | None:
        return self._state_dir / f"{session}.json" if self._state_dir is not None else None

    def _turns(self, session: str) -> list[tuple[str, str]]:
        state = self._state(session)
        try:
            saved = json.loads(state.read_text("utf-8")) if state is not None else []
        except (OSError, ValueError):
            return []
        return [
            (t[0], t[1])
            for t in saved if isinstance(saved, list)
            if isinstance(t, list) and len(t) == 2 and all(isinstance(v, str) and v for v in t)
        ][-MAX_TURNS_KEPT:]  # fmt: skip

    def _keep(self, session: str, turns: list[tuple[str, str]]) -> None:
        state = self._state(session)
        if state is None:
            return
        try:
            state.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            partial = state.with_name(f".{state.name}.{os.getpid()}.tmp")
            partial.write_text(json.dumps([list(t) for t in turns[-MAX_TURNS_KEPT:]]), "utf-8")
            partial.chmod(0o600)
            partial.replace(state)
        except OSError as exc:
            log.warning("%s: could not keep the session's turns in %s: %s", session, state, exc)


def _block(value: Any) -> str:
    ok = isinstance(value, str) and len(value) <= MAX_BLOCK_CHARS and value.startswith(BLOCK_OPEN)
    return value if ok and isinstance(value, str) else ""


def _log_to(data_dir: Path | None) -> None:
    handler: logging.Handler = logging.StreamHandler(sys.stderr)
    if data_dir is not None:
        try:
            data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            handler = logging.handlers.RotatingFileHandler(
                data_dir / LOG_FILENAME, maxBytes=1_000_000, backupCount=1, encoding="utf-8"
            )
        except OSError:
            pass
    handler.setFormatter(logging.Formatter("%(asctime)s codex-hook %(levelname)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)


def main(argv: list[str] | None = None) -> int:
    """Read the event on stdin, print the answer (if any) on stdout; always 0."""
    parser = argparse.ArgumentParser(prog="graphmem.integrations.codex_hook", add_help=False)
    parser.add_argument("--data-dir", type=Path, default=None)
    known, _ = parser.parse_known_args(argv)
    client = HookClient(known.data_dir)
    data_dir: Path | None = None
    try:
        data_dir = client.data_dir()[0]
    except Exception as exc:  # a broken config: the turn goes on without memory
        print(f"graphmem codex hook: {exc}", file=sys.stderr)
    _log_to(data_dir)
    try:
        data = hook_input.read_input(sys.stdin.buffer)
        if str(os.environ.get("GRAPHMEM_PLUGIN", "")).lower() in OFF_VALUES:
            return 0
        hook = CodexHook(client, data_dir / STATE_FOLDER if data_dir is not None else None)
        result = hook.handle(data)
    except HookInputError as exc:
        log.warning("%s; added nothing", exc)
        return 0
    except Exception:  # never a traceback to Codex: one entry in the hook's log
        log.exception("the hook failed; added nothing")
        return 0
    if result is not None:
        sys.stdout.write(json.dumps(result))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
