"""Proposed changes: what an agent or a file would change in a memory a person wrote or confirmed.

The person's memory stays as it is and in force (it keeps its place among the conventions):
the change is stored beside it as a memory of its own, ``proposed``, whose ``origin`` names
the memory it would replace (``change of mem_…``), and linked to it (``related``: an event in
the person's memory's history, with the actor who proposed it). ``graphmem confirm`` of the
proposal replaces the person's memory with it (a supersession, undoable); ``graphmem reject``
archives it. Any other change goes through the writer as it is, but one by anyone else that makes
an active memory a directive or preference: that one waits for a person, ``proposed``, as
``remember`` would have stored it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from graphmem.core.events import Cause
from graphmem.core.models import Category, Entity, Link, LinkKind, MemoryRecord, Status
from graphmem.core.provenance import AGENT_SOURCE, CHANGE_OF, acts_as_person, is_persons, proposes
from graphmem.core.redaction import redact
from graphmem.core.text import validate_text
from graphmem.service.inputs import MemoryEdit, parse_category
from graphmem.service.remember import new_record
from graphmem.service.writer import MemoryWriter


def changed_memory(record: MemoryRecord) -> str | None:
    """The memory a proposal would replace, when it is a proposed change of one."""
    if record.status is Status.PROPOSED and record.origin and record.origin.startswith(CHANGE_OF):
        return record.origin.removeprefix(CHANGE_OF)
    return None


def source_of(actor: str) -> str:
    """The ``source`` of what ``actor`` proposes: an agent's is ``mcp``, an import's its own."""
    return AGENT_SOURCE if actor == "agent" else actor


class Proposals:
    """Routes a change of a memory: a person's memory changed by anyone else becomes a proposal."""

    def __init__(self, writer: MemoryWriter) -> None:
        self._writer = writer

    def edit(self, memory_id: str, change: MemoryEdit, cause: Cause) -> MemoryRecord:
        """``MemoryWriter.edit``, or for a person's memory changed by anyone else, the proposal."""
        writer = self._writer
        text, category, project = change.text, change.category, change.project
        with writer.lock:
            record = writer.get(memory_id)
            if acts_as_person(cause.actor):
                return writer.edit(record.id, change, cause=cause)
            if not is_persons(record):
                return self._edit_unconfirmed(record, change, cause)
            new_text = validate_text(redact(text).text) if text is not None else record.text
            new_category = parse_category(category) if category is not None else record.category
            if (new_text, new_category) == (record.text, record.category):
                return record
            entities = writer.mentions.entities_in(new_text, project or record.project)
            return self.propose(record, new_text, new_category, entities, cause)

    def _edit_unconfirmed(self, record: MemoryRecord, change: MemoryEdit, cause: Cause) -> MemoryRecord:
        """``MemoryWriter.edit`` of a memory no person wrote or confirmed, by anyone but a person:
        an active one it makes a directive or preference then waits for a person as ``remember``
        would have stored it (``proposed``), in an event of its own in the same transaction, which
        an agent may not undo (``WriterHistory._refuse_authority``)."""
        writer = self._writer
        with writer.lock, writer.store.transaction():
            edited = writer.edit(record.id, change, cause=cause)
            if (edited.text, edited.category) == (record.text, record.category):
                return edited  # nothing changed
            if edited.status is not Status.ACTIVE or not proposes(source_of(cause.actor), edited.category):
                return edited
            why = Cause(
                cause.actor, f"a {edited.category.value} no person wrote: proposed until a person confirms it"
            )
            return writer.set_status(edited.id, Status.PROPOSED, allowed_from=(Status.ACTIVE,), cause=why)

    def propose(
        self,
        record: MemoryRecord,
        text: str,
        category: Category,
        entities: Sequence[Entity],
        cause: Cause,
    ) -> MemoryRecord:
        """Store ``text`` as a proposed change of ``record`` (which stays as it is)."""
        # Loaded only here: core/trust.py's patterns, which a command that proposes nothing (a
        # recall, a list) would otherwise compile at its start.
        from graphmem.core.trust import trust_of

        writer = self._writer
        now = writer.clock()
        proposal = replace(
            new_record(text, category, record.scope, record.project, now=now),
            status=Status.PROPOSED,
            source=source_of(cause.actor),
            trust=trust_of(text),
            origin=CHANGE_OF + record.id,
            branch=record.branch,
        )
        with writer.lock:
            writer.add([proposal], about=[(proposal.id, e) for e in entities])
            writer.link(Link(record.id, proposal.id, LinkKind.RELATED, now), cause)
        return proposal

    def confirmed(self, proposal: MemoryRecord, cause: Cause) -> None:
        """A person confirmed ``proposal``: the memory it would change is replaced by it."""
        target = changed_memory(proposal)
        if target is None:
            return
        writer = self._writer
        older = writer.store.get_memories([target]).get(target)
        if older is not None and older.is_current:
            writer.supersede(proposal, older, writer.clock(), cause)
