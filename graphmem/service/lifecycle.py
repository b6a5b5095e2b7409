"""The lifecycle verbs: archive, restore, resolve, unresolve, confirm, delete, link, unlink;
history, undo.

Each changes one memory's status or its links and never its text (``edit`` does that);
every change but ``delete`` is recorded in the memory's history (``core/events.py``) with
who made it (``actor``) and can be undone. The rules are here; the writes are the
writer's (``service/writer.py``).
"""

from __future__ import annotations

from graphmem.core.events import USER, Cause, MemoryEvent
from graphmem.core.models import Category, Link, LinkKind, MemoryRecord, Status
from graphmem.errors import ConflictError, InvalidInputError, NotFoundError
from graphmem.service.inputs import parse_link_kind, parse_memory_id, unknown_memory
from graphmem.service.writer import MemoryWriter

# Events ``history`` returns at most.
MAX_HISTORY = 500


class Lifecycle:
    """A memory's status, links and history."""

    def __init__(self, writer: MemoryWriter) -> None:
        self._writer = writer

    def archive(self, memory_id: str, *, actor: str = USER) -> MemoryRecord:
        """Hide a memory from recall without deleting it (``restore`` brings it back)."""
        return self._writer.set_status(memory_id, Status.ARCHIVED, allowed_from=Status, cause=Cause(actor))

    def restore(self, memory_id: str, *, actor: str = USER) -> MemoryRecord:
        """Make an archived or superseded memory current again.

        Undoes a supersession: the ``supersedes`` edges pointing at it are removed; an expired
        memory loses its expiry.
        """
        writer = self._writer
        with writer.lock:
            record = writer.get(memory_id)
            memory_id = record.id
            expired = record.expires_at is not None and record.expires_at <= writer.clock()
            drop: list[Link] = []
            if record.status is Status.SUPERSEDED:
                drop = [
                    link
                    for link in writer.store.links([memory_id])
                    if link.kind is LinkKind.SUPERSEDES and link.target == memory_id
                ]
            return writer.set_status(
                memory_id,
                Status.ACTIVE,
                allowed_from=(Status.ARCHIVED, Status.SUPERSEDED),
                clear_valid_to=True,
                cause=Cause(actor),
                unlink=drop,
                clear_expiry=expired,  # else it would expire again at once
            )

    def resolve(self, memory_id: str, *, actor: str = USER) -> MemoryRecord:
        """Mark a blocker as no longer blocking."""
        self._require_blocker(memory_id)
        return self._writer.set_status(
            memory_id, Status.RESOLVED, allowed_from=(Status.ACTIVE,), cause=Cause(actor)
        )

    def unresolve(self, memory_id: str, *, actor: str = USER) -> MemoryRecord:
        """Mark a resolved blocker as blocking again."""
        self._require_blocker(memory_id)
        return self._writer.set_status(
            memory_id, Status.ACTIVE, allowed_from=(Status.RESOLVED,), cause=Cause(actor)
        )

    def _require_blocker(self, memory_id: str) -> None:
        record = self._writer.get(memory_id)
        if record.category is not Category.BLOCKER:
            raise ConflictError(
                f"Memory {memory_id} is a {record.category.value}, not a blocker; only blockers resolve."
            )

    def confirm(self, memory_id: str) -> MemoryRecord:
        """Mark a memory as still valid now: a change to its code before now no longer flags it."""
        writer = self._writer
        with writer.lock:
            record = writer.get(memory_id)
            writer.change(record.id, {"updated_at": writer.clock()})
            return writer.get(record.id)

    def delete(self, memory_id: str) -> MemoryRecord:
        """Delete a memory and its edges for good (its history stays readable)."""
        return self._writer.delete(memory_id)

    def link(self, source: str, target: str, kind: str | LinkKind, *, actor: str = USER) -> Link:
        """Relate two memories: ``source`` supersedes / contradicts / extends / relates to ``target``."""
        kind = parse_link_kind(kind)
        source, target = parse_memory_id(source), parse_memory_id(target)
        if source == target:
            raise InvalidInputError("A memory cannot be linked to itself: give two different ids.")
        writer = self._writer
        with writer.lock:
            newer, older = writer.get(source), writer.get(target)
            now = writer.clock()
            if kind is LinkKind.SUPERSEDES:
                writer.supersede(newer, older, now, Cause(actor))
            else:
                writer.link(Link(source, target, kind, now), Cause(actor))
            return Link(source, target, kind, now)

    def unlink(self, source: str, target: str, kind: str | LinkKind, *, actor: str = USER) -> None:
        """Remove a link; removing ``supersedes`` makes the target current again."""
        kind = parse_link_kind(kind)
        source, target = parse_memory_id(source), parse_memory_id(target)
        writer = self._writer
        with writer.lock:
            exists = any(
                link.source == source and link.target == target and link.kind is kind
                for link in writer.store.links([target])
            )
            if not exists:
                raise NotFoundError(f"No {kind.value} link from {source} to {target}.")
            if kind is LinkKind.SUPERSEDES and writer.get(target).status is Status.SUPERSEDED:
                self.restore(target, actor=actor)
                return
            if not writer.unlink(source, target, kind, Cause(actor)):
                raise NotFoundError(f"No {kind.value} link from {source} to {target}.")

    # -- history ------------------------------------------------------------------------

    def history(self, memory_id: str, *, limit: int = 100) -> list[MemoryEvent]:
        """The changes of a memory, newest first: edits (with the old text), status changes,
        supersessions and links, each with who made it and why (a deleted memory's too)."""
        wanted = parse_memory_id(memory_id)
        if not 1 <= limit <= MAX_HISTORY:
            raise InvalidInputError(f"limit must be between 1 and {MAX_HISTORY}, not {limit}.")
        events = self._writer.store.events_of(wanted, limit)
        if not events and wanted not in self._writer.store.get_memories([wanted]):
            raise unknown_memory(wanted)
        return events

    def undo(self, event_id: str, *, actor: str = USER) -> MemoryEvent:
        """Reverse one event of a memory's history exactly; returns the undo's own event."""
        return self._writer.undo(event_id, Cause(actor))
