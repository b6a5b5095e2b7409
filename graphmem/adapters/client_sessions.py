"""What the readers of agent clients' sessions share: a ``SessionRow``'s times (milliseconds,
as OpenCode's ``session`` table keeps them), the ``Transcript`` a row and its messages make, the
times a JSONL session line writes (ISO 8601), and the reader of one file that is one session
(Claude Code's transcript, Codex's session file).

Each client's adapter owns how its sessions are found, named and parsed; this module owns only
what a ``SessionRow`` means, so the three readers cannot disagree on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from graphmem.core.sessions import SessionMessage, SessionPart, SessionRow, Transcript
from graphmem.core.text import well_formed
from graphmem.core.timeparse import to_utc
from graphmem.errors import InvalidInputError

__all__ = [
    "OneSessionFile",
    "from_ms",
    "line_time",
    "row_transcript",
    "to_ms",
    "well_formed_messages",
]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def to_ms(moment: datetime) -> int:
    """``moment`` as a ``SessionRow`` time: milliseconds since the epoch."""
    return int(moment.timestamp() * 1000)


def from_ms(ms: object) -> datetime:
    """A ``SessionRow`` time as an aware UTC time (no time, no number, or one past what a date holds:
    the epoch)."""
    if not isinstance(ms, int | float):
        return _EPOCH  # another program's column: text or bytes where OpenCode writes a number
    try:
        return datetime.fromtimestamp(ms / 1000, UTC)
    except (OverflowError, OSError, ValueError):  # another program's number: past year 9999, or time_t
        return _EPOCH


def line_time(value: object) -> datetime | None:
    """A session line's ISO 8601 time (``Z`` for UTC allowed) in UTC; None for anything else."""
    if not isinstance(value, str):
        return None
    try:
        return to_utc(datetime.fromisoformat(value.replace("Z", "+00:00")))
    except (ValueError, InvalidInputError):  # InvalidInputError: a time UTC cannot hold
        return None


def well_formed_messages(messages: Sequence[SessionMessage]) -> list[SessionMessage]:
    """``messages`` with every text ``well_formed``."""
    return [
        replace(
            message,
            id=well_formed(message.id),
            role=well_formed(message.role),
            agent=well_formed(message.agent),
            parts=tuple(_well_formed_part(part) for part in message.parts),
        )
        for message in messages
    ]


def _well_formed_part(part: SessionPart) -> SessionPart:
    return replace(
        part,
        id=well_formed(part.id),
        type=well_formed(part.type),
        text=well_formed(part.text),
        tool=well_formed(part.tool),
        tool_input=well_formed(part.tool_input),
        tool_output=well_formed(part.tool_output),
        status=well_formed(part.status),
        files=tuple(well_formed(path) for path in part.files),
    )


def row_transcript(row: SessionRow, messages: Sequence[SessionMessage]) -> Transcript:
    """The transcript of the session ``row`` names, made of ``messages`` (in order)."""
    return Transcript(
        session_id=row.id,
        directory=row.directory,
        title=row.title,
        created_at=from_ms(row.time_created_ms),
        updated_at=from_ms(row.time_updated_ms),
        messages=tuple(messages),
        parent_id=row.parent_id,
    )


class OneSessionFile:
    """The part of a ``SessionReader`` over one file holding one session that every such reader
    shares: it has nothing to close, and no session changes without being named (a hook names
    the file). Each client's reader adds ``session`` (is this file that session?) and ``read``."""

    def __init__(self, path: Path) -> None:
        self._path = path

    @property
    def path(self) -> Path:
        return self._path

    def close(self) -> None:
        pass

    def changed_sessions(self, after: tuple[int, str] | None) -> list[SessionRow]:
        return []
