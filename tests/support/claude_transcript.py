"""Claude Code transcripts (JSONL) written as ``@anthropic-ai/claude-code@2.1.328`` writes them.

The line shapes are those of a real ``claude -p`` session's file
(``~/.claude/projects/<slug>/<session id>.jsonl``): ``user`` and ``assistant`` lines carry
``message`` (an assistant message is one line per content block, sharing ``message.id``); tool
results come back as ``user`` lines with ``tool_result`` blocks; the hooks' additional context is
an ``attachment`` line; bookkeeping lines (``queue-operation``, ``last-prompt``, ``cost-state``)
carry no message.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


class TranscriptWriter:
    """Appends a session's lines to ``<root>/<slug>/<session id>.jsonl``."""

    def __init__(self, root: Path, session_id: str, cwd: str, slug: str = "-home-me-shop") -> None:
        self.session_id = session_id
        self.cwd = cwd
        self.path = root / slug / f"{session_id}.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.touch()
        self._clock = T0
        self._messages = 0

    def _line(self, kind: str, **fields: Any) -> dict[str, Any]:
        self._clock += timedelta(seconds=5)
        return {
            "parentUuid": None, "isSidechain": False, "type": kind, "uuid": str(uuid.uuid4()),
            "timestamp": self._clock.isoformat().replace("+00:00", "Z"), "cwd": self.cwd,
            "sessionId": self.session_id, "version": "2.1.328", **fields,
        }  # fmt: skip

    def write(self, *lines: dict[str, Any]) -> None:
        with self.path.open("a", encoding="utf-8") as out:
            for line in lines:
                out.write(json.dumps(line) + "\n")

    def user(self, text: str, **fields: Any) -> None:
        self.write({"type": "queue-operation", "operation": "enqueue", "content": text})
        self.write(self._line("user", message={"role": "user", "content": text}, **fields))

    def attachment(self, context: str) -> None:
        attachment = {
            "type": "hook_additional_context",
            "content": [context],
            "hookEvent": "UserPromptSubmit",
        }
        self.write(self._line("attachment", attachment=attachment))

    def assistant(self, *blocks: dict[str, Any]) -> None:
        self._messages += 1
        ident = f"msg_{self._messages:024d}"
        for block in blocks:
            message = {"id": ident, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                       "content": [block]}  # fmt: skip
            self.write(self._line("assistant", message=message))

    def tool_result(self, call_id: str, output: str, *, error: bool = False) -> None:
        block = {"type": "tool_result", "tool_use_id": call_id, "content": output, "is_error": error}
        self.write(self._line("user", message={"role": "user", "content": [block]}))


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}
