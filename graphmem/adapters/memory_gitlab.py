"""An in-memory :class:`graphmem.core.ports.GitLabGraph` beside a ``FakeGraphStore``.

MRs, issues, epics and people are the store's entities (memories are about them, and a
ref seen in a memory creates one); what enrichment adds (queue state, GitLab's facts)
and the edges between them this graph keeps itself. It follows the Kùzu GitLab graph's
rules (``kuzu_gitlab.py``, ``kuzu_gitlab_reads.py``), checked by
``tests/unit/adapters/test_gitlab_graph_contract.py``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from graphmem.adapters.fake_store import FakeGraphStore
from graphmem.core import keys
from graphmem.core.enrichment import MAX_HOPS, EnrichmentRow, EnrichState, GitLabTarget, parse_key, target_key
from graphmem.core.gitlab import EpicData, IssueData, IssueRefData, MergeRequestData, Person
from graphmem.core.models import Entity, EntityKind, Step

KINDS = (EntityKind.MERGE_REQUEST, EntityKind.ISSUE, EntityKind.EPIC)
# States fetched again once their next attempt has come.
_REFETCHED = frozenset({EnrichState.OK, EnrichState.ERROR, EnrichState.MISSING, EnrichState.FORBIDDEN})
_PEOPLE_RELS = ("AUTHORED", "ASSIGNED", "REVIEWS")
# The few and telling before the many in ``related_edges``: issues and epics, files, symbols.
_RANK = {EntityKind.FILE: 1, EntityKind.SYMBOL: 2}
_EARLIEST = datetime.min.replace(tzinfo=UTC)


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def person_key(username: str) -> str:
    return keys.person_key(username=username)  # one person is one node (core/keys.py)


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


class InMemoryGitLabGraph:
    """The GitLab part of the graph, in memory (see the module doc)."""

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
        counts: dict[str, int] = {}
        for row in self.all_rows():
            counts[row.state.value] = counts.get(row.state.value, 0) + 1
        return counts

    def waiting(self) -> int:
        with self._lock:
            rows = self.all_rows()
            return sum(
                1
                for r in rows
                if self._node(r.key).state in (None, EnrichState.PENDING, EnrichState.ERROR)
                or (r.state is EnrichState.LINKED and self._store.is_about(r.kind, r.key))
            )

    def mark(
        self,
        key: str,
        state: EnrichState,
        *,
        error: str | None,
        attempts: int,
        next_attempt: datetime | None,
        fetched_at: datetime | None = None,
    ) -> None:
        with self._lock:
            if not self._exists(key):
                return
            node = self._node(key)
            node.state, node.error, node.attempts, node.next_attempt = (
                state,
                error,
                attempts,
                _utc(next_attempt),
            )
            if fetched_at is not None:
                node.fetched_at = _utc(fetched_at)

    # -- saving what GitLab said ----------------------------------------------------

    def save_merge_request(
        self,
        key: str,
        data: MergeRequestData,
        *,
        local: tuple[str, str] | None,
        hops: int,
        fetched_at: datetime,
        next_attempt: datetime,
        file_keys: Sequence[tuple[str, str]],
        symbol_keys: Sequence[str],
    ) -> None:
        with self._lock:
            if not self._save_node(key, data, fetched_at, next_attempt, merged_at=data.merged_at):
                return
            self._drop(("CHANGES", "CLOSES"), source=key)
            self._replace_people(key, data.author, data.assignees, data.reviewers)
            file_project = local[1] if local is not None and local[0] == data.project else None
            known = self._store.get_entities([k for k, _ in file_keys])
            for file_key, path in file_keys:
                if file_key not in known:
                    self._store.put_entity(Entity(file_key, EntityKind.FILE, path, file_project))
            self._link("CHANGES", key, [k for k, _ in file_keys])
            self._link("CHANGES", key, [k for k in symbol_keys if k.startswith("Symbol:")])
            issues = self._discover(
                EntityKind.ISSUE,
                [
                    (target_key(EntityKind.ISSUE, i.project, i.iid), f"{i.project}#{i.iid}", i.title, i.state)
                    for i in data.closes
                ],
                local,
                hops + 1,
            )
            self._link("CLOSES", key, issues)

    def save_issue(
        self,
        key: str,
        data: IssueData,
        *,
        local: tuple[str, str] | None,
        hops: int,
        fetched_at: datetime,
        next_attempt: datetime,
    ) -> None:
        with self._lock:
            if not self._save_node(key, data, fetched_at, next_attempt):
                return
            self._drop(("PART_OF", "RELATED_MR"), source=key)
            self._replace_people(key, data.author, data.assignees, ())
            epics = self._discover_targets(EntityKind.EPIC, [data.epic] if data.epic else [], None, hops + 1)
            self._link("PART_OF", key, epics)
            related = self._discover_targets(
                EntityKind.MERGE_REQUEST, data.related_merge_requests, local, hops + 1
            )
            self._link("RELATED_MR", key, related)

    def save_epic(
        self, key: str, data: EpicData, *, hops: int, fetched_at: datetime, next_attempt: datetime
    ) -> None:
        with self._lock:
            if not self._save_node(key, data, fetched_at, next_attempt):
                return
            self._drop(("PART_OF",), source=key)
            self._drop(("PART_OF",), target=key)
            parents = self._discover_targets(
                EntityKind.EPIC, [data.parent] if data.parent else [], None, hops + 1
            )
            self._link("PART_OF", key, parents)
            issues = self._discover(
                EntityKind.ISSUE,
                [
                    (target_key(EntityKind.ISSUE, i.project, i.iid), f"{i.project}#{i.iid}", i.title, i.state)
                    for i in data.child_issues
                ],
                None,
                hops + 1,
            )
            children = self._discover_targets(EntityKind.EPIC, data.child_epics, None, hops + 1)
            for child in [*issues, *children]:
                self._link("PART_OF", child, [key])

    def _save_node(
        self,
        key: str,
        data: MergeRequestData | IssueData | EpicData,
        fetched_at: datetime,
        next_attempt: datetime,
        merged_at: datetime | None = None,
    ) -> bool:
        entity = self._store.get_entities([key]).get(key)
        if entity is None or entity.kind not in KINDS:
            return False
        self._store.put_entity(replace(entity, title=data.title))
        node = self._node(key)
        node.state, node.error, node.attempts = EnrichState.OK, None, 0
        node.fetched_at, node.next_attempt, node.data = _utc(fetched_at), _utc(next_attempt), data
        node.facts = {"state": data.state, "updated_at": _utc(data.updated_at), "merged_at": _utc(merged_at)}
        return True

    def _replace_people(
        self, key: str, author: Person | None, assignees: Sequence[Person], reviewers: Sequence[Person]
    ) -> None:
        self._drop(_PEOPLE_RELS, target=key)
        groups = {
            "AUTHORED": [author] if author else [],
            "ASSIGNED": list(assignees),
            "REVIEWS": list(reviewers),
        }
        for rel, people in groups.items():
            for person in people:
                if not person.username:
                    continue
                pkey = person_key(person.username)
                self._people[pkey] = person
                self._store.put_entity(Entity(pkey, EntityKind.PERSON, person.username, None, person.name))
                self._link(rel, pkey, [key])

    def _discover_targets(
        self,
        kind: EntityKind,
        targets: Sequence[tuple[str, int]],
        local: tuple[str, str] | None,
        hops: int,
    ) -> list[str]:
        found = [GitLabTarget(kind, namespace, iid) for namespace, iid in targets]
        return self._discover(kind, [(t.key, t.name, "", "") for t in found], local, hops)

    def _discover(
        self,
        kind: EntityKind,
        found: Sequence[tuple[str, str, str, str]],
        local: tuple[str, str] | None,
        hops: int,
    ) -> list[str]:
        """Nodes for entities found through another: queued when near enough, else linked.

        An existing node keeps what it has (an empty title takes the new one); a ``linked``
        one near enough becomes pending.
        """
        queued = hops <= MAX_HOPS
        known = self._store.get_entities([k for k, *_ in found])
        for key, name, title, state in found:
            entity = known.get(key)
            if entity is None:
                entity = Entity(key, kind, name, _project_of(key, local), title)
                self._store.put_entity(entity)
                known[key] = entity
                self._nodes[key] = _Node(
                    state=EnrichState.PENDING if queued else EnrichState.LINKED,
                    hops=hops,
                    facts={"state": state},
                )
                continue
            if not entity.title:
                self._store.put_entity(replace(entity, title=title))
            node = self._node(key)
            if node.state is EnrichState.LINKED and queued:
                node.state = EnrichState.PENDING
        return [key for key, *_ in found]

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
        with self._lock:
            data = self._saved(key)
            if not isinstance(data, MergeRequestData):
                return None
            people, target = self._people_of(key), parse_key(key)
            assert target is not None  # _saved checked it
            return replace(
                data,
                project=target.namespace,
                iid=target.iid,
                title=self._title(key),
                author=next(iter(people["AUTHORED"]), None),
                assignees=tuple(people["ASSIGNED"]),
                reviewers=tuple(people["REVIEWS"]),
                closes=self._issue_refs(self._targets("CLOSES", source=key)),
                changed_files_total_exact=True,  # not stored, as in Kùzu
            )

    def issue(self, key: str) -> IssueData | None:
        with self._lock:
            data = self._saved(key)
            if not isinstance(data, IssueData):
                return None
            people, target = self._people_of(key), parse_key(key)
            assert target is not None
            epics = self._pairs(self._targets("PART_OF", source=key, kind=EntityKind.EPIC))
            return replace(
                data,
                project=target.namespace,
                iid=target.iid,
                title=self._title(key),
                author=next(iter(people["AUTHORED"]), None),
                assignees=tuple(people["ASSIGNED"]),
                epic=epics[0] if epics else None,
                related_merge_requests=tuple(self._pairs(self._targets("RELATED_MR", source=key))),
            )

    def epic(self, key: str) -> EpicData | None:
        with self._lock:
            data = self._saved(key)
            if not isinstance(data, EpicData):
                return None
            parents = self._pairs(self._targets("PART_OF", source=key, kind=EntityKind.EPIC))
            children, target = self._targets("PART_OF", target=key), parse_key(key)
            assert target is not None
            return replace(
                data,
                group=target.namespace,
                iid=target.iid,
                title=self._title(key),
                author=Person(data.author.username) if data.author and data.author.username else None,
                parent=parents[0] if parents else None,
                child_issues=self._issue_refs([k for k in children if k.startswith("Issue:")]),
                child_epics=tuple(self._pairs([k for k in children if k.startswith("Epic:")])),
            )

    def merge_requests_closing(self, issue_key: str) -> list[Entity]:
        with self._lock:
            closing = self._targets("CLOSES", target=issue_key)
            return sorted(self._store.get_entities(closing).values(), key=lambda e: e.key)

    def changed_by(self, file_key: str, limit: int) -> list[tuple[Entity, str, datetime | None]]:
        with self._lock:
            found = self._latest_first(self._targets("CHANGES", target=file_key))[: max(limit, 0)]
            entities = self._store.get_entities(found)
            return [
                (entities[k], self._node(k).facts.get("state") or "", self._node(k).facts.get("merged_at"))
                for k in found
            ]

    def changed_symbols(self, mr_key: str) -> list[str]:
        with self._lock:
            return sorted(k for k in self._targets("CHANGES", source=mr_key) if k.startswith("Symbol:"))

    def related_edges(self, keys: Collection[str], limit: int) -> list[Step]:
        with self._lock:
            if not any(node.data is not None for node in self._nodes.values()):
                return []
            asked = set(keys)
            found: dict[str, tuple[int, Step]] = {}

            def add(steps: Sequence[Step]) -> None:
                for step in steps[: max(limit, 0)]:
                    if step.end not in asked and step.end not in found:
                        found[step.end] = (_rank(step.end), step)

            def edges(rel: str, label: str, *, forward: bool, to: str = "") -> list[Step]:
                pairs = self._edges.get(rel, {})
                walked = [
                    Step(a if forward else b, rel, b if forward else a, forward)
                    for a, b in pairs
                    if (a if forward else b) in asked
                    and (a if forward else b).startswith(f"{label}:")
                    and (b if forward else a).startswith(to)
                ]
                return walked

            mrs = edges("CLOSES", "MergeRequest", forward=True) + edges(
                "CHANGES", "MergeRequest", forward=True
            )
            add(sorted(mrs, key=lambda s: (_rank(s.end), s.end, s.start)))
            add(sorted(edges("PART_OF", "Issue", forward=True), key=lambda s: (s.end, s.start)))
            add(sorted(edges("CLOSES", "Issue", forward=False), key=lambda s: (s.end, s.start)))
            add(sorted(edges("PART_OF", "Epic", forward=True), key=lambda s: (s.end, s.start)))
            add(
                sorted(
                    edges("PART_OF", "Epic", forward=False),
                    key=lambda s: (not s.end.startswith("Issue:"), s.end, s.start),
                )
            )
            for label in ("File", "Symbol"):
                changing = edges("CHANGES", label, forward=False)
                order = {key: n for n, key in enumerate(self._latest_first({s.end for s in changing}))}
                add(sorted(changing, key=lambda s: (order[s.end], s.start)))
            ordered = sorted(found.values(), key=lambda pair: pair[0])
            return [step for _, step in ordered][: max(limit, 0)]

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

    def _saved(self, key: str) -> MergeRequestData | IssueData | EpicData | None:
        return self._node(key).data if self._exists(key) and parse_key(key) is not None else None

    def _title(self, key: str) -> str:
        entity = self._store.get_entities([key]).get(key)
        return entity.title if entity is not None else ""

    def _targets(
        self,
        rel: str,
        *,
        source: str | None = None,
        target: str | None = None,
        kind: EntityKind | None = None,
    ) -> list[str]:
        pairs = self._edges.get(rel, {})
        found = (
            [b for a, b in pairs if a == source]
            if source is not None
            else [a for a, b in pairs if b == target]
        )
        existing = self._store.get_entities(found)
        return sorted(k for k in set(found) if k in existing and (kind is None or existing[k].kind is kind))

    def _pairs(self, keys: Sequence[str]) -> list[tuple[str, int]]:
        return [(t.namespace, t.iid) for k in keys if (t := parse_key(k)) is not None]

    def _issue_refs(self, keys: Sequence[str]) -> tuple[IssueRefData, ...]:
        return tuple(
            IssueRefData(t.namespace, t.iid, self._title(k), self._node(k).facts.get("state") or "")
            for k in keys
            if (t := parse_key(k)) is not None
        )

    def _people_of(self, key: str) -> dict[str, list[Person]]:
        return {
            rel: sorted(
                (self._people[a] for a, b in self._edges.get(rel, {}) if b == key and a in self._people),
                key=lambda p: p.username,
            )
            for rel in _PEOPLE_RELS
        }

    def _latest_first(self, keys: Collection[str]) -> list[str]:
        """MR keys by merged_at, then updated_at, newest first (never merged last), then key."""

        def stamp(key: str, fact: str) -> float:
            value = self._node(key).facts.get(fact)
            return -value.timestamp() if isinstance(value, datetime) else float("inf")

        return sorted(keys, key=lambda k: (stamp(k, "merged_at"), stamp(k, "updated_at"), k))


def _rank(key: str) -> int:
    label = key.split(":", 1)[0]
    return next((rank for kind, rank in _RANK.items() if kind.value == label), 0)


def _project_of(key: str, local: tuple[str, str] | None) -> str | None:
    """The local project root of an MR or issue key whose GitLab project is ``local``'s."""
    target = parse_key(key)
    if local is None or target is None or target.kind is EntityKind.EPIC:
        return None
    path, root = local
    return root if target.namespace == path else None
