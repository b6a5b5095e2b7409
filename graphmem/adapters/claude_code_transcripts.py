"""Claude Code's session transcripts, read-only: one JSONL file per session.

Claude Code (2.1.x) writes each session to ``<config>/projects/<project slug>/<session id>.jsonl``,
where ``<config>`` is ``$CLAUDE_CONFIG_DIR`` or ``~/.claude``, and names that file in every
hook's input (``transcript_path``). Each line is one JSON object; the ones read here:

- ``{"type": "user", "message": {"role": "user", "content": "..." | [blocks]}, "uuid", "timestamp",
  "cwd", "sessionId", "isMeta"?, "isSidechain"?, "isCompactSummary"?, "origin"?}``: the results of
  tool calls (``tool_result`` blocks, matched to their call by ``tool_use_id``), or text blocks.
  A text block is the user's words only on a line the person wrote and only as far as
  ``own_words`` reads it as theirs. Claude Code writes user lines of its own: a background task's
  result or another agent's message carries ``"origin": {"kind": "task-notification" | "peer" |
  ...}`` (the person's prompt has none, or ``"human"``), a line of a tool's result
  ``toolUseResult``, text it put in the person's place ``textNotTyped`` or ``handedOff``: their
  text is never the user's words, whatever it says. A line without those marks still holds the
  client's text when it is wrapped (``<bash-stdout>``, ``<task-notification>``,
  ``<teammate-message>``, a ``<system-reminder>`` inside a prompt...): ``own_words`` owns that
  rule (see its docstring) and drops it. Images and documents are not read;
- ``{"type": "assistant", "message": {"id", "content": [text | thinking | tool_use blocks]}, ...}``:
  one line per content block, several lines sharing the message's ``id``;
- everything else (attachments, which hold the hooks' additional context graphmem itself
  added; summaries, snapshots, costs) is not the conversation and is skipped.

The path is hostile input (it comes from a hook, through the daemon's route): it must be an
absolute path to a regular file, not a symlink, inside ``<config>/projects`` once resolved,
named ``<session id>.jsonl``; anything else is a ``SessionStoreError`` saying why. The file is
read up to ``MAX_TRANSCRIPT_BYTES`` (a longer one is read from its end), every text is bounded,
a line that is not JSON (a transcript cut mid-write) is skipped and counted.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from graphmem.adapters.client_files import confined_file, open_session_file
from graphmem.adapters.client_sessions import (
    OneSessionFile,
    line_time,
    row_transcript,
    to_ms,
    well_formed_messages,
)
from graphmem.adapters.own_words import own_words
from graphmem.core.sessions import SessionMessage, SessionPart, SessionRead, SessionRow
from graphmem.core.text import well_formed
from graphmem.errors import SessionStoreError

CONFIG_DIR_VARIABLE = "CLAUDE_CONFIG_DIR"
# A line with one of these set is not the conversation: a subagent's (``isSidechain``), Claude
# Code's own (``isMeta``), or the summary the model wrote when the session was compacted
# (``isCompactSummary``, written as a user line: it would be learned as the user's words).
_NOT_THE_CONVERSATION = ("isSidechain", "isMeta", "isCompactSummary", "isVisibleInTranscriptOnly")
# A user line with one of these set is Claude Code's, not what the person typed: its text is never
# the user's words (its tool results are still read).
_NOT_TYPED = ("toolUseResult", "textNotTyped", "handedOff", "isVirtual")
# A session longer than this is read from its end (its latest turns are what is new).
MAX_TRANSCRIPT_BYTES = 32_000_000
MAX_LINE_BYTES = 4_000_000
MAX_MESSAGES_PER_SESSION = 2_000
MAX_TEXT_CHARS = 20_000
MAX_TOOL_INPUT_CHARS = 2_000
MAX_TOOL_OUTPUT_CHARS = 4_000
MAX_FILES_PER_PART = 100
TITLE_CHARS = 80
# Tool-input keys that hold a path the tool reads or writes.
_PATH_KEYS = ("file_path", "notebook_path", "path", "filePath")


def config_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Claude Code's config folder: ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    env = os.environ if environ is None else environ
    configured = env.get(CONFIG_DIR_VARIABLE, "").strip()
    return Path(configured).expanduser() if configured else Path.home() / ".claude"


def transcripts_root(environ: Mapping[str, str] | None = None) -> Path:
    """Where Claude Code keeps the user's session transcripts."""
    return config_dir(environ) / "projects"


def confined_transcript(path: str, session_id: str, root: Path | None = None) -> Path:
    """``path`` as a transcript graphmem may read (``client_files.confined_file``): inside ``root``
    (default: ``transcripts_root()``) once resolved, named ``<session_id>.jsonl``. Raises
    ``SessionStoreError`` saying what is wrong."""
    return _confined(path, lambda given: _check_session(path, given, session_id), root)


def _confined(path: str, check_name: Callable[[Path], None], root: Path | None) -> Path:
    where = (root or transcripts_root()).expanduser()
    return confined_file(
        path,
        [where],
        what="The transcript",
        outside=f"Claude Code's sessions ({where}): graphmem reads nothing else. Set "
        f"{CONFIG_DIR_VARIABLE} for the daemon as Claude Code has it.",
        check_name=check_name,
    )


def _check_session(path: str, given: Path, session_id: str) -> None:
    """``SessionStoreError`` unless ``given`` is named as Claude Code names ``session_id``'s transcript."""
    if given.name != f"{session_id}.jsonl":
        raise SessionStoreError(
            f"transcript_path {path[:200]!r} is not the transcript of session {session_id[:200]!r} "
            f"(Claude Code names it {session_id[:200]}.jsonl): send the session's own transcript_path."
        )


def _check_transcript(given: Path) -> None:
    """``SessionStoreError`` unless ``given`` is named as a transcript of some session."""
    if given.suffix != ".jsonl" or not given.stem:
        raise SessionStoreError(
            f"transcript_path {str(given)[:200]!r} is no Claude Code transcript (<session id>.jsonl)."
        )


@dataclass
class _Building:
    """What one pass over the lines gathers."""

    directory: str = ""
    first: datetime | None = None
    last: datetime | None = None
    title: str = ""
    skipped: int = 0
    messages: list[SessionMessage] = field(default_factory=list)
    tools: dict[str, int] = field(default_factory=dict)  # tool_use id -> index in messages


class ClaudeCodeTranscript(OneSessionFile):
    """One transcript file, read-only (a ``SessionReader``)."""

    def session(self, session_id: str) -> SessionRow | None:
        """The session, when this file is its transcript; a transcript of another session is a
        ``SessionStoreError`` naming the one asked for (a hook sent the wrong path)."""
        _check_session(str(self._path), self._path, session_id)
        built = self._build()
        created = built.first or _mtime(self._path)
        updated = built.last or created
        directory, title = well_formed(built.directory), well_formed(built.title)
        return SessionRow(session_id, directory, title, None, to_ms(created), to_ms(updated))

    def read(self, row: SessionRow) -> SessionRead:
        built = self._build()
        messages = well_formed_messages(built.messages[-MAX_MESSAGES_PER_SESSION:])
        return SessionRead(
            row_transcript(row, messages),
            in_progress=False,
            skipped_messages=built.skipped,
            truncated_messages=len(built.messages) - len(messages),
        )

    def _lines(self) -> Iterator[bytes]:
        with open_session_file(self._path, what="the transcript") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > MAX_TRANSCRIPT_BYTES:
                handle.seek(size - MAX_TRANSCRIPT_BYTES)
                handle.readline()  # the rest of a line cut by the seek
            read = 0
            for line in handle:
                read += len(line)
                if read > MAX_TRANSCRIPT_BYTES:
                    return  # grown since: what is past the bound waits for the next read
                yield line

    def _build(self) -> _Building:
        built = _Building()
        for raw in self._lines():
            entry = _entry(raw)
            if entry is None:
                if raw.strip():
                    built.skipped += 1
                continue
            kind = entry.get("type")
            if kind not in ("user", "assistant") or any(entry.get(flag) for flag in _NOT_THE_CONVERSATION):
                continue
            when = line_time(entry.get("timestamp"))
            if when is not None:
                built.first = built.first or when
                built.last = when if built.last is None or when > built.last else built.last
            if not built.directory and isinstance(entry.get("cwd"), str):
                built.directory = entry["cwd"][:4096]
            message = entry.get("message")
            if isinstance(message, dict):
                _add(built, kind, entry, message, when or built.last or _mtime(self._path))
        return built


def _entry(raw: bytes) -> dict[str, Any] | None:
    if len(raw) > MAX_LINE_BYTES:
        return None
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _add(
    built: _Building, role: str, entry: Mapping[str, Any], message: Mapping[str, Any], when: datetime
) -> None:
    content = message.get("content")
    blocks: Iterable[Any] = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
    if not isinstance(blocks, list):
        return
    parts: list[SessionPart] = []
    ident = str(entry.get("uuid") or "")[:128]
    persons = role != "user" or _typed_by_the_person(entry)
    for index, block in enumerate(blocks):
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str) and persons:
            text = block["text"][:MAX_TEXT_CHARS]
            said = own_words(text) if role == "user" else text
            if said:
                parts.append(SessionPart(f"{ident}:{index}", "text", text=said))
        elif kind == "tool_use" and role == "assistant":
            parts.append(_tool_use(block, ident, index))
        elif kind == "tool_result" and role == "user":
            _tool_result(built, block)
    if not parts:
        return
    if role == "user" and not built.title:
        built.title = " ".join(parts[0].text.split())[:TITLE_CHARS]
    group = str(message.get("id") or ident) if role == "assistant" else ident
    previous = built.messages[-1] if built.messages else None
    if previous is not None and role == "assistant" and previous.role == "assistant" and previous.id == group:
        built.messages[-1] = SessionMessage(group, role, previous.created_at, previous.parts + tuple(parts))
    else:
        built.messages.append(SessionMessage(group or f"line{len(built.messages)}", role, when, tuple(parts)))
    for part in parts:
        if part.type == "tool":  # its result comes in a later line
            built.tools[part.id] = len(built.messages) - 1


def _typed_by_the_person(entry: Mapping[str, Any]) -> bool:
    """Whether a user line is one the person wrote, as Claude Code marks it: no origin but a
    person's, no mark of a tool's result or of text Claude Code put in the person's place."""
    origin = entry.get("origin")
    if origin is not None and not (isinstance(origin, dict) and origin.get("kind") == "human"):
        return False
    return entry.get("promptSource") != "system" and not any(entry.get(mark) for mark in _NOT_TYPED)


def _tool_use(block: Mapping[str, Any], ident: str, index: int) -> SessionPart:
    given = block.get("input")
    arguments: dict[str, Any] = given if isinstance(given, dict) else {}
    files = tuple(str(arguments[k])[:4096] for k in _PATH_KEYS if isinstance(arguments.get(k), str))
    return SessionPart(
        str(block.get("id") or f"{ident}:{index}")[:128],
        "tool",
        tool=str(block.get("name") or "").lower()[:100],
        tool_input=json.dumps(arguments, separators=(",", ":"), ensure_ascii=False)[:MAX_TOOL_INPUT_CHARS],
        status="running",
        files=files[:MAX_FILES_PER_PART],
    )


def _tool_result(built: _Building, block: Mapping[str, Any]) -> None:
    """The result of a call: its output and status go into the assistant's tool part."""
    call = str(block.get("tool_use_id"))
    at = built.tools.get(call)
    if at is None or at >= len(built.messages):
        return
    output = block.get("content")
    if isinstance(output, list):
        output = "\n".join(str(b.get("text", "")) for b in output if isinstance(b, dict))
    text = str(output or "")
    status = "error" if block.get("is_error") else "completed"
    message = built.messages[at]
    parts = tuple(
        replace(p, tool_output=_bounded(text), status=status) if p.id == call else p for p in message.parts
    )
    built.messages[at] = SessionMessage(message.id, message.role, message.created_at, parts, message.agent)


def _bounded(text: str) -> str:
    if len(text) <= MAX_TOOL_OUTPUT_CHARS:
        return text
    head = MAX_TOOL_OUTPUT_CHARS * 2 // 3
    return text[:head] + "\n…\n" + text[-(MAX_TOOL_OUTPUT_CHARS - head) :]


def _mtime(path: Path) -> datetime:
    try:
        return datetime.fromtimestamp(path.stat().st_mtime, UTC)
    except OSError:
        return datetime.now(UTC)


class ClaudeCodeTranscripts:
    """Claude Code's transcripts as the ingester reads them (the ``SessionSource`` port). Each
    read names its file; ``locate`` checks it is a transcript graphmem may read (and, told the
    session, that it is that session's: the daemon's route checks before it queues an ingest),
    and the reader's ``session`` checks again that it is the transcript of the session asked for
    (its file name): ``Ingester.run`` does not tell ``locate`` which session that is."""

    def __init__(self, root: Path | None = None) -> None:
        self._root = root

    def locate(self, explicit: str | None, session_id: str | None = None) -> Path:
        if not explicit:
            raise SessionStoreError("Name the Claude Code transcript to read (the hook's transcript_path).")
        if session_id is None:
            return _confined(explicit, _check_transcript, self._root)
        return confined_transcript(explicit, session_id, self._root)

    def open(self, path: Path) -> ClaudeCodeTranscript:
        return ClaudeCodeTranscript(path)
