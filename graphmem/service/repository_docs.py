"""A repository's docs and manifests as facts, kept in step with them by each bootstrap pass.

A README's rules, a ``pyproject.toml``'s Python version, a ``package.json``'s scripts
(``core.project_facts``) become facts, directives and procedures of the project, redacted
before they are read, each linked to its file and keyed by what it says of it
(``bootstrap:`` and the fact's key, its memory's ``source``): a later pass edits a fact whose
file says something else now, brings back one its file says again, and archives one gone
from its file; it never adds the same fact twice. A file under a doc's name that is no text
(``core.project_facts.doc_text``: a picture named README.md) says nothing, and is logged. A
fact's memory id is its project's and key's: a memory already under it (a restored export's
copy, whose ``source`` is its import) is that fact's memory, edited and brought back as its
own, never stored again (nor archived by a pass: the import's). Written through the
``MemoryWriter``, so every change is an audited event with its cause.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from graphmem.core.dedup import memory_hash
from graphmem.core.events import Cause
from graphmem.core.keys import file_key, memory_id
from graphmem.core.models import Category, Entity, EntityKind, MemoryRecord, Scope, Status
from graphmem.core.ports import RepositoryFiles
from graphmem.core.redaction import redact
from graphmem.service.inputs import MemoryEdit
from graphmem.service.results import BootstrapReport
from graphmem.service.writer import MemoryWriter

log = logging.getLogger(__name__)

BOOTSTRAP_SOURCE = "bootstrap:"
MAX_DOC_BYTES = 200_000
# Why a pass changes a fact it wrote before, as the fact's history says.
_CHANGED = Cause("bootstrap", "its file says something else now")
_BACK = Cause("bootstrap", "its file says it again")
_GONE = Cause("bootstrap", "gone from its file")


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
        from graphmem.core.project_facts import doc_text, extract_facts, interesting_doc

        facts = []
        for path in paths:
            if not interesting_doc(path):
                continue
            raw = self.files.read_doc(root, path, MAX_DOC_BYTES)
            if raw is None:
                continue
            text = doc_text(raw)
            if text is None:  # a picture or an executable under a doc's name: nothing it says is read
                log.info(
                    "bootstrap: %r in %s is not text (binary, or not UTF-8); no facts read from it",
                    path,
                    root,
                )
                continue
            # Redacted before the facts are read, so a fact's key (its slug) and its
            # memory id never hold a secret its text loses.
            facts += extract_facts(path, redact(text).text)
        existing = {
            m.source: m
            for m in self.writer.store.all_memories(project)
            if m.source.startswith(BOOTSTRAP_SOURCE) and m.project == project
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
                if old.text != fact.text:
                    self.writer.edit(old.id, MemoryEdit(fact.text, project=project), cause=_CHANGED)
                if old.status is Status.ARCHIVED:
                    self.writer.set_status(
                        old.id, Status.ACTIVE, allowed_from=(Status.ARCHIVED,), clear_valid_to=True,
                        cause=_BACK,
                    )  # fmt: skip
                if old.text != fact.text or old.status is Status.ARCHIVED:
                    report.facts_updated += 1
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
            if source not in seen and old.status is Status.ACTIVE:
                self.writer.set_status(old.id, Status.ARCHIVED, allowed_from=Status, cause=_GONE)
                report.facts_archived += 1


def _fact_id(project: str, source: str) -> str:
    """The memory id of ``project``'s fact from ``source``: two checkouts' facts are two memories."""
    return memory_id(f"{project}\n{source}")
