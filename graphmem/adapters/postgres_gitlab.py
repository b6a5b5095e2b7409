"""The GitLab graph (``core.ports.GitLabGraph``) in a team's PostgreSQL store: MRs, issues, epics
and people enriched once for the whole team.

MRs, issues, epics and people are rows of ``entities`` (memories are about them; a ref seen in
a memory creates one). What enrichment adds is in ``gitlab_nodes`` (the queue's state, and
GitLab's answer as JSON with the facts recall sorts by), people in ``gitlab_people``, and the
edges (AUTHORED, ASSIGNED, REVIEWS, CHANGES, CLOSES, PART_OF, RELATED_MR) in ``gitlab_edges``;
all go with their entity (foreign keys). The rules are the other GitLab graphs'
(``kuzu_gitlab.py``, ``memory_gitlab.py``), held by
``tests/unit/adapters/test_gitlab_graph_contract.py``; the reads are in
``postgres_gitlab_reads.py``. Each save is one transaction.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from pydantic import TypeAdapter

from graphmem.adapters.postgres_gitlab_reads import PEOPLE_RELS, PostgresGitLabReads
from graphmem.adapters.postgres_rows import utc
from graphmem.adapters.postgres_store import PostgresGraphStore
from graphmem.core import keys
from graphmem.core.enrichment import MAX_HOPS, EnrichmentRow, EnrichState, GitLabTarget, parse_key, target_key
from graphmem.core.gitlab import EpicData, IssueData, MergeRequestData, Person
from graphmem.core.models import Entity, EntityKind

KINDS = (EntityKind.MERGE_REQUEST, EntityKind.ISSUE, EntityKind.EPIC)
_KIND_VALUES = [k.value for k in KINDS]
# States fetched again once their next attempt has come.
_REFETCHED = [
    s.value for s in (EnrichState.OK, EnrichState.ERROR, EnrichState.MISSING, EnrichState.FORBIDDEN)
]
DATA: dict[EntityKind, TypeAdapter[Any]] = {
    EntityKind.MERGE_REQUEST: TypeAdapter(MergeRequestData),
    EntityKind.ISSUE: TypeAdapter(IssueData),
    EntityKind.EPIC: TypeAdapter(EpicData),
}
NODE = "n.state, n.error, n.attempts, n.fetched_at, n.next_attempt, n.hops, n.updated_at"
# Whether a row is due (besides its time): never fetched, pending, fetched before, or linked
# while a memory is about it.
DUE = (
    "(n.state IS NULL OR n.state = 'pending' OR n.state = ANY(%(refetched)s) "
    "OR (n.state = 'linked' AND EXISTS (SELECT 1 FROM about a WHERE a.entity_key = e.key)))"
)


def _row(row: Sequence[Any]) -> EnrichmentRow:
    key, kind, name, project, state, error, attempts, fetched_at, next_attempt, hops, updated_at = row
    return EnrichmentRow(
        key=key,
        kind=EntityKind(kind),
        name=name or key,
        project=project,
        state=EnrichState(state) if state else EnrichState.PENDING,
        attempts=int(attempts or 0),
        fetched_at=utc(fetched_at),
        next_attempt=utc(next_attempt),
        updated_at=utc(updated_at),
        error=error,
        hops=int(hops or 0),
    )


class PostgresGitLabGraph(PostgresGitLabReads):
    """The GitLab part of the PostgreSQL store (see the module doc)."""

    def __init__(self, store: PostgresGraphStore) -> None:
        self._store = store

    # -- the queue ------------------------------------------------------------------

    def _rows(self, where: str, params: dict[str, Any], tail: str = "") -> list[EnrichmentRow]:
        rows = self._store._rows(
            f"SELECT e.key, e.kind, e.name, e.project, {NODE} FROM entities e "
            f"LEFT JOIN gitlab_nodes n ON n.key = e.key WHERE e.kind = ANY(%(kinds)s) AND {where} {tail}",
            {"kinds": _KIND_VALUES, "refetched": _REFETCHED, **params},
        )
        return [_row(r) for r in rows]

    def rows(self, keys: Collection[str]) -> dict[str, EnrichmentRow]:
        if not keys:
            return {}
        return {r.key: r for r in self._rows("e.key = ANY(%(keys)s)", {"keys": list(keys)})}

    def all_rows(self) -> list[EnrichmentRow]:
        return self._rows("true", {}, "ORDER BY array_position(%(kinds)s, e.kind), e.key")

    def due(self, now: datetime, limit: int) -> list[EnrichmentRow]:
        if limit <= 0:
            return []
        found: list[EnrichmentRow] = []
        for kind in KINDS:
            found += self._rows(
                f"e.kind = %(kind)s AND {DUE} AND (n.next_attempt IS NULL OR n.next_attempt <= %(now)s)",
                {"kind": kind.value, "now": utc(now), "limit": limit},
                "ORDER BY n.state IS NOT NULL, coalesce(n.next_attempt, '-infinity'), e.key LIMIT %(limit)s",
            )
        never = [r for r in found if r.fetched_at is None]
        return (never + [r for r in found if r.fetched_at is not None])[:limit]

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for row in self.all_rows():
            counts[row.state.value] = counts.get(row.state.value, 0) + 1
        return counts

    def waiting(self) -> int:
        rows = self._store._rows(
            "SELECT count(*) FROM entities e LEFT JOIN gitlab_nodes n ON n.key = e.key "
            "WHERE e.kind = ANY(%(kinds)s) AND (n.state IS NULL OR n.state IN ('pending', 'error') "
            "OR (n.state = 'linked' AND EXISTS (SELECT 1 FROM about a WHERE a.entity_key = e.key)))",
            {"kinds": _KIND_VALUES},
        )
        return int(rows[0][0])

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
        self._store._run(
            "INSERT INTO gitlab_nodes (key, state, error, attempts, next_attempt, fetched_at) "
            "SELECT key, %(state)s, %(error)s, %(attempts)s, %(next)s, %(fetched)s FROM entities "
            "WHERE key = %(key)s ON CONFLICT (key) DO UPDATE SET state = EXCLUDED.state, "
            "error = EXCLUDED.error, attempts = EXCLUDED.attempts, next_attempt = EXCLUDED.next_attempt, "
            "fetched_at = coalesce(EXCLUDED.fetched_at, gitlab_nodes.fetched_at)",
            {
                "key": key,
                "state": state.value,
                "error": error,
                "attempts": attempts,
                "next": utc(next_attempt),
                "fetched": utc(fetched_at),
            },
        )

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
        with self._store.transaction():
            if not self._save_node(key, data, fetched_at, next_attempt, merged_at=data.merged_at):
                return
            self._drop(("CHANGES", "CLOSES"), source=key)
            self._replace_people(key, data.author, data.assignees, data.reviewers)
            file_project = local[1] if local is not None and local[0] == data.project else None
            self._store._many(
                "INSERT INTO entities (key, kind, name, project, title) "
                "VALUES (%(k)s, 'File', %(n)s, %(p)s, '') "
                "ON CONFLICT (key) DO NOTHING",
                [{"k": k, "n": path, "p": file_project} for k, path in file_keys],
            )
            self._link("CHANGES", key, [k for k, _ in file_keys])
            self._link("CHANGES", key, [k for k in symbol_keys if k.startswith("Symbol:")])
            closes = [
                (target_key(EntityKind.ISSUE, i.project, i.iid), f"{i.project}#{i.iid}", i.title, i.state)
                for i in data.closes
            ]
            self._link("CLOSES", key, self._discover(EntityKind.ISSUE, closes, local, hops + 1))

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
        with self._store.transaction():
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
        with self._store.transaction():
            if not self._save_node(key, data, fetched_at, next_attempt):
                return
            self._drop(("PART_OF",), source=key)
            self._drop(("PART_OF",), target=key)
            parents = self._discover_targets(
                EntityKind.EPIC, [data.parent] if data.parent else [], None, hops + 1
            )
            self._link("PART_OF", key, parents)
            children = [
                (target_key(EntityKind.ISSUE, i.project, i.iid), f"{i.project}#{i.iid}", i.title, i.state)
                for i in data.child_issues
            ]
            issues = self._discover(EntityKind.ISSUE, children, None, hops + 1)
            epics = self._discover_targets(EntityKind.EPIC, data.child_epics, None, hops + 1)
            for child in [*issues, *epics]:
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
        self._store._run("UPDATE entities SET title = %s WHERE key = %s", (data.title, key))
        self._store._run(
            "INSERT INTO gitlab_nodes (key, state, error, attempts, fetched_at, next_attempt, data, "
            "gl_state, "
            "updated_at, merged_at) VALUES (%(key)s, 'ok', NULL, 0, %(fetched)s, %(next)s, %(data)s::jsonb, "
            "%(gl_state)s, %(updated)s, %(merged)s) "
            "ON CONFLICT (key) DO UPDATE SET state = 'ok', error = NULL, "
            "attempts = 0, fetched_at = EXCLUDED.fetched_at, next_attempt = EXCLUDED.next_attempt, "
            "data = EXCLUDED.data, gl_state = EXCLUDED.gl_state, updated_at = EXCLUDED.updated_at, "
            "merged_at = EXCLUDED.merged_at",
            {
                "key": key,
                "fetched": utc(fetched_at),
                "next": utc(next_attempt),
                "data": DATA[entity.kind].dump_json(data).decode(),
                "gl_state": data.state,
                "updated": utc(data.updated_at),
                "merged": utc(merged_at),
            },
        )
        return True

    def _replace_people(
        self, key: str, author: Person | None, assignees: Sequence[Person], reviewers: Sequence[Person]
    ) -> None:
        self._drop(PEOPLE_RELS, target=key)
        groups = {
            "AUTHORED": [author] if author else [],
            "ASSIGNED": list(assignees),
            "REVIEWS": list(reviewers),
        }
        for rel, people in groups.items():
            for person in people:
                if not person.username:
                    continue
                pkey = keys.person_key(username=person.username)
                self._store._run(
                    "INSERT INTO entities (key, kind, name, project, title) "
                    "VALUES (%s, 'Person', %s, NULL, %s) "
                    "ON CONFLICT (key) DO UPDATE SET name = EXCLUDED.name, title = EXCLUDED.title",
                    (pkey, person.username, person.name),
                )
                self._store._run(
                    "INSERT INTO gitlab_people (key, username, name, web_url) VALUES (%s, %s, %s, %s) "
                    "ON CONFLICT (key) DO UPDATE SET username = EXCLUDED.username, name = EXCLUDED.name, "
                    "web_url = EXCLUDED.web_url",
                    (pkey, person.username, person.name, person.web_url),
                )
                self._link(rel, pkey, [key])

    def _discover_targets(
        self, kind: EntityKind, targets: Sequence[tuple[str, int]], local: tuple[str, str] | None, hops: int
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
        An existing node keeps what it has (an empty title takes the new one); a ``linked`` one
        near enough becomes pending."""
        queued = hops <= MAX_HOPS
        known = self._store.get_entities([k for k, *_ in found])
        for key, name, title, state in found:
            if key not in known:
                self._store._run(
                    "INSERT INTO entities (key, kind, name, project, title) VALUES (%s, %s, %s, %s, %s) "
                    "ON CONFLICT (key) DO NOTHING",
                    (key, kind.value, name, _project_of(key, local), title),
                )
                self._store._run(
                    "INSERT INTO gitlab_nodes (key, state, hops, gl_state) VALUES (%s, %s, %s, %s) "
                    "ON CONFLICT (key) DO NOTHING",
                    (key, (EnrichState.PENDING if queued else EnrichState.LINKED).value, hops, state),
                )
                known[key] = Entity(key, kind, name)
                continue
            self._store._run("UPDATE entities SET title = %s WHERE key = %s AND title = ''", (title, key))
            if queued:
                self._store._run(
                    "UPDATE gitlab_nodes SET state = 'pending' WHERE key = %s AND state = 'linked'", (key,)
                )
        return [key for key, *_ in found]

    def _link(self, rel: str, source: str, targets: Sequence[str]) -> None:
        self._store._many(
            "INSERT INTO gitlab_edges (rel, source, target) "
            "SELECT %(rel)s, a.key, b.key FROM entities a, entities b "
            "WHERE a.key = %(s)s AND b.key = %(t)s ON CONFLICT DO NOTHING",
            [{"rel": rel, "s": source, "t": t} for t in dict.fromkeys(targets)],
        )

    def _drop(self, rels: Sequence[str], *, source: str | None = None, target: str | None = None) -> None:
        end, key = ("source", source) if source is not None else ("target", target)
        self._store._run(f"DELETE FROM gitlab_edges WHERE rel = ANY(%s) AND {end} = %s", (list(rels), key))


def _project_of(key: str, local: tuple[str, str] | None) -> str | None:
    """The local project root of an MR or issue key whose GitLab project is ``local``'s."""
    target = parse_key(key)
    if local is None or target is None or target.kind is EntityKind.EPIC:
        return None
    path, root = local
    return root if target.namespace == path else None
