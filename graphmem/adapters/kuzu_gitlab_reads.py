"""Reading the GitLab part of the graph back: MRs, issues and epics as ``core.gitlab`` data.

What enrichment stored (``kuzu_gitlab.py`` writes it and holds these reads) comes back as
GitLab last described it: an MR with its people, changed files (the ``changed_files``
column, JSON) and closing issues, an issue with its epic and related MRs, an epic with its
parent and children; and the edges ``get_context`` follows (the MRs that close an issue or changed a file).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Sequence
from datetime import datetime
from typing import Any

from graphmem.adapters.kuzu_rows import aware
from graphmem.adapters.kuzu_store import KuzuGraphStore
from graphmem.core.enrichment import parse_key
from graphmem.core.gitlab import (
    ChangedFile,
    EpicData,
    IssueData,
    IssueRefData,
    MergeRequestData,
    Person,
)
from graphmem.core.models import Entity, EntityKind, Step

LABELS = {EntityKind.MERGE_REQUEST: "MergeRequest", EntityKind.ISSUE: "Issue", EntityKind.EPIC: "Epic"}
# GitLab's facts were saved at least once: every save sets web_url, no mark does (a 404 or 403
# sets fetched_at too, with nothing to show).
_SAVED = "e.web_url IS NOT NULL"

# (label of the keys asked about, whether the walk follows the edge, query returning (asked key,
# relation, label, other key) rows). Each Kùzu query costs about 1 ms however small, so each label
# takes one or two; the unlabelled ``(x)`` are matched from a labelled, filtered node (Kùzu 0.11.3
# misses matches of an unlabelled ``(e) WHERE e.key IN $keys``).
_RELATED: tuple[tuple[str, bool, str], ...] = (
    (
        "MergeRequest",
        True,
        "MATCH (m:MergeRequest)-[r:CLOSES|:CHANGES]->(x) WHERE m.key IN $keys "
        "WITH m.key AS a, label(r) AS rel, label(x) AS l, x.key AS k RETURN a, rel, l, k "
        "ORDER BY CASE WHEN l = 'Issue' THEN 0 WHEN l = 'File' THEN 1 ELSE 2 END, k, a LIMIT $limit",
    ),
    (
        "Issue",
        True,
        "MATCH (i:Issue)-[:PART_OF]->(x:Epic) WHERE i.key IN $keys "
        "RETURN i.key, 'PART_OF', 'Epic', x.key ORDER BY x.key, i.key LIMIT $limit",
    ),
    (
        "Issue",
        False,
        "MATCH (x:MergeRequest)-[:CLOSES]->(i:Issue) WHERE i.key IN $keys "
        "RETURN i.key, 'CLOSES', 'MergeRequest', x.key ORDER BY x.key, i.key LIMIT $limit",
    ),
    (
        "Epic",
        True,
        "MATCH (e:Epic)-[:PART_OF]->(x:Epic) WHERE e.key IN $keys "
        "RETURN e.key, 'PART_OF', 'Epic', x.key ORDER BY x.key, e.key LIMIT $limit",
    ),
    (
        "Epic",
        False,
        "MATCH (x)-[:PART_OF]->(e:Epic) WHERE e.key IN $keys "
        "RETURN e.key, 'PART_OF', label(x), x.key ORDER BY label(x) DESC, x.key, e.key LIMIT $limit",
    ),
    (
        "File",
        False,
        "MATCH (x:MergeRequest)-[:CHANGES]->(f:File) WHERE f.key IN $keys "
        "RETURN f.key, 'CHANGES', 'MergeRequest', x.key "
        "ORDER BY x.merged_at DESC, x.updated_at DESC, x.key, f.key LIMIT $limit",
    ),
    (
        "Symbol",
        False,
        "MATCH (x:MergeRequest)-[:CHANGES]->(s:Symbol) WHERE s.key IN $keys "
        "RETURN s.key, 'CHANGES', 'MergeRequest', x.key "
        "ORDER BY x.merged_at DESC, x.updated_at DESC, x.key, s.key LIMIT $limit",
    ),
)
# The few and telling before the many: a huge MR's files never crowd out its issue and epic.
_RELATED_ORDER = {"File": 1, "Symbol": 2}


def _person(row: Sequence[Any]) -> Person:
    return Person(username=row[0] or "", name=row[1] or "", web_url=row[2] or "")


def files_json(files: Sequence[ChangedFile]) -> str:
    """An MR's changed files as its ``changed_files`` column stores them."""
    return json.dumps(
        [
            {
                "path": f.new_path,
                "old_path": f.old_path,
                "new": f.new_file,
                "deleted": f.deleted_file,
                "renamed": f.renamed_file,
                "ranges": [list(r) for r in f.ranges],
            }
            for f in files
        ]
    )


def files_from_json(raw: str | None) -> tuple[ChangedFile, ...]:
    """The ``changed_files`` column back as changed files."""
    if not raw:
        return ()
    return tuple(
        ChangedFile(
            new_path=item["path"],
            old_path=item.get("old_path") or item["path"],
            new_file=bool(item.get("new")),
            deleted_file=bool(item.get("deleted")),
            renamed_file=bool(item.get("renamed")),
            ranges=tuple((int(a), int(b)) for a, b in item.get("ranges", ())),
        )
        for item in json.loads(raw)
    )


class KuzuGitLabReads:
    """Reads of the GitLab part of the graph, over the store's connection (a ``KuzuGitLabGraph``
    holds one and tells it when GitLab's facts were saved)."""

    def __init__(self, store: KuzuGraphStore) -> None:
        self._store = store
        self._saved: bool | None = None  # any GitLab facts in the store (None: not asked yet)

    def saw_facts(self) -> None:
        """GitLab's facts were just saved: ``related_edges`` has something to look for."""
        self._saved = True

    def keyed(self, keys: Collection[str], columns: str) -> Iterator[tuple[EntityKind, list[Any]]]:
        """``columns`` of each MR, issue and epic node ``e`` in ``keys``, with its kind."""
        for kind, label in LABELS.items():
            wanted = [key for key in keys if key.startswith(f"{label}:")]
            for row in self._store.db.keyed_rows(f"MATCH (e:{label} {{key: $key}}) RETURN {columns}", wanted):
                yield kind, row

    def entities(self, keys: Collection[str]) -> dict[str, Entity]:
        """Titles and states of the MRs, issues and epics in ``keys`` (as entities)."""
        return {
            r[0]: Entity(r[0], kind, r[1] or r[0], r[2], r[3] or "")
            for kind, r in self.keyed(keys, "e.key, e.name, e.project, e.title")
        }

    def merge_request(self, key: str) -> MergeRequestData | None:
        """The stored MR, as GitLab last described it; None until GitLab described it once."""
        saved = self._saved_node(
            "MergeRequest",
            key,
            "e.draft, e.milestone, e.source_branch, e.target_branch, e.merged_at, t.changed_files, "
            "e.changed_files_total",
        )
        if saved is None:
            return None
        facts, r = saved
        people = self._people(key, "MergeRequest")
        return MergeRequestData(
            **facts,
            draft=bool(r[0]),
            author=next(iter(people["AUTHORED"]), None),
            assignees=tuple(people["ASSIGNED"]),
            reviewers=tuple(people["REVIEWS"]),
            milestone=r[1],
            source_branch=r[2] or "",
            target_branch=r[3] or "",
            merged_at=aware(r[4]),
            changed_files=files_from_json(r[5]),
            changed_files_total=int(r[6] or 0),
            closes=self._issue_refs("MATCH (i:Issue)<-[:CLOSES]-(:MergeRequest {key: $k})", key),
        )

    def issue(self, key: str) -> IssueData | None:
        saved = self._saved_node("Issue", key, "e.milestone, e.closed_at")
        if saved is None:
            return None
        facts, r = saved
        people = self._people(key, "Issue")
        epics = self._targets("MATCH (x:Epic)<-[:PART_OF]-(:Issue {key: $k})", key)
        related = self._targets("MATCH (x:MergeRequest)<-[:RELATED_MR]-(:Issue {key: $k})", key)
        return IssueData(
            **facts,
            author=next(iter(people["AUTHORED"]), None),
            assignees=tuple(people["ASSIGNED"]),
            milestone=r[0],
            closed_at=aware(r[1]),
            epic=epics[0] if epics else None,
            related_merge_requests=tuple(related),
        )

    def epic(self, key: str) -> EpicData | None:
        saved = self._saved_node("Epic", key, "e.author")
        if saved is None:
            return None
        facts, r = saved
        facts["group"] = facts.pop("project")
        parents = self._targets("MATCH (x:Epic)<-[:PART_OF]-(:Epic {key: $k})", key)
        return EpicData(
            **facts,
            author=Person(r[0]) if r[0] else None,
            parent=parents[0] if parents else None,
            child_issues=self._issue_refs("MATCH (i:Issue)-[:PART_OF]->(:Epic {key: $k})", key),
            child_epics=tuple(self._targets("MATCH (x:Epic)-[:PART_OF]->(:Epic {key: $k})", key)),
        )

    def merge_requests_closing(self, issue_key: str) -> list[Entity]:
        """The MRs that close an issue."""
        rows = self._store.db.rows(
            "MATCH (m:MergeRequest)-[:CLOSES]->(:Issue {key: $k}) "
            "RETURN m.key, m.name, m.project, m.title, m.state "
            "ORDER BY m.key",
            {"k": issue_key},
        )
        return [Entity(r[0], EntityKind.MERGE_REQUEST, r[1] or r[0], r[2], r[3] or "") for r in rows]

    def changed_by(self, file_key: str, limit: int) -> list[tuple[Entity, str, datetime | None]]:
        """The MRs that changed a file: (MR, state, merged_at), latest first."""
        rows = self._store.db.rows(
            "MATCH (m:MergeRequest)-[:CHANGES]->(:File {key: $k}) "
            "RETURN m.key, m.name, m.project, m.title, m.state, m.merged_at "
            "ORDER BY m.merged_at DESC, m.updated_at DESC, m.key LIMIT $limit",
            {"k": file_key, "limit": limit},
        )
        return [
            (Entity(r[0], EntityKind.MERGE_REQUEST, r[1] or r[0], r[2], r[3] or ""), r[4] or "", aware(r[5]))
            for r in rows
        ]

    def changed_symbols(self, mr_key: str) -> list[str]:
        """Keys of the symbols an MR's diff touched (as linked when it was enriched)."""
        rows = self._store.db.rows(
            "MATCH (s:Symbol)<-[:CHANGES]-(:MergeRequest {key: $k}) RETURN s.key ORDER BY s.key",
            {"k": mr_key},
        )
        return [r[0] for r in rows]

    def related_edges(self, keys: Collection[str], limit: int) -> list[Step]:
        """The GitLab edges from ``keys`` to other entities (``keys`` themselves left out), each
        walked from the asked key, at most ``limit`` other ends, each once.

        An MR's closing issues, an issue's epic and closing MRs, an epic's parent, issues and
        child epics, the MRs that changed a file or symbol (latest first), then an MR's changed
        files and symbols. Nothing is asked before GitLab's facts were ever saved in this store.
        """
        if not self._anything_saved():
            return []
        asked = set(keys)
        found: dict[str, tuple[int, Step]] = {}
        for label, forward, query in _RELATED:
            wanted = sorted(k for k in asked if k.startswith(f"{label}:"))
            if wanted:
                for start, relation, other_label, end in self._store.db.rows(
                    query, {"keys": wanted, "limit": limit}
                ):
                    if end not in asked and end not in found:
                        rank = _RELATED_ORDER.get(other_label, 0)
                        found[end] = (rank, Step(start, relation, end, forward))
        ordered = sorted(found.values(), key=lambda pair: pair[0])  # stable: each query's order
        return [step for _, step in ordered][:limit]

    def _anything_saved(self) -> bool:
        """Whether any MR, issue or epic has GitLab's facts (asked once, then kept by the saves)."""
        if self._saved is None:
            self._saved = any(
                self._store.db.rows(f"MATCH (e:{label}) WHERE {_SAVED} RETURN e.key LIMIT 1")
                for label in LABELS.values()
            )
        return self._saved

    def _saved_node(self, label: str, key: str, columns: str) -> tuple[dict[str, Any], list[Any]] | None:
        """The facts every MR, issue and epic has (project path, iid, title, state, labels, times,
        description, web_url), and ``columns`` of the node ``key``; None until GitLab described it."""
        rows = self._store.db.rows(
            f"MATCH (e:{label} {{key: $k}}) WHERE {_SAVED} "
            "OPTIONAL MATCH (t:GitLabText {key: $k}) "  # its long texts (kuzu_schema.GITLAB_TEXT)
            "RETURN e.title, e.state, e.labels, e.created_at, e.updated_at, t.description, e.web_url, "
            f"{columns}",
            {"k": key},
        )
        target = parse_key(key)
        if not rows or target is None:
            return None
        r = rows[0]
        facts = {
            "project": target.namespace,
            "iid": target.iid,
            "title": r[0] or "",
            "state": r[1] or "",
            "labels": tuple(r[2] or ()),
            "created_at": aware(r[3]),
            "updated_at": aware(r[4]),
            "description": r[5] or "",
            "web_url": r[6] or "",
        }
        return facts, r[7:]

    def _targets(self, match: str, key: str) -> list[tuple[str, int]]:
        """(path, iid) of the nodes ``x`` that ``match`` finds from ``key``, by key."""
        rows = self._store.db.rows(f"{match} RETURN x.key ORDER BY x.key", {"k": key})
        return [(t.namespace, t.iid) for (k,) in rows if (t := parse_key(k)) is not None]

    def _issue_refs(self, match: str, key: str) -> tuple[IssueRefData, ...]:
        """The issues ``i`` that ``match`` finds from ``key``, with their titles and states, by key."""
        rows = self._store.db.rows(f"{match} RETURN i.key, i.title, i.state ORDER BY i.key", {"k": key})
        return tuple(
            IssueRefData(t.namespace, t.iid, title or "", state or "")
            for k, title, state in rows
            if (t := parse_key(k)) is not None
        )

    def _people(self, key: str, label: str) -> dict[str, list[Person]]:
        people: dict[str, list[Person]] = {"AUTHORED": [], "ASSIGNED": [], "REVIEWS": []}
        rels = ("AUTHORED", "ASSIGNED", "REVIEWS") if label == "MergeRequest" else ("AUTHORED", "ASSIGNED")
        if label == "Epic":
            return people
        for rel in rels:
            people[rel] = [
                _person(r)
                for r in self._store.db.rows(
                    f"MATCH (p:Person)-[:{rel}]->(:{label} {{key: $k}}) "
                    "RETURN p.username, p.title, p.web_url ORDER BY p.username",
                    {"k": key},
                )
            ]
        return people
