"""Export and import: a lossless JSONL round trip, and a Markdown view for people."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from graphmem.core.bundle import GROUP_ORDER, GROUP_TITLES
from graphmem.core.dedup import memory_hash
from graphmem.core.events import Cause, EventKind
from graphmem.core.export_format import (
    RELATIVE_ROOT,
    MemoryLine,
    ParsedExport,
    entity_line,
    event_line,
    header_line,
    is_relative,
    jsonl_line,
    link_line,
    memory_line,
    next_line,
    parse_lines,
    rooted_key,
    rooted_project,
)
from graphmem.core.models import Entity, Link, LinkKind, MemoryRecord, Scope, Status
from graphmem.core.provenance import import_source, is_persons
from graphmem.core.timeparse import to_utc
from graphmem.errors import ConflictError, ImportFileError, InvalidInputError
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
from graphmem.service.transfer_checks import check_links, check_references
from graphmem.service.writer import MemoryWriter

log = logging.getLogger(__name__)

# Memories stored (and embedded) per transaction during import: an acknowledged
# batch survives a crash; a batch is large enough for COPY and the model's batching.
# Kùzu's COPY costs about 0.1 s a call beside its rows: 50,000 memories imported at
# 2,000–2,500 a second in batches of 512 and 2,800–3,000 in batches of 4,096.
IMPORT_BATCH = 4096
FORMATS = ("jsonl", "markdown")

Progress = Callable[[int], None]


@dataclass(slots=True)
class ImportLinks:
    """An import's new links, by who may make them (``Transfer._sort_links``)."""

    own: list[Link] = field(default_factory=list)  # between memories the file brings
    onto_stored: list[Link] = field(default_factory=list)  # changing a memory stored before
    # superseding a person's memory, or hiding one the team sees behind one only the importer sees
    refused: list[Link] = field(default_factory=list)

    def left_current(self) -> set[str]:
        """The memories that only refused links supersede: none of a refused supersession is
        kept, so the memory it would close is not closed either (``_unclosed``)."""
        closing = {link.target for link in self.own + self.onto_stored if link.kind is LinkKind.SUPERSEDES}
        return {link.target for link in self.refused} - closing

    def refused_events(self) -> set[tuple[EventKind, str, str]]:
        """The kind, ``memory_id`` and ``other_id`` of the event a file may hold of each refused
        supersession (in the older memory's history), left out with it."""
        return {(EventKind.SUPERSEDE, link.target, link.source) for link in self.refused}


@dataclass(frozen=True, slots=True)
class CallerTerms:
    """The two ways out of a refused repository export, in the caller's own terms: merge the
    folder's file first (``{folder}``: its name), or export over it anyway."""

    merge: str
    force: str


CLI_TERMS = CallerTerms("run `graphmem import {folder}`", "export with --force")
TOOL_TERMS = CallerTerms(
    'call import_memories with path="{folder}"', "call export_memories with overwrite=true"
)


@dataclass(frozen=True, slots=True)
class ExportedFile:
    """Where ``export_file`` wrote, and what."""

    path: str
    memories: int
    entities: int
    links: int


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
                self._check_nothing_dropped(current, current_name, folder, root, aliases, terms)
        return RepositoryFiles(files, len(shared.memory_ids), shared.entities, shared.links)

    def _check_nothing_dropped(
        self, current: str, name: str, label: str, root: str, aliases: frozenset[str], terms: CallerTerms
    ) -> None:
        # The folder to import: the path ``name`` gives, else ``label``, the folder relative to the
        # project's root (``folder_label``: the CLI's export names the file alone).
        parent = Path(name).parent
        if name.endswith(REPOSITORY_FILE) and parent != Path("."):
            folder = str(parent)
        elif label == "." or label.endswith("/"):
            folder, name = label, f"{label.rstrip('/')}/{name}"
        else:
            folder = "DIR"
        merge = terms.merge.format(folder=folder)
        parsed = parse_lines(_numbered(current))
        problems = sorted(parsed.problems)
        if problems:
            number, message = problems[0]
            raise ConflictError(
                f"{name} has {len(problems)} invalid line(s) (line {number}: {message}); a merge conflict "
                f"left in it? Resolve it and {merge}, or {terms.force} to replace the file."
            )
        stored = self._stores.store.get_memories([line.id for _, line in parsed.memories])
        missing: list[str] = []  # not in the store, or newer there than here: not imported yet
        for _, line in parsed.memories:
            mine = stored.get(line.id)
            if mine is not None:
                if _stamp(line) > mine.updated_at:
                    missing.append(line.id)
            elif not any(
                self._stores.store.find_by_hash(memory_hash(line.scope, _owner(line, kept), line.text))
                for kept in (root, *aliases)
            ):
                missing.append(line.id)
        if missing:
            shown = ", ".join(missing[:3]) + (", ..." if len(missing) > 3 else "")
            raise ConflictError(
                f"{name} holds {len(missing)} memor{'y' if len(missing) == 1 else 'ies'} this store lacks or "
                f"has an older copy of ({shown}): {merge} first to merge them, or {terms.force} to drop "
                "them from the file."
            )

    # -- import -------------------------------------------------------------------

    def import_text(
        self, text: str, *, name: str, project: str | None, dry_run: bool, progress: Progress | None
    ) -> ImportSummary:
        """Validate every record of the JSONL ``text``; import all of them, or none (the verb and
        its defaults: ``TransferFiles.import_text``).

        ``name`` says where the text came from in errors. Project-relative keys (a
        repository export) are re-rooted at ``project``. A memory whose id is present is
        updated when the text's copy is newer (``updated_at``), else skipped; one with the
        same text in the same scope is skipped. Importing the same text twice changes nothing.
        """
        parsed = parse_lines(_numbered(text))
        if parsed.header is not None and parsed.header.project == RELATIVE_ROOT:
            _keep_newest(parsed)  # a union merge of two exports may repeat a memory
        _reroot(parsed, project)
        check_references(self._stores.store, parsed, project)
        existing = self._stores.store.get_memories([m.id for _, m in parsed.memories])
        # ids in the file -> ids in the store (a duplicate text maps onto the stored memory)
        id_map: dict[str, str] = {m.id: m.id for _, m in parsed.memories if m.id in existing}
        adding: list[tuple[MemoryLine, str]] = []  # each new memory's line, with its hash
        updates: list[tuple[MemoryRecord, MemoryLine]] = []
        hashes: dict[str, str] = {}
        fresh = [line for _, line in parsed.memories if line.id not in existing]
        # One read for every new line's hash (a round trip per line made a remote store's import slow).
        digests = {line.id: memory_hash(line.scope, _owner(line, project), line.text) for line in fresh}
        held = self._stores.store.find_by_hashes(set(digests.values()))
        for _, line in parsed.memories:
            if line.id in existing:
                stored = existing[line.id]
                if _stamp(line) > stored.updated_at:
                    updates.append((stored, line))
                continue
            digest = digests[line.id]
            # A superseded memory is history, never the same memory as a current one.
            duplicate = None
            if line.status is not Status.SUPERSEDED:
                duplicate = hashes.get(digest) or next(
                    (m.id for m in held.get(digest, []) if m.status is not Status.SUPERSEDED), None
                )
            if duplicate is not None:
                id_map[line.id] = duplicate
                continue
            if line.status is not Status.SUPERSEDED:
                hashes[digest] = line.id
            id_map[line.id] = line.id
            adding.append((line, digest))
        check_links(self._stores.store, parsed, id_map)  # between the memories the links land on
        if parsed.problems:
            lines = len({number for number, _ in parsed.problems})
            raise ImportFileError(
                f"{name} has {lines} invalid record{'s' if lines != 1 else ''}; nothing was imported. "
                "Fix the lines listed and run the import again.",
                sorted(parsed.problems),
            )
        source = import_source(name)  # who wrote what it holds: the file, never what the file says
        now = self._stores.clock()
        links = self._sort_links(parsed, id_map, {line.id: line.scope for line, _ in adding})
        current = links.left_current()
        adding = [(_unclosed(line) if line.id in current else line, digest) for line, digest in adding]
        new = [
            (line.to_record(digest, _owner(line, project), source=source, now=now), line.entities)
            for line, digest in adding
        ]
        # A person's memory stays in force: a newer copy that changes it is a proposal beside it.
        taken = sum(not is_persons(stored) for stored, _ in updates)
        proposed_changes = sum(is_persons(stored) and _changes(stored, line) for stored, line in updates)
        summary = ImportSummary(
            records=parsed.records,
            memories_added=len(new),
            memories_skipped=len(parsed.memories) - len(new) - taken - proposed_changes,
            entities=self._new_entities(parsed),
            links=len(links.own) + len(links.onto_stored),
            dry_run=dry_run,
            memories_updated=taken,
            changes_proposed=proposed_changes,
            proposed=sum(
                record.status is Status.PROPOSED and line.status is not Status.PROPOSED
                for (record, _), (line, _) in zip(new, adding, strict=True)
            ),
            links_refused=len(links.refused),
        )
        if dry_run:
            return summary
        with self._writer.lock:  # all or nothing among writers
            self._apply(parsed, new, id_map, progress, source, links)
            self._update(updates, source, now)
        return summary

    def _new_entities(self, parsed: ParsedExport) -> int:
        """How many of the file's entities the store does not hold yet (what an import adds)."""
        keys = {e.key for _, e in parsed.entities}
        return len(keys - self._stores.store.get_entities(keys).keys()) if keys else 0

    def _sort_links(
        self, parsed: ParsedExport, id_map: dict[str, str], brought: dict[str, Scope]
    ) -> ImportLinks:
        """The file's links the store does not hold yet, between the memories they land on (a
        repeated memory maps onto the stored one), by who may make them: between memories the
        file brings (``brought``: their scopes), the file's own; one that ends at a memory the
        store held before changes that memory, so it is made as any other writer's change
        (``_link_stored``); and one that would supersede a person's memory is refused, as an
        agent's is (only a person replaces what a person wrote or confirmed), as is one by which
        a memory only the importer sees would hide one the team sees (``keep_in_sight``), whichever
        end the file brings: a memory the file brings is the team's when the store shares its
        scope (``GraphStore.shared_scopes``: a project memory on a team's store)."""
        now = self._stores.clock()
        wanted = {
            (id_map.get(r.source, r.source), id_map.get(r.target, r.target), r.kind): (
                to_utc(r.created_at) if r.created_at else now
            )
            for _, r in parsed.links
        }
        ends = {memory_id for source, target, _ in wanted for memory_id in (source, target)}
        store = self._stores.store
        held = {(link.source, link.target, link.kind) for link in store.links(ends)} if ends else set()
        stored = store.get_memories(ends - brought.keys()) if ends - brought.keys() else {}
        scopes = store.shared_scopes()
        shared = store.shared_memories(stored.keys()) | {i for i, scope in brought.items() if scope in scopes}
        sorted_links = ImportLinks()
        for (source, target, kind), at in wanted.items():
            if (source, target, kind) in held:
                continue
            link = Link(source, target, kind, at)
            if kind is LinkKind.SUPERSEDES and (
                (target in stored and is_persons(stored[target]))
                or (target in shared and source not in shared)
            ):
                sorted_links.refused.append(link)
            elif source in brought and target in brought:
                sorted_links.own.append(link)
            else:
                sorted_links.onto_stored.append(link)
        return sorted_links

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
        file changes becomes a proposal (``MemoryWriter.take``)."""
        renamed: list[tuple[str, str]] = []
        for stored, line in updates:
            incoming = line.to_record(stored.content_hash, stored.project, source=source, now=now)
            known = self._stores.store.get_entities(line.entities)
            entities = [known[k] for k in line.entities if k in known]
            cause = Cause(source, "a newer copy was imported")
            if is_persons(stored):  # theirs stays in force: the copy is a proposal beside it
                if _changes(stored, line):
                    self._proposals.propose(stored, incoming.text, incoming.category, entities, cause)
            elif self._writer.take(stored, incoming, entities, cause):
                renamed.append((stored.id, incoming.text))
        if renamed and self._stores.semantic is not None:
            vectors = self._stores.semantic.embed_texts([text for _, text in renamed]).astype(np.float32)
            self._writer.set_vectors([memory_id for memory_id, _ in renamed], vectors)

    def _store_batches(self, batches: list[list[MemoryRecord]], progress: Progress | None) -> None:
        """Embed and store ``batches`` in turn, one transaction each. The next batch is
        embedded while this one is stored: the model keeps the cores busy, and the store's
        part (about a tenth of the time) no longer adds to it."""
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="graphmem-import-embed") as ahead:
            embedded = ahead.submit(self._vectors_of, batches[0]) if batches else None
            for i, records in enumerate(batches):
                assert embedded is not None
                vectors = embedded.result()
                if i + 1 < len(batches):
                    embedded = ahead.submit(self._vectors_of, batches[i + 1])
                self._writer.add(records, vectors=vectors)
                if progress is not None:
                    progress(len(records))

    def _vectors_of(self, records: list[MemoryRecord]) -> np.ndarray | None:
        if self._stores.semantic is None:
            return None
        return self._stores.semantic.embed_texts([r.text for r in records]).astype(np.float32)

    def _apply(
        self,
        parsed: ParsedExport,
        new: list[tuple[MemoryRecord, list[str]]],
        id_map: dict[str, str],
        progress: Progress | None,
        source: str,
        links: ImportLinks,
    ) -> None:
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
        entities = [Entity(e.key, e.kind, e.name, e.project, e.title) for _, e in parsed.entities]
        self._writer.add_entities(entities)
        known = {e.key: e for e in entities}
        # A database's vector index may be built once at the end instead of taking each row.
        with (
            self._stores.semantic.bulk_load(len(new)) if self._stores.semantic is not None else nullcontext()
        ):
            self._store_batches(
                [[r for r, _ in new[i : i + IMPORT_BATCH]] for i in range(0, len(new), IMPORT_BATCH)],
                progress,
            )
        # Edges last, idempotent (MERGE): re-running an interrupted import completes them.
        pairs: list[tuple[str, Entity]] = []
        wanted = {k for _, m in parsed.memories for k in m.entities if k not in known}
        known.update(self._stores.store.get_entities(wanted))
        brought = {r.id for r, _ in new}
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
        # supersession the import refused.
        ours = {r.id for r, _ in new} | {
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
        self._writer.add_history(
            [r.to_event(r.memory_id, r.other_id) for r in {r.id: r for r in kept}.values()]
        )


def _check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise InvalidInputError(f"Unknown export format {fmt!r}; use one of: {', '.join(FORMATS)}.")


def _required_project(project: str | None) -> str:
    if not project:
        raise InvalidInputError(
            "A project export needs a project: run it inside the git checkout, or pass --project PATH."
        )
    return project


def _changes(stored: MemoryRecord, line: MemoryLine) -> bool:
    """Whether the file's copy says something else than ``stored``: its text or its category."""
    return (line.text, line.category) != (stored.text, stored.category)


def _stamp(line: MemoryLine) -> datetime:
    """When the line's copy of a memory last changed."""
    return to_utc(line.updated_at or line.created_at)


def _unclosed(line: MemoryLine) -> MemoryLine:
    """``line`` as it was before the supersession the import refused: current (a directive or
    preference from a file is a proposal, ``MemoryLine.to_record``), its validity open again, as
    ``graphmem restore`` leaves a superseded memory."""
    if line.status is not Status.SUPERSEDED:
        return line
    return line.model_copy(update={"status": Status.ACTIVE, "valid_to": None})


def _owner(line: MemoryLine, project: str | None) -> str | None:
    return (project or line.project) if line.scope is Scope.PROJECT else None


def _keep_newest(parsed: ParsedExport) -> None:
    """One line per memory id: the newest (by ``updated_at``; the later line on a tie)."""
    newest: dict[str, tuple[int, MemoryLine]] = {}
    for number, line in parsed.memories:
        seen = newest.get(line.id)
        if seen is None or _stamp(line) >= _stamp(seen[1]):
            newest[line.id] = (number, line)
    parsed.memories = sorted(newest.values(), key=lambda item: item[0])


def _reroot(parsed: ParsedExport, project: str | None) -> None:
    """Project-relative keys and projects (``.``) become ``project``'s; without one, problems."""
    if project is None:
        numbered = [(n, e.key) for n, e in parsed.entities] + [(n, e.project) for n, e in parsed.entities]
        numbered += [(n, m.project) for n, m in parsed.memories if m.scope is Scope.PROJECT]
        numbered += [(n, key) for n, m in parsed.memories for key in m.entities]
        for number in sorted({n for n, value in numbered if is_relative(value)}):
            parsed.problems.append(
                (number, "a project-relative record ('.'): import it inside the project's checkout")
            )
        return
    parsed.entities = [
        (
            n,
            e.model_copy(
                update={"key": rooted_key(e.key, project), "project": rooted_project(e.project, project)}
            ),
        )
        for n, e in parsed.entities
    ]
    parsed.memories = [
        (
            n,
            m.model_copy(
                update={
                    "project": rooted_project(m.project, project),
                    "entities": [rooted_key(k, project) for k in m.entities],
                }
            ),
        )
        for n, m in parsed.memories
    ]


def _write(out: TextIO, record: dict[str, Any]) -> None:
    out.write(jsonl_line(record))  # refused, never cut, when longer than an import reads


def _numbered(text: str) -> Iterator[tuple[int, str]]:
    """The lines of ``text`` with their numbers; only ``\\n`` ends a line (JSON strings may hold
    other line separators)."""
    return enumerate(text.split("\n"), start=1)


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
