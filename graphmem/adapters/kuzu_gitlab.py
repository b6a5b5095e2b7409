"""The GitLab graph (``core.gitlab_ports.GitLabGraph``) in Kùzu: the enrichment queue, and applying
the edits ``core/gitlab_edits.py`` makes of GitLab's answers.

An MR, issue or epic node is created wherever a ref is seen (``upsert_entities``);
enrichment then fills its facts and its queue state (``enrich_state`` NULL means
never fetched). An edit is applied in one locked step, so a failed fetch never leaves half
an entity: GitLab errors happen before any write. The reads are a ``KuzuGitLabReads``
(``kuzu_gitlab_reads.py``) this graph holds.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from graphmem.adapters.kuzu_gitlab_reads import LABELS, KuzuGitLabReads, files_json
from graphmem.adapters.kuzu_rows import aware, naive_utc
from graphmem.adapters.kuzu_store import KuzuGraphStore
from graphmem.core import keys
from graphmem.core.enrichment import Attempt, EnrichmentRow, EnrichState
from graphmem.core.gitlab import EpicData, IssueData, MergeRequestData, Person
from graphmem.core.gitlab_edits import Edge, EdgeScope, GitLabData, GitLabEdit, NewNode, SavedFacts
from graphmem.core.models import Entity, EntityKind, Step

_ROW_FIELDS = (
    "e.key, e.name, e.project, e.enrich_state, e.enrich_attempts, e.fetched_at, e.next_attempt, "
    "e.updated_at, e.enrich_error, e.hops"
)


def _row(kind: EntityKind, row: Sequence[Any]) -> EnrichmentRow:
    state = EnrichState(row[3]) if row[3] else EnrichState.PENDING
    return EnrichmentRow(
        key=row[0],
        kind=kind,
        name=row[1] or row[0],
        project=row[2],
        state=state,
        attempts=int(row[4] or 0),
        fetched_at=aware(row[5]),
        next_attempt=aware(row[6]),
        updated_at=aware(row[7]),
        error=row[8],
        hops=int(row[9] or 0),
    )


class KuzuGitLabGraph:
    """The GitLab part of the graph, over the store's connection: the enrichment queue and
    the writes; the reads are its ``reads``'."""

    def __init__(self, store: KuzuGraphStore) -> None:
        self._store = store
        self.reads = KuzuGitLabReads(store)

    # -- reading (``KuzuGitLabReads``) -------------------------------------------------

    def entities(self, keys: Collection[str]) -> dict[str, Entity]:
        return self.reads.entities(keys)

    def merge_request(self, key: str) -> MergeRequestData | None:
        return self.reads.merge_request(key)

    def issue(self, key: str) -> IssueData | None:
        return self.reads.issue(key)

    def epic(self, key: str) -> EpicData | None:
        return self.reads.epic(key)

    def merge_requests_closing(self, issue_key: str) -> list[Entity]:
        return self.reads.merge_requests_closing(issue_key)

    def changed_by(self, file_key: str, limit: int) -> list[tuple[Entity, str, datetime | None]]:
        return self.reads.changed_by(file_key, limit)

    def changed_symbols(self, mr_key: str) -> list[str]:
        return self.reads.changed_symbols(mr_key)

    def related_edges(self, keys: Collection[str], limit: int) -> list[Step]:
        return self.reads.related_edges(keys, limit)

    # -- the queue ------------------------------------------------------------------

    def rows(self, keys: Collection[str]) -> dict[str, EnrichmentRow]:
        """The queue state of each existing MR, issue or epic in ``keys``."""
        return {r[0]: _row(kind, r) for kind, r in self.reads.keyed(keys, _ROW_FIELDS)}

    def all_rows(self) -> list[EnrichmentRow]:
        """Every MR, issue and epic, in key order."""
        found: list[EnrichmentRow] = []
        for kind, label in LABELS.items():
            found += [
                _row(kind, r)
                for r in self._store.db.rows(f"MATCH (e:{label}) RETURN {_ROW_FIELDS} ORDER BY e.key")
            ]
        return found

    def due(self, now: datetime, limit: int) -> list[EnrichmentRow]:
        """Entities to fetch now: never fetched first, then those whose next attempt has come.

        A ``linked`` entity (found through another, too far to fetch) is due once a
        memory is about it; an ``unresolvable`` one never is.
        """
        at = naive_utc(now)
        found: list[EnrichmentRow] = []
        for kind, label in LABELS.items():
            rows = self._store.db.rows(
                f"MATCH (e:{label}) WHERE (e.enrich_state IS NULL OR e.enrich_state = 'pending' "
                "OR (e.enrich_state = 'linked' AND EXISTS { MATCH (:Memory)-[:ABOUT]->(e) }) "
                "OR (e.enrich_state IN ['ok', 'error', 'missing', 'forbidden'])) "
                "AND (e.next_attempt IS NULL OR e.next_attempt <= $at) "
                f"RETURN {_ROW_FIELDS} ORDER BY e.enrich_state IS NOT NULL, e.next_attempt, e.key "
                "LIMIT $limit",
                {"at": at, "limit": limit},
            )
            found += [_row(kind, r) for r in rows]
        never = [r for r in found if r.fetched_at is None]
        again = [r for r in found if r.fetched_at is not None]
        return (never + again)[:limit]

    def counts(self) -> dict[str, int]:
        """How many MRs, issues and epics are in each enrichment state."""
        counts: dict[str, int] = {}
        for label in LABELS.values():
            for state, n in self._store.db.rows(
                f"MATCH (e:{label}) RETURN coalesce(e.enrich_state, 'pending'), count(*)"
            ):
                counts[state] = counts.get(state, 0) + int(n)
        return counts

    def waiting(self) -> int:
        """Entities never fetched, or failed and waiting for their retry (due now or after a
        back-off): what the queue still owes."""
        total = 0
        for label in LABELS.values():
            rows = self._store.db.rows(
                f"MATCH (e:{label}) WHERE e.enrich_state IS NULL OR e.enrich_state IN ['pending', 'error'] "
                "OR (e.enrich_state = 'linked' AND EXISTS { MATCH (:Memory)-[:ABOUT]->(e) }) RETURN count(*)"
            )
            total += int(rows[0][0]) if rows else 0
        return total

    def mark(self, key: str, attempt: Attempt) -> None:
        """Record an attempt's outcome without touching the entity's facts."""
        label = key.split(":", 1)[0]
        sets = "e.enrich_state = $state, e.enrich_error = $error, e.enrich_attempts = $attempts, "
        sets += "e.next_attempt = $next"
        params: dict[str, Any] = {
            "k": key,
            "state": attempt.state.value,
            "error": attempt.error,
            "attempts": attempt.attempts,
            "next": naive_utc(attempt.next_attempt),
        }
        if attempt.fetched_at is not None:
            sets += ", e.fetched_at = $fetched"
            params["fetched"] = naive_utc(attempt.fetched_at)
        self._store.db.run(f"MATCH (e:{label} {{key: $k}}) SET {sets}", params)

    def queue(self, entities: Sequence[Entity]) -> None:
        """The refs a person asks to enrich, stored as any entity (one person's graph: every
        entity is theirs)."""
        self._store.upsert_entities(entities)

    # -- storing what GitLab said (core/gitlab_edits.py decided what) -------------------

    def apply(self, edit: GitLabEdit) -> None:
        """Store one answer (``core.gitlab_ports.GitLabGraph.apply``) under the store's lock."""
        with self._store.db.lock:
            if not self._save_facts(edit.facts):
                return
            self.reads.saw_facts()
            self._drop(edit.drop)
            self._put_people(edit.people)
            self._add_nodes(edit.nodes)
            self._add_edges(edit.edges)

    def _save_facts(self, facts: SavedFacts) -> bool:
        """The node's facts, and its long texts replaced in ``GitLabText`` (kuzu_schema.GITLAB_TEXT);
        False when the node is not in the graph."""
        label, store = LABELS[facts.kind], self._store
        columns = _columns(facts.data)
        texts = {name: columns.pop(name, None) for name in ("description", "changed_files")}
        params = {
            **columns,
            "k": facts.key,
            "title": facts.data.title,
            "fetched": naive_utc(facts.fetched_at),
            "next": naive_utc(facts.next_attempt),
        }
        sets = ", ".join(f"e.{name} = ${name}" for name in columns)
        with store.transaction():
            if not store.db.rows(
                f"MATCH (e:{label} {{key: $k}}) SET {sets}, e.title = $title, e.enrich_state = 'ok', "
                "e.enrich_error = NULL, e.enrich_attempts = 0, e.fetched_at = $fetched, "
                "e.next_attempt = $next RETURN e.key",
                params,
            ):
                return False
            store.db.run("MATCH (t:GitLabText {key: $k}) DELETE t", {"k": facts.key})
            store.db.run(
                "CREATE (:GitLabText {key: $k, description: $description, changed_files: $changed_files})",
                {"k": facts.key, **texts},
            )
        return True

    def _drop(self, scopes: Sequence[EdgeScope]) -> None:
        """The edges in ``scopes``, one query a node and direction (each query costs ~1 ms)."""
        grouped: dict[tuple[str, bool], list[str]] = {}
        for scope in scopes:
            grouped.setdefault((scope.key, scope.into), []).append(scope.rel)
        for (key, into), rels in grouped.items():
            node, rel = f"(n:{key.split(':', 1)[0]} {{key: $k}})", f"[r:{'|:'.join(rels)}]"
            ends = (
                f"()-{rel}->{node}" if into else f"()<-{rel}-{node}"
            )  # the keyed node last: test_kuzu_plans.py
            self._store.db.run(f"MATCH {ends} DELETE r", {"k": key})

    def _put_people(self, people: Sequence[Person]) -> None:
        if people:  # Kùzu 0.11.3 cannot bind an UNWIND over an empty list
            self._store.db.run(
                "UNWIND $rows AS r WITH r, r.key AS k MERGE (p:Person {key: k}) "  # kuzu_rows.ADD_LINKS
                "SET p.name = r.username, p.username = r.username, p.title = r.name, p.web_url = r.web_url",
                {
                    "rows": [
                        {
                            "key": keys.person_key(username=p.username),
                            "username": p.username,
                            "name": p.name,
                            "web_url": p.web_url,
                        }
                        for p in people
                    ]
                },
            )

    def _add_nodes(self, nodes: Sequence[NewNode]) -> None:
        """Nodes created when absent (``core.gitlab_edits.NewNode``), one query a label."""
        for kind in dict.fromkeys(node.kind for node in nodes):
            rows = [
                {"key": n.key, "name": n.name, "project": n.project, "title": n.title, "state": n.state,
                 "hops": n.hops, "queue": n.queue.value if n.queue else None}
                for n in nodes if n.kind is kind
            ]  # fmt: skip
            merge = f"UNWIND $rows AS r WITH r, r.key AS k MERGE (e:{kind.value} {{key: k}}) "  # ADD_LINKS
            if kind not in LABELS:  # a file: no queue state
                self._store.db.run(
                    merge + "ON CREATE SET e.name = r.name, e.project = r.project, e.title = r.title",
                    {"rows": rows},
                )
                continue
            self._store.db.run(
                merge + "ON CREATE SET e.name = r.name, e.project = r.project, e.title = r.title, "
                "e.state = r.state, e.hops = r.hops, e.enrich_state = r.queue "
                "ON MATCH SET e.title = CASE WHEN e.title IS NULL OR e.title = '' THEN r.title "
                "ELSE e.title END, "
                "e.enrich_state = CASE WHEN e.enrich_state = 'linked' AND r.queue = 'pending' THEN 'pending' "
                "ELSE e.enrich_state END",
                {"rows": rows},
            )

    def _add_edges(self, edges: Sequence[Edge]) -> None:
        """Edges between existing nodes, one query a relation and pair of labels."""
        groups: dict[tuple[str, str, str], list[dict[str, str]]] = {}
        for edge in edges:
            labels = (edge.rel, edge.source.split(":", 1)[0], edge.target.split(":", 1)[0])
            groups.setdefault(labels, []).append({"s": edge.source, "t": edge.target})
        for (rel, source, target), rows in groups.items():
            self._store.db.run(
                f"UNWIND $rows AS r MATCH (a:{source} {{key: r.s}}) MATCH (b:{target} {{key: r.t}}) "
                f"CREATE (a)-[:{rel}]->(b)",
                {"rows": rows},
            )


def _columns(data: GitLabData) -> dict[str, Any]:
    """The node properties of an MR, issue or epic (the long texts go to ``GitLabText``)."""
    columns: dict[str, Any] = {
        "state": data.state,
        "labels": list(data.labels),
        "author": data.author.username if data.author else None,
        "created_at": naive_utc(data.created_at),
        "updated_at": naive_utc(data.updated_at),
        "description": data.description,
        "web_url": data.web_url,
    }
    if isinstance(data, MergeRequestData):
        columns |= {
            "draft": data.draft,
            "milestone": data.milestone,
            "source_branch": data.source_branch,
            "target_branch": data.target_branch,
            "merged_at": naive_utc(data.merged_at),
            "changed_files_total": data.changed_files_total,
            "changed_files": files_json(data.changed_files),
        }
    elif isinstance(data, IssueData):
        columns |= {"milestone": data.milestone, "closed_at": naive_utc(data.closed_at)}
    return columns
