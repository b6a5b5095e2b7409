"""The lifecycle verbs: archive, restore, resolve, unresolve, confirm, delete, link, unlink;
history, undo.

Each changes one memory's status or its links and never its text (``edit`` does that);
every change but ``delete`` is recorded in the memory's history (``core/events.py``) with
who made it (``actor``) and can be undone. The rules are here; the writes are the
writer's (``service/writer.py``).
"""

from __future__ import annotations

from graphmem.core.events import CHANGES, USER, Cause, EventKind, MemoryEvent, State
from graphmem.core.models import Category, Link, LinkKind, MemoryRecord, Scope, Status, Trust
from graphmem.core.provenance import PERSON_SOURCE, acts_as_person, is_persons, label, proposes
from graphmem.core.supersession import closes_cycle, describe_chain, supersessions
from graphmem.errors import ConflictError, InvalidInputError, NotAllowedError, NotFoundError
from graphmem.service.inputs import (
    MemoryEdit,
    parse_link_kind,
    parse_memory_id,
    unknown_memory,
)
from graphmem.service.proposals import Proposals
from graphmem.service.remember import Rememberer
from graphmem.service.staleness import Staleness
from graphmem.service.stores import Stores
from graphmem.service.writer import MemoryWriter

# Events ``history`` returns at most.
MAX_HISTORY = 500


class Lifecycle:
    """A memory's status, links and history. Its verbs the Memory service offers as
    they are (``PartVerb``) are documented where ``graphmem.api.Memory`` declares them."""

    def __init__(
        self, writer: MemoryWriter, rememberer: Rememberer, *, staleness: Staleness | None = None
    ) -> None:
        self._writer = writer
        self._rememberer = rememberer  # ``widen`` remembers the memory again, globally
        self._proposals = Proposals(writer)
        # An agent's ``confirm`` clears a stale flag only: the writer's store and code graph say.
        code = writer.mentions.code
        self._staleness = staleness if staleness is not None else Staleness(Stores(writer.store, code=code))

    def edit(self, memory_id: str, change: MemoryEdit, *, actor: str) -> MemoryRecord:
        """Change a memory's text and/or category; a person's memory changed by an agent stays
        as it is, and the change is stored beside it as a proposal (``service/proposals.py``)."""
        return self._proposals.edit(memory_id, change, Cause(actor))

    def archive(self, memory_id: str, *, actor: str = USER) -> MemoryRecord:
        self._persons_only(memory_id, actor, "archive")
        return self._writer.set_status(memory_id, Status.ARCHIVED, allowed_from=Status, cause=Cause(actor))

    def restore(self, memory_id: str, *, actor: str = USER) -> MemoryRecord:
        writer = self._writer
        with writer.lock:
            record = self._persons_only(memory_id, actor, "restore")
            memory_id = record.id
            expired = record.expires_at is not None and record.expires_at <= writer.clock()
            drop: list[Link] = []
            if record.status is Status.SUPERSEDED:
                drop = [
                    link
                    for link in writer.store.links([memory_id])
                    if link.kind is LinkKind.SUPERSEDES and link.target == memory_id
                ]
            # A directive or preference no person wrote comes back as what it was: a proposal.
            back = (
                Status.PROPOSED
                if proposes(record.source, record.category) and not is_persons(record)
                else Status.ACTIVE
            )
            return writer.set_status(
                memory_id,
                back,
                allowed_from=(Status.ARCHIVED, Status.SUPERSEDED),
                clear_valid_to=True,
                cause=Cause(actor),
                unlink=drop,
                clear_expiry=expired,  # else it would expire again at once
            )

    def resolve(self, memory_id: str, *, actor: str = USER) -> MemoryRecord:
        self._require_blocker(memory_id)
        return self._writer.set_status(
            memory_id, Status.RESOLVED, allowed_from=(Status.ACTIVE,), cause=Cause(actor)
        )

    def unresolve(self, memory_id: str, *, actor: str = USER) -> MemoryRecord:
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

    def confirm(self, memory_id: str, *, actor: str = USER) -> MemoryRecord:
        """Mark a memory as still valid now: a change to its code before now no longer flags it.

        A person's confirmation also gives it their authority: a proposal becomes active, and
        what an agent, a file or an import wrote is marked confirmed (a directive or preference
        is then injected as a convention). Both are events in its history that ``undo`` reverses.
        An agent's confirmation only clears the stale flag: of a person's memory that has none, it
        changes nothing (as an agent's repeat of it, ``Rememberer._reinforce``)."""
        writer = self._writer
        with writer.lock, writer.store.transaction():
            record = writer.get(memory_id)
            if acts_as_person(actor):
                before: State = {}
                after: State = {}
                changes: dict[str, object] = {}
                if record.status is Status.PROPOSED:
                    before["status"], after["status"] = record.status.value, Status.ACTIVE.value
                    changes["status"] = Status.ACTIVE
                if not is_persons(record):
                    before["trust"], after["trust"] = record.trust.value, Trust.CONFIRMED.value
                    changes["trust"] = Trust.CONFIRMED
                if changes:
                    writer.set_fields(record.id, changes)
                    writer.history.record(
                        record.id, EventKind.STATUS, before, after, Cause(actor, "confirmed")
                    )
                self._proposals.confirmed(
                    record, Cause(actor, f"replaced by {record.id}, a confirmed change")
                )
            elif is_persons(record) and self._staleness.annotate([record])[0].stale is None:
                return record  # no flag to clear: an agent changes nothing of a person's memory
            writer.set_fields(record.id, {"updated_at": writer.clock()})
            return writer.get(record.id)

    def reject(self, memory_id: str, *, actor: str = USER) -> MemoryRecord:
        """Turn down a proposal: it is archived (``restore`` brings it back, as a proposal). A
        person's memory that a re-read file made a proposal (``graphmem bootstrap``) gets that
        change undone instead."""
        if not acts_as_person(actor):
            raise NotAllowedError(
                "Only a person rejects a proposal: ask the user to run `graphmem reject ID`."
            )
        writer = self._writer
        with writer.lock:
            record = writer.get(memory_id)
            if record.status is not Status.PROPOSED:
                raise ConflictError(
                    f"Memory {record.id} is {record.status.value}, not proposed: `graphmem archive` hides it."
                )
            if is_persons(record):
                change = next(
                    (e for e in writer.store.events_of(record.id, MAX_HISTORY, kinds=CHANGES)
                     if e.after.get("status") == Status.PROPOSED.value and not e.undone_by),
                    None,
                )  # fmt: skip
                if change is not None:
                    writer.history.undo(change.id, Cause(actor, "rejected"))
                    return writer.get(record.id)
            return writer.set_status(
                record.id, Status.ARCHIVED, allowed_from=(Status.PROPOSED,), cause=Cause(actor, "rejected")
            )

    def widen(self, memory_id: str, *, actor: str = USER) -> MemoryRecord:
        """Make a project memory global: remembered again by the person for every project, the
        project one superseded by it (an agent's writes stay in their project until then). On a
        team's store a project memory is the team's, and a global one its writer's alone: widening
        would take it from the others, so it is refused with how to keep a copy instead."""
        if not acts_as_person(actor):
            raise NotAllowedError("Only the user makes a memory global: ask them to run `graphmem widen ID`.")
        writer = self._writer
        with writer.lock:
            record = writer.get(memory_id)
            if record.scope is Scope.GLOBAL:
                return record
            if not record.is_current:
                raise ConflictError(f"Memory {record.id} is {record.status.value}: restore it first.")
            if record.id in writer.store.shared_memories([record.id]):
                raise NotAllowedError(
                    f"{record.id} is the team's: everyone on the project sees it, and a global memory "
                    "only you would, so widening it would take it from them. Keep a copy for every "
                    f"project as your own: `graphmem remember --scope global --category "
                    f'{record.category.value} "..."` with its text (`graphmem show {record.id}`); '
                    "the team's stays."
                )
            return self._rememberer.remember(
                record.text, category=record.category, scope=Scope.GLOBAL, supersedes=record.id,
                source=PERSON_SOURCE,
            ).memory  # fmt: skip

    def delete(self, memory_id: str, *, actor: str = USER) -> MemoryRecord:
        self._persons_only(memory_id, actor, "delete")
        return self._writer.delete(memory_id, Cause(actor))

    def _persons_only(self, memory_id: str, actor: str, verb: str) -> MemoryRecord:
        """The memory, when ``actor`` may ``verb`` it: only a person changes the standing of a
        memory a person wrote or confirmed."""
        record = self._writer.get(memory_id)
        if not acts_as_person(actor) and is_persons(record):
            raise NotAllowedError(
                f"{record.id} is a person's {record.category.value} (from {label(record)}): only a "
                f"person can {verb} it (`graphmem {verb} {record.id}`). Tell the user what you would "
                "change and why."
            )
        return record

    def link(self, source: str, target: str, kind: str | LinkKind, *, actor: str = USER) -> Link:
        kind = parse_link_kind(kind)
        source, target = parse_memory_id(source), parse_memory_id(target)
        if source == target:
            raise InvalidInputError("A memory cannot be linked to itself: give two different ids.")
        writer = self._writer
        with writer.lock:
            newer, older = writer.get(source), writer.get(target)
            now = writer.clock()
            if kind is LinkKind.SUPERSEDES:
                self._persons_only(target, actor, "supersede")
                _refuse_cycle(writer, newer.id, older.id)
                writer.supersede(newer, older, now, Cause(actor))
            else:
                writer.link(Link(source, target, kind, now), Cause(actor))
            return Link(source, target, kind, now)

    def unlink(self, source: str, target: str, kind: str | LinkKind, *, actor: str = USER) -> None:
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
            if (
                kind is LinkKind.SUPERSEDES
                and self._persons_only(target, actor, "restore").status is Status.SUPERSEDED
            ):
                self.restore(target, actor=actor)
                return
            if not writer.unlink(source, target, kind, Cause(actor)):
                raise NotFoundError(f"No {kind.value} link from {source} to {target}.")

    # -- history ------------------------------------------------------------------------

    def history(self, memory_id: str, *, limit: int = 100) -> list[MemoryEvent]:
        wanted = parse_memory_id(memory_id)
        if not 1 <= limit <= MAX_HISTORY:
            raise InvalidInputError(f"limit must be between 1 and {MAX_HISTORY}, not {limit}.")
        events = self._writer.store.events_of(wanted, limit)
        if not events and wanted not in self._writer.store.get_memories([wanted]):
            raise unknown_memory(wanted)
        return events

    def undo(self, event_id: str, *, actor: str = USER) -> MemoryEvent:
        """Reverse an event; anyone but a person may not undo a person's change nor take authority
        by undoing (``WriterHistory._refuse_authority``): refused in the undo's own transaction,
        against the memory as it is then."""
        return self._writer.history.undo(event_id, Cause(actor))


def _refuse_cycle(writer: MemoryWriter, newer: str, older: str) -> None:
    """Refuse ``newer`` supersedes ``older`` when ``older`` already supersedes ``newer``, directly or
    through others: the cycle would hide every memory on it (``core/supersession.py``)."""
    path = closes_cycle(newer, older, supersessions([older], writer.store.links))
    if path is not None:
        raise InvalidInputError(
            f"{describe_chain(path)}, so {newer} cannot supersede {older}: the cycle would hide every "
            f"memory on it. To make {newer} the current one, remove that supersession first "
            f"(`graphmem unlink {path[-2]} {newer} --kind supersedes`), then link again."
        )
