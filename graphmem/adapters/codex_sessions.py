"""Codex CLI's session files, read as hostile input: one rollout JSONL into a ``SessionRead``.

Codex (0.169) writes each session to ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``
(``archived_sessions/`` once archived), one JSON object a line: ``{"timestamp", "type",
"payload"}``. What graphmem reads from it:

- ``session_meta``: the session's id and working directory (``cwd``);
- ``event_msg`` ``item_completed`` items ``UserMessage`` (what the user typed: never Codex's
  environment context, ``AGENTS.md`` or a hook's added context, graphmem's own memory among
  them) and ``AgentMessage`` (the model's answers). Codex leaves its own user turns
  (``<environment_context>``, ``# AGENTS.md instructions for ...``, ``<user_shell_command>``,
  ``<turn_aborted>``, ``<subagent_notification>``) out of ``UserMessage`` items; each text of one
  is read through ``own_words`` all the same, so a Codex that wrote them there would not make
  them the user's words;
- ``response_item`` ``function_call`` / ``function_call_output`` pairs: the agent's tool runs
  (``exec_command`` is a shell run, so ``core/shell_runs.py`` learns procedures from it).

Confined and bounded: the path must be a regular file (not a symlink) inside one of Codex's
session folders, named ``rollout-<time>-<id>.jsonl``, and its ``session_meta`` must carry that
id (else the ingester finds no such session); at most ``MAX_FILE_BYTES`` are read, a line
longer than ``MAX_LINE_BYTES`` or not JSON is skipped (counted), and a last line cut short
(Codex still writing, or a truncated copy) is skipped. Every refusal is a
``SessionStoreError`` saying what is wrong.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from graphmem.adapters.client_files import confined_file, open_session_file
from graphmem.adapters.client_sessions import (
    OneSessionFile,
    line_time,
    to_ms,
    well_formed_messages,
)
from graphmem.adapters.own_words import own_words
from graphmem.core.sessions import SessionMessage, SessionPart, SessionRead, SessionRow, Transcript
from graphmem.core.text import well_formed
from graphmem.errors import SessionStoreError

KNOWN_VERSIONS = "0.169.x"
# The session folders under $CODEX_HOME that Codex writes rollouts to.
SESSION_FOLDERS = ("sessions", "archived_sessions")
MAX_FILE_BYTES = 64_000_000
MAX_LINE_BYTES = 4_000_000
MAX_MESSAGES = 2_000  # the most recent are kept
MAX_TEXT_CHARS = 20_000
MAX_TOOL_INPUT_CHARS = 2_000
MAX_TOOL_OUTPUT_CHARS = 4_000
SESSION_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
# Codex's shell tools, read as the shell runs core/shell_runs.py knows ("bash").
SHELL_TOOLS = frozenset({"exec_command", "shell", "local_shell", "container.exec"})
_EXIT_CODE = re.compile(r"exited with code (\d+)")


def session_roots(environ: Mapping[str, str] | None = None) -> tuple[Path, ...]:
    """Codex's session folders: under ``$CODEX_HOME``, else ``~/.codex``."""
    # Here: the config module (and the OpenCode config and difflib it pulls) is for `install`;
    # opening the service, as every in-process recall does, must not load it.
    from graphmem.adapters.codex_config import codex_home

    return tuple(codex_home(environ) / folder for folder in SESSION_FOLDERS)


class CodexSessions:
    """Codex's session files as the ingester reads them (the ``SessionSource`` port). Each read
    names its file (the hook's ``transcript_path``); ``locate`` checks it is one graphmem may
    read, inside ``roots`` (default: Codex's session folders), and, told the session, that it is
    named for it (the reader's ``session`` checks that again, and the file's ``session_meta``)."""

    def __init__(self, roots: Sequence[Path] | None = None) -> None:
        self._roots = tuple(roots) if roots is not None else None

    @property
    def roots(self) -> tuple[Path, ...]:
        return self._roots if self._roots is not None else session_roots()

    def locate(self, explicit: str | None, session_id: str | None = None) -> Path:
        if not explicit:
            raise SessionStoreError("Name the Codex session file to read (the hook's transcript_path).")
        path = confined_session_file(explicit, self.roots)
        if session_id is not None and session_id_of(Path(explicit).name) != session_id:
            raise SessionStoreError(
                f"transcript_path {explicit[:200]!r} is not the session file of Codex session "
                f"{session_id[:200]!r} (Codex names it rollout-<time>-{session_id[:200]}.jsonl): send the "
                "session's own transcript_path."
            )
        return path

    def open(self, path: Path) -> CodexSessionFile:
        return CodexSessionFile(path)


def session_id_of(name: str) -> str:
    """The session id a file name claims: ``rollout-<YYYY-MM-DDTHH-MM-SS>-<id>.jsonl``."""
    stem = name.removeprefix("rollout-").removesuffix(".jsonl")
    return (
        stem[len("YYYY-MM-DDTHH-MM-SS-") :] if name.startswith("rollout-") and name.endswith(".jsonl") else ""
    )


def confined_session_file(path: str, roots: Sequence[Path]) -> Path:
    """``path`` as a session file graphmem may read (``client_files.confined_file``): named
    ``rollout-...-<id>.jsonl``, inside one of ``roots`` once resolved. Raises ``SessionStoreError``."""

    def named(given: Path) -> None:
        if not SESSION_ID.fullmatch(session_id_of(given.name)):
            raise SessionStoreError(
                f"{given.name[:200]!r} is not a Codex session file (rollout-<time>-<id>.jsonl)."
            )

    folders = ", ".join(str(root) for root in roots)
    return confined_file(
        path,
        roots,
        what="Codex's session file",
        outside=f"Codex's session folders ({folders}): not read. A CODEX_HOME of your own must be "
        "in the graphmem daemon's environment too.",
        check_name=named,
    )


class CodexSessionFile(OneSessionFile):
    """One session file, read-only (a ``SessionReader``): read once, bounded, when first asked."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._read: SessionRead | None = None

    def session(self, session_id: str) -> SessionRow | None:
        if session_id_of(self._path.name) != session_id:
            return None
        read = self._parse()
        transcript = read.transcript
        if transcript.session_id != session_id:
            return None  # the file's session_meta names another session
        created, updated = to_ms(transcript.created_at), to_ms(transcript.updated_at)
        return SessionRow(session_id, transcript.directory, transcript.title, None, created, updated)

    def read(self, row: SessionRow) -> SessionRead:
        return self._parse()

    def _parse(self) -> SessionRead:
        if self._read is None:
            try:
                with open_session_file(self._path, what="Codex's session file") as handle:
                    data = handle.read(MAX_FILE_BYTES)
            except OSError as exc:
                raise SessionStoreError(
                    f"Cannot read Codex's session file {self._path}: {exc.strerror or exc}."
                ) from None
            self._read = _parse(data)
        return self._read


class _Builder:
    """Messages as the lines go by: user messages, and the agent's text and tool runs between them."""

    def __init__(self) -> None:
        self.messages: list[SessionMessage] = []
        self.parts: list[SessionPart] = []  # the agent's, since the last user message
        self.agent_id = ""
        self.agent_at: datetime | None = None
        self.calls: dict[str, tuple[str, str]] = {}  # call id -> (tool, input)

    def user(self, item_id: str, text: str, when: datetime) -> None:
        self.close_agent()
        part = SessionPart(f"{item_id}:text", "text", text=text)
        self.messages.append(SessionMessage(item_id, "user", when, (part,)))

    def agent_text(self, item_id: str, text: str, when: datetime) -> None:
        self._agent(item_id, when)
        self.parts.append(SessionPart(f"{item_id}:text", "text", text=text))

    def call(self, call_id: str, name: str, arguments: str, when: datetime) -> None:
        self._agent(call_id, when)
        if name in SHELL_TOOLS:
            # well_formed: JSON would keep a lone surrogate as an escape, read back whole downstream.
            command = well_formed(_command(arguments))
            self.calls[call_id] = ("bash", json.dumps({"command": command})[:MAX_TOOL_INPUT_CHARS])
        else:
            self.calls[call_id] = (name[:100], arguments[:MAX_TOOL_INPUT_CHARS])

    def output(self, call_id: str, output: str) -> None:
        tool, tool_input = self.calls.pop(call_id, ("", ""))
        if not tool:
            return
        code = _EXIT_CODE.search(output[:2_000])
        status = "error" if code is not None and code.group(1) != "0" else "completed"
        self.parts.append(
            SessionPart(
                f"{call_id}:tool",
                "tool",
                tool=tool,
                tool_input=tool_input,
                tool_output=output[-MAX_TOOL_OUTPUT_CHARS:],
                status=status,
            )
        )

    def _agent(self, item_id: str, when: datetime) -> None:
        if not self.agent_id:
            self.agent_id, self.agent_at = item_id, when

    def close_agent(self) -> None:
        if self.parts and self.agent_at is not None:
            self.messages.append(SessionMessage(self.agent_id, "assistant", self.agent_at, tuple(self.parts)))
        self.parts, self.agent_id, self.agent_at = [], "", None


def _parse(data: bytes) -> SessionRead:
    skipped = 0
    meta: dict[str, Any] = {}
    first: datetime | None = None
    last: datetime | None = None
    built = _Builder()
    for line in _lines(data):
        if line is None:
            skipped += 1
            continue
        when = line_time(line.get("timestamp"))
        first = first or when
        last = when or last
        kind, payload = line.get("type"), line.get("payload")
        if not isinstance(payload, dict):
            continue
        if kind == "session_meta" and not meta:
            meta = payload
        elif kind == "event_msg" and payload.get("type") == "item_completed":
            _item(built, payload.get("item"), when or last or _EPOCH)
        elif kind == "response_item":
            _response_item(built, payload, when or last or _EPOCH)
    built.close_agent()
    session_id = str(meta.get("id") or meta.get("session_id") or "")[:128]
    messages = well_formed_messages(built.messages[-MAX_MESSAGES:])
    created = line_time(meta.get("timestamp")) or first or _EPOCH
    title = next((m.text for m in messages if m.role == "user"), "")[:200]
    transcript = Transcript(
        session_id=session_id,
        directory=well_formed(str(meta.get("cwd") or "")),
        title=title,
        created_at=created,
        updated_at=last or created,
        messages=tuple(messages),
    )
    return SessionRead(
        transcript,
        in_progress=False,
        skipped_parts=skipped,
        truncated_messages=len(built.messages) - len(messages),
    )


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _lines(data: bytes) -> Iterator[dict[str, Any] | None]:
    """Each complete line's JSON object; None for one that is too long or not a JSON object.
    A last line without its newline (still being written, or cut) is left out."""
    complete = data[: data.rfind(b"\n") + 1]
    for raw in io.BytesIO(complete):  # a line at a time: a list of them all takes ~15 times the bytes
        if not raw.strip():
            continue
        if len(raw) > MAX_LINE_BYTES + 1:  # and its newline
            yield None
            continue
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):
            yield None
            continue
        yield value if isinstance(value, dict) else None


def _item(built: _Builder, item: Any, when: datetime) -> None:
    if not isinstance(item, dict):
        return
    kind, item_id = item.get("type"), str(item.get("id") or "")[:128]
    text = _text(item.get("content"), own_words if kind == "UserMessage" else _as_said)
    if not item_id or not text:
        return
    if kind == "UserMessage":
        built.user(item_id, text, when)
    elif kind == "AgentMessage":
        built.agent_text(item_id, text, when)


def _response_item(built: _Builder, payload: Mapping[str, Any], when: datetime) -> None:
    kind = payload.get("type")
    call_id = str(payload.get("call_id") or "")[:128]
    if not call_id:
        return
    if kind == "function_call":
        built.call(call_id, str(payload.get("name") or ""), str(payload.get("arguments") or ""), when)
    elif kind == "function_call_output":
        output = payload.get("output")
        built.output(
            call_id, output if isinstance(output, str) else json.dumps(output)[:MAX_TOOL_OUTPUT_CHARS]
        )


def _text(content: Any, read: Callable[[str], str]) -> str:
    """The item's texts, each bounded and then ``read`` (a user's: what of it is their own words),
    up to the bound."""
    said: list[str] = []
    size = 0
    for part in content if isinstance(content, list) else []:
        if size >= MAX_TEXT_CHARS:
            break
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            text = read(part["text"][:MAX_TEXT_CHARS])
            if text:
                said.append(text)
                size += len(text) + 1
    return "\n".join(said)[:MAX_TEXT_CHARS]


def _as_said(text: str) -> str:
    return text


def _command(arguments: str) -> str:
    try:
        value = json.loads(arguments)
    except (ValueError, RecursionError):
        return arguments[:MAX_TOOL_INPUT_CHARS]
    if isinstance(value, dict):
        command = value.get("cmd", value.get("command", ""))
        if isinstance(command, list):
            return " ".join(str(word) for word in command)[:MAX_TOOL_INPUT_CHARS]
        return str(command)[:MAX_TOOL_INPUT_CHARS]
    return ""
