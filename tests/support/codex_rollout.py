"""Codex session files (rollouts) as Codex 0.169 writes them, for the tests that read them.

``RolloutWriter(codex_home, session, cwd)`` creates ``sessions/2026/12/01/rollout-...-<id>.jsonl``
with its ``session_meta`` and Codex's own context (skills, environment, graphmem's hook block,
which must never be learned), then appends what a session adds: the user's message
(``user``), the model's answer (``agent``) and a shell run (``shell``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HOOK_BLOCK = '<memory source="graphmem">\n- [decision] We decided to use MySQL.\n</memory>'


def line(kind: str, payload: dict[str, Any], second: int = 0) -> str:
    return json.dumps(
        {
            "timestamp": f"2026-12-01T19:{second // 60:02d}:{second % 60:02d}.000Z",
            "type": kind,
            "payload": payload,
        }
    )


def message(role: str, text: str) -> dict[str, Any]:
    return {"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]}


def completed(kind: str, item_id: str, text: str) -> dict[str, Any]:
    item = {"type": kind, "id": item_id, "content": [{"type": "text", "text": text}]}
    return {"type": "item_completed", "item": item}


class RolloutWriter:
    """One session file under ``codex_home``; each call appends complete lines."""

    def __init__(self, codex_home: Path, session: str, cwd: str, *, meta_id: str | None = None) -> None:
        self.path = (
            codex_home / "sessions" / "2026" / "12" / "01" / f"rollout-2026-12-01T19-00-00-{session}.jsonl"
        )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._second = 0
        self._items = 0
        meta = {"id": meta_id or session, "cwd": cwd, "timestamp": "2026-12-01T19:00:00Z"}
        self.write(
            line("session_meta", meta),
            line("response_item", message("developer", "<skills_instructions>...</skills_instructions>")),
            line(
                "response_item",
                message("user", f"<environment_context><cwd>{cwd}</cwd></environment_context>"),
            ),
            line("response_item", message("developer", HOOK_BLOCK)),
        )

    def write(self, *lines: str) -> None:
        with self.path.open("a", encoding="utf-8") as out:
            out.write("".join(f"{text}\n" for text in lines))

    def _next(self) -> tuple[str, int]:
        self._second += 1
        self._items += 1
        return f"item-{self._items}", self._second

    def user(self, text: str) -> str:
        item_id, second = self._next()
        self.write(
            line("response_item", message("user", text), second),
            line("event_msg", completed("UserMessage", item_id, text), second),
        )
        return item_id

    def agent(self, text: str) -> str:
        item_id, second = self._next()
        self.write(line("event_msg", completed("AgentMessage", item_id, text), second))
        return item_id

    def shell(self, command: str, output: str) -> str:
        call_id, second = self._next()
        call = {"type": "function_call", "name": "exec_command", "arguments": json.dumps({"cmd": command})}
        self.write(
            line("response_item", {**call, "call_id": call_id}, second),
            line(
                "response_item",
                {"type": "function_call_output", "call_id": call_id, "output": output},
                second,
            ),
        )
        return call_id
