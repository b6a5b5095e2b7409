"""A project's memory in its repository: ``.graphmem/memories.jsonl`` and ``.graphmem/MEMORY.md``.

What a team shares (this project's memories, minus the archived, low-trust, chatty and
repository-derived ones), written project-relative and in a stable order, so that the
files fit any checkout, re-exporting an unchanged store gives the same bytes, and a
merge request shows one changed line per changed memory.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from graphmem.core.bundle import GROUP_ORDER, GROUP_TITLES
from graphmem.core.export_format import (
    entity_line,
    jsonl_line,
    link_line,
    next_line,
    relative_key,
    relative_project,
    repository_header_line,
    repository_memory_line,
)
from graphmem.core.models import Category, Entity, Link, MemoryRecord, Scope, Status, Trust
from graphmem.core.ports import GraphStore
from graphmem.core.provenance import Origin, record_origin
from graphmem.service.file_access import DEFAULT_FOLDER

REPOSITORY_FILE = "memories.jsonl"
REPOSITORY_VIEW = "MEMORY.md"
# Sources of memories the repository itself yields again (``graphmem bootstrap``: docs,
# manifests, git history); every checkout makes its own.
DERIVED_SOURCES = ("bootstrap:", "git:")
# Too chatty to review in a merge request.
UNSHARED_CATEGORIES = frozenset({Category.CONVERSATION})


@dataclass(frozen=True, slots=True)
class RepositorySnapshot:
    """The repository files' contents for one project, and what they hold."""

    jsonl: str
    markdown: str
    memory_ids: frozenset[str]
    entities: int
    links: int


def is_shared(memory: MemoryRecord, root: str) -> bool:
    """Whether a memory belongs in the repository export of the project at ``root``."""
    return (
        memory.scope is Scope.PROJECT
        and memory.project == root
        and memory.status is not Status.ARCHIVED
        and memory.trust is not Trust.LOW
        and memory.category not in UNSHARED_CATEGORIES
        and not memory.source.startswith(DERIVED_SOURCES)
        and not _unconfirmed_here(memory)
    )


def _unconfirmed_here(memory: MemoryRecord) -> bool:
    """A proposal made in this store (an agent's directive, a person's memory an agent changed)
    that no person confirmed: it stays out of the team's files until one does. The file holds no
    standing (``repository_memory_line``), and ``MEMORY.md`` lists what it holds as the project's
    memory, so a teammate, or an agent reading the checkout, would take it for the team's rule.
    What came from a file (an import, the folder itself) is proposed in every reader's store and
    stays: it is the team's file already, and a re-export gives it back as it was."""
    return memory.status is Status.PROPOSED and record_origin(memory) is not Origin.IMPORT


def snapshot(
    store: GraphStore, root: str, folder: str = DEFAULT_FOLDER, aliases: Iterable[str] = ()
) -> RepositorySnapshot:
    """The shared memories of the project at ``root``, as repository files. Those still kept
    under its ``aliases`` (``ProjectNames.pending``) are its own, written as they will be once
    moved to it: an export reads, and moves nothing."""
    kept = (
        replace(m, project=root)
        for name in (root, *aliases)
        for m in store.all_memories(name)
        if m.project == name
    )
    memories = sorted((m for m in kept if is_shared(m, root)), key=lambda m: (m.created_at, m.id))
    ids = {m.id for m in memories}
    about = store.about(ids)
    entities: dict[str, Entity] = {}
    for found in about.values():
        for entity in found:
            relative = replace(
                entity, key=relative_key(entity.key, root), project=relative_project(entity.project, root)
            )
            entities[relative.key] = relative
    keys = {m.id: sorted({relative_key(e.key, root) for e in about.get(m.id, [])}) for m in memories}
    links = sorted(
        (link for link in store.links(ids) if link.source in ids and link.target in ids),
        key=lambda link: (link.source, link.target, link.kind.value),
    )
    nexts = sorted({(a, b) for a, b in store.next_pairs(ids) if a in ids and b in ids})
    records: list[dict[str, object]] = [repository_header_line()]
    records += [entity_line(entities[key]) for key in sorted(entities)]
    records += [
        repository_memory_line(replace(m, project=relative_project(m.project, root)), keys[m.id])
        for m in memories
    ]
    records += [link_line(link) for link in links]
    records += [next_line(a, b) for a, b in nexts]
    jsonl = "".join(jsonl_line(r) for r in records)  # each line one an import reads back
    names = {m.id: [entities[k].name for k in keys[m.id]] for m in memories}
    markdown = render_memory_md(memories, names, links, folder)
    return RepositorySnapshot(jsonl, markdown, frozenset(ids), len(entities), len(links))


def render_memory_md(
    memories: list[MemoryRecord], names: dict[str, list[str]], links: Iterable[Link], folder: str
) -> str:
    """``MEMORY.md``: the current memories by category, then the superseded ones; no dates of export."""
    replaced_by = {link.target: link.source for link in links if link.kind.value == "supersedes"}
    current = [m for m in memories if m.status is not Status.SUPERSEDED]
    history = [m for m in memories if m.status is Status.SUPERSEDED]
    lines = [
        "# Project memory",
        "",
        f"<!-- Generated by graphmem from {REPOSITORY_FILE}: do not edit. -->",
        f"_Generated by graphmem from `{REPOSITORY_FILE}` — do not edit this file. Change memories with "
        f"graphmem (`remember`, `edit`, `resolve`, `archive`), then regenerate it with "
        f"`graphmem export --project --to {folder}`._",
        "",
        f"{_count(len(current), 'current memory', 'current memories')}, "
        f"{_count(len(history), 'superseded one', 'superseded ones')}.",
        "",
    ]
    for category in GROUP_ORDER:
        group = [m for m in current if m.category is category]
        if group:
            lines += [f"## {GROUP_TITLES[category]}", ""]
            lines += [_item(m, names.get(m.id, []), None) for m in group]
            lines.append("")
    if history:
        lines += ["## Superseded", ""]
        lines += [_item(m, names.get(m.id, []), replaced_by.get(m.id)) for m in history]
        lines.append("")
    return "\n".join(lines)


def _item(memory: MemoryRecord, names: list[str], replaced_by: str | None) -> str:
    text = "\n  ".join(line.rstrip() for line in memory.text.strip().splitlines())
    notes = [f"{memory.created_at:%Y-%m-%d}"]
    if memory.status in (Status.RESOLVED, Status.NOT_MERGED):
        notes.insert(0, memory.status.value.replace("_", " "))
    if memory.status is Status.SUPERSEDED:
        notes.insert(
            0, f"{memory.category.value}, superseded" + (f" by `{replaced_by}`" if replaced_by else "")
        )
    if names:
        notes.append("about " + ", ".join(f"`{name}`" for name in names))
    notes.append(f"`{memory.id}`")
    return f"- {text} — " + " · ".join(notes)


def _count(number: int, one: str, many: str) -> str:
    return f"{number} {one if number == 1 else many}"


def folder_label(directory: Path, root: str) -> str:
    """How MEMORY.md names its folder: relative to the project root when inside it."""
    try:
        relative = directory.resolve().relative_to(Path(root).resolve())
    except ValueError:
        return "<this folder>"
    return relative.as_posix() + "/" if str(relative) != "." else "."
