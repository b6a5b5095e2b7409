"""The writer's history part (``MemoryWriter.history``): recording an event of a memory's
change, archiving what expired, and undoing an event (for anyone but a person, only one whose
undo takes no authority: ``_refuse_authority``). It owns the next expiry it knows and
writes through its writer (the store, the lock, ``change`` and ``rewrite``).

Part of ``writer.py``: the architecture test lets these two modules alone call the store's
memory writes.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from graphmem.core.events import (
    BY_USER,
    FIELDS,
    Cause,
    EventKind,
    MemoryEvent,
    State,
    differences,
    field_value,
    link_keys,
    time_value,
    wanted_links,
)
from graphmem.core.keys import event_id as new_event_id
from graphmem.core.models import LinkKind, MemoryRecord, Status
from graphmem.core.provenance import CONVENTIONS, acts_as_person, is_persons, label
from graphmem.core.redaction import redact
from graphmem.core.supersession import closes_cycle, describe_chain, supersessions
from graphmem.core.text import validate_text
from graphmem.errors import ConflictError, InvalidInputError, NotAllowedError, NotFoundError
from graphmem.service.inputs import parse_event_id

if TYPE_CHECKING:
    from graphmem.service.writer import MemoryWriter

# Memories archived per ``expire_due`` call (the next call goes on).
EXPIRE_BATCH = 500


class WriterHistory:
    """Events of a memory's changes, expiry and undo, written through ``writer``."""

    def __init__(self, writer: MemoryWriter) -> None:
        self._writer = writer
        self.store = writer.store  # the writer's: behind the redaction door
        self._next_expiry: datetime | None = None  # None: not known (asked of the store when needed)

    def expiry_changed(self, *due: datetime | None) -> None:
        """Memories now expire at ``due`` (None: never; no argument: not known): the next expiry
        is asked of the store again when one may come sooner than the one known."""
        if not due or any(when is not None for when in due):
            self._next_expiry = None

    def record(
        self,
        memory_id: str,
        kind: EventKind,
        before: State,
        after: State,
        cause: Cause,
        *,
        other_id: str | None = None,
        undoes: str | None = None,
    ) -> MemoryEvent:
        event = MemoryEvent(
            id=new_event_id(),
            memory_id=memory_id,
            at=self._writer.clock(),
            kind=kind,
            actor=cause.actor,
            reason=cause.reason,
            before=before,
            after=after,
            other_id=other_id,
            rule=cause.rule,
            undoes=undoes,
        )
        self.store.add_events([event])
        return event

    def expire_due(self) -> int:
        """Archive the current memories whose expiry has passed, each with an ``expiry`` event in its
        history; how many. Asks the store only when the next expiry is due or not known."""
        now = self._writer.clock()
        if self._next_expiry is None:
            self._next_expiry = self.store.next_expiry() or datetime.max.replace(tzinfo=now.tzinfo)
        if now < self._next_expiry:
            return 0
        with self._writer.lock:
            due = self.store.expiring(now, EXPIRE_BATCH)
            for record in due:
                when = f"{record.expires_at:%Y-%m-%d %H:%M} UTC" if record.expires_at else "now"
                before, after = {"status": record.status.value}, {"status": Status.ARCHIVED.value}
                with self.store.transaction():
                    self.record(
                        record.id, EventKind.EXPIRY, before, after, Cause("expiry", f"expired {when}")
                    )
                    self._writer.set_fields(record.id, {"status": Status.ARCHIVED, "updated_at": now})
            self._next_expiry = None
        return len(due)

    def undo(self, event_id: str, cause: Cause = BY_USER) -> MemoryEvent:
        """Make the memory what it was before event ``event_id``; the undo is an event too.

        Refused (``ConflictError``) when the event was undone already, its memory is gone, the
        memory changed since in what the event changed, or the event holds a state graphmem does
        not write (a row written by hand into a team's store); and (``NotAllowedError``) when
        ``cause`` is not a person's and the undo would take authority (``_refuse_authority``):
        nothing is written then."""
        wanted = parse_event_id(event_id)
        with self._writer.lock, self.store.transaction():
            event = self.store.get_event(wanted)
            if event is None:
                raise NotFoundError(
                    f"No event {wanted}: `graphmem history MEMORY_ID` lists a memory's events."
                )
            if not acts_as_person(cause.actor) and acts_as_person(event.actor):
                raise NotAllowedError(
                    f"Event {event.id} is a person's change: only a person can undo it "
                    f"(`graphmem undo {event.id}`)."
                )
            if event.undone_by:
                raise ConflictError(f"Event {wanted} was undone already (by {event.undone_by}).")
            _refuse_foreign(event)
            ids = [event.memory_id, *([event.other_id] if event.other_id and link_keys(event) else [])]
            found = self.store.get_memories(ids)
            gone = [i for i in ids if i not in found]
            if gone:
                raise ConflictError(f"Memory {gone[0]} was deleted: event {wanted} cannot be undone.")
            _refuse_unread(event)
            record = found[event.memory_id]
            text, changes = _restored(event)
            if not acts_as_person(cause.actor):
                self._refuse_authority(record, event, text, changes)
            problems = differences(event, record, self.store.links([record.id]))
            if problems:
                raise ConflictError(
                    f"Memory {record.id} changed since event {wanted} ({'; '.join(problems)}): undoing "
                    f"it would lose that change. See `graphmem history {record.id}`; edit it instead."
                )
            self._refuse_cycle(record, event)
            self._apply(record, event, text, changes)
            before, after = dict(event.after), dict(event.before)
            if event.kind is EventKind.EXPIRY:  # back for good: its expiry, passed, goes
                before["expires_at"], after["expires_at"] = time_value(record.expires_at), None
                self._writer.set_fields(record.id, {"expires_at": None})
            why = Cause(cause.actor, cause.reason or f"undoes {event.id}", cause.rule)
            done = self.record(
                record.id, EventKind.UNDO, before, after, why,
                other_id=event.other_id, undoes=event.id,
            )  # fmt: skip
            self.store.set_undone(event.id, done.id)
            return done

    def _refuse_authority(
        self, record: MemoryRecord, event: MemoryEvent, text: str | None, changes: dict[str, object]
    ) -> None:
        """``NotAllowedError`` when undoing ``event`` (by an agent, a rule, an import: anyone but a
        person) would change what a memory a person wrote or confirmed says or its standing (its
        text, category, status, trust, validity, branch), before or after the undo (a ``before``
        that is a confirmed rule, written by hand into a team's store, would give the memory the
        person's authority); add or remove a ``supersedes`` link to a person's memory; or leave an
        active directive or preference that no person wrote, which waits for a person as a
        proposal (``core/provenance.py``). Undoing another link (an agent's ``related``) says
        nothing of the memory and stays allowed, and so does undoing a repeat (``reinforce``) of a
        memory no person wrote or confirmed: the count goes back, its words and standing are as
        they were (a person's count is their confirmation, ``graphmem review``'s "never repeated")."""
        fields: dict[str, Any] = dict(changes)  # of ``FIELDS``, as a memory holds them (``_restored``)
        restored = replace(record, text=text if text is not None else record.text, **fields)
        ask = f"ask the user to run `graphmem undo {event.id}`, and tell them why."
        counted = text is None and set(changes) == {"reinforced"}  # it says and stands as it did
        if text is not None or changes:
            if is_persons(record):
                raise NotAllowedError(
                    f"{record.id} is a person's {record.category.value} (from {label(record)}): "
                    f"undoing event {event.id} would change what it says or its standing, which only "
                    f"a person does: {ask}"
                )
            if is_persons(restored):
                raise NotAllowedError(
                    f"Undoing event {event.id} would make {record.id} a memory a person wrote or "
                    f"confirmed, which only a person does: {ask}"
                )
            if restored.category in CONVENTIONS and restored.status is Status.ACTIVE and not counted:
                raise NotAllowedError(
                    f"Undoing event {event.id} would make {record.id} an active "
                    f"{restored.category.value} that no person wrote: it stays a proposal until a "
                    f"person confirms it; {ask}"
                )
        targets = [key[1] for key in link_keys(event) if key[2] == LinkKind.SUPERSEDES.value]
        theirs = [m for m in self.store.get_memories(targets).values() if is_persons(m)] if targets else []
        if theirs:
            raise NotAllowedError(
                f"Undoing event {event.id} would change what replaces {theirs[0].id}, a person's "
                f"{theirs[0].category.value} (from {label(theirs[0])}): only a person does: {ask}"
            )

    def _refuse_cycle(self, record: MemoryRecord, event: MemoryEvent) -> None:
        """``ConflictError`` when undoing ``event`` would add back a ``supersedes`` link that
        closes a cycle with links made since (``core/supersession.py``): every memory on it would
        be hidden."""
        current = {(x.source, x.target, x.kind.value) for x in self.store.links([record.id])}
        for link in wanted_links(event.before):
            key = (link.source, link.target, link.kind.value)
            if link.kind is not LinkKind.SUPERSEDES or key in current or key not in link_keys(event):
                continue
            path = closes_cycle(link.source, link.target, supersessions([link.target], self.store.links))
            if path is not None:
                raise ConflictError(
                    f"Undoing event {event.id} would make {link.source} supersede {link.target}, but "
                    f"{describe_chain(path)}: the cycle would hide every memory on it. Remove that "
                    f"supersession first (`graphmem unlink {path[-2]} {path[-1]} --kind supersedes`)."
                )

    def _apply(
        self, record: MemoryRecord, event: MemoryEvent, text: str | None, changes: dict[str, object]
    ) -> None:
        """Make ``record`` what ``event.before`` says, in every part the event touched: its
        ``text`` and field ``changes`` as ``_restored`` read them, its links."""
        state = event.before
        now = self._writer.clock()
        if text is not None:
            entities = list(self.store.get_entities(state.get("about", [])).values())
            self._writer.set_text(record, text, updated_at=now, entities=entities)
        self._writer.set_fields(record.id, {**changes, "updated_at": now})
        wanted = {(x.source, x.target, x.kind.value): x for x in wanted_links(state)}
        current = {(x.source, x.target, x.kind.value) for x in self.store.links([record.id])}
        for key in link_keys(event):
            if key in current and key not in wanted:
                self.store.remove_link(key[0], key[1], LinkKind(key[2]))
            elif key not in current and key in wanted:
                self.store.add_links([wanted[key]])


def _refuse_foreign(event: MemoryEvent) -> None:
    """``ConflictError`` unless ``event``'s ``before`` and ``after`` are states graphmem writes
    (``core.export_format.EventState``): a team's store takes events written by hand, and undo
    applies one's ``before``."""
    from pydantic import ValidationError  # loaded when an event is undone, not at the CLI's start

    from graphmem.core.export_format import EventState

    for side, state in (("before", event.before), ("after", event.after)):
        try:
            EventState.model_validate(state)
        except ValidationError as exc:
            raise _foreign(event, f"its {side} {(*exc.errors()[0]['loc'], 'state')[0]}") from None


def _refuse_unread(event: MemoryEvent) -> None:
    """``ConflictError`` when ``event`` has no ``before`` or no ``after``: a state its store could
    not read is read as empty (``adapters/record_rows.py``), every event undo reverses has both,
    and with an empty ``after`` the check that the memory did not change since would pass."""
    if not event.before or not event.after:
        raise _foreign(event, f"its {'before' if not event.before else 'after'} not one its store could read")


def _restored(event: MemoryEvent) -> tuple[str | None, dict[str, object]]:
    """The text (None: not touched) and fields undoing ``event`` writes, read from its ``before``
    as ``edit`` takes them (``validate_text``, redacted) before anything is written;
    ``ConflictError`` when one is not."""
    state, text = event.before, None
    if "text" in state:
        try:
            text = validate_text(redact(state["text"]).text, what="its text")
        except InvalidInputError:
            raise _foreign(event, "its before text, one `remember` would not take") from None
    try:
        return text, {name: field_value(name, state[name]) for name in FIELDS if name in state}
    except ValueError:  # a value no memory holds (a time EventState took and ISO 8601 does not)
        raise _foreign(event, "its before, a value no memory holds") from None


def _foreign(event: MemoryEvent, why: str) -> ConflictError:
    return ConflictError(
        f"Event {event.id} holds a state graphmem does not write ({why}; written by hand into the "
        f"store?): it cannot be undone. Change memory {event.memory_id} with `graphmem edit`."
    )
