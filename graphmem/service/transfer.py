"""Export and import: a lossless JSONL round trip, and a Markdown view for people.

``Transfer`` reads the store for an export and writes an import through the ``MemoryWriter``.
An import file is read by ``transfer_read.py``, checked by ``transfer_checks.py``; what each of
its memories becomes is decided by ``transfer_plan.py`` before anything is written; what a
repository export may write over is ``transfer_overwrite.py``'s; the verbs with paths and the
writer's lock are ``transfer_files.py``'s.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import replace
from datetime import datetime
from typing import Any, TextIO

import numpy as np

from graphmem.core.bundle import GROUP_ORDER, GROUP_TITLES
from graphmem.core.events import Cause, MemoryEvent
from graphmem.core.export_format import (
    MAX_REASON_CHARS,
    entity_line,
    event_line,
    header_line,
    jsonl_line,
    link_line,
    memory_line,
    next_line,
)
from graphmem.core.held_lines import EventLine
from graphmem.core.memory_line import MemoryLine
from graphmem.core.models import Entity, Link, LinkKind, MemoryRecord
from graphmem.core.provenance import Origin, is_persons, origin_of
from graphmem.core.redaction import redact
from graphmem.errors import InvalidInputError
from graphmem.service.file_access import MARKDOWN_MARK
from graphmem.service.proposals import Proposals
from graphmem.service.repository_export import (
    REPOSITORY_FILE,
    REPOSITORY_VIEW,
    snapshot,
)
from graphmem.service.results import ExportSummary, ImportSummary, RepositoryFiles
from graphmem.service.staleness import Staleness
from graphmem.service.stores import Stores
from graphmem.service.transfer_files import Progress
from graphmem.service.transfer_overwrite import CLI_TERMS, CallerTerms, check_nothing_dropped
from graphmem.service.transfer_plan import ImportPlan, plan_import
from graphmem.service.transfer_read import read_import
from graphmem.service.writer import MemoryWriter

log = logging.getLogger(__name__)

# Memories stored (and embedded) per transaction during import: an acknowledged
# batch survives a crash; a batch is large enough for COPY and the model's batching.
# Kùzu's COPY costs about 0.1 s a call beside its rows: 50,000 memories imported at
# 2,000–2,500 a second in batches of 512 and 2,800–3,000 in batches of 4,096.
IMPORT_BATCH = 4096
FORMATS = ("jsonl", "markdown")


class Transfer:
    """Moves memories in and out of a store (reading it; writing through the ``MemoryWriter``)."""

    def __init__(self, stores: Stores, writer: MemoryWriter, staleness: Staleness) -> None:
        self._stores = stores
        self._writer = writer
        self._staleness = staleness
        self._proposals = Proposals(writer)

    # -- export -------------------------------------------------------------------

    def export(
        self, out: TextIO, *, project: str | None = None, fmt: str = "jsonl", repository: bool = False
    ) -> ExportSummary:
        """Write every memory (of ``project`` and global ones, or all when None).

        ``repository``: only what ``project`` shares with a team, project-relative (the
        contents of ``.graphmem/``; see :mod:`graphmem.service.repository_export`).
        """
        _check_format(fmt)
        if repository:
            root = _required_project(project)
            shared = snapshot(self._stores.store, root, aliases=self._stores.aliases(root))
            out.write(shared.jsonl if fmt == "jsonl" else shared.markdown)
            return ExportSummary(len(shared.memory_ids), shared.entities, shared.links)
        kept = {None, project, *self._stores.aliases(project)}  # a project's aliases are its own
        memories = [m for m in self._stores.store.all_memories() if project is None or m.project in kept]
        ids = {m.id for m in memories}
        about = self._stores.store.about(ids)
        stale = self._staleness.flags(memories, about)
        memories = [replace(m, stale=stale[m.id]) if m.id in stale else m for m in memories]
        entities: dict[str, Entity] = {e.key: e for es in about.values() for e in es}
        links = [link for link in self._stores.store.links(ids) if link.source in ids and link.target in ids]
        nexts = [(a, b) for a, b in self._stores.store.next_pairs(ids) if b in ids]
        events = [
            e
            for e in self._stores.store.all_events()
            if e.memory_id in ids and (e.other_id or e.memory_id) in ids
        ]
        if fmt == "markdown":
            out.write(render_markdown_export(memories, project, self._stores.clock()))
        else:
            counts = {"memories": len(memories), "entities": len(entities), "links": len(links)}
            _write(out, header_line(project, counts, self._stores.clock()))
            for entity in entities.values():
                _write(out, entity_line(entity))
            for memory in memories:
                _write(out, memory_line(memory, sorted(e.key for e in about.get(memory.id, []))))
            for link in links:
                _write(out, link_line(link))
            for a, b in nexts:
                _write(out, next_line(a, b))
            for event in events:
                _write(out, event_line(event))
        return ExportSummary(len(memories), len(entities), len(links))

    def repository_files(
        self,
        *,
        project: str | None,
        fmt: str,
        force: bool,
        current: str | None,
        current_name: str,
        folder: str,
        terms: CallerTerms = CLI_TERMS,
    ) -> RepositoryFiles:
        """The project's shared memories as the files of its ``.graphmem/`` folder (name -> text).

        ``current``: the folder's ``memories.jsonl`` as it is now (``current_name`` names it
        in errors). Refuses, unless ``force``, when it holds memories this store lacks (a
        teammate's, not imported yet): the new file would drop them; the error says how to go
        on in ``terms``, the caller's (the CLI's options, or a tool's arguments).
        """
        _check_format(fmt)
        root = _required_project(project)
        aliases = self._stores.aliases(root)  # the names its memories are still kept under: its own
        shared = snapshot(self._stores.store, root, folder, aliases)
        files = {REPOSITORY_VIEW: shared.markdown}
        if fmt == "jsonl":
            files = {REPOSITORY_FILE: shared.jsonl, **files}
            if current is not None and not force:
                check_nothing_dropped(self._stores.store, current, current_name, folder, root, aliases, terms)
        return RepositoryFiles(files, len(shared.memory_ids), shared.entities, shared.links)

    # -- import -------------------------------------------------------------------

    def import_text(
        self,
        text: str | bytes,
        *,
        name: str,
        project: str | None,
        dry_run: bool,
        progress: Progress | None,
        actor: str,
    ) -> ImportSummary:
        """Validate every record of the JSONL ``text`` (or a file's bytes, decoded a line at a
        time); import all of them, or none (the verb and its defaults: ``TransferFiles.import_text``).

        ``name`` says where the text came from in errors. Project-relative keys (a
        repository export) are re-rooted at ``project``. What each memory becomes is decided
        first (``transfer_plan.plan_import``; an agent's, ``actor``, is kept in ``project``);
        importing the same text twice changes nothing.
        """
        parsed = read_import(text, project, name)
        plan = plan_import(self._stores, parsed, name=name, project=project, dry_run=dry_run, actor=actor)
        if dry_run:
            return plan.summary
        with self._writer.lock:  # all or nothing among writers
            self._apply(plan, progress)
            self._update(plan.updates, plan.source, plan.now)
        return plan.summary

    def _link_stored(self, links: list[Link], cause: Cause) -> None:
        """Make the file's links that change a memory the store held before, each an event in
        its history that ``undo`` reverses: a ``supersedes`` link closes the older memory as
        ``graphmem link`` does."""
        writer = self._writer
        for link in links:
            if link.kind is LinkKind.SUPERSEDES:
                writer.supersede(
                    writer.get(link.source), writer.get(link.target), self._stores.clock(), cause
                )
            else:
                writer.link(replace(link, created_at=self._stores.clock()), cause)

    def _update(self, updates: list[tuple[MemoryRecord, MemoryLine]], source: str, now: datetime) -> None:
        """Take the newer copy's text, category, status and validity, each change an event in
        the memory's history (actor: the import) that ``undo`` reverses; a person's memory the
        file changes gets a proposal beside it instead (``ImportPlan.updates``)."""
        renamed: list[tuple[str, str]] = []
        for stored, line in updates:
            incoming = line.to_record(stored.content_hash, stored.project, source=source, now=now)
            known = self._stores.store.get_entities(line.entities)
            entities = [known[k] for k in line.entities if k in known]
            cause = Cause(source, "a newer copy was imported")
            if is_persons(stored):  # theirs stays in force: the copy is a proposal beside it
                self._proposals.propose(stored, incoming.text, incoming.category, entities, cause)
            elif self._writer.take(stored, incoming, entities, cause):
                renamed.append((stored.id, incoming.text))
        if renamed and self._stores.semantic is not None:
            vectors = self._stores.semantic.embed_texts([text for _, text in renamed]).astype(np.float32)
            self._writer.set_vectors([memory_id for memory_id, _ in renamed], vectors)

    def _store_batches(self, batches: Iterator[list[MemoryRecord]], progress: Progress | None) -> None:
        """Embed and store ``batches`` in turn, one transaction each, each made as it is due (two
        are held at a time). The next batch is embedded while this one is stored: the model keeps
        the cores busy, and the store's part (about a tenth of the time) no longer adds to it."""
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="graphmem-import-embed") as ahead:
            records = next(batches, None)
            embedded = ahead.submit(self._vectors_of, records) if records is not None else None
            while records is not None:
                assert embedded is not None
                vectors = embedded.result()
                following = next(batches, None)
                if following is not None:
                    embedded = ahead.submit(self._vectors_of, following)
                self._writer.add(records, vectors=vectors)
                if progress is not None:
                    progress(len(records))
                records = following

    def _vectors_of(self, records: list[MemoryRecord]) -> np.ndarray | None:
        if self._stores.semantic is None:
            return None
        return self._stores.semantic.embed_texts([r.text for r in records]).astype(np.float32)

    def _apply(self, plan: ImportPlan, progress: Progress | None) -> None:
        """Store the file's entities, new memories, their links, chains and history. What the file
        says of a memory the store held before (its entities, its links) changes it only as a
        newer copy (``_update``) or an audited link (``_link_stored``) does.

        An entity is stored as its line gives it (key, kind, name, project, title), a file or a
        symbol too: never with code columns made up from its key. Its path, lines and body are
        what a pass sees in this checkout, which may not hold it or hold another version: a
        stated body hash would flag its memories ``possibly stale`` at the first pass, a stated
        path make a file look scanned. The code graph owns them: ``graphmem bootstrap`` takes
        over a file or symbol an import stored (``core.ports.CodeGraph.save``), with its memories.
        """
        parsed, id_map, links, source = plan.parsed, plan.id_map, plan.links, plan.source
        brought = {line.id for line, _ in plan.new}
        entities = [e for _, e in parsed.entities]
        self._writer.add_entities(entities)
        known = {e.key: e for e in entities}
        # A database's vector index may be built once at the end instead of taking each row.
        semantic = self._stores.semantic
        with semantic.bulk_load(len(plan.new)) if semantic is not None else nullcontext():
            self._store_batches(
                (plan.records(i, i + IMPORT_BATCH) for i in range(0, len(plan.new), IMPORT_BATCH)), progress
            )
        # Edges last, idempotent (MERGE): re-running an interrupted import completes them.
        pairs: list[tuple[str, Entity]] = []
        wanted = {k for _, m in parsed.memories for k in m.entities if k not in known}
        known.update(self._stores.store.get_entities(wanted))
        for _, line in parsed.memories:
            if line.id in brought:
                pairs += [(line.id, known[k]) for k in line.entities if k in known]
        self._writer.attach(pairs, store_entities=False)
        self._writer.link_all(links.own)
        self._link_stored(links.onto_stored, Cause(source, "the import links it"))
        nexts = [(id_map.get(r.source, r.source), id_map.get(r.target, r.target)) for _, r in parsed.nexts]
        self._writer.chain(nexts)
        # History last: an event of a memory that kept its id, not stored yet (imported once), and
        # only of a memory this file brought: a file never writes the history of the store's own
        # memories (a forged "edit by the user" that an undo would apply); never the event of a
        # supersession the import refused. Each is the import's, whoever the file says made it
        # (``_imported``).
        ours = brought | {
            m.id for m in self._stores.store.get_memories([r.memory_id for _, r in parsed.events]).values()
            if m.source == source
        }  # fmt: skip
        refused = links.refused_events()
        kept = [
            r for _, r in parsed.events
            if id_map.get(r.memory_id, r.memory_id) == r.memory_id and r.memory_id in ours
            and (r.kind, r.memory_id, id_map.get(r.other_id or "", r.other_id)) not in refused
            and self._stores.store.get_event(r.id) is None
        ]  # fmt: skip
        self._writer.add_history([_imported(r, source) for r in {r.id: r for r in kept}.values()])


def _imported(line: EventLine, source: str) -> MemoryEvent:
    """The event an import of ``source`` stores of ``line``: what happened (its kind, states and
    time) as the file tells it, made by the import, as the memories it brings are: who the file
    says made it is kept in words in its reason, never as its actor or rule. A file's ``"actor":
    "user"`` would be a person's change (``acts_as_person``: one only a person may undo, one that
    holds a bootstrap fact against its file, ``repository_docs._held``), its ``"rule"`` a forge
    rule's (``ForgeRules._made_by``). Its ``person`` is never read (``EventLine``): a team's store
    names the role that imports. The reason is redacted before it is cut to what a store keeps; an
    event an import made keeps its own, which says it already: a backup of a restored backup reads
    ``by user, as the file says``, never that twice."""
    who = f"rule {line.rule}" if line.rule else line.actor
    said = line.reason
    if line.rule or origin_of(line.actor) is not Origin.IMPORT:
        said = redact(f"by {who}, as the file says" + (f": {line.reason}" if line.reason else "")).text
    return replace(line, actor=source, rule=None, reason=said[:MAX_REASON_CHARS]).to_event()


def _check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise InvalidInputError(f"Unknown export format {fmt!r}; use one of: {', '.join(FORMATS)}.")


def _required_project(project: str | None) -> str:
    if not project:
        raise InvalidInputError(
            "A project export needs a project: run it inside the git checkout, or pass --project PATH."
        )
    return project


def _write(out: TextIO, record: dict[str, Any]) -> None:
    out.write(jsonl_line(record))  # refused, never cut, when longer than an import reads


def render_markdown_export(memories: list[MemoryRecord], project: str | None, now: datetime) -> str:
    """A readable view of memories grouped by category (not an import format)."""
    title = f"Memories of {project}" if project else "Memories"
    lines = [
        f"# {title}",
        "",
        f"{MARKDOWN_MARK}: a view for reading, not an import format. -->",
        f"Exported {now:%Y-%m-%d %H:%M} UTC. {len(memories)} memories.",
        "",
    ]
    for category in GROUP_ORDER:
        group = [m for m in memories if m.category is category]
        if not group:
            continue
        lines += [f"## {GROUP_TITLES[category]}", ""]
        for memory in group:
            notes = [] if memory.status.value == "active" else [memory.status.value]
            notes += [memory.stale] if memory.stale else []
            status = f" _({'; '.join(notes)})_" if notes else ""
            lines.append(f"- {memory.text}{status} — {memory.created_at:%Y-%m-%d}, `{memory.id}`")
        lines.append("")
    return "\n".join(lines)
