"""A repository's docs and manifests as facts, kept in step with them by each bootstrap pass.

A README's rules, a ``pyproject.toml``'s Python version, a ``package.json``'s scripts
(``core.project_facts``) become facts, directives and procedures of the project, each linked
to its file and keyed by what it says of it (``bootstrap:`` and the fact's key, its memory's
``source``). A doc is redacted before it is read (its keys are made of its words); a manifest is
parsed as written and its facts' texts redacted (its keys are its fields' names). A later pass
edits a fact whose file says something else now, brings back one its file says again, and
archives one gone from its file; it never adds the same fact twice. A file under a doc's name
that is no text (``core.project_facts.doc_text``: a picture named README.md) says nothing, and
is logged; but a file this pass cannot read, or a manifest that is no text or does not parse (a
bad edit), keeps the facts it gave before, named in the report's notes. A
fact's memory id is its project's and key's: a memory already under it (a restored export's
copy, whose ``source`` is its import) is that fact's memory, edited and brought back as its
own, never stored again (nor archived by a pass: the import's). A person's change stands: a fact
a person edited keeps their words while its file still says what it said then, and what its file
says later comes as a proposal beside it (``service/proposals.py``); one a person archived stays
archived while it is in its file. Written through the ``MemoryWriter``, so every change is an
audited event with its cause.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from graphmem.core.dedup import memory_hash
from graphmem.core.events import CHANGES, Cause, EventKind, MemoryEvent
from graphmem.core.keys import file_key, memory_id
from graphmem.core.models import Category, Entity, EntityKind, MemoryRecord, Scope, Status
from graphmem.core.ports import RepositoryFiles
from graphmem.core.provenance import CHANGE_OF, acts_as_person
from graphmem.core.redaction import redact
from graphmem.service.inputs import MemoryEdit
from graphmem.service.proposals import Proposals
from graphmem.service.results import BootstrapReport
from graphmem.service.writer import MemoryWriter

if TYPE_CHECKING:
    from graphmem.core.project_facts import ProjectFact

log = logging.getLogger(__name__)

BOOTSTRAP_SOURCE = "bootstrap:"
MAX_DOC_BYTES = 200_000
# Why a pass changes a fact it wrote before, as the fact's history says.
_CHANGED = Cause("bootstrap", "its file says something else now")
_BACK = Cause("bootstrap", "its file says it again")
_GONE = Cause("bootstrap", "gone from its file")
# The events of a fact read to find a person's change since a pass last wrote it: a fact's
# history is its passes' edits and what people did to it; its repeats (``reinforce``) are not read.
HISTORY_READ = 500


@dataclass(frozen=True)
class RepositoryDocs:
    """The facts a project's docs and manifests hold (see the module doc); read from the
    writer's store, written through the writer."""

    writer: MemoryWriter
    files: RepositoryFiles
    clock: Callable[[], datetime]

    def learn(self, root: Path, project: str, paths: list[str], report: BootstrapReport) -> None:
        """What ``paths`` (the listing's docs and manifests) say, as ``project``'s facts: new
        ones added and linked to their file, changed ones edited, gone ones archived."""
        # Loaded only here (and by ``adapters/repo_files.py``): the docs' and manifests' readers,
        # which a command that bootstraps nothing would otherwise import at its start.
        from graphmem.core.project_facts import interesting_doc

        facts: list[ProjectFact] = []
        unknown: list[str] = []  # the files this pass cannot read: their facts stay as they are
        for path in paths:
            if not interesting_doc(path):
                continue
            found = self._facts_of(root, path)
            if isinstance(found, str):
                _keep(path, found, report)
                unknown.append(BOOTSTRAP_SOURCE + path + "#")
            else:
                facts += found
        existing = {
            m.source: m
            for m in self.writer.store.all_memories(project)
            # not a proposal of what a file says since a person changed its fact (``_update``)
            if m.source.startswith(BOOTSTRAP_SOURCE)
            and m.project == project
            and not (m.origin or "").startswith(CHANGE_OF)
        }
        # A fact's memory held under the fact's id but no pass's source: an import's copy
        ids = {BOOTSTRAP_SOURCE + f.key: _fact_id(project, BOOTSTRAP_SOURCE + f.key) for f in facts}
        held = self.writer.store.get_memories([i for source, i in ids.items() if source not in existing])
        imported = {source: held[i] for source, i in ids.items() if i in held}
        now = self.clock()
        seen: set[str] = set()
        new_records: list[MemoryRecord] = []
        links: list[tuple[str, Entity]] = []
        for fact in facts:
            source = BOOTSTRAP_SOURCE + fact.key
            if source in seen:
                continue
            seen.add(source)
            category = Category(fact.category)
            old = existing.get(source) or imported.get(source)
            if old is not None:
                if old.text != fact.text or old.status is Status.ARCHIVED:
                    about = Entity(file_key(project, fact.source), EntityKind.FILE, fact.source, project)
                    self._update(old, source, fact.text, about, report)
                continue
            record = MemoryRecord(
                id=_fact_id(project, source),
                text=fact.text,
                category=category,
                scope=Scope.PROJECT,
                project=project,
                created_at=now,
                updated_at=now,
                valid_from=now,
                source=source,
                content_hash=memory_hash(Scope.PROJECT, project, fact.text),
            )
            new_records.append(record)
            links.append(
                (record.id, Entity(file_key(project, fact.source), EntityKind.FILE, fact.source, project))
            )
        if new_records:
            self.writer.add(new_records, about=links)
            report.facts_added = len(new_records)
        for source, old in existing.items():
            if source not in seen and old.status is Status.ACTIVE and not source.startswith(tuple(unknown)):
                self.writer.set_status(old.id, Status.ARCHIVED, allowed_from=Status, cause=_GONE)
                report.facts_archived += 1

    def _facts_of(self, root: Path, path: str) -> list[ProjectFact] | str:
        """What ``path`` says, secrets redacted; or why this pass cannot know ("does not parse"):
        the file cannot be read, or is a manifest that is no text or does not parse (a bad edit,
        a merge conflict's markers). Its facts are then kept, not archived as gone."""
        from graphmem.core.project_facts import doc_text, extract_facts, is_manifest, read_facts

        raw = self.files.read_doc(root, path, MAX_DOC_BYTES)
        if raw is None:
            return "cannot be read"
        text = doc_text(raw)
        manifest = is_manifest(path)
        if text is None:  # a picture or an executable under a doc's name: nothing it says is read
            log.info(
                "bootstrap: %r in %s is not text (binary, or not UTF-8); no facts read from it", path, root
            )
            return "is not text" if manifest else []
        if not manifest:
            # Redacted before the facts are read, so a fact's key (a slug of its words) and its
            # memory id never hold a secret its text loses.
            return extract_facts(path, redact(text).text)
        # A manifest is parsed as written: redacting its text first took the closing quote of a
        # dependency's version ("pbkdf2-password": "1.2.1") and left JSON that does not parse.
        # Its keys are its fields' names, so only the texts are redacted, after the parse.
        found = read_facts(path, text)
        if found is None:
            cut = len(raw) >= MAX_DOC_BYTES
            return f"is over {MAX_DOC_BYTES:,} bytes" if cut else "does not parse"
        return [replace(fact, text=redact(fact.text).text) for fact in found]

    def _update(
        self, old: MemoryRecord, source: str, text: str, about: Entity, report: BootstrapReport
    ) -> None:
        """Bring ``old``, the fact from ``source``, in step with its file, which says ``text`` of
        it now, unless a person changed it since a pass last did (``_Held``): their archive
        stands, and so do their words, what the file says since proposed beside them once."""
        held = _held(self.writer.store.events_of(old.id, HISTORY_READ, kinds=CHANGES))
        if held.archived:
            return
        updated = False
        if old.text != text and not held.words:
            self.writer.edit(old.id, MemoryEdit(text, project=old.project), cause=_CHANGED)
            updated = True
        elif old.text != text and text != held.read and old.is_current and not self._proposed(old, text):
            # Proposed as the file's (its source the fact's): a person confirms or rejects it
            Proposals(self.writer).propose(old, text, old.category, [about], Cause(source, _CHANGED.reason))
            report.facts_proposed += 1
        if old.status is Status.ARCHIVED:
            self.writer.set_status(
                old.id, Status.ACTIVE, allowed_from=(Status.ARCHIVED,), clear_valid_to=True, cause=_BACK
            )
            updated = True
        report.facts_updated += updated

    def _proposed(self, old: MemoryRecord, text: str) -> bool:
        """Whether ``text`` was proposed as a change of ``old`` before (pending, confirmed or
        turned down): a pass proposes what a file says once."""
        linked = [link.target for link in self.writer.store.links([old.id]) if link.source == old.id]
        return any(
            record.origin == CHANGE_OF + old.id and record.text == text
            for record in self.writer.store.get_memories(linked).values()
        )


@dataclass(frozen=True, slots=True)
class _Held:
    """What a person's changes of a fact since a pass (or an import) last wrote it hold it to:
    ``words``, its text is theirs (their edits are its newest changes of text), ``read`` the
    text it had before (what its file said then; None: unknown); ``archived``, its newest change
    of status is a person's archive."""

    words: bool
    read: str | None
    archived: bool


def _held(events: list[MemoryEvent]) -> _Held:
    """``_Held`` of a fact whose history is ``events``, newest first: an undone event is as if it
    never was, and so is a person's undo of their own change; their undo of a pass's is theirs."""
    words: bool | None = None
    read: str | None = None
    text_read = False  # the changes of text before a person's edits are not theirs
    archived: bool | None = None
    persons = {event.id for event in events if acts_as_person(event.actor)}
    for event in events:
        if event.undone_by is not None or (event.kind is EventKind.UNDO and event.undoes in persons):
            continue
        person = acts_as_person(event.actor)
        if "text" in event.after and not text_read:
            words = person if words is None else words
            if words and person:
                read = event.before.get("text")
            else:
                text_read = True
        if "status" in event.after and archived is None:
            archived = person and event.after["status"] == Status.ARCHIVED.value
    return _Held(bool(words), read, bool(archived))


def _keep(path: str, why: str, report: BootstrapReport) -> None:
    """Note in ``report`` (and log) that the facts of ``path``, whose text this pass cannot read
    (``why``: it "does not parse"), are kept."""
    note = f"{path!r} {why}: the facts it gave before are kept as they are until it can be read again"
    log.info("bootstrap: %s", note)  # the note is what the person reads
    report.notes.append(note)


def _fact_id(project: str, source: str) -> str:
    """The memory id of ``project``'s fact from ``source``: two checkouts' facts are two memories."""
    return memory_id(f"{project}\n{source}")
