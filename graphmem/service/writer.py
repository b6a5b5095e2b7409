"""The one door for writing memories: ``MemoryWriter``.

Every service code path that writes a memory, its entities or its links -- remember, edit, the lifecycle
verbs, bootstrap's facts and commit events, import, session ingest, ``enrich``'s refs -- calls this
object, and only this object calls the store's write methods (``tests/unit/test_architecture.py`` fails
otherwise). It applies changes, each one audited; what a ``remember`` means (a repeat, a new memory,
what it replaces) is decided before, by ``Rememberer`` (``remember.py``). So each of these happens
here, once:

- redaction: the store is wrapped by ``service/redacting.py`` (``guard_store``) first
  thing, and ``edit`` redacts before it derives a hash or reads entities (as ``remember`` does);
- validation of an edit's text and category (``service/inputs.py``);
- the content hash (``core.dedup.memory_hash``) of a text rewritten here;
- the write lock (``lock``, re-entrant: a caller holding it may call any method);
- the entities an edited text names (``Mentions``);
- the semantic index's bookkeeping (``added``, ``status_changed``, ``text_changed``, ``removed``);
- the history (its part ``history``, ``writer_history.py``): every change of a memory but its
  creation is an event (``core/events.py``) with its ``Cause``, written in the change's own
  transaction (a team's store refuses a change without it: schema 20, postgres_functions.py);
  ``history.undo`` reverses one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime

from graphmem.core.dedup import memory_hash
from graphmem.core.events import (
    BY_USER,
    Cause,
    EventKind,
    MemoryEvent,
    State,
    field_state,
    link_value,
    time_value,
)
from graphmem.core.models import Entity, EntityKind, Link, LinkKind, MemoryRecord, Status, Trust
from graphmem.core.ports import GraphStore, Vector
from graphmem.core.provenance import acts_as_person, is_persons, unconfirmed
from graphmem.core.redaction import redact
from graphmem.core.supersession import keep_in_sight
from graphmem.core.text import validate_text
from graphmem.core.timeparse import utc_now
from graphmem.errors import ConflictError, InvalidInputError
from graphmem.service.inputs import MemoryEdit, parse_category, parse_memory_id, unknown_memory
from graphmem.service.mentions import Mentions
from graphmem.service.redacting import guard_store
from graphmem.service.semantic import SemanticIndex, record_model
from graphmem.service.writer_history import WriterHistory


class MemoryWriter:
    """Writes memories, their entities and links; keeps the semantic index in step. ``reindex``
    is documented where ``graphmem.api.Memory`` declares it."""

    def __init__(
        self,
        store: GraphStore,
        semantic: SemanticIndex | None,
        mentions: Mentions,
        *,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        store = guard_store(store)  # every write from here on passes redaction
        self.store = store
        self.semantic = semantic
        self.mentions = mentions
        self.clock = clock
        self.lock = threading.RLock()
        self.history = WriterHistory(self)  # events, expiry and undo

    def get(self, memory_id: str) -> MemoryRecord:
        """The memory ``memory_id`` names (see ``parse_memory_id``), or ``No memory mem_x``.

        Every verb goes on with the returned record's ``id``, never the id as given.
        """
        wanted = parse_memory_id(memory_id)
        found = self.store.get_memories([wanted])
        if wanted not in found:
            raise unknown_memory(wanted)
        return found[wanted]

    # -- one memory -------------------------------------------------------------------

    def add_remembered(
        self,
        record: MemoryRecord,
        entities: Sequence[Entity],
        *,
        follows: str | None,
        replaces: Sequence[MemoryRecord],
        cause: Cause,
    ) -> list[MemoryEvent]:
        """Store ``record``, a new memory (``service/remember.py`` decided it is one), about
        ``entities``, the turn after ``follows`` in its session, and make it supersede each of
        ``replaces`` for ``cause`` as of its ``updated_at``: one commit for all of it
        (acknowledged = durable). The supersessions' events, in the order of ``replaces``."""
        with self.lock:
            with self.store.transaction():
                self.store.add_memories([record])
                if entities:
                    self.store.upsert_entities(entities)
                    self.store.link_about([(record.id, e) for e in entities])
                if follows:
                    self.store.add_next([(follows, record.id)])
                events = [self.supersede(record, older, record.updated_at, cause) for older in replaces]
            self.history.expiry_changed(record.expires_at)  # it may expire first
        if self.semantic is not None:
            self.semantic.added([record.id], source=record.source)
        return events

    def reinforce(self, record: MemoryRecord, cause: Cause, *, at: datetime, restore: bool) -> MemoryRecord:
        """Count ``record`` remembered once more, ``at``, in a ``reinforce`` event (the count before
        and after) that ``undo`` reverses; with ``restore`` (an archived one) it is active again, in
        a ``status`` event of its own (the newer), which readers of who changed its standing find
        among ``CHANGES``. The record as it is now."""
        status = Status.ACTIVE if restore else record.status
        count = record.reinforced + 1
        changes: dict[str, object] = {"reinforced": count, "updated_at": at}
        with self.lock, self.store.transaction():
            before: State = {"reinforced": record.reinforced}
            self.history.record(record.id, EventKind.REINFORCE, before, {"reinforced": count}, cause)
            if status is not record.status:
                changes["status"] = status
                before = {"status": record.status.value}
                self.history.record(record.id, EventKind.STATUS, before, {"status": status.value}, cause)
            self.set_fields(record.id, changes)
        return replace(record, reinforced=count, updated_at=at, status=status)

    def edit(self, memory_id: str, change: MemoryEdit, *, cause: Cause = BY_USER) -> MemoryRecord:
        """Make ``change`` to a memory's text and/or category; new text is read for entities in
        its ``project`` (else the memory's own). The old text is kept in the history. See
        ``MemoryService.edit``."""
        new_category = parse_category(change.category) if change.category is not None else None
        new_text = validate_text(redact(change.text).text) if change.text is not None else None
        with self.lock, self.store.transaction():
            record = self.get(memory_id)
            memory_id = record.id  # as stored: the id given may carry whitespace
            now = self.clock()
            before: State = {}
            after: State = {}
            if new_text is not None and new_text != record.text:
                entities = self.mentions.entities_in(new_text, change.project or record.project)
                known = self.store.about([memory_id]).get(memory_id, [])
                before.update(text=record.text, about=[e.key for e in known])
                after.update(text=new_text, about=[e.key for e in entities])
                self.set_text(record, new_text, updated_at=now, entities=entities)
            changes: dict[str, object] = {"updated_at": now}
            if new_category is not None:
                changes["category"] = new_category
                if new_category is not record.category:
                    before["category"], after["category"] = record.category.value, new_category.value
            if after and not acts_as_person(cause.actor) and is_persons(record):
                # An agent's (or a file's) change to a person's memory is a proposal until they confirm it.
                changes.update(unconfirmed(record, before, after))
            self.set_fields(memory_id, changes)
            if after:
                self.history.record(memory_id, EventKind.EDIT, before, after, cause)
            return self.get(memory_id)

    def take(
        self, stored: MemoryRecord, incoming: MemoryRecord, entities: Sequence[Entity], cause: Cause
    ) -> bool:
        """Make ``stored`` what ``incoming`` (a newer copy an import brings) says of its text,
        category, status and validity, as one event in its history; True when the text changed.

        A memory a person wrote or confirmed keeps its standing: the copy's text and category
        are taken as a proposal (it leaves the conventions until they confirm it), never its
        status."""
        with self.lock, self.store.transaction():
            before: State = {}
            after: State = {}
            changes: dict[str, object] = {"updated_at": max(stored.updated_at, incoming.updated_at)}
            persons = is_persons(stored) and not acts_as_person(cause.actor)
            names = ("category",) if persons else ("category", "status", "valid_to", "expires_at")
            for name in names:
                if getattr(incoming, name) != getattr(stored, name):
                    before.update(field_state(stored, (name,)))
                    after.update(field_state(incoming, (name,)))
                    changes[name] = getattr(incoming, name)
            rewritten = incoming.text != stored.text
            if rewritten:
                known = self.store.about([stored.id]).get(stored.id, [])
                before.update(text=stored.text, about=[e.key for e in known])
                after.update(text=incoming.text, about=[e.key for e in entities])
                self.set_text(stored, incoming.text, updated_at=incoming.updated_at, entities=entities)
                if incoming.trust is Trust.LOW and stored.trust is not Trust.LOW:
                    before["trust"], after["trust"] = stored.trust.value, Trust.LOW.value
                    changes["trust"] = Trust.LOW
            if after and persons:
                changes.update(unconfirmed(stored, before, after))
            self.set_fields(stored.id, changes)
            if after:
                self.history.record(stored.id, EventKind.EDIT, before, after, cause)
        return rewritten

    def rename_project(self, old: str, new: str) -> int:
        """Move the memories stored under project ``old`` to ``new`` (a checkout's path to its
        name on a team's store, ``MemoryService._named``), in one transaction; how many moved."""
        with self.lock, self.store.transaction():
            moved = [m for m in self.store.all_memories(old) if m.project == old]
            for m in moved:
                self.set_fields(m.id, {"project": new, "content_hash": memory_hash(m.scope, new, m.text)})
        return len(moved)

    def set_text(
        self, record: MemoryRecord, text: str, *, updated_at: datetime, entities: Sequence[Entity]
    ) -> None:
        """Give ``record`` new text (hashed here) about ``entities``; its vector is stale till re-embedded."""
        if self.semantic is not None:
            self.semantic.will_change([record.id])
        with self.lock:
            self.store.replace_text(
                record.id,
                text=text,
                content_hash=memory_hash(record.scope, record.project, text),
                updated_at=updated_at,
                entities=entities,
            )
        if self.semantic is not None:
            self.semantic.text_changed(record.id)

    def set_fields(self, memory_id: str, changes: Mapping[str, object]) -> None:
        """Change fields of a memory (``status``, ``category``, times, ``reinforced``, ``trust``,
        ``branch``)."""
        moved = "project" in changes or "branch" in changes
        if self.semantic is not None and ("status" in changes or moved):
            self.semantic.will_change([memory_id])
        with self.lock:
            self.store.update_memory(memory_id, changes)
            if "status" in changes or "expires_at" in changes:
                self.history.expiry_changed()  # a memory may expire sooner now
        status = changes.get("status")
        if self.semantic is not None and isinstance(status, Status):
            self.semantic.status_changed(memory_id, status)
        if self.semantic is not None and moved:
            self.semantic.moved(memory_id)

    def leave_branch(self, memory_id: str, cause: Cause, *, archive: bool = False) -> MemoryRecord:
        """Make a memory on a branch a project memory (its branch merged), or with ``archive`` an
        archived one (its MR closed, its branch deleted: ``restore`` brings it back for every
        branch), in one event that ``undo`` reverses."""
        with self.lock, self.store.transaction():
            record = self.get(memory_id)
            if record.branch is None or not record.is_current:
                return record
            before: State = {"branch": record.branch}
            after: State = {"branch": None}
            changes: dict[str, object] = {"branch": None, "updated_at": self.clock()}
            if archive:
                before["status"], after["status"] = record.status.value, Status.ARCHIVED.value
                changes["status"] = Status.ARCHIVED
            self.set_fields(record.id, changes)
            kind = EventKind.STATUS if archive else EventKind.BRANCH
            self.history.record(record.id, kind, before, after, cause)
            return self.get(record.id)

    def set_status(
        self,
        memory_id: str,
        status: Status,
        *,
        allowed_from: Iterable[Status],
        clear_valid_to: bool = False,
        cause: Cause = BY_USER,
        unlink: Sequence[Link] = (),
        clear_expiry: bool = False,
    ) -> MemoryRecord:
        """Move a memory to ``status`` from one of ``allowed_from`` (a ``ConflictError`` otherwise),
        removing the links ``unlink`` (a supersession undone) in the same recorded event."""
        with self.lock, self.store.transaction():
            record = self.get(memory_id)
            memory_id = record.id
            if record.status is status:
                return record
            if record.status not in set(allowed_from):
                raise ConflictError(
                    f"Memory {memory_id} is {record.status.value}; cannot make it {status.value}."
                )
            changes: dict[str, object] = {"status": status, "updated_at": self.clock()}
            before: State = {"status": record.status.value}
            after: State = {"status": status.value}
            if clear_valid_to:
                changes["valid_to"] = None
                before["valid_to"], after["valid_to"] = time_value(record.valid_to), None
            if clear_expiry and record.expires_at is not None:
                changes["expires_at"] = None
                before["expires_at"], after["expires_at"] = time_value(record.expires_at), None
            if unlink:
                before["links"], after["links"] = [link_value(link) for link in unlink], []
                for link in unlink:
                    self.store.remove_link(link.source, link.target, link.kind)
            self.set_fields(memory_id, changes)
            self.history.record(memory_id, EventKind.STATUS, before, after, cause)
            return self.get(memory_id)

    def supersede(
        self, newer: MemoryRecord, older: MemoryRecord, now: datetime, cause: Cause = BY_USER
    ) -> MemoryEvent:
        """``newer`` replaces ``older``: close it and link the two; the event (in ``older``'s
        history) that ``undo`` reverses. Refused when others see ``older`` and not ``newer``."""
        link = Link(newer.id, older.id, LinkKind.SUPERSEDES, now)
        with self.lock, self.store.transaction():
            keep_in_sight(newer.id, older.id, self.store.shared_memories([newer.id, older.id]))
            had = [old for old in self.store.links([older.id]) if _same_link(old, link)]
            self.set_fields(
                older.id, {"status": Status.SUPERSEDED, "valid_to": newer.valid_from, "updated_at": now}
            )
            self.store.add_links([link])
            before = {**field_state(older, ("status", "valid_to")), "links": [link_value(x) for x in had]}
            after: State = {"status": Status.SUPERSEDED.value, "valid_to": time_value(newer.valid_from)}
            after["links"] = [link_value(had[0] if had else link)]
            return self.history.record(older.id, EventKind.SUPERSEDE, before, after, cause, other_id=newer.id)

    def delete(self, memory_id: str, cause: Cause = BY_USER) -> MemoryRecord:
        """Delete a memory and its edges for good; its history stays, a ``delete`` event last."""
        with self.lock, self.store.transaction():
            record = self.get(memory_id)
            if self.semantic is not None:
                self.semantic.will_change([record.id])
            self.history.record(record.id, EventKind.DELETE, {}, {}, cause)  # before it: who it was seen by
            self.store.delete_memory(record.id)
        if self.semantic is not None:
            self.semantic.removed(record.id)
        return record

    # -- links and entities --------------------------------------------------------------

    def link_all(self, links: Sequence[Link]) -> None:
        """Store links between memories as they are (an import's: its history comes with it)."""
        if links:
            with self.lock:
                self.store.add_links(links)

    def link(self, link: Link, cause: Cause = BY_USER) -> None:
        """Add one link (not ``supersedes``: see ``supersede``), recorded in the source's history."""
        with self.lock, self.store.transaction():
            if any(_same_link(old, link) for old in self.store.links([link.source])):
                return  # there already: nothing changes
            self.store.add_links([link])
            self.history.record(
                link.source, EventKind.LINK, {"links": []}, {"links": [link_value(link)]}, cause,
                other_id=link.target,
            )  # fmt: skip

    def unlink(self, source: str, target: str, kind: LinkKind, cause: Cause = BY_USER) -> bool:
        """Remove one link, recorded in the source's history; False when there was none."""
        with self.lock, self.store.transaction():
            had = [old for old in self.store.links([source]) if (old.target, old.kind) == (target, kind)]
            had = [old for old in had if old.source == source]
            if not had or not self.store.remove_link(source, target, kind):
                return False
            before: State = {"links": [link_value(had[0])]}
            after: State = {"links": []}
            self.history.record(source, EventKind.UNLINK, before, after, cause, other_id=target)
            return True

    def add_history(self, events: Sequence[MemoryEvent]) -> None:
        """Store events as they are (an import's: the history of the memories it brings)."""
        if events:
            with self.lock:
                self.store.add_events(events)

    def chain(self, pairs: Sequence[tuple[str, str]]) -> None:
        """``NEXT`` edges between the turns of a session (an import's)."""
        with self.lock:
            self.store.add_next(pairs)

    def add_entities(self, entities: Sequence[Entity]) -> None:
        """Store entities (new ones, or new names and titles of known ones)."""
        if entities:
            with self.lock:
                self.store.upsert_entities(entities)

    def attach(self, pairs: Sequence[tuple[str, Entity]], *, store_entities: bool = True) -> None:
        """Make each memory about its entity, storing the entities first (new ones, or new names
        and titles of known ones) unless ``store_entities=False`` (a code graph's symbols)."""
        if not pairs:
            return
        with self.lock:
            if store_entities:
                self.store.upsert_entities(list({e.key: e for _, e in pairs}.values()))
            self.store.link_about(pairs)

    def move_links(self, kind: EntityKind, moves: Mapping[str, str], *, new: Sequence[Entity] = ()) -> int:
        """Make the memories about each entity of ``moves`` (old key -> new key, both of ``kind``)
        about the other instead, the ``new`` entities stored first, in one transaction; how many
        memory links moved."""
        with self.lock, self.store.transaction():
            if new:
                self.store.upsert_entities(list(new))
            return sum(len(self.store.move_about(kind, old, key)) for old, key in sorted(moves.items()))

    # -- many memories ---------------------------------------------------------------------

    def add(
        self,
        records: Sequence[MemoryRecord],
        *,
        about: Sequence[tuple[str, Entity]] = (),
        vectors: Vector | None = None,
    ) -> None:
        """Store new memories as they are (bootstrap's facts and commits, an import's batch, with
        their ``vectors`` when they have them), and what each is ``about``."""
        if not records:
            return
        ids = [record.id for record in records]
        if self.semantic is not None and vectors is not None:
            self.semantic.will_change(ids)
        with self.lock:
            self.store.add_memories(records, vectors)
            self.history.expiry_changed(*(r.expires_at for r in records))
            self.attach(about)
        if self.semantic is not None:
            if vectors is not None:
                self.semantic.stored(ids, vectors)
            else:
                self.semantic.added()

    def set_vectors(self, ids: Sequence[str], vectors: Vector) -> None:
        """Store vectors computed by the caller (an import embeds what it writes)."""
        if self.semantic is not None:
            self.semantic.will_change(ids)
        with self.lock:
            self.store.set_embeddings(ids, vectors)
        if self.semantic is not None:
            self.semantic.stored(ids, vectors)

    def reindex(self, progress: Callable[[int], None] | None = None) -> int:
        if self.semantic is None:
            raise InvalidInputError("This store has no embedding model configured.")
        embedder = self.semantic.embedder
        with self.lock:
            self.store.clear_embeddings(embedder.dimension)
            record_model(self.store, embedder.model_name, embedder.dimension)
            self.semantic.reset()
            return self.semantic.embed_pending(progress)


def _same_link(a: Link, b: Link) -> bool:
    return (a.source, a.target, a.kind) == (b.source, b.target, b.kind)
