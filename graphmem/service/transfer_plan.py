"""What each memory of an import becomes, decided before anything is written: new (its record),
the same as one the store holds (its text in the same scope: the file's id maps onto the stored
one), a newer copy of a stored memory (taken, or proposed beside a person's), or skipped; and
each of the file's links, by who may make it (``ImportLinks``). A file with a problem plans
nothing: ``ImportFileError`` lists every one. ``Transfer`` stores the plan.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TypeVar

from graphmem.core.dedup import memory_hash
from graphmem.core.events import USER, EventKind
from graphmem.core.export_format import ParsedExport
from graphmem.core.memory_line import MemoryLine
from graphmem.core.models import Link, LinkKind, MemoryRecord, Scope, Status
from graphmem.core.provenance import acts_as_person, import_source, is_persons
from graphmem.core.timeparse import to_utc
from graphmem.errors import ImportFileError, InvalidInputError
from graphmem.service.results import ImportSummary
from graphmem.service.stores import Stores
from graphmem.service.transfer_checks import check_links, check_references
from graphmem.service.transfer_read import owner, stamp

# The keys (memory ids, content hashes) an import asks the store for in one read: the store holds a
# read's keys beside its answer (Kùzu: 0.7 KB a key, 0.4 GB for one file's 568,800 ids), so a
# file's are asked in slices; each slice of ids costs Kùzu a pass over the stored ids (``_stored``).
LOOKUP_KEYS = 20_000
_Found = TypeVar("_Found")
# Why an agent's import that would add memories without a project is refused: they would be
# global, or another project's (as ``remember.AGENT_WITHOUT_PROJECT``).
AGENT_IMPORT_WITHOUT_PROJECT = (
    "An agent's import keeps what it brings in the project it works on, and this call names no "
    "project (a directory outside any git repository is none): pass project, the absolute path "
    "of the repository. Only the user imports memories for every project (`graphmem import`)."
)


@dataclass(slots=True)
class ImportLinks:
    """An import's new links, by who may make them (``_sort_links``)."""

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


@dataclass(slots=True)
class ImportPlan:
    """What an import of ``parsed`` writes, and the summary it answers."""

    parsed: ParsedExport
    new: list[tuple[MemoryLine, str]]  # each new memory's line, with its content hash (``records``)
    project: str | None  # the project the import is into (``owner``)
    # each stored memory a newer copy changes, with the copy: a person's gets a proposal beside
    # it (``is_persons``), any other takes the copy
    updates: list[tuple[MemoryRecord, MemoryLine]]
    id_map: dict[str, str]  # ids in the file -> ids in the store
    links: ImportLinks
    source: str  # who wrote what the file holds (``import_source``): the file, never what it says
    now: datetime
    summary: ImportSummary

    def records(self, start: int, stop: int) -> list[MemoryRecord]:
        """The new memories ``start`` to ``stop`` as they are stored: made a batch at a time as
        they are written, never all at once (568,800 records and their tuples took 0.17 GB)."""
        return [
            line.to_record(digest, owner(line, self.project), source=self.source, now=self.now)
            for line, digest in self.new[start:stop]
        ]


def plan_import(
    stores: Stores,
    parsed: ParsedExport,
    *,
    name: str,
    project: str | None,
    dry_run: bool,
    actor: str = USER,
) -> ImportPlan:
    """What importing ``parsed`` (read by ``transfer_read.read_import``) into ``project`` does.

    ``name`` says where the text came from, in errors and as the import's source. A memory
    whose id is present is updated when the file's copy is newer (``updated_at``), else
    skipped; one with the same text in the same scope is skipped. Raises ``ImportFileError``
    when a record is invalid or does not fit the store (``transfer_checks.py``).

    ``actor``, who imports, is the code path's (an agent's through the tool), never the file's:
    only a person's import keeps a global memory global (``_kept_in``); an agent's that names no
    project adds nothing (``AGENT_IMPORT_WITHOUT_PROJECT``).
    """
    store = stores.store
    persons = acts_as_person(actor)
    if not persons and project is not None:
        _kept_in(parsed, project)
    check_references(store, parsed, project)
    existing = _in_slices(store.get_memories, (m.id for _, m in parsed.memories))
    # ids in the file -> ids in the store (a duplicate text maps onto the stored memory)
    id_map: dict[str, str] = {m.id: m.id for _, m in parsed.memories if m.id in existing}
    adding: list[tuple[MemoryLine, str]] = []  # each new memory's line, with its hash
    updates: list[tuple[MemoryRecord, MemoryLine]] = []
    hashes: dict[str, str] = {}
    # A read for many lines' hashes at once: a round trip per line made a remote store's import slow.
    digests = {
        line.id: memory_hash(line.scope, owner(line, project), line.text)
        for _, line in parsed.memories
        if line.id not in existing
    }
    held = _in_slices(store.find_by_hashes, set(digests.values()))
    for _, line in parsed.memories:
        if line.id in existing:
            stored = existing[line.id]
            # A person's memory stays in force: a newer copy that changes it is a proposal beside it.
            if stamp(line) > stored.updated_at and (not is_persons(stored) or _changes(stored, line)):
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
    check_links(store, parsed, id_map)  # between the memories the links land on
    if parsed.problems:
        lines = len({number for number, _ in parsed.problems})
        raise ImportFileError(
            f"{name} has {lines} invalid record{'s' if lines != 1 else ''}; nothing was imported. "
            "Fix the lines listed and run the import again.",
            sorted(parsed.problems),
        )
    if adding and not persons and project is None:
        raise InvalidInputError(AGENT_IMPORT_WITHOUT_PROJECT)
    source = import_source(name)
    now = stores.clock()
    links = _sort_links(stores, parsed, id_map, {line.id: line.scope for line, _ in adding})
    current = links.left_current()
    if current:
        adding = [(_unclosed(line) if line.id in current else line, digest) for line, digest in adding]
    taken = sum(not is_persons(stored) for stored, _ in updates)
    summary = ImportSummary(
        records=parsed.records,
        memories_added=len(adding),
        memories_skipped=len(parsed.memories) - len(adding) - len(updates),
        entities=_new_entities(stores, parsed),
        links=len(links.own) + len(links.onto_stored),
        dry_run=dry_run,
        memories_updated=taken,
        changes_proposed=len(updates) - taken,
        proposed=sum(
            line.status_from(source) is Status.PROPOSED and line.status is not Status.PROPOSED
            for line, _ in adding
        ),
        links_refused=len(links.refused),
    )
    return ImportPlan(parsed, adding, project, updates, id_map, links, source, now, summary)


def _kept_in(parsed: ParsedExport, project: str) -> None:
    """A global memory of the file becomes one of ``project``, as a line of another project does
    (``transfer_read.owner``): an agent's writes are kept in the project it works on, as its
    ``remember`` is (``Rememberer.remember``); only a person makes a memory global (``graphmem
    widen``). Its ``branch``, which a global line's never meant, is none: the project's every branch.
    A line is replaced in its place, only when it changes (``transfer_read._reroot``)."""
    for i, (number, line) in enumerate(parsed.memories):
        if line.scope is Scope.GLOBAL:
            parsed.memories[i] = (number, replace(line, scope=Scope.PROJECT, project=project, branch=None))


def _in_slices(lookup: Callable[[list[str]], dict[str, _Found]], keys: Iterable[str]) -> dict[str, _Found]:
    """What ``lookup`` finds of ``keys``, asked ``LOOKUP_KEYS`` at a time."""
    wanted = list(keys)
    found: dict[str, _Found] = {}
    for start in range(0, len(wanted), LOOKUP_KEYS):
        found.update(lookup(wanted[start : start + LOOKUP_KEYS]))
    return found


def _new_entities(stores: Stores, parsed: ParsedExport) -> int:
    """How many of the file's entities the store does not hold yet (what an import adds)."""
    keys = {e.key for _, e in parsed.entities}
    return len(keys - stores.store.get_entities(keys).keys()) if keys else 0


def _sort_links(
    stores: Stores, parsed: ParsedExport, id_map: dict[str, str], brought: dict[str, Scope]
) -> ImportLinks:
    """The file's links the store does not hold yet, between the memories they land on (a
    repeated memory maps onto the stored one), by who may make them: between memories the
    file brings (``brought``: their scopes), the file's own; one that ends at a memory the
    store held before changes that memory, so it is made as any other writer's change
    (``Transfer._link_stored``); and one that would supersede a person's memory is refused, as
    an agent's is (only a person replaces what a person wrote or confirmed), as is one by which
    a memory only the importer sees would hide one the team sees (``keep_in_sight``), whichever
    end the file brings: a memory the file brings is the team's when the store shares its
    scope (``GraphStore.shared_scopes``: a project memory on a team's store)."""
    now = stores.clock()
    wanted = {
        (id_map.get(r.source, r.source), id_map.get(r.target, r.target), r.kind): (
            to_utc(r.created_at) if r.created_at else now
        )
        for _, r in parsed.links
    }
    ends = {memory_id for source, target, _ in wanted for memory_id in (source, target)}
    store = stores.store
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
            (target in stored and is_persons(stored[target])) or (target in shared and source not in shared)
        ):
            sorted_links.refused.append(link)
        elif source in brought and target in brought:
            sorted_links.own.append(link)
        else:
            sorted_links.onto_stored.append(link)
    return sorted_links


def _changes(stored: MemoryRecord, line: MemoryLine) -> bool:
    """Whether the file's copy says something else than ``stored``: its text or its category."""
    return (line.text, line.category) != (stored.text, stored.category)


def _unclosed(line: MemoryLine) -> MemoryLine:
    """``line`` as it was before the supersession the import refused: current (a directive or
    preference from a file is a proposal, ``MemoryLine.to_record``), its validity open again, as
    ``graphmem restore`` leaves a superseded memory."""
    if line.status is not Status.SUPERSEDED:
        return line
    return replace(line, status=Status.ACTIVE, valid_to=None)
