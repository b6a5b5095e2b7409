"""Build OpenCode databases for tests: the tables of OpenCode 1.18 (``session``, ``message``, ``part``).

The DDL is copied from a database the real OpenCode 1.18.33 wrote (see
``tests/support/opencode.py``); rows follow its shapes: ``message.data`` holds ``role``,
``agent``, ``time.created``/``time.completed``; ``part.data`` holds ``type`` and per type
``text``, ``tool``/``state`` (``status``, ``input``, ``output``/``error``), ``files``...
Times are epoch milliseconds. WAL mode, like OpenCode. :func:`add_v2_message` adds OpenCode 2's
``session_message`` table (from its source) and one message to it.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE `project` (
  `id` text PRIMARY KEY, `worktree` text NOT NULL, `vcs` text, `name` text,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `sandboxes` text NOT NULL
);
CREATE TABLE `session` (
  `id` text PRIMARY KEY, `project_id` text NOT NULL, `workspace_id` text, `parent_id` text,
  `slug` text NOT NULL, `directory` text NOT NULL, `path` text, `title` text NOT NULL,
  `version` text NOT NULL, `share_url` text, `summary_additions` integer, `summary_deletions` integer,
  `summary_files` integer, `summary_diffs` text, `metadata` text, `cost` real DEFAULT 0 NOT NULL,
  `tokens_input` integer DEFAULT 0 NOT NULL, `tokens_output` integer DEFAULT 0 NOT NULL,
  `revert` text, `permission` text, `agent` text, `model` text,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL,
  `time_compacting` integer, `time_archived` integer
);
CREATE TABLE `message` (
  `id` text PRIMARY KEY, `session_id` text NOT NULL, `time_created` integer NOT NULL,
  `time_updated` integer NOT NULL, `data` text NOT NULL
);
CREATE TABLE `part` (
  `id` text PRIMARY KEY, `message_id` text NOT NULL, `session_id` text NOT NULL,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL
);
"""

T0_MS = 1_790_000_000_000  # 2026-09-21, a fixed epoch-ms origin


class OpenCodeDB:
    """A writable OpenCode-shaped database for tests (the reader under test opens it read-only)."""

    def __init__(self, path: Path, *, wal: bool = True) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, isolation_level=None)
        if wal:
            self.db.execute("PRAGMA journal_mode=WAL")
        self.db.executescript(SCHEMA)
        self.db.execute(
            "INSERT INTO project VALUES ('global', '/', NULL, NULL, 0, 0, '[]')",
        )
        self._ids = itertools.count(1)

    def close(self) -> None:
        self.db.close()

    def _id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids):08d}"

    def session(
        self,
        directory: str,
        *,
        title: str = "A session",
        at_ms: int = T0_MS,
        session_id: str | None = None,
        parent_id: str | None = None,
    ) -> str:
        sid = session_id or self._id("ses")
        self.db.execute(
            "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, "
            "time_created, time_updated) VALUES (?, 'global', ?, 'slug', ?, ?, '1.18.33', ?, ?)",
            (sid, parent_id, directory, title, at_ms, at_ms),
        )
        return sid

    def touch(self, session_id: str, at_ms: int) -> None:
        self.db.execute("UPDATE session SET time_updated = ? WHERE id = ?", (at_ms, session_id))

    def message(
        self,
        session_id: str,
        role: str,
        parts: list[dict[str, Any]],
        *,
        at_ms: int,
        completed: bool = True,
        raw_data: str | None = None,
    ) -> str:
        """A message with its parts; the session's ``time_updated`` follows."""
        mid = self._id("msg")
        data: dict[str, Any] = {"role": role, "agent": "build", "time": {"created": at_ms}}
        if role == "assistant" and completed:
            data["time"]["completed"] = at_ms + 1
        self.db.execute(
            "INSERT INTO message VALUES (?, ?, ?, ?, ?)",
            (mid, session_id, at_ms, at_ms, raw_data if raw_data is not None else json.dumps(data)),
        )
        for offset, part in enumerate(parts):
            raw = part.pop("__raw__", None)
            self.db.execute(
                "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                (self._id("prt"), mid, session_id, at_ms + offset, at_ms + offset, raw or json.dumps(part)),
            )
        self.touch(session_id, at_ms + len(parts) + 1)
        return mid

    def turn(self, session_id: str, user: str, assistant: str, *, at_ms: int) -> tuple[str, str]:
        """A user message and the assistant's text answer."""
        asked = self.message(session_id, "user", [text(user)], at_ms=at_ms)
        answered = self.message(session_id, "assistant", [text(assistant)], at_ms=at_ms + 10)
        return asked, answered


def text(value: str, **extra: Any) -> dict[str, Any]:
    return {"type": "text", "text": value, **extra}


def tool(name: str, arguments: dict[str, Any], output: str, *, status: str = "completed") -> dict[str, Any]:
    state: dict[str, Any] = {"status": status, "input": arguments}
    state["error" if status == "error" else "output"] = output
    return {"type": "tool", "tool": name, "callID": "call_1", "state": state}


# OpenCode 2's own message table, as anomalyco/opencode's packages/core/src/session/sql.ts declares it
# (read from its source; no OpenCode 2 database was at hand): `data` is the message without its
# `type` and `id`.
V2_SCHEMA = """
CREATE TABLE IF NOT EXISTS `session_message` (
  `id` text PRIMARY KEY, `session_id` text NOT NULL, `type` text NOT NULL, `seq` integer NOT NULL,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL
);
"""


def add_v2_message(db: OpenCodeDB, session_id: str, kind: str, data: dict[str, Any], *, at_ms: int) -> str:
    """One OpenCode 2 message (``kind`` user, assistant...) in ``session_message``; the session's
    ``time_updated`` follows."""
    db.db.executescript(V2_SCHEMA)
    (seq,) = db.db.execute(
        "SELECT count(*) FROM session_message WHERE session_id = ?", (session_id,)
    ).fetchone()
    mid = db._id("msg")
    db.db.execute(
        "INSERT INTO session_message VALUES (?, ?, ?, ?, ?, ?, ?)",
        (mid, session_id, kind, seq, at_ms, at_ms, json.dumps({"time": {"created": at_ms}, **data})),
    )
    db.touch(session_id, at_ms + 1)
    return mid


def v2_tool(name: str, arguments: dict[str, Any], output: str, *, error: bool = False) -> dict[str, Any]:
    """An OpenCode 2 assistant content item: a tool call with its state."""
    state: dict[str, Any] = {
        "status": "error" if error else "completed",
        "input": arguments,
        "structured": {},
    }
    state["content"] = [] if error else [{"type": "text", "text": output}]
    if error:
        state["error"] = {"type": "unknown", "message": output}
    return {"type": "tool", "id": "call_1", "name": name, "state": state, "time": {"created": T0_MS}}
