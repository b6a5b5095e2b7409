"""Agent sessions as graphmem reads them (from OpenCode's store) and what it learns from them.

Pure data; no I/O. ``adapters/opencode_sessions.py`` fills ``SessionRow``, ``SessionRead``
and ``Transcript`` from OpenCode's SQLite database; ``core/extraction.py`` turns a
transcript into ``Learned`` items.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from graphmem.core.models import Category, Trust


@dataclass(frozen=True, slots=True)
class SessionPart:
    """One part of a message: text, a tool call with its output, reasoning, a file..."""

    id: str
    type: str  # text, tool, reasoning, file, patch, step-start, step-finish, ...
    text: str = ""  # text / reasoning parts (bounded by the reader)
    tool: str = ""  # tool parts: the tool's name ("bash", "edit", "graphmem_recall")
    tool_input: str = ""  # tool parts: the input, as compact JSON (bounded)
    tool_output: str = ""  # tool parts: the output (bounded)
    status: str = ""  # tool parts: completed, error, running, pending
    files: tuple[str, ...] = ()  # paths the part names (file parts, edit/write/read inputs)


@dataclass(frozen=True, slots=True)
class SessionMessage:
    id: str
    role: str  # user, assistant
    created_at: datetime
    parts: tuple[SessionPart, ...]
    agent: str = ""  # build, plan, title, ...

    @property
    def text(self) -> str:
        """The message's visible text (its text parts, joined)."""
        return "\n\n".join(p.text for p in self.parts if p.type == "text" and p.text)


@dataclass(frozen=True, slots=True)
class Transcript:
    """One session, in order."""

    session_id: str
    directory: str  # the project directory OpenCode ran in
    title: str
    created_at: datetime
    updated_at: datetime
    messages: tuple[SessionMessage, ...]
    parent_id: str | None = None


@dataclass(frozen=True, slots=True)
class Learned:
    """One memory learned from a session, with where it came from."""

    category: Category
    text: str
    message_id: str  # the message it was read from (provenance)
    rule: str  # which rule found it ("decision.we-decided", "llm", ...)
    trust: Trust = Trust.NORMAL
    files: tuple[str, ...] = field(default=())  # paths it is about, as written in the session


@dataclass(frozen=True, slots=True)
class SessionRow:
    """One row of OpenCode's ``session`` table (what is needed to decide whether to read it)."""

    id: str
    directory: str
    title: str
    parent_id: str | None
    time_created_ms: int
    time_updated_ms: int


@dataclass(frozen=True, slots=True)
class SessionRead:
    """One session as read: its transcript, whether it is still being written, what was skipped."""

    transcript: Transcript
    in_progress: bool  # an assistant message not completed yet, or a message row unreadable
    skipped_parts: int = 0  # parts with corrupt JSON (skipped, not fatal)
    skipped_messages: int = 0  # messages with corrupt JSON
    truncated_messages: int = 0  # messages left out beyond the reader's bound (the oldest ones)
