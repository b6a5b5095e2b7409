"""What needs a person, for ``graphmem ui``'s home page: proposals waiting for confirmation,
memories the code changed under, open blockers, what the forge's rules changed lately, what
the last sessions taught, and the project's counts beside the store's.

It only reads: no expiry pass, no event (``graphmem review`` and ``list`` run the expiry
first; the home page shows the store as it is). Each list is short (``SHOWN``) and says how
many there are in all, so the page links on to the whole list.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from graphmem.core.events import MemoryEvent
from graphmem.core.models import Category, MemoryRecord, Status
from graphmem.core.ports import Visibility
from graphmem.service.forge_rules import RULE_ACTOR
from graphmem.service.listing import scan
from graphmem.service.staleness import Staleness
from graphmem.service.stores import Stores

# Items each list of the home page shows; the rest are counted ("and 12 more").
SHOWN = 5
# Memories looked at, newest first (as ``graphmem review``): past this the oldest are not.
HOME_SCAN_MAX = 20_000
# Sessions whose memories "learned lately" shows, newest first.
LAST_SESSIONS = 3
_VISIBLE = frozenset({Status.ACTIVE, Status.RESOLVED, Status.NOT_MERGED, Status.PROPOSED})


@dataclass(frozen=True, slots=True)
class Flagged:
    """A memory and why it is listed (``possibly stale: …``)."""

    memory: MemoryRecord
    why: str = ""


@dataclass(frozen=True, slots=True)
class Short:
    """The first ``SHOWN`` of a list and how many there are in all."""

    items: list[Flagged] = field(default_factory=list)
    total: int = 0


@dataclass(frozen=True, slots=True)
class RuleChange:
    """A change the forge's rules made (``!13 merged``: the blocker is resolved), undoable."""

    event: MemoryEvent
    memory: MemoryRecord


@dataclass(frozen=True, slots=True)
class Learned:
    """What one agent session taught, newest first."""

    session: str
    memories: list[MemoryRecord]
    total: int


@dataclass(frozen=True, slots=True)
class Counts:
    """A project's memories by category and status, with the whole store's total beside them."""

    total: int
    by_category: dict[str, int]
    by_status: dict[str, int]
    store_total: int


@dataclass(frozen=True, slots=True)
class HomePage:
    """Everything the home page lists (see the module doc)."""

    project: str | None
    proposed: Short
    stale: Short
    blockers: Short
    forge: list[RuleChange]
    forge_total: int
    learned: list[Learned]
    counts: Counts


class Home:
    """Reads the home page from the store, with what the code graph says is stale (see the module doc)."""

    def __init__(self, stores: Stores, staleness: Staleness) -> None:
        self._stores = stores
        self._staleness = staleness  # the service's one (``MemoryParts.staleness``)

    def page(self, project: str | None) -> HomePage:
        """What needs a person in ``project`` (with the global memories; None: global only)."""
        visible = self._visible(project)
        proposed = [Flagged(m) for m in visible if m.status is Status.PROPOSED]
        blockers = [
            Flagged(m) for m in visible if m.category is Category.BLOCKER and m.status is Status.ACTIVE
        ]
        current = [m for m in visible if m.status is not Status.PROPOSED]
        flags = (
            self._staleness.flags(current, self._stores.store.about([m.id for m in current]))
            if current
            else {}
        )
        stale = [Flagged(m, flags[m.id]) for m in current if m.id in flags]
        forge, forge_total = self._rule_changes(project)
        return HomePage(
            project=project,
            proposed=_short(proposed),
            stale=_short(stale),
            blockers=_short(blockers),
            forge=forge,
            forge_total=forge_total,
            learned=_by_session(visible),
            counts=self.counts(project),
        )

    def counts(self, project: str | None) -> Counts:
        """``project``'s memories (every status) by category and status, and the store's total;
        for no project, the global memories."""
        names = [project, *sorted(self._stores.aliases(project))]  # its aliases are its own
        mine = [m for name in names for m in self._stores.store.all_memories(name) if m.project == name]
        return Counts(
            total=len(mine),
            by_category=dict(Counter(m.category.value for m in mine).most_common()),
            by_status=dict(Counter(m.status.value for m in mine).most_common()),
            store_total=self._stores.store.total_memories(),
        )

    def _visible(self, project: str | None) -> list[MemoryRecord]:
        visibility = Visibility(project, _VISIBLE, all_branches=True, aliases=self._stores.aliases(project))
        return scan(self._stores.store, visibility, HOME_SCAN_MAX)

    def _rule_changes(self, project: str | None) -> tuple[list[RuleChange], int]:
        """The forge rules' changes of memories seen from ``project``, newest first."""
        events = [e for e in self._stores.store.all_events() if e.actor == RULE_ACTOR]
        aliases = self._stores.aliases(project)
        records = self._stores.store.get_memories({e.memory_id for e in events})
        seen = [
            RuleChange(e, records[e.memory_id])
            for e in reversed(events)
            if e.memory_id in records and records[e.memory_id].project in {project, None, *aliases}
        ]
        return seen[:SHOWN], len(seen)


def _short(items: list[Flagged]) -> Short:
    return Short(items[:SHOWN], len(items))


def _by_session(memories: Iterable[MemoryRecord]) -> list[Learned]:
    """The memories of the last sessions (by their newest memory), each session's newest first."""
    sessions: dict[str, list[MemoryRecord]] = {}
    for memory in memories:  # newest first already
        if memory.session and memory.status is not Status.PROPOSED:
            sessions.setdefault(memory.session, []).append(memory)
    last = sorted(sessions.items(), key=lambda pair: pair[1][0].created_at, reverse=True)[:LAST_SESSIONS]
    return [Learned(session, found[:SHOWN], len(found)) for session, found in last]
