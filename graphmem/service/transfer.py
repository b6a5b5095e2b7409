"""Export and import: a lossless JSONL round trip, and a Markdown view for people."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TextIO

import numpy as np

from graphmem.core.bundle import GROUP_ORDER, GROUP_TITLES
from graphmem.core.dedup import memory_hash
from graphmem.core.models import Entity, Link, MemoryRecord, Scope, Status
from graphmem.core.ports import GraphStore
from graphmem.core.timeparse import to_utc
from graphmem.core.transfer import (
    ParsedExport,
    entity_line,
    header_line,
    link_line,
    memory_line,
    next_line,
    parse_lines,
)
from graphmem.errors import ImportFileError, InvalidInputError
from graphmem.service.semantic import SemanticIndex

log = logging.getLogger(__name__)

# Memories stored (and embedded) per transaction during import: an acknowledged
# batch survives a crash; a batch is large enough for COPY and the model's batching.
IMPORT_BATCH = 512
FORMATS = ("jsonl", "markdown")

Progress = Callable[[int], None]


@dataclass(frozen=True, slots=True)
class ExportSummary:
    memories: int
    entities: int
    links: int


@dataclass(frozen=True, slots=True)
class ImportSummary:
    records: int
    memories_added: int
    memories_skipped: int  # already present (same id or same text in the same scope)
    entities: int
    links: int
    dry_run: bool


class Transfer:
    """Moves memories in and out of a store."""

    def __init__(self, store: GraphStore, semantic: SemanticIndex | None, clock: Callable[[], datetime]):
        self._store = store
        self._semantic = semantic
        self._clock = clock

    # -- export -------------------------------------------------------------------

    def export(self, out: TextIO, *, project: str | None = None, fmt: str = "jsonl") -> ExportSummary:
        """Write every memory (of ``project`` and global ones, or all when None)."""
        if fmt not in FORMATS:
            raise InvalidInputError(f"Unknown export format {fmt!r}; use one of: {', '.join(FORMATS)}.")
        memories = [m for m in self._store.all_memories() if project is None or m.project in (None, project)]
        ids = {m.id for m in memories}
        about = self._store.about(ids)
        entities: dict[str, Entity] = {e.key: e for es in about.values() for e in es}
        links = [link for link in self._store.links(ids) if link.source in ids and link.target in ids]
        nexts = [(a, b) for a, b in self._store.next_pairs(ids) if b in ids]
        if fmt == "markdown":
            out.write(render_markdown_export(memories, project, self._clock()))
        else:
            counts = {"memories": len(memories), "entities": len(entities), "links": len(links)}
            _write(out, header_line(project, counts, self._clock()))
            for entity in entities.values():
                _write(out, entity_line(entity))
            for memory in memories:
                _write(out, memory_line(memory, sorted(e.key for e in about.get(memory.id, []))))
            for link in links:
                _write(out, link_line(link))
            for a, b in nexts:
                _write(out, next_line(a, b))
        return ExportSummary(len(memories), len(entities), len(links))

    # -- import -------------------------------------------------------------------

    def import_file(
        self,
        path: Path,
        *,
        project: str | None = None,
        dry_run: bool = False,
        progress: Progress | None = None,
    ) -> ImportSummary:
        """Validate every record of ``path``; import all of them, or none.

        Memories already present (same id, or same text in the same scope) are
        skipped, so importing the same file twice changes nothing.
        """
        undecodable: list[tuple[int, str]] = []
        parsed = parse_lines(_decoded(_read_lines(path), undecodable))
        parsed.problems += undecodable
        self._check_references(parsed, project)
        if parsed.problems:
            shown = len(parsed.problems)
            raise ImportFileError(
                f"{path} has {shown} invalid record{'s' if shown != 1 else ''}; nothing was imported. "
                "Fix the lines listed and run the import again.",
                sorted(parsed.problems),
            )
        existing = self._store.get_memories([m.id for _, m in parsed.memories])
        # ids in the file -> ids in the store (a duplicate text maps onto the stored memory)
        id_map: dict[str, str] = {m.id: m.id for _, m in parsed.memories if m.id in existing}
        new: list[tuple[MemoryRecord, list[str]]] = []
        hashes: dict[str, str] = {}
        for _, line in parsed.memories:
            if line.id in existing:
                continue
            owner = (project or line.project) if line.scope is Scope.PROJECT else None
            digest = memory_hash(line.scope, owner, line.text)
            # A superseded memory is history, never the same memory as a current one.
            duplicate = None
            if line.status is not Status.SUPERSEDED:
                duplicate = hashes.get(digest) or next(
                    (m.id for m in self._store.find_by_hash(digest) if m.status is not Status.SUPERSEDED),
                    None,
                )
            if duplicate is not None:
                id_map[line.id] = duplicate
                continue
            if line.status is not Status.SUPERSEDED:
                hashes[digest] = line.id
            id_map[line.id] = line.id
            new.append((line.to_record(digest, owner), line.entities))
        summary = ImportSummary(
            records=parsed.records,
            memories_added=len(new),
            memories_skipped=len(parsed.memories) - len(new),
            entities=len(parsed.entities),
            links=len(parsed.links),
            dry_run=dry_run,
        )
        if dry_run:
            return summary
        self._apply(parsed, new, id_map, progress)
        return summary

    def _check_references(self, parsed: ParsedExport, project: str | None) -> None:
        ids: dict[str, int] = {}
        for number, memory in parsed.memories:
            if memory.id in ids:
                parsed.problems.append((number, f"memory id {memory.id} repeats line {ids[memory.id]}"))
            ids.setdefault(memory.id, number)
        for number, memory in parsed.memories:
            if memory.scope is Scope.PROJECT and not (project or memory.project):
                parsed.problems.append(
                    (number, "scope 'project' needs a project: set 'project' or import with --project")
                )
        keys = {e.key for _, e in parsed.entities}
        for number, memory in parsed.memories:
            unknown = [k for k in memory.entities if k not in keys]
            if unknown:
                known = self._store.get_entities(unknown)
                missing = [k for k in unknown if k not in known]
                if missing:
                    parsed.problems.append((number, f"unknown entities {missing}: add entity lines for them"))
        endpoints = [(n, r.source, r.target) for n, r in parsed.links]
        endpoints += [(n, r.source, r.target) for n, r in parsed.nexts]
        outside = {i for _, s, t in endpoints for i in (s, t) if i not in ids}
        stored = self._store.get_memories(outside) if outside else {}
        for number, source, target in endpoints:
            for memory_id in (source, target):
                if memory_id not in ids and memory_id not in stored:
                    parsed.problems.append(
                        (number, f"link endpoint {memory_id} is not a memory in the file or store")
                    )

    def _apply(
        self,
        parsed: ParsedExport,
        new: list[tuple[MemoryRecord, list[str]]],
        id_map: dict[str, str],
        progress: Progress | None,
    ) -> None:
        entities = [Entity(e.key, e.kind, e.name, e.project, e.title) for _, e in parsed.entities]
        if entities:
            self._store.upsert_entities(entities)
        known = {e.key: e for e in entities}
        for start in range(0, len(new), IMPORT_BATCH):
            batch = new[start : start + IMPORT_BATCH]
            records = [record for record, _ in batch]
            vectors = None
            if self._semantic is not None:
                vectors = self._semantic.embed_texts([r.text for r in records]).astype(np.float32)
            self._store.add_memories(records, vectors)
            if progress is not None:
                progress(len(batch))
        # Edges last, idempotent (MERGE): re-running an interrupted import completes them.
        pairs: list[tuple[str, Entity]] = []
        wanted = {k for _, m in parsed.memories for k in m.entities if k not in known}
        known.update(self._store.get_entities(wanted))
        for _, line in parsed.memories:
            target = id_map.get(line.id)
            pairs += [(target, known[k]) for k in line.entities if target and k in known]
        if pairs:
            self._store.link_about(pairs)
        now = self._clock()
        links = [
            Link(
                id_map.get(r.source, r.source),
                id_map.get(r.target, r.target),
                r.kind,
                to_utc(r.created_at) if r.created_at else now,
            )
            for _, r in parsed.links
        ]
        if links:
            self._store.add_links(links)
        nexts = [(id_map.get(r.source, r.source), id_map.get(r.target, r.target)) for _, r in parsed.nexts]
        self._store.add_next(nexts)
        if self._semantic is not None and self._semantic.loaded:
            self._semantic.reset()


def _write(out: TextIO, record: dict[str, object]) -> None:
    out.write(json.dumps(record, ensure_ascii=False, sort_keys=False))
    out.write("\n")


def _decoded(
    lines: Iterator[tuple[int, bytes]], problems: list[tuple[int, str]]
) -> Iterator[tuple[int, str]]:
    for number, raw in lines:
        try:
            yield number, raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append((number, f"invalid UTF-8 at byte {exc.start}: save the file as UTF-8"))


def _read_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    try:
        with path.open("rb") as handle:
            yield from enumerate(handle, start=1)
    except FileNotFoundError:
        raise InvalidInputError(f"No such file: {path}.") from None
    except IsADirectoryError:
        raise InvalidInputError(f"{path} is a directory: give the export file (.jsonl).") from None
    except OSError as exc:
        raise InvalidInputError(f"Cannot read {path}: {exc.strerror}.") from None


def render_markdown_export(memories: list[MemoryRecord], project: str | None, now: datetime) -> str:
    """A readable view of memories grouped by category (not an import format)."""
    title = f"Memories of {project}" if project else "Memories"
    lines = [f"# {title}", "", f"Exported {now:%Y-%m-%d %H:%M} UTC. {len(memories)} memories.", ""]
    for category in GROUP_ORDER:
        group = [m for m in memories if m.category is category]
        if not group:
            continue
        lines += [f"## {GROUP_TITLES[category]}", ""]
        for memory in group:
            status = "" if memory.status.value == "active" else f" _({memory.status.value})_"
            lines.append(f"- {memory.text}{status} — {memory.created_at:%Y-%m-%d}, `{memory.id}`")
        lines.append("")
    return "\n".join(lines)
