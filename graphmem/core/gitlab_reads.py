"""Reading back what the GitLab graphs that keep rows hold (PostgreSQL, the fake), decided once.

They keep GitLab's answer as it came and its edges as (rel, source, target) rows; here an
answer is read back with what the graph holds besides (title, people, closing issues, epics,
children: ``read_back``), and the edges recall walks are put in the order worth reading
(``related_steps``). Kùzu asks the same in Cypher (``adapters/kuzu_gitlab_reads.py``); the
contract suite holds every store to it. Pure.

Who sees a GitLab row is decided here too, once for every GitLab graph: whoever sees the
entities it names. Which entities a reader sees is its store's (``GraphStore.get_entities``:
on a team's PostgreSQL store the team's, the reader's own and those of memories the reader
sees, docs/team.md; everything on the embedded store, which has one person). A node (its
queue row, GitLab's answer and facts) goes with its entity; an edge with both its ends
(``seen_edges``): an MR the team sees that closes an issue only Bob's own memory names shows
Alice neither that issue nor the edge. Each store applies the rule as a filter of its reads,
before any limit: the fake with ``seen_edges``, PostgreSQL in each statement
(``adapters/postgres_gitlab.py``), Kùzu trivially.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, Protocol

from graphmem.core.enrichment import parse_key
from graphmem.core.gitlab import EpicData, IssueData, IssueRefData, Person
from graphmem.core.gitlab_edits import EdgeScope, GitLabData
from graphmem.core.models import EntityKind, Step

# The few and telling before the many: a huge MR's files never crowd out its issue and epic.
_RANK = {"File": 1, "Symbol": 2}
# MR key -> (merged_at, updated_at), as GitLab last said.
Stamps = Mapping[str, tuple[datetime | None, datetime | None]]
# A GitLab edge as a graph that keeps rows holds it: (relation, source key, target key).
Edge = tuple[str, str, str]


def seen_edges(edges: Iterable[Edge], seen: Collection[str]) -> list[Edge]:
    """The ``edges`` a reader sees: those whose two ends are both among ``seen`` (the keys of
    their ends that the reader's store shows it; see the module doc)."""
    return [edge for edge in edges if edge[1] in seen and edge[2] in seen]


class EdgeRows(Protocol):
    """What a GitLab graph that keeps rows tells ``read_back``: only what the reader sees."""

    def targets(self, scope: EdgeScope, kind: EntityKind | None = None) -> list[str]:
        """The other ends of the edges in ``scope``, of ``kind`` (None: any), by key: of the
        edges the reader sees (``seen_edges``)."""
        ...

    def people_of(self, key: str) -> dict[str, list[Person]]:
        """The people with an AUTHORED, ASSIGNED or REVIEWS edge to ``key`` the reader sees, by
        username."""
        ...

    def issue_refs(self, keys: Sequence[str]) -> tuple[IssueRefData, ...]:
        """The issues ``keys`` the reader sees, with their titles and GitLab states."""
        ...


def read_back(data: GitLabData, key: str, title: str, rows: EdgeRows) -> GitLabData | None:
    """GitLab's stored answer about ``key`` with what the graph holds now: its title, people,
    closing issues, epic and related MRs, or an epic's parent and children (None when ``key``
    names no GitLab target)."""
    target = parse_key(key)
    if target is None:
        return None
    if isinstance(data, EpicData):
        parents = _pairs(rows.targets(EdgeScope("PART_OF", key), EntityKind.EPIC))
        children = rows.targets(EdgeScope("PART_OF", key, into=True))
        return replace(
            data,
            group=target.namespace,
            iid=target.iid,
            title=title,
            author=Person(data.author.username) if data.author and data.author.username else None,
            parent=parents[0] if parents else None,
            child_issues=rows.issue_refs([k for k in children if k.startswith("Issue:")]),
            child_epics=tuple(_pairs([k for k in children if k.startswith("Epic:")])),
        )
    people = rows.people_of(key)
    held: dict[str, Any] = {
        "project": target.namespace,
        "iid": target.iid,
        "title": title,
        "author": next(iter(people["AUTHORED"]), None),
        "assignees": tuple(people["ASSIGNED"]),
    }
    if isinstance(data, IssueData):
        epics = _pairs(rows.targets(EdgeScope("PART_OF", key), EntityKind.EPIC))
        related = tuple(_pairs(rows.targets(EdgeScope("RELATED_MR", key))))
        return replace(data, **held, epic=epics[0] if epics else None, related_merge_requests=related)
    return replace(
        data,
        **held,
        reviewers=tuple(people["REVIEWS"]),
        closes=rows.issue_refs(rows.targets(EdgeScope("CLOSES", key))),
        changed_files_total_exact=True,  # not stored, as in Kùzu
    )


def latest_first(keys: Collection[str], stamps: Stamps) -> list[str]:
    """MR keys by merged_at, then updated_at, newest first (never merged last), then key."""

    def newest(value: datetime | None) -> float:
        return -value.timestamp() if value is not None else float("inf")

    def order(key: str) -> tuple[float, float, str]:
        merged, updated = stamps.get(key, (None, None))
        return newest(merged), newest(updated), key

    return sorted(keys, key=order)


def related_steps(
    edges: Iterable[Edge],
    asked: Collection[str],
    limit: int,
    stamps_of: Callable[[Collection[str]], Stamps],
) -> list[Step]:
    """``related_edges`` over ``edges`` (any that touch ``asked``, of those the reader sees:
    ``seen_edges``): an MR's closing issues, changed files and symbols; an issue's epic and
    closing MRs; an epic's parent, then its issues and child epics; the MRs that changed a file
    or symbol, latest first (``stamps_of`` says when the MRs merged). Each other end once, at
    most ``limit``."""
    wanted = set(asked)
    pairs: dict[str, list[tuple[str, str]]] = {}
    for rel, source, target in edges:
        pairs.setdefault(rel, []).append((source, target))
    found: dict[str, tuple[int, Step]] = {}

    def add(steps: Sequence[Step]) -> None:
        for step in steps[: max(limit, 0)]:
            if step.end not in wanted and step.end not in found:
                found[step.end] = (_rank(step.end), step)

    def walk(rel: str, label: str, *, forward: bool) -> list[Step]:
        return [
            Step(a if forward else b, rel, b if forward else a, forward)
            for a, b in pairs.get(rel, [])
            if (a if forward else b) in wanted and (a if forward else b).startswith(f"{label}:")
        ]

    mrs = walk("CLOSES", "MergeRequest", forward=True) + walk("CHANGES", "MergeRequest", forward=True)
    add(sorted(mrs, key=lambda s: (_rank(s.end), s.end, s.start)))
    add(sorted(walk("PART_OF", "Issue", forward=True), key=lambda s: (s.end, s.start)))
    add(sorted(walk("CLOSES", "Issue", forward=False), key=lambda s: (s.end, s.start)))
    add(sorted(walk("PART_OF", "Epic", forward=True), key=lambda s: (s.end, s.start)))
    children = walk("PART_OF", "Epic", forward=False)
    add(sorted(children, key=lambda s: (not s.end.startswith("Issue:"), s.end, s.start)))
    for label in ("File", "Symbol"):
        changing = walk("CHANGES", label, forward=False)
        merge_requests = {s.end for s in changing}
        order = {key: n for n, key in enumerate(latest_first(merge_requests, stamps_of(merge_requests)))}
        add(sorted(changing, key=lambda s: (order[s.end], s.start)))
    ordered = sorted(found.values(), key=lambda pair: pair[0])  # stable: each walk's order
    return [step for _, step in ordered][: max(limit, 0)]


def _pairs(keys: Sequence[str]) -> list[tuple[str, int]]:
    return [(t.namespace, t.iid) for k in keys if (t := parse_key(k)) is not None]


def _rank(key: str) -> int:
    return _RANK.get(key.split(":", 1)[0], 0)
