"""Reading memories as they are stored: one memory, a filtered list, the store's counts.

``show``, ``list`` and ``stats`` answer the CLI and the tools; ``select`` is the filter
of the bulk lifecycle commands (``graphmem archive --category event --older-than 90d``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from graphmem.core.keys import EVENT_ID_PREFIX
from graphmem.core.models import Category, MemoryRecord, Status
from graphmem.core.ports import GraphStore, StoreLogin, Visibility
from graphmem.core.timeparse import to_utc
from graphmem.errors import InvalidInputError
from graphmem.service.inputs import (
    expanded_id,
    parse_category,
    parse_id_prefix,
    parse_memory_id,
    unknown_memory,
)
from graphmem.service.results import Gauges, MemoryDetail, Stats
from graphmem.service.staleness import Staleness
from graphmem.service.stores import Stores

MAX_LIST_LIMIT = 10_000
# No store holds a billion memories: a larger offset is a mistake (the stores' integers end at
# 2^63, and Kùzu's ``SKIP`` read 2^32 as 0).
MAX_LIST_OFFSET = 1_000_000_000
# Memories read a page at a time by a scan over many (review, the page's home).
SCAN_PAGE = 2_000


def scan(store: GraphStore, visibility: Visibility, most: int) -> list[MemoryRecord]:
    """The memories ``visibility`` shows, newest first, ``most`` at most, read a page at a time."""
    found: list[MemoryRecord] = []
    while len(found) < most:
        page = store.list_memories(visibility, limit=SCAN_PAGE, offset=len(found))
        found += page
        if len(page) < SCAN_PAGE:
            break
    return found


DEFAULT_STATUSES = frozenset({Status.ACTIVE, Status.RESOLVED, Status.PROPOSED})


@dataclass(frozen=True, slots=True)
class MemoryFilter:
    """Which memories ``list`` and ``select`` keep: those visible from ``project``, of
    ``categories`` (None: any), in ``statuses`` (None: active, resolved and proposed), created
    since ``since`` (None: ever); as the caller gave them, read when the filter is applied."""

    project: str | None
    categories: Iterable[str | Category] | None = None
    statuses: Iterable[Status] | None = None
    since: datetime | None = None

    def visibility(self, now: datetime, aliases: frozenset[str] = frozenset()) -> Visibility:
        """The filter as the store applies it; expired memories (by ``now``) left out, the
        project's ``aliases`` seen as it (``Visibility.aliases``)."""
        return Visibility(
            self.project,
            frozenset(self.statuses) if self.statuses else DEFAULT_STATUSES,
            frozenset(parse_category(c) for c in self.categories) if self.categories else None,
            to_utc(self.since) if self.since is not None else None,
            all_branches=True,  # lists are the inventory: a memory on a branch is listed, marked
            expired_by=now,
            aliases=aliases,
        )


class Listing:
    """Memories by id, by filter, and counted. Its verbs the Memory service offers as
    they are (``PartVerb``) are documented where ``graphmem.api.Memory`` declares them."""

    def __init__(
        self, stores: Stores, data_dir: Path, staleness: Staleness, login: StoreLogin | None = None
    ) -> None:
        self._stores = stores  # its clock: what expired by now is not listed (``Visibility.expired_by``)
        self._login = login  # a team's store: who it logs in as (stats says so)
        self._data_dir = data_dir
        self._staleness = staleness  # the memory's code changed since: shown on each one

    def show(self, memory_id: str) -> MemoryDetail:
        wanted = parse_memory_id(memory_id)
        record = self._stores.store.get_memories([wanted]).get(wanted)
        if record is None:
            raise unknown_memory(wanted)
        # as a reader of its project is shown them (``Stores.shown_about``)
        entities = self._stores.shown_about([record.id], record.project).get(record.id, [])
        stale = self._staleness.flags([record], {record.id: entities}).get(record.id)
        record = replace(record, stale=stale) if stale else record
        return MemoryDetail(record, tuple(entities), tuple(self._stores.store.links([record.id])))

    def expand_id(self, prefix: str) -> str:
        # a whole id costs one read; a prefix reads every id of its kind (a person's typing)
        wanted = parse_id_prefix(prefix)
        store = self._stores.store
        if wanted.startswith(EVENT_ID_PREFIX):
            if store.get_event(wanted) is not None:
                return wanted
            return expanded_id(wanted, (event.id for event in store.all_events()))
        if wanted in store.get_memories([wanted]):
            return wanted
        return expanded_id(wanted, (record.id for record in store.all_memories()))

    def marked(self, record: MemoryRecord) -> MemoryRecord:
        """``record`` with its staleness, as ``show`` gives it."""
        return self._staleness.annotate([record])[0]

    def select(
        self,
        *,
        project: str | None = None,
        categories: Iterable[str | Category] | None = None,
        statuses: Iterable[Status] | None = None,
        since: datetime | None = None,
        before: datetime | None = None,
    ) -> list[MemoryRecord]:
        asked = MemoryFilter(project, categories, statuses, since)
        visibility = asked.visibility(self._stores.clock(), self._stores.aliases(project))
        cutoff = to_utc(before) if before is not None else None
        found: list[MemoryRecord] = []
        offset = 0
        while True:
            page = self._stores.store.list_memories(visibility, limit=MAX_LIST_LIMIT, offset=offset)
            found += [r for r in page if cutoff is None or r.created_at < cutoff]
            if len(found) > MAX_LIST_LIMIT:
                raise InvalidInputError(
                    f"Over {MAX_LIST_LIMIT} memories match: narrow the filter (a category, a status, "
                    "an age) and run it again."
                )
            if len(page) < MAX_LIST_LIMIT:
                return found
            offset += MAX_LIST_LIMIT

    def list(
        self,
        *,
        project: str | None = None,
        categories: Iterable[str | Category] | None = None,
        statuses: Iterable[Status] | None = None,
        since: datetime | None = None,
        limit: int = 50,
        offset: int = 0,
        branch: str | None = None,
        all_branches: bool = True,
    ) -> list[MemoryRecord]:
        if not 1 <= limit <= MAX_LIST_LIMIT or not 0 <= offset <= MAX_LIST_OFFSET:
            raise InvalidInputError(
                f"limit must be 1..{MAX_LIST_LIMIT} and offset 0..{MAX_LIST_OFFSET:,}: "
                "an offset past the last memory gives an empty page."
            )
        visibility = replace(
            MemoryFilter(project, categories, statuses, since).visibility(
                self._stores.clock(), self._stores.aliases(project)
            ),
            branch=branch,
            all_branches=all_branches,
        )
        return self._staleness.annotate(
            self._stores.store.list_memories(visibility, limit=limit, offset=offset)
        )

    def gauges(self) -> Gauges:
        """Memories by category and the embedding backlog, for every /metrics scrape: not
        the staleness count and the entities of ``stats``, which read every code link and
        every entity (a fifth of a second on a repository of express's size)."""
        by_category: Counter[str] = Counter()
        for (category, _, _), n in self._stores.store.count_memories().items():
            by_category[category] += n
        return Gauges(dict(by_category), self._stores.store.count_pending_embeddings())

    def stats(self) -> Stats:
        counts = self._stores.store.count_memories()
        by_category: Counter[str] = Counter()
        by_status: Counter[str] = Counter()
        by_scope: Counter[str] = Counter()
        for (category, scope, status), n in counts.items():
            by_category[category] += n
            by_status[status] += n
            by_scope[scope] += n
        entities = Counter(e.kind.value for e in self._stores.store.all_entities())
        model = self._stores.semantic.embedder.model_name if self._stores.semantic is not None else "none"
        return Stats(
            total=sum(counts.values()),
            by_category=dict(by_category),
            by_status=dict(by_status),
            by_scope=dict(by_scope),
            entities=dict(entities),
            pending_embeddings=self._stores.store.count_pending_embeddings(),
            data_dir=str(self._data_dir),
            model=model,
            stale=self._staleness.count(),
            role=self._login.login_role() if self._login is not None else None,
        )
