"""Reading the GitLab graph in the PostgreSQL store: an MR, issue or epic as GitLab said it, the
MRs that changed a file, and the edges recall walks (``related_edges``).

Part of ``PostgresGitLabGraph`` (``postgres_gitlab.py``): GitLab's answer is read back from its
JSON, and what the graph holds besides (title, people, closing issues, epics) is put in.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from graphmem.adapters.postgres_rows import utc
from graphmem.adapters.postgres_store import PostgresGraphStore
from graphmem.core.enrichment import parse_key
from graphmem.core.gitlab import EpicData, IssueData, IssueRefData, MergeRequestData, Person
from graphmem.core.models import Entity, EntityKind, Step

KIND_VALUES = [k.value for k in (EntityKind.MERGE_REQUEST, EntityKind.ISSUE, EntityKind.EPIC)]
PEOPLE_RELS = ("AUTHORED", "ASSIGNED", "REVIEWS")
_RANK = {"File": 1, "Symbol": 2}  # the few and telling before the many


def _rank(key: str) -> int:
    return _RANK.get(key.split(":", 1)[0], 0)


class PostgresGitLabReads:
    """The reading half of the PostgreSQL GitLab graph."""

    _store: PostgresGraphStore

    def entities(self, keys: Collection[str]) -> dict[str, Entity]:
        return {k: e for k, e in self._store.get_entities(keys).items() if e.kind.value in KIND_VALUES}

    def _saved(self, key: str, kind: EntityKind) -> tuple[Any, str] | None:
        """GitLab's answer for ``key`` (its JSON) and the entity's title, when saved."""
        from graphmem.adapters.postgres_gitlab import DATA

        if parse_key(key) is None:
            return None
        rows = self._store._rows(
            "SELECT n.data, e.title FROM gitlab_nodes n JOIN entities e ON e.key = n.key "
            "WHERE n.key = %s AND e.kind = %s AND n.data IS NOT NULL",
            (key, kind.value),
        )
        if not rows:
            return None
        return DATA[kind].validate_python(rows[0][0]), str(rows[0][1] or "")

    def merge_request(self, key: str) -> MergeRequestData | None:
        saved = self._saved(key, EntityKind.MERGE_REQUEST)
        target = parse_key(key)
        if saved is None or target is None:
            return None
        data, title = saved
        assert isinstance(data, MergeRequestData)
        people = self._people_of(key)
        return replace(
            data,
            project=target.namespace,
            iid=target.iid,
            title=title,
            author=next(iter(people["AUTHORED"]), None),
            assignees=tuple(people["ASSIGNED"]),
            reviewers=tuple(people["REVIEWS"]),
            closes=self._issue_refs(self._targets("CLOSES", source=key)),
            changed_files_total_exact=True,  # not stored, as in Kùzu
        )

    def issue(self, key: str) -> IssueData | None:
        saved = self._saved(key, EntityKind.ISSUE)
        target = parse_key(key)
        if saved is None or target is None:
            return None
        data, title = saved
        assert isinstance(data, IssueData)
        people = self._people_of(key)
        epics = self._pairs(self._targets("PART_OF", source=key, kind=EntityKind.EPIC))
        return replace(
            data,
            project=target.namespace,
            iid=target.iid,
            title=title,
            author=next(iter(people["AUTHORED"]), None),
            assignees=tuple(people["ASSIGNED"]),
            epic=epics[0] if epics else None,
            related_merge_requests=tuple(self._pairs(self._targets("RELATED_MR", source=key))),
        )

    def epic(self, key: str) -> EpicData | None:
        saved = self._saved(key, EntityKind.EPIC)
        target = parse_key(key)
        if saved is None or target is None:
            return None
        data, title = saved
        assert isinstance(data, EpicData)
        parents = self._pairs(self._targets("PART_OF", source=key, kind=EntityKind.EPIC))
        children = self._targets("PART_OF", target=key)
        return replace(
            data,
            group=target.namespace,
            iid=target.iid,
            title=title,
            author=Person(data.author.username) if data.author and data.author.username else None,
            parent=parents[0] if parents else None,
            child_issues=self._issue_refs([k for k in children if k.startswith("Issue:")]),
            child_epics=tuple(self._pairs([k for k in children if k.startswith("Epic:")])),
        )

    def merge_requests_closing(self, issue_key: str) -> list[Entity]:
        closing = self._targets("CLOSES", target=issue_key)
        return sorted(self._store.get_entities(closing).values(), key=lambda e: e.key)

    def changed_by(self, file_key: str, limit: int) -> list[tuple[Entity, str, datetime | None]]:
        if limit <= 0:
            return []
        found = self._latest_first(self._targets("CHANGES", target=file_key))[:limit]
        entities = self._store.get_entities(found)
        facts = self._facts(found)
        return [
            (entities[k], facts.get(k, ("", None, None))[0], facts.get(k, ("", None, None))[1]) for k in found
        ]

    def changed_symbols(self, mr_key: str) -> list[str]:
        return sorted(k for k in self._targets("CHANGES", source=mr_key) if k.startswith("Symbol:"))

    def related_edges(self, keys: Collection[str], limit: int) -> list[Step]:
        asked = sorted(set(keys))
        if (
            not asked
            or limit <= 0
            or not self._store._rows("SELECT 1 FROM gitlab_nodes WHERE data IS NOT NULL LIMIT 1")
        ):
            return []
        rows = self._store._rows(
            "SELECT rel, source, target FROM gitlab_edges WHERE source = ANY(%(k)s) OR target = ANY(%(k)s)",
            {"k": asked},
        )
        pairs: dict[str, list[tuple[str, str]]] = {}
        for rel, source, target in rows:
            pairs.setdefault(str(rel), []).append((str(source), str(target)))
        wanted = set(asked)
        found: dict[str, tuple[int, Step]] = {}

        def add(steps: Sequence[Step]) -> None:
            for step in steps[:limit]:
                if step.end not in wanted and step.end not in found:
                    found[step.end] = (_rank(step.end), step)

        def edges(rel: str, label: str, *, forward: bool) -> list[Step]:
            return [
                Step(a if forward else b, rel, b if forward else a, forward)
                for a, b in pairs.get(rel, [])
                if (a if forward else b) in wanted and (a if forward else b).startswith(f"{label}:")
            ]

        mrs = edges("CLOSES", "MergeRequest", forward=True) + edges("CHANGES", "MergeRequest", forward=True)
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
        return [step for _, step in ordered][:limit]

    # -- helpers ----------------------------------------------------------------------

    def _targets(
        self,
        rel: str,
        *,
        source: str | None = None,
        target: str | None = None,
        kind: EntityKind | None = None,
    ) -> list[str]:
        given, other = ("source", "target") if source is not None else ("target", "source")
        rows = self._store._rows(
            f"SELECT DISTINCT g.{other} FROM gitlab_edges g JOIN entities e ON e.key = g.{other} "
            f"WHERE g.rel = %(rel)s AND g.{given} = %(key)s "
            "AND (%(kind)s::text IS NULL OR e.kind = %(kind)s) "
            f"ORDER BY g.{other}",
            {
                "rel": rel,
                "key": source if source is not None else target,
                "kind": kind.value if kind else None,
            },
        )
        return [str(r[0]) for r in rows]

    def _facts(self, keys: Collection[str]) -> dict[str, tuple[str, datetime | None, datetime | None]]:
        """key -> (GitLab's state, merged_at, updated_at)."""
        if not keys:
            return {}
        rows = self._store._rows(
            "SELECT key, gl_state, merged_at, updated_at FROM gitlab_nodes WHERE key = ANY(%s)", (list(keys),)
        )
        return {str(r[0]): (str(r[1] or ""), utc(r[2]), utc(r[3])) for r in rows}

    def _pairs(self, keys: Sequence[str]) -> list[tuple[str, int]]:
        return [(t.namespace, t.iid) for k in keys if (t := parse_key(k)) is not None]

    def _issue_refs(self, keys: Sequence[str]) -> tuple[IssueRefData, ...]:
        entities, facts = self._store.get_entities(keys), self._facts(keys)
        return tuple(
            IssueRefData(
                t.namespace,
                t.iid,
                entities[k].title if k in entities else "",
                facts.get(k, ("", None, None))[0],
            )
            for k in keys
            if (t := parse_key(k)) is not None
        )

    def _people_of(self, key: str) -> dict[str, list[Person]]:
        rows = self._store._rows(
            "SELECT g.rel, p.username, p.name, p.web_url FROM gitlab_edges g "
            "JOIN gitlab_people p ON p.key = g.source "
            "WHERE g.target = %s AND g.rel = ANY(%s) ORDER BY p.username",
            (key, list(PEOPLE_RELS)),
        )
        people: dict[str, list[Person]] = {rel: [] for rel in PEOPLE_RELS}
        for rel, username, name, web_url in rows:
            people[str(rel)].append(Person(str(username), str(name or ""), str(web_url or "")))
        return people

    def _latest_first(self, keys: Collection[str]) -> list[str]:
        """MR keys by merged_at, then updated_at, newest first (never merged last), then key."""
        facts = self._facts(keys)

        def stamp(value: datetime | None) -> float:
            return -value.timestamp() if value is not None else float("inf")

        return sorted(
            keys,
            key=lambda k: (
                stamp(facts.get(k, ("", None, None))[1]),
                stamp(facts.get(k, ("", None, None))[2]),
                k,
            ),
        )
