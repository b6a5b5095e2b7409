"""The memories linked to an entity, read as far as a reader can be shown them, and ranked:
what ``get_context`` lists about a target and what the graph view draws around an entity, in
one order (``ranked``).

A hub (a CHANGELOG, a core module, an author: thousands of linked memories) is not read whole
(0.4 ms a record from a cold Kùzu store): what the store lists first of each kind is, the rest
only counted (``read_linked``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from graphmem.core.models import Category, Entity, EntityKind, MemoryRecord, Status
from graphmem.core.ports import GraphStore, Visibility
from graphmem.service.recall import _visible

# Sources of memories graphmem derived itself (a file bootstrap read, a commit): about a
# target, what people and agents remembered comes before them.
DERIVED_SOURCES = ("bootstrap:", "git:")
# Linked memories read whole to be ranked: 2,000 in 0.2 s from a cold Kùzu store, 10,000 in
# 3.9 s. Past this a target is a hub, ranked from what the store lists first (0.3 s).
RANKED_READ_MAX = 2000
# Of a hub, the memories the store lists newest first of each kind (0.04 ms a row, a tenth of a
# read by id): all but events (what people and agents remembered), then events (commits).
HUB_LISTED = 2000
HUB_KINDS = (frozenset(Category) - {Category.EVENT}, frozenset({Category.EVENT}))


@dataclass(frozen=True, slots=True)
class LinkedRead:
    """The linked memories read (those visible), and how many linked ones were not read."""

    records: list[MemoryRecord]
    unread: int = 0
    # The linked ones not read (of a hub): whether the reader may see them is not known.
    unread_ids: frozenset[str] = frozenset()
    # Of ``unread``, those known to be events: every visible non-event of a hub was listed.
    unread_events: int = 0


def read_linked(store: GraphStore, ids: Sequence[str], visibility: Visibility, *, wanted: int) -> LinkedRead:
    """The memories of ``ids`` (linked to an entity) that ``visibility`` shows. All of them are
    read up to ``RANKED_READ_MAX``; of a hub, the ones the store lists first of each of
    ``HUB_KINDS`` (so that a decision stored after 10,000 commits is still read), then, when
    fewer than ``wanted`` of those are linked, as many others by id; the rest are counted."""
    ids = list(dict.fromkeys(ids))
    if len(ids) <= RANKED_READ_MAX:
        return LinkedRead([r for r in store.get_memories(ids).values() if _visible(r, visibility)])
    linked = set(ids)
    read: dict[str, MemoryRecord] = {}
    every_other_kind = True  # every visible non-event listed: none of them is left unread
    for categories in HUB_KINDS:
        kinds = categories if visibility.categories is None else categories & visibility.categories
        listed = store.list_memories(replace(visibility, categories=kinds), limit=HUB_LISTED)
        every_other_kind = every_other_kind and (Category.EVENT in kinds or len(listed) < HUB_LISTED)
        for record in listed:
            if record.id in linked and _visible(record, visibility):
                read.setdefault(record.id, record)
    rest = [i for i in ids if i not in read][: max(wanted - len(read), 0)]
    looked = store.get_memories(rest) if rest else {}
    unread_ids = frozenset(ids) - read.keys() - set(rest)
    read.update((i, r) for i, r in looked.items() if _visible(r, visibility))
    unread = len(unread_ids)
    events = unread if every_other_kind else 0
    return LinkedRead(list(read.values()), unread, unread_ids=unread_ids, unread_events=events)


def ranked(records: Iterable[MemoryRecord], about: Mapping[str, Sequence[Entity]]) -> list[MemoryRecord]:
    """``records`` best first (the caller chose which it shows: ``get_context`` a decision not
    merged too, marked so; the graph the current ones): active first; what people and agents
    remembered before what graphmem derived (a manifest fact, a commit); of what it derived, the
    most specific first (a commit that changed this file alone says more about it than one that
    changed 40: a reformatting, a move), by the files ``about`` links it to; newest first. A
    derived memory linked to no file (a merge commit, whose changes are its parents'; a commit
    of files since deleted) is of unknown reach, not the most specific: after those that are."""

    def key(record: MemoryRecord) -> tuple[bool, bool, bool, int, float, str]:
        derived = record.source.startswith(DERIVED_SOURCES)
        files = sum(1 for e in about.get(record.id, ()) if e.kind is EntityKind.FILE) if derived else 0
        return (
            record.status is not Status.ACTIVE,
            derived,
            derived and files == 0,
            files,
            -record.created_at.timestamp(),
            record.id,
        )

    return sorted(records, key=key)
