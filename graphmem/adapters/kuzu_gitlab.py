"""GitLab entities in Kùzu: the enrichment queue, and saving MRs, issues, epics, people and their edges.

An MR, issue or epic node is created wherever a ref is seen (``upsert_entities``);
enrichment then fills its facts and its queue state (``enrich_state`` NULL means
never fetched). Saving an entity replaces its outgoing edges in one locked step, so a
failed fetch never leaves half an entity: GitLab errors happen before any write.
Reading them back is ``kuzu_gitlab_reads.py``'s.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from graphmem.adapters.kuzu_gitlab_reads import LABELS, KuzuGitLabReads, files_json
from graphmem.adapters.kuzu_rows import aware, naive_utc
from graphmem.core import keys
from graphmem.core.enrichment import (
    MAX_HOPS,
    EnrichmentRow,
    EnrichState,
    GitLabTarget,
    parse_key,
    target_key,
)
from graphmem.core.gitlab import (
    EpicData,
    IssueData,
    IssueRefData,
    MergeRequestData,
    Person,
)
from graphmem.core.models import EntityKind

_ROW_FIELDS = (
    "e.key, e.name, e.project, e.enrich_state, e.enrich_attempts, e.fetched_at, e.next_attempt, "
    "e.updated_at, e.enrich_error, e.hops"
)
# A discovered entity is queued (pending) when it is this close; further ones are only linked.
_QUEUED_HOPS = MAX_HOPS


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


def person_key(username: str) -> str:
    return keys.person_key(username=username)  # one person is one node (core/keys.py)


class KuzuGitLabGraph(KuzuGitLabReads):
    """The GitLab part of the graph, over the store's connection: the enrichment queue and
    saving what GitLab said (the reads are ``KuzuGitLabReads``'s)."""

    # -- the queue ------------------------------------------------------------------

    def rows(self, keys: Collection[str]) -> dict[str, EnrichmentRow]:
        """The queue state of each existing MR, issue or epic in ``keys``."""
        found: dict[str, EnrichmentRow] = {}
        for kind, label in LABELS.items():
            wanted = [key for key in keys if key.startswith(f"{label}:")]
            for r in self._store.keyed_rows(f"MATCH (e:{label} {{key: $key}}) RETURN {_ROW_FIELDS}", wanted):
                found[r[0]] = _row(kind, r)
        return found

    def all_rows(self) -> list[EnrichmentRow]:
        """Every MR, issue and epic, in key order."""
        found: list[EnrichmentRow] = []
        for kind, label in LABELS.items():
            found += [
                _row(kind, r)
                for r in self._store.rows(f"MATCH (e:{label}) RETURN {_ROW_FIELDS} ORDER BY e.key")
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
            rows = self._store.rows(
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
            for state, n in self._store.rows(
                f"MATCH (e:{label}) RETURN coalesce(e.enrich_state, 'pending'), count(*)"
            ):
                counts[state] = counts.get(state, 0) + int(n)
        return counts

    def waiting(self) -> int:
        """Entities never fetched, or failed and waiting for their retry (due now or after a
        back-off): what the queue still owes."""
        total = 0
        for label in LABELS.values():
            rows = self._store.rows(
                f"MATCH (e:{label}) WHERE e.enrich_state IS NULL OR e.enrich_state IN ['pending', 'error'] "
                "OR (e.enrich_state = 'linked' AND EXISTS { MATCH (:Memory)-[:ABOUT]->(e) }) RETURN count(*)"
            )
            total += int(rows[0][0]) if rows else 0
        return total

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
        """Record an attempt's outcome without touching the entity's facts."""
        label = key.split(":", 1)[0]
        sets = "e.enrich_state = $state, e.enrich_error = $error, e.enrich_attempts = $attempts, "
        sets += "e.next_attempt = $next"
        params: dict[str, Any] = {
            "k": key,
            "state": state.value,
            "error": error,
            "attempts": attempts,
            "next": naive_utc(next_attempt),
        }
        if fetched_at is not None:
            sets += ", e.fetched_at = $fetched"
            params["fetched"] = naive_utc(fetched_at)
        self._store.run(f"MATCH (e:{label} {{key: $k}}) SET {sets}", params)

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
        """Store an MR's facts and replace its edges: people, changed files and symbols
        (``file_keys``: (File key, path)), closing issues."""
        store = self._store
        self._saved = True
        with store.lock:
            self._save_node(
                "MergeRequest",
                key,
                data.title,
                fetched_at,
                next_attempt,
                {
                    **_facts(data),
                    "draft": data.draft,
                    "milestone": data.milestone,
                    "source_branch": data.source_branch,
                    "target_branch": data.target_branch,
                    "merged_at": naive_utc(data.merged_at),
                    "changed_files_total": data.changed_files_total,
                    "changed_files": files_json(data.changed_files),
                },
            )
            for rel in ("CHANGES", "CLOSES"):
                store.run(f"MATCH (m:MergeRequest {{key: $k}})-[r:{rel}]->() DELETE r", {"k": key})
            self._replace_people(key, "MergeRequest", data.author, data.assignees, data.reviewers)
            file_project = local[1] if local is not None and local[0] == data.project else None
            if file_keys:  # Kùzu 0.11.3 cannot bind an UNWIND over an empty list
                store.run(
                    "UNWIND $rows AS r WITH r, r.key AS k MERGE (f:File {key: k}) "  # kuzu_rows.ADD_LINKS
                    "ON CREATE SET f.name = r.name, f.project = r.project, f.title = ''",
                    {"rows": [{"key": k, "name": path, "project": file_project} for k, path in file_keys]},
                )
            self._edges("CHANGES", "MergeRequest", "File", key, [k for k, _ in file_keys])
            self._edges("CHANGES", "MergeRequest", "Symbol", key, list(symbol_keys))
            issues = [target_key(EntityKind.ISSUE, i.project, i.iid) for i in data.closes]
            self._discover("Issue", data.closes, issues, local, hops + 1)
            self._edges("CLOSES", "MergeRequest", "Issue", key, issues)

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
        """Store an issue's facts and replace its edges: people, epic, related MRs."""
        store = self._store
        self._saved = True
        with store.lock:
            self._save_node(
                "Issue",
                key,
                data.title,
                fetched_at,
                next_attempt,
                {**_facts(data), "milestone": data.milestone, "closed_at": naive_utc(data.closed_at)},
            )
            for rel, target in (("PART_OF", "Epic"), ("RELATED_MR", "MergeRequest")):
                store.run(f"MATCH (i:Issue {{key: $k}})-[r:{rel}]->(:{target}) DELETE r", {"k": key})
            self._replace_people(key, "Issue", data.author, data.assignees, ())
            epic = [data.epic] if data.epic is not None else []
            epics = self._discover_targets(EntityKind.EPIC, epic, None, hops + 1)
            self._edges("PART_OF", "Issue", "Epic", key, epics)
            merge_requests = self._discover_targets(
                EntityKind.MERGE_REQUEST, data.related_merge_requests, local, hops + 1
            )
            self._edges("RELATED_MR", "Issue", "MergeRequest", key, merge_requests)

    def save_epic(
        self,
        key: str,
        data: EpicData,
        *,
        hops: int,
        fetched_at: datetime,
        next_attempt: datetime,
    ) -> None:
        """Store an epic's facts and replace its edges: parent epic, child issues and epics."""
        store = self._store
        self._saved = True
        with store.lock:
            self._save_node(
                "Epic",
                key,
                data.title,
                fetched_at,
                next_attempt,
                _facts(data),
            )
            store.run("MATCH (e:Epic {key: $k})-[r:PART_OF]->(:Epic) DELETE r", {"k": key})
            store.run("MATCH (:Issue)-[r:PART_OF]->(e:Epic {key: $k}) DELETE r", {"k": key})
            store.run("MATCH (:Epic)-[r:PART_OF]->(e:Epic {key: $k}) DELETE r", {"k": key})
            parent = [data.parent] if data.parent is not None else []
            parents = self._discover_targets(EntityKind.EPIC, parent, None, hops + 1)
            self._edges("PART_OF", "Epic", "Epic", key, parents)
            issues = [target_key(EntityKind.ISSUE, i.project, i.iid) for i in data.child_issues]
            self._discover("Issue", data.child_issues, issues, None, hops + 1)
            self._edges("PART_OF", "Issue", "Epic", key, issues, reverse=True)
            children = self._discover_targets(EntityKind.EPIC, data.child_epics, None, hops + 1)
            self._edges("PART_OF", "Epic", "Epic", key, children, reverse=True)

    def _save_node(
        self,
        label: str,
        key: str,
        title: str,
        fetched_at: datetime,
        next_attempt: datetime,
        facts: dict[str, Any],
    ) -> None:
        """The node's facts, and its long texts replaced in ``GitLabText`` (kuzu_schema.GITLAB_TEXT)."""
        texts = {name: facts.get(name) for name in ("description", "changed_files")}
        facts = {name: value for name, value in facts.items() if name not in texts}
        params = {
            **facts,
            "k": key,
            "title": title,
            "fetched": naive_utc(fetched_at),
            "next": naive_utc(next_attempt),
        }
        sets = ", ".join(f"e.{name} = ${name}" for name in facts)
        store = self._store
        with store.transaction():
            store.run(
                f"MATCH (e:{label} {{key: $k}}) SET {sets}, e.title = $title, e.enrich_state = 'ok', "
                "e.enrich_error = NULL, e.enrich_attempts = 0, e.fetched_at = $fetched, "
                "e.next_attempt = $next",
                params,
            )
            store.run("MATCH (t:GitLabText {key: $k}) DELETE t", {"k": key})
            store.run(
                "CREATE (:GitLabText {key: $k, description: $description, changed_files: $changed_files})",
                {"k": key, **texts},
            )

    def _replace_people(
        self,
        key: str,
        label: str,
        author: Person | None,
        assignees: Sequence[Person],
        reviewers: Sequence[Person],
    ) -> None:
        store = self._store
        for rel in ("AUTHORED", "ASSIGNED", "REVIEWS"):
            if rel == "REVIEWS" and label != "MergeRequest":
                continue
            store.run(f"MATCH (:Person)-[r:{rel}]->(e:{label} {{key: $k}}) DELETE r", {"k": key})
        people = {
            p.username: p for p in (*([author] if author else []), *assignees, *reviewers) if p.username
        }
        if people:  # Kùzu 0.11.3 cannot bind an UNWIND over an empty list
            store.run(
                "UNWIND $rows AS r WITH r, r.key AS k MERGE (p:Person {key: k}) "  # kuzu_rows.ADD_LINKS
                "SET p.name = r.username, p.username = r.username, p.title = r.name, p.web_url = r.web_url",
                {
                    "rows": [
                        {
                            "key": person_key(p.username),
                            "username": p.username,
                            "name": p.name,
                            "web_url": p.web_url,
                        }
                        for p in people.values()
                    ]
                },
            )
        for rel, group in (
            ("AUTHORED", [author] if author else []),
            ("ASSIGNED", assignees),
            ("REVIEWS", reviewers),
        ):
            keys = [person_key(p.username) for p in group if p.username]
            self._edges(rel, "Person", label, key, keys, reverse=True)

    def _discover(
        self,
        label: str,
        refs: Sequence[IssueRefData],
        keys: Sequence[str],
        local: tuple[str, str] | None,
        hops: int,
    ) -> None:
        self._discover_keys(
            label,
            [(k, f"{r.project}#{r.iid}", r.title, r.state) for k, r in zip(keys, refs, strict=True)],
            local,
            hops,
        )

    def _discover_targets(
        self,
        kind: EntityKind,
        targets: Sequence[tuple[str, int]],
        local: tuple[str, str] | None,
        hops: int,
    ) -> list[str]:
        """Nodes for MRs, issues or epics named by (project or group path, iid); their keys."""
        found = [GitLabTarget(kind, namespace, iid) for namespace, iid in targets]
        self._discover_keys(kind.value, [(t.key, t.name, "", "") for t in found], local, hops)
        return [t.key for t in found]

    def _discover_keys(
        self, label: str, found: Sequence[tuple[str, str, str, str]], local: tuple[str, str] | None, hops: int
    ) -> None:
        """Nodes for entities found through another: queued when near enough, else linked.

        An existing node keeps what it has; a ``linked`` one near enough becomes pending.
        """
        if not found:
            return
        queued = hops <= _QUEUED_HOPS
        self._store.run(
            f"UNWIND $rows AS r WITH r, r.key AS k MERGE (e:{label} {{key: k}}) "  # kuzu_rows.ADD_LINKS
            "ON CREATE SET e.name = r.name, e.project = r.project, e.title = r.title, e.state = r.state, "
            "e.hops = $hops, e.enrich_state = $state "
            "ON MATCH SET e.title = CASE WHEN e.title IS NULL OR e.title = '' THEN r.title ELSE e.title END, "
            "e.enrich_state = CASE WHEN e.enrich_state = 'linked' AND $queued THEN 'pending' "
            "ELSE e.enrich_state END",
            {
                "rows": [
                    {"key": k, "name": name, "project": _project_of(k, local), "title": t, "state": s}
                    for k, name, t, s in found
                ],
                "hops": hops,
                "state": EnrichState.PENDING.value if queued else EnrichState.LINKED.value,
                "queued": queued,
            },
        )

    def _edges(
        self, rel: str, source: str, target: str, key: str, others: Sequence[str], *, reverse: bool = False
    ) -> None:
        """Edges ``key -> other`` (``other -> key`` when ``reverse``), matched by key."""
        if not others:
            return
        a, b = ("o", "n") if reverse else ("n", "o")
        node_label, other_label = (target, source) if reverse else (source, target)
        self._store.run(
            f"MATCH (n:{node_label} {{key: $k}}) UNWIND $others AS other "
            f"MATCH (o:{other_label} {{key: other}}) CREATE ({a})-[:{rel}]->({b})",
            {"k": key, "others": list(dict.fromkeys(others))},
        )


def _facts(data: MergeRequestData | IssueData | EpicData) -> dict[str, Any]:
    """The node properties MRs, issues and epics share."""
    return {
        "state": data.state,
        "labels": list(data.labels),
        "author": data.author.username if data.author else None,
        "created_at": naive_utc(data.created_at),
        "updated_at": naive_utc(data.updated_at),
        "description": data.description,
        "web_url": data.web_url,
    }


def _project_of(key: str, local: tuple[str, str] | None) -> str | None:
    """The local project root of an MR or issue key whose GitLab project is ``local``'s."""
    target = parse_key(key)
    if local is None or target is None or target.kind is EntityKind.EPIC:
        return None
    path, root = local
    return root if target.namespace == path else None
