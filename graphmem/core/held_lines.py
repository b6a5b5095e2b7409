"""The link, next and event lines of an export as an import holds them (an entity line is held as
the ``Entity`` it stores; a memory line as a ``MemoryLine``, ``core/memory_line.py``).

``core/export_format.py`` checks each line with its pydantic model, the one validator of the
format, and keeps what the import uses of a valid line in slots. A model instance, with its field
dict and its set of fields given, kept 2.7 KB of an event line (its two states are models too),
1.3 KB of an entity line and 0.65 KB of a link or next line; in slots, 0.8, 0.3 and 0.2 KB.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from graphmem.core.events import EventKind, MemoryEvent, State
from graphmem.core.models import LinkKind
from graphmem.core.redaction import redact
from graphmem.core.timeparse import to_utc


@dataclass(frozen=True, slots=True)
class LinkLine:
    """A valid link line: ``source`` *kind* ``target``; no ``created_at``: the time of import."""

    source: str
    target: str
    kind: LinkKind
    created_at: datetime | None


@dataclass(frozen=True, slots=True)
class NextLine:
    """A valid next line: ``target`` came right after ``source`` in a session."""

    source: str
    target: str


@dataclass(frozen=True, slots=True)
class EventLine:
    """A valid event line, its states as the store keeps them (``EventState.state``: never a trust);
    what it says of its author (``person``, ``change``) is not taken from a file."""

    id: str
    memory_id: str
    other_id: str | None
    at: datetime
    kind: EventKind
    actor: str
    rule: str | None
    reason: str
    before: State
    after: State
    undoes: str | None
    undone_by: str | None

    def to_event(self) -> MemoryEvent:
        """The event an import stores of this line."""
        return MemoryEvent(
            id=self.id,
            memory_id=self.memory_id,
            at=to_utc(self.at),
            kind=self.kind,
            actor=self.actor,
            reason=redact(self.reason).text,
            before=self.before,
            after=self.after,
            other_id=self.other_id,
            rule=self.rule,
            undoes=self.undoes,
            undone_by=self.undone_by,
        )
