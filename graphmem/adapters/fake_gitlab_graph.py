"""The fake :class:`graphmem.core.gitlab_ports.GitLabGraph`, in memory beside a ``FakeGraphStore``, for tests.

MRs, issues, epics and people are the store's entities (memories are about them, and a
ref seen in a memory creates one); what enrichment adds (queue state, GitLab's answer)
and the edges between them this graph keeps itself. It applies the edits of
``core/gitlab_edits.py`` and reads back through ``core/gitlab_reads.py``, as the
PostgreSQL graph does, showing only the edges whose two ends its store shows
(``seen_edges``); ``tests/unit/adapters/test_gitlab_graph_contract.py`` holds it to
the rules of the Kùzu and PostgreSQL ones.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from graphmem.adapters.fake_store import FakeGraphStore
from graphmem.core import keys
from graphmem.core.enrichment import Attempt, EnrichmentRow, EnrichState, count_states, parse_key
from graphmem.core.gitlab import EpicData, IssueData, IssueRefData, MergeRequestData, Person
from graphmem.core.gitlab_edits import PEOPLE_RELS, EdgeScope, GitLabData, GitLabEdit, NewNode, SavedFacts
from graphmem.core.gitlab_reads import Edge, Stamps, latest_first, read_back, related_steps, seen_edges
from graphmem.core.models import Entity, EntityKind, Step

KINDS = (EntityKind.MERGE_REQUEST, EntityKind.ISSUE, EntityKind.EPIC)
# States fetched again once their next attempt has come.
_REFETCHED = frozenset({EnrichState.OK, EnrichState.ERROR, EnrichState.MISSING, EnrichState.FORBIDDEN})
_EARLIEST = datetime.min.replace(tzinfo=UTC)


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


@dataclass(slots=True)
class _Node:
    """What enrichment knows of an MR, issue or epic beyond its entity."""

    state: EnrichState | None = None  # None: never fetched (pending)
    error: str | None = None
    attempts: int = 0
    fetched_at: datetime | None = None
    next_attempt: datetime | None = None
    hops: int = 0
    data: MergeRequestData | IssueData | EpicData | None = None  # GitLab's facts, once saved
    facts: dict[str, Any] = field(default_factory=dict)  # gitlab state, updated_at, merged_at


class FakeGitLabGraph:
    """The GitLab part of the graph, in memory, for tests (see the module doc)."""

    def __init__(self, store: FakeGraphStore) -> None:
        self._store = store
        self._lock = store.lock
        self._nodes: dict[str, _Node] = {}
        self._people: dict[str, Person] = {}  # person key -> person
        self._edges: dict[str, dict[tuple[str, str], None]] = {}  # rel -> ordered set of (from, to)

    # -- the queue ------------------------------------------------------------------

    def rows(self, keys: Collection[str]) -> dict[str, EnrichmentRow]:
        with self._lock:
            return {e.key: self._row(e) for e in self._store.get_entities(keys).values() if e.kind in KINDS}

    def all_rows(self) -> list[EnrichmentRow]:
        with self._lock:
            return [self._row(e) for kind in KINDS for e in self._of_kind(kind)]

    def due(self, now: datetime, limit: int) -> list[EnrichmentRow]:
        at = _utc(now)
        assert at is not None
        found: list[EnrichmentRow] = []
        with self._lock:
            for kind in KINDS:
                rows = [self._row(e) for e in self._of_kind(kind)]
                rows = [
                    r for r in rows if self._is_due(r) and (r.next_attempt is None or r.next_attempt <= at)
                ]
                rows.sort(
                    key=lambda r: (self._node(r.key).state is not None, r.next_attempt or _EARLIEST, r.key)
                )
                found += rows[: max(limit, 0)]
        never = [r for r in found if r.fetched_at is None]
        return (never + [r for r in found if r.fetched_at is not None])[: max(limit, 0)]

    def _is_due(self, row: EnrichmentRow) -> bool:
        state = self._node(row.key).state
        if state is None or state is EnrichState.PENDING or state in _REFETCHED:
            return True
        return state is EnrichState.LINKED and self._store.is_about(row.kind, row.key)

    def counts(self) -> dict[str, int]:
        return count_states(self.all_rows())

    def waiting(self) -> int:
        with self._lock:
            rows = self.all_rows()
            return sum(
                1
                for r in rows
                if self._node(r.key).state in (None, EnrichState.PENDING, EnrichState.ERROR)
                or (r.state is EnrichState.LINKED and self._store.is_about(r.kind, r.key))
            )

    def mark(self, key: str, attempt: Attempt) -> None:
        with self._lock:
            if not self._exists(key):
                return
            node = self._node(key)
            node.state, node.error, node.attempts = attempt.state, attempt.error, attempt.attempts
            node.next_attempt = _utc(attempt.next_attempt)
            if attempt.fetched_at is not None:
                node.fetched_at = _utc(attempt.fetched_at)

    def queue(self, entities: Sequence[Entity]) -> None:
        """The refs a person asks to enrich, stored as any entity (one person's: all theirs)."""
        self._store.upsert_entities(entities)

    # -- storing what GitLab said (core/gitlab_edits.py decided what) -------------------

    def apply(self, edit: GitLabEdit) -> None:
        with self._lock:
            if not self._save_facts(edit.facts):
                return
            for scope in edit.drop:
                self._drop((scope.rel,), **{"target" if scope.into else "source": scope.key})
            for person in edit.people:
                pkey = keys.person_key(username=person.username)
                self._people[pkey] = person
                self._store.put_entity(Entity(pkey, EntityKind.PERSON, person.username, None, person.name))
            known = self._store.get_entities([node.key for node in edit.nodes])
            for new in edit.nodes:
                self._add_node(known.get(new.key), new)
            for edge in edit.edges:
                self._link(edge.rel, edge.source, [edge.target])

    def _save_facts(self, facts: SavedFacts) -> bool:
        entity = self._store.get_entities([facts.key]).get(facts.key)
        if entity is None or entity.kind not in KINDS:
            return False
        data = facts.data
        self._store.put_entity(replace(entity, title=data.title))
        node = self._node(facts.key)
        node.state, node.error, node.attempts = EnrichState.OK, None, 0
        node.fetched_at, node.next_attempt, node.data = _utc(facts.fetched_at), _utc(facts.next_attempt), data
        merged_at = data.merged_at if isinstance(data, MergeRequestData) else None
        node.facts = {"state": data.state, "updated_at": _utc(data.updated_at), "merged_at": _utc(merged_at)}
        return True

    def _add_node(self, entity: Entity | None, new: NewNode) -> None:
        """``new`` created when absent; else its empty title filled, a linked one queued."""
        if entity is None:
            self._store.put_entity(Entity(new.key, new.kind, new.name, new.project, new.title))
            if new.queue is not None:
                self._nodes[new.key] = _Node(state=new.queue, hops=new.hops, facts={"state": new.state})
            return
        if not entity.title and new.title:
            self._store.put_entity(replace(entity, title=new.title))
        node = self._nodes.get(new.key)
        if node is not None and node.state is EnrichState.LINKED and new.queue is EnrichState.PENDING:
            node.state = EnrichState.PENDING

    def _link(self, rel: str, source: str, targets: Sequence[str]) -> None:
        if not self._exists(source):
            return
        known = self._store.get_entities(targets)
        edges = self._edges.setdefault(rel, {})
        for target in dict.fromkeys(targets):
            if target in known:
                edges[(source, target)] = None

    def _drop(self, rels: Sequence[str], *, source: str | None = None, target: str | None = None) -> None:
        for rel in rels:
            edges = self._edges.get(rel, {})
            for pair in [p for p in edges if p[0] == source or p[1] == target]:
                del edges[pair]

    # -- reading ----------------------------------------------------------------------

    def entities(self, keys: Collection[str]) -> dict[str, Entity]:
        with self._lock:
            return {k: e for k, e in self._store.get_entities(keys).items() if e.kind in KINDS}

    def merge_request(self, key: str) -> MergeRequestData | None:
        data = self._read(key)
        return data if isinstance(data, MergeRequestData) else None

    def issue(self, key: str) -> IssueData | None:
        data = self._read(key)
        return data if isinstance(data, IssueData) else None

    def epic(self, key: str) -> EpicData | None:
        data = self._read(key)
        return data if isinstance(data, EpicData) else None

    def merge_requests_closing(self, issue_key: str) -> list[Entity]:
        with self._lock:
            closing = self.targets(EdgeScope("CLOSES", issue_key, into=True))
            return sorted(self._store.get_entities(closing).values(), key=lambda e: e.key)

    def changed_by(self, file_key: str, limit: int) -> list[tuple[Entity, str, datetime | None]]:
        with self._lock:
            changing = self.targets(EdgeScope("CHANGES", file_key, into=True))
            found = latest_first(changing, self._stamps(changing))[: max(limit, 0)]
            entities = self._store.get_entities(found)
            return [
                (entities[k], self._node(k).facts.get("state") or "", self._node(k).facts.get("merged_at"))
                for k in found
            ]

    def changed_symbols(self, mr_key: str) -> list[str]:
        with self._lock:
            return sorted(k for k in self.targets(EdgeScope("CHANGES", mr_key)) if k.startswith("Symbol:"))

    def related_edges(self, keys: Collection[str], limit: int) -> list[Step]:
        with self._lock:
            if not any(node.data is not None for node in self._nodes.values()):
                return []
            asked = set(keys)
            touching = [
                (rel, a, b)
                for rel, pairs in self._edges.items()
                for a, b in pairs
                if a in asked or b in asked
            ]
            return related_steps(self._seen(touching), keys, limit, self._stamps)

    # -- helpers ----------------------------------------------------------------------

    def _of_kind(self, kind: EntityKind) -> list[Entity]:
        return [e for e in self._store.all_entities() if e.kind is kind]

    def _exists(self, key: str) -> bool:
        return bool(self._store.get_entities([key]))

    def _node(self, key: str) -> _Node:
        return self._nodes.setdefault(key, _Node())

    def _row(self, entity: Entity) -> EnrichmentRow:
        node = self._node(entity.key)
        return EnrichmentRow(
            key=entity.key,
            kind=entity.kind,
            name=entity.name or entity.key,
            project=entity.project,
            state=node.state or EnrichState.PENDING,
            attempts=node.attempts,
            fetched_at=node.fetched_at,
            next_attempt=node.next_attempt,
            updated_at=node.facts.get("updated_at"),
            error=node.error,
            hops=node.hops,
        )

    def _read(self, key: str) -> GitLabData | None:
        """GitLab's answer about ``key`` as the graph holds it now; None until GitLab gave one."""
        with self._lock:
            data = self._node(key).data if self._exists(key) else None
            return read_back(data, key, self._title(key), self) if data is not None else None

    def _title(self, key: str) -> str:
        entity = self._store.get_entities([key]).get(key)
        return entity.title if entity is not None else ""

    def _seen(self, edges: Sequence[Edge]) -> list[Edge]:
        """The ``edges`` whose two ends the store shows (``core.gitlab_reads.seen_edges``)."""
        return seen_edges(edges, self._store.get_entities({k for _, a, b in edges for k in (a, b)}))

    def targets(self, scope: EdgeScope, kind: EntityKind | None = None) -> list[str]:
        """The other ends of the edges in ``scope`` (of ``kind``) the store shows, by key (``EdgeRows``)."""
        pairs = self._edges.get(scope.rel, {})
        edges = [(scope.rel, a, b) for a, b in pairs if (b if scope.into else a) == scope.key]
        shown = self._store.get_entities({k for _, a, b in edges for k in (a, b)})
        found = {a if scope.into else b for _, a, b in seen_edges(edges, shown)}
        return sorted(k for k in found if kind is None or shown[k].kind is kind)

    def issue_refs(self, keys: Sequence[str]) -> tuple[IssueRefData, ...]:
        seen = self._store.get_entities(keys)
        return tuple(
            IssueRefData(t.namespace, t.iid, seen[k].title, self._node(k).facts.get("state") or "")
            for k in keys
            if k in seen and (t := parse_key(k)) is not None
        )

    def people_of(self, key: str) -> dict[str, list[Person]]:
        edges = self._seen(
            [(rel, a, b) for rel in PEOPLE_RELS for a, b in self._edges.get(rel, {}) if b == key]
        )
        return {
            rel: sorted(
                (self._people[a] for r, a, _ in edges if r == rel and a in self._people),
                key=lambda p: p.username,
            )
            for rel in PEOPLE_RELS
        }

    def _stamps(self, keys: Collection[str]) -> Stamps:
        """MR key -> (merged_at, updated_at)."""
        return {
            k: (self._node(k).facts.get("merged_at"), self._node(k).facts.get("updated_at")) for k in keys
        }
