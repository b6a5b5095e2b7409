"""``MemoryService``'s lifecycle verbs: archive, restore, resolve, delete, link, unlink.

Each changes one memory's status or its links and never its text (``edit`` does that);
every change but ``delete`` can be undone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from datetime import datetime

from graphmem.core.models import Category, Link, LinkKind, MemoryRecord, Status
from graphmem.core.ports import GraphStore
from graphmem.errors import ConflictError, InvalidInputError, NotFoundError
from graphmem.service.inputs import parse_link_kind, parse_memory_id, unknown_memory
from graphmem.service.semantic import SemanticIndex


class LifecycleVerbs:
    """A memory's status and links (mixed into ``MemoryService``)."""

    store: GraphStore
    semantic: SemanticIndex | None
    _clock: Callable[[], datetime]
    _write_lock: threading.RLock

    def _get(self, memory_id: str) -> MemoryRecord:
        """The memory ``memory_id`` names (see ``parse_memory_id``), or ``No memory mem_x``.

        Every verb goes on with the returned record's ``id``, never the id as given.
        """
        wanted = parse_memory_id(memory_id)
        found = self.store.get_memories([wanted])
        if wanted not in found:
            raise unknown_memory(wanted)
        return found[wanted]

    def _supersede(self, newer: MemoryRecord, older: MemoryRecord, now: datetime) -> None:
        """``newer`` replaces ``older``: close it and link the two."""
        self.store.update_memory(
            older.id, {"status": Status.SUPERSEDED, "valid_to": newer.valid_from, "updated_at": now}
        )
        self.store.add_links([Link(newer.id, older.id, LinkKind.SUPERSEDES, now)])
        if self.semantic is not None:
            self.semantic.status_changed(older.id, Status.SUPERSEDED)

    def _set_status(
        self, memory_id: str, status: Status, *, allowed_from: Iterable[Status], clear_valid_to: bool = False
    ) -> MemoryRecord:
        with self._write_lock:
            record = self._get(memory_id)
            memory_id = record.id
            if record.status is status:
                return record
            if record.status not in set(allowed_from):
                raise ConflictError(
                    f"Memory {memory_id} is {record.status.value}; cannot make it {status.value}."
                )
            changes: dict[str, object] = {"status": status, "updated_at": self._clock()}
            if clear_valid_to:
                changes["valid_to"] = None
            self.store.update_memory(memory_id, changes)
            if self.semantic is not None:
                self.semantic.status_changed(memory_id, status)
            return self._get(memory_id)

    def archive(self, memory_id: str) -> MemoryRecord:
        """Hide a memory from recall without deleting it (``restore`` brings it back)."""
        return self._set_status(memory_id, Status.ARCHIVED, allowed_from=Status)

    def restore(self, memory_id: str) -> MemoryRecord:
        """Make an archived or superseded memory current again.

        Undoes a supersession: the ``supersedes`` edges pointing at it are removed.
        """
        with self._write_lock:
            record = self._get(memory_id)
            memory_id = record.id
            if record.status is Status.SUPERSEDED:
                for link in self.store.links([memory_id]):
                    if link.kind is LinkKind.SUPERSEDES and link.target == memory_id:
                        self.store.remove_link(link.source, link.target, link.kind)
            return self._set_status(
                memory_id,
                Status.ACTIVE,
                allowed_from=(Status.ARCHIVED, Status.SUPERSEDED),
                clear_valid_to=True,
            )

    def resolve(self, memory_id: str) -> MemoryRecord:
        """Mark a blocker as no longer blocking."""
        self._require_blocker(memory_id)
        return self._set_status(memory_id, Status.RESOLVED, allowed_from=(Status.ACTIVE,))

    def unresolve(self, memory_id: str) -> MemoryRecord:
        """Mark a resolved blocker as blocking again."""
        self._require_blocker(memory_id)
        return self._set_status(memory_id, Status.ACTIVE, allowed_from=(Status.RESOLVED,))

    def _require_blocker(self, memory_id: str) -> None:
        record = self._get(memory_id)
        if record.category is not Category.BLOCKER:
            raise ConflictError(
                f"Memory {memory_id} is a {record.category.value}, not a blocker; only blockers resolve."
            )

    def delete(self, memory_id: str) -> MemoryRecord:
        """Delete a memory and its edges for good."""
        with self._write_lock:
            record = self._get(memory_id)
            self.store.delete_memory(record.id)
            if self.semantic is not None:
                self.semantic.removed(record.id)
            return record

    def link(self, source: str, target: str, kind: str | LinkKind) -> Link:
        """Relate two memories: ``source`` supersedes / contradicts / extends / relates to ``target``."""
        kind = parse_link_kind(kind)
        source, target = parse_memory_id(source), parse_memory_id(target)
        if source == target:
            raise InvalidInputError("A memory cannot be linked to itself: give two different ids.")
        with self._write_lock:
            newer, older = self._get(source), self._get(target)
            now = self._clock()
            if kind is LinkKind.SUPERSEDES:
                self._supersede(newer, older, now)
            else:
                self.store.add_links([Link(source, target, kind, now)])
            return Link(source, target, kind, now)

    def unlink(self, source: str, target: str, kind: str | LinkKind) -> None:
        """Remove a link; removing ``supersedes`` makes the target current again."""
        kind = parse_link_kind(kind)
        source, target = parse_memory_id(source), parse_memory_id(target)
        with self._write_lock:
            exists = any(
                link.source == source and link.target == target and link.kind is kind
                for link in self.store.links([target])
            )
            if not exists:
                raise NotFoundError(f"No {kind.value} link from {source} to {target}.")
            if kind is LinkKind.SUPERSEDES and self._get(target).status is Status.SUPERSEDED:
                self.restore(target)
                return
            if not self.store.remove_link(source, target, kind):
                raise NotFoundError(f"No {kind.value} link from {source} to {target}.")
