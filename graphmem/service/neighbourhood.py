"""The neighbourhood of one node of the graph, for ``graphmem ui``'s graph view.

A node is a memory (its id) or an entity (its key: ``MergeRequest:…``, ``File:…``,
``Symbol:…``...). Its neighbours are one edge away: a memory's entities (``ABOUT``) and the
memories it links to (``RELATES`` by kind); an entity's memories, its GitLab edges (an MR's
files, symbols and closed issues, an issue's epic, the MRs that changed a file) and its code
edges (a file's symbols, a symbol's callers and callees). Each kind of edge is capped
(``EDGE_LIMIT``) so a hub stays readable; ``more`` says how many were left out, and the view
asks again around a neighbour to go one hop further. An entity's memories are ranked as
``get_context`` ranks them before the cap: what people and agents remembered before the commits.
It only reads, from the service's ``Stores``, and draws each entity as a reader is shown it
(``Stores.shown``): what GitLab may have said of a GitHub checkout's ref is another project's
(``Stores.another_projects``), its title and its GitLab edges are not drawn.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from graphmem.core.codegraph import SymbolInfo
from graphmem.core.models import CURRENT_STATUSES, Entity, EntityKind, MemoryRecord
from graphmem.core.ports import Visibility
from graphmem.errors import InvalidInputError, NotFoundError
from graphmem.service.linked_memories import DERIVED_SOURCES, ranked, read_linked
from graphmem.service.stores import Stores

# Neighbours of one kind of edge shown around a node: enough to see a file's MRs or an MR's
# files, few enough that a 3,000-file MR still draws. The rest are counted in ``more``.
EDGE_LIMIT = 24
MAX_LIMIT = 100
MAX_KEY_CHARS = 1000
MEMORY_PREFIX = "mem_"
MEMORY = "Memory"
LABEL_CHARS = 80


@dataclass(frozen=True, slots=True)
class GraphNode:
    """A memory or an entity as the view draws it."""

    key: str
    kind: str  # "Memory", or the entity's kind ("MergeRequest", "File"...)
    label: str  # the entity's name, or the memory's text cut to LABEL_CHARS
    title: str = ""  # the entity's title, or the memory's category
    status: str = ""  # a memory's status


@dataclass(frozen=True, slots=True)
class GraphEdge:
    """One stored edge, in its own direction."""

    source: str
    relation: str  # ABOUT, CHANGES, CLOSES, PART_OF, CONTAINS, CALLS, or a RELATES kind
    target: str


@dataclass(frozen=True, slots=True)
class Neighbourhood:
    """A node, its neighbours and the edges between them; ``more``: neighbours left out."""

    center: GraphNode
    nodes: list[GraphNode] = field(default_factory=list)
    edges: list[GraphEdge] = field(default_factory=list)
    more: int = 0


def memory_node(memory: MemoryRecord) -> GraphNode:
    text = " ".join(memory.text.split())
    label = text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"
    return GraphNode(memory.id, MEMORY, label, memory.category.value, memory.status.value)


def entity_node(entity: Entity) -> GraphNode:
    return GraphNode(entity.key, entity.kind.value, entity.name, entity.title)


def _symbol_node(symbol: SymbolInfo) -> GraphNode:
    return GraphNode(symbol.key, EntityKind.SYMBOL.value, symbol.qualified_name, symbol.kind)


class NeighbourhoodReader:
    """Reads the neighbourhood of a node from the store, the code graph and the GitLab graph."""

    def __init__(self, stores: Stores) -> None:
        self._stores = stores
        self._store = stores.store
        self._code = stores.code
        self._gitlab = stores.gitlab

    def around(self, key: str, *, limit: int = EDGE_LIMIT) -> Neighbourhood:
        """The neighbourhood of ``key`` (a memory id or an entity key), ``limit`` per kind of edge."""
        if not isinstance(key, str) or not key.strip() or len(key) > MAX_KEY_CHARS or "\x00" in key:
            raise InvalidInputError(
                f"A node is a memory id (mem_…) or an entity key (File:…, MergeRequest:…) of at most "
                f"{MAX_KEY_CHARS} characters."
            )
        if not 1 <= limit <= MAX_LIMIT:
            raise InvalidInputError(f"limit must be between 1 and {MAX_LIMIT}.")
        key = key.strip()
        if key.startswith(MEMORY_PREFIX):
            return self._around_memory(key, limit)
        return self._around_entity(key, limit)

    def _around_memory(self, memory_id: str, limit: int) -> Neighbourhood:
        memory = self._store.get_memories([memory_id]).get(memory_id)
        if memory is None:
            raise NotFoundError(f"No memory {memory_id}: list them with `graphmem list`.")
        built = _Builder(memory_node(memory), limit)
        entities = self._store.about([memory_id]).get(memory_id, [])
        built.add([(self._node(e), GraphEdge(memory_id, "ABOUT", e.key)) for e in entities])
        links = self._store.links([memory_id])
        others = {link.target if link.source == memory_id else link.source for link in links}
        found = self._store.get_memories(others)
        built.add(
            [
                (memory_node(found[other]), GraphEdge(link.source, link.kind.value, link.target))
                for link in links
                if (other := link.target if link.source == memory_id else link.source) in found
            ]
        )
        return built.done()

    def _around_entity(self, key: str, limit: int) -> Neighbourhood:
        entity = self._entity(key)
        if entity is None:
            raise NotFoundError(
                f"No entity {key[:200]!r} in the graph: open a memory, or ask for an MR (!12), issue "
                "(#4) or file the memories name."
            )
        built = _Builder(self._node(entity), limit)
        current, hidden = self._memories_about(key, limit)
        built.add([(memory_node(m), GraphEdge(m.id, "ABOUT", key)) for m in current], hidden=hidden)
        if self._gitlab is not None and not self._theirs(entity):
            steps = self._gitlab.related_edges([key], limit * 8)
            ends = self._entities(step.end for step in steps)
            by_relation: dict[str, list[tuple[GraphNode, GraphEdge]]] = {}
            for step in steps:
                if step.end not in ends or self._theirs(ends[step.end]):
                    continue
                edge = (
                    GraphEdge(step.start, step.relation, step.end)
                    if step.forward
                    else GraphEdge(step.end, step.relation, step.start)
                )
                by_relation.setdefault(f"{step.relation}:{step.forward}", []).append(
                    (self._node(ends[step.end]), edge)
                )
            for pairs in by_relation.values():
                built.add(pairs)
        if self._code is not None:
            self._add_code(built, entity)
        return built.done()

    def _memories_about(self, key: str, limit: int) -> tuple[list[MemoryRecord], int]:
        """The current memories about ``key``, best first (``linked_memories.ranked``), and how
        many others were not read: of a hub, only the ones the store lists first are
        (``read_linked``), so that a decision stored after 10,000 commits is still drawn."""
        ids = self._store.memories_about([key]).get(key, [])
        projects = sorted(self._store.projects())  # a person's commits are of every project
        visibility = Visibility(
            projects[0] if projects else None,
            CURRENT_STATUSES,
            all_branches=True,
            aliases=frozenset(projects[1:]),
        )
        read = read_linked(self._store, ids, visibility, wanted=limit)
        derived = [r.id for r in read.records if r.source.startswith(DERIVED_SOURCES)]
        about = self._store.about(derived) if derived else {}
        return ranked([r for r in read.records if r.is_current], about), read.unread

    def _add_code(self, built: _Builder, entity: Entity) -> None:
        assert self._code is not None
        if entity.kind is EntityKind.FILE and entity.project:
            symbols = self._code.symbols_in(entity.project, entity.name)
            live = [s for s in symbols if s.deleted_at is None]
            built.add([(_symbol_node(s), GraphEdge(entity.key, "CONTAINS", s.key)) for s in live])
        elif entity.kind is EntityKind.SYMBOL:
            for incoming in (True, False):
                calls = self._code.calls([entity.key], incoming=incoming, limit=built.limit * 2)
                built.add(
                    [
                        (
                            _symbol_node(other),
                            GraphEdge(other.key, "CALLS", entity.key)
                            if incoming
                            else GraphEdge(entity.key, "CALLS", other.key),
                        )
                        for other, _, _ in calls
                    ]
                )

    def _node(self, entity: Entity) -> GraphNode:
        """``entity`` as drawn: as a reader in no project is shown it (``Stores.shown``)."""
        return entity_node(self._stores.shown(entity, None))

    def _theirs(self, entity: Entity) -> bool:
        """Whether what GitLab said of ``entity`` is another project's (``Stores.another_projects``):
        its GitLab edges are not drawn."""
        return self._stores.another_projects(entity, None)

    def _entity(self, key: str) -> Entity | None:
        return self._entities([key]).get(key)

    def _entities(self, keys: Iterable[str]) -> dict[str, Entity]:
        wanted = set(keys)
        found = self._store.get_entities(wanted)
        missing = wanted - found.keys()
        if missing and self._gitlab is not None:
            found.update(self._gitlab.entities(missing))
        missing = wanted - found.keys()
        if missing and self._code is not None:
            for symbol in self._code.symbols(missing).values():
                found[symbol.key] = Entity(
                    symbol.key, EntityKind.SYMBOL, symbol.qualified_name, title=symbol.kind
                )
        return found


class _Builder:
    """Collects neighbours, each kind of edge capped at ``limit``, each node once."""

    def __init__(self, center: GraphNode, limit: int) -> None:
        self.center = center
        self.limit = limit
        self._nodes: dict[str, GraphNode] = {}
        self._edges: dict[tuple[str, str, str], GraphEdge] = {}
        self._more = 0

    def add(self, pairs: list[tuple[GraphNode, GraphEdge]], *, hidden: int = 0) -> None:
        fresh = [(n, e) for n, e in pairs if n.key != self.center.key]
        self._more += max(len(fresh) - self.limit, 0) + max(hidden, 0)
        for node, edge in fresh[: self.limit]:
            self._nodes.setdefault(node.key, node)
            self._edges.setdefault((edge.source, edge.relation, edge.target), edge)

    def done(self) -> Neighbourhood:
        return Neighbourhood(self.center, list(self._nodes.values()), list(self._edges.values()), self._more)
