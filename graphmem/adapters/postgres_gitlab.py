"""The GitLab graph (``core.gitlab_ports.GitLabGraph``) in a team's PostgreSQL store: MRs, issues, epics
and people enriched once for the whole team.

MRs, issues, epics and people are rows of ``entities`` (memories are about them; a ref seen in
a memory creates one). What enrichment adds is in ``gitlab_nodes`` (the queue's state, and
GitLab's answer as JSON with the facts recall sorts by), people in ``gitlab_people``, and the
edges (AUTHORED, ASSIGNED, REVIEWS, CHANGES, CLOSES, PART_OF, RELATED_MR) in ``gitlab_edges``;
all go with their entity (foreign keys). What an answer writes is ``core/gitlab_edits.py``'s
edit, applied in one transaction; GitLab's answer is read back from its JSON with what the
graph holds besides (``core/gitlab_reads.py``). The rules are every GitLab graph's, held by
``tests/unit/adapters/test_gitlab_graph_contract.py``.

Every read shows a role only the rows of entities it is shown (``core/gitlab_reads.py``'s rule,
``postgres_graph.seen_entity``: the team's, its own, those of memories it sees): a queue row
or GitLab's answer with its entity, an edge when both its ends are. Each statement filters
itself, so a limit counts only what the role sees and no second round trip asks which keys it
may see. An answer stores its edges whoever's entities they reach (an edge from the team's MR
to an issue only Bob's memory names is kept, and shown to everyone once the issue is the
team's).

A role's daemon enriches only the rows it owns (``core/gitlab_edits.py``; ``OWNED_BY_WRITER``:
the team's and its own, never another person's private row, even one it is shown through a
memory of its own): only those are ``due`` or in ``all_rows`` (``enrich --all``) and counted in its
status (``counts``, ``waiting``: a row it is shown that another person owns waits for that
person's daemon), a row read says whether it is one (``EnrichmentRow.owned``, for
``get_context``'s note), an attempt is marked and an answer's facts saved only on those, and a
ref a person asks to enrich (``queue``) renames only their own; what an answer creates is owned
like the entity it is about, and what it makes the team's loses its owner (``owner_after``,
``writes_on``: who owns a named row is read, whoever's it is, before the answer's writes).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from pydantic import TypeAdapter, ValidationError

from graphmem.adapters.postgres_graph import (
    OWNED_BY_WRITER,
    SEEN_ENTITY,
    seen_entity,
    shown_project,
    write_entities,
)
from graphmem.adapters.postgres_rows import utc
from graphmem.adapters.postgres_store import PostgresGraphStore
from graphmem.adapters.record_rows import not_understood, read_enum
from graphmem.core import keys
from graphmem.core.enrichment import Attempt, EnrichmentRow, EnrichState, parse_key
from graphmem.core.gitlab import EpicData, IssueData, IssueRefData, MergeRequestData, Person
from graphmem.core.gitlab_edits import (
    ANSWERED_KINDS,
    PEOPLE_RELS,
    EdgeScope,
    GitLabData,
    GitLabEdit,
    Held,
    NewNode,
    SavedFacts,
    owner_after,
    writes_on,
)
from graphmem.core.gitlab_reads import Stamps, latest_first, read_back, related_steps
from graphmem.core.models import Entity, EntityKind, Step

KINDS = (EntityKind.MERGE_REQUEST, EntityKind.ISSUE, EntityKind.EPIC)
_KIND_VALUES = [k.value for k in KINDS]
# GitLab's answer as ``gitlab_nodes.data`` holds it (JSON).
DATA: dict[EntityKind, TypeAdapter[Any]] = {
    EntityKind.MERGE_REQUEST: TypeAdapter(MergeRequestData),
    EntityKind.ISSUE: TypeAdapter(IssueData),
    EntityKind.EPIC: TypeAdapter(EpicData),
}
# States fetched again once their next attempt has come.
_REFETCHED = [
    s.value for s in (EnrichState.OK, EnrichState.ERROR, EnrichState.MISSING, EnrichState.FORBIDDEN)
]
NODE = "n.state, n.error, n.attempts, n.fetched_at, n.next_attempt, n.hops, n.updated_at"
# Whether a row is due (besides its time): never fetched, pending, fetched before, or linked
# while a memory is about it.
DUE = (
    "(n.state IS NULL OR n.state = 'pending' OR n.state = ANY(%(refetched)s) "
    "OR (n.state = 'linked' AND EXISTS (SELECT 1 FROM about a WHERE a.entity_key = e.key)))"
)
# The GitLab edges ``g`` with their two ends (``src``, ``dst``), and the condition that the role
# sees the edge: both ends (``core.gitlab_reads.seen_edges``).
EDGES = "gitlab_edges g JOIN entities src ON src.key = g.source JOIN entities dst ON dst.key = g.target"
SEEN_EDGE = f"{seen_entity('src')} AND {seen_entity('dst')}"
# A node found by an answer (core.gitlab_edits.Held.found): a GitLab person or a file
# (ANSWERED_KINDS), or an MR, issue or epic an answer created (queued through another node: hops > 0).
_ANSWERED = ", ".join(f"'{kind.value}'" for kind in sorted(ANSWERED_KINDS))  # enum values, no input
FOUND = f"(e.kind IN ({_ANSWERED}) OR coalesce(n.hops, 0) > 0)"
# The MRs, issues and epics ``e`` (with their queue rows ``n``) the role's daemon enriches, which
# its status counts: the team's and its own (all shown to it), not another person's it is shown.
_ENRICHED_HERE = (
    "entities e LEFT JOIN gitlab_nodes n ON n.key = e.key "
    f"WHERE e.kind = ANY(%(kinds)s) AND {OWNED_BY_WRITER}"
)


def _row(row: Sequence[Any]) -> EnrichmentRow:
    key, kind, name, project, owned, state, error, attempts, fetched_at, next_attempt, hops, updated_at = row
    return EnrichmentRow(
        key=key,
        kind=EntityKind(kind),
        name=name or key,
        project=project,
        # One graphmem does not write (by hand) is fetched again, as one never fetched.
        state=read_enum(EnrichState, state, EnrichState.PENDING, key) if state else EnrichState.PENDING,
        attempts=int(attempts or 0),
        fetched_at=utc(fetched_at),
        next_attempt=utc(next_attempt),
        updated_at=utc(updated_at),
        error=error,
        hops=int(hops or 0),
        owned=bool(owned),
    )


class PostgresGitLabGraph:
    """The GitLab part of the PostgreSQL store (see the module doc)."""

    def __init__(self, store: PostgresGraphStore) -> None:
        self._store = store

    # -- the queue ------------------------------------------------------------------

    def _rows(self, where: str, params: dict[str, Any], tail: str = "") -> list[EnrichmentRow]:
        rows = self._store.db.rows(
            f"SELECT e.key, e.kind, e.name, {shown_project('e')}, {OWNED_BY_WRITER}, {NODE} FROM entities e "
            f"LEFT JOIN gitlab_nodes n ON n.key = e.key WHERE e.kind = ANY(%(kinds)s) AND {SEEN_ENTITY} "
            f"AND {where} {tail}",
            {"kinds": _KIND_VALUES, "refetched": _REFETCHED, **params},
        )
        return [_row(r) for r in rows]

    def rows(self, keys: Collection[str]) -> dict[str, EnrichmentRow]:
        if not keys:
            return {}
        return {r.key: r for r in self._rows("e.key = ANY(%(keys)s)", {"keys": list(keys)})}

    def all_rows(self) -> list[EnrichmentRow]:
        """Every row this role's daemon enriches (``enrich --all``): the team's and its own only."""
        return self._rows(OWNED_BY_WRITER, {}, "ORDER BY array_position(%(kinds)s, e.kind), e.key")

    def due(self, now: datetime, limit: int) -> list[EnrichmentRow]:
        """The rows due that this role's daemon fetches: the team's and its own only."""
        if limit <= 0:
            return []
        found: list[EnrichmentRow] = []
        for kind in KINDS:
            found += self._rows(
                f"e.kind = %(kind)s AND {OWNED_BY_WRITER} AND {DUE} "
                "AND (n.next_attempt IS NULL OR n.next_attempt <= %(now)s)",
                {"kind": kind.value, "now": utc(now), "limit": limit},
                "ORDER BY n.state IS NOT NULL, coalesce(n.next_attempt, '-infinity'), e.key LIMIT %(limit)s",
            )
        never = [r for r in found if r.fetched_at is None]
        return (never + [r for r in found if r.fetched_at is not None])[:limit]

    def counts(self) -> dict[str, int]:
        """How many of the rows this role's daemon enriches (``due``'s) are in each state."""
        rows = self._store.db.rows(
            f"SELECT coalesce(n.state, 'pending'), count(*) FROM {_ENRICHED_HERE} GROUP BY 1",
            {"kinds": _KIND_VALUES},
        )
        return {str(state): int(n) for state, n in rows}

    def waiting(self) -> int:
        """How many of the rows this role's daemon enriches it has still to fetch: never fetched,
        failed and waiting for the retry, or linked while a memory it sees is about it."""
        rows = self._store.db.rows(
            f"SELECT count(*) FROM {_ENRICHED_HERE} "
            "AND (n.state IS NULL OR n.state IN ('pending', 'error') "
            "OR (n.state = 'linked' AND EXISTS (SELECT 1 FROM about a WHERE a.entity_key = e.key)))",
            {"kinds": _KIND_VALUES},
        )
        return int(rows[0][0])

    def mark(self, key: str, attempt: Attempt) -> None:
        self._store.db.run(  # on the team's and the role's own: another's private one is left as it is
            "INSERT INTO gitlab_nodes (key, state, error, attempts, next_attempt, fetched_at) "
            "SELECT e.key, %(state)s, %(error)s, %(attempts)s, %(next)s, %(fetched)s FROM entities e "
            f"WHERE e.key = %(key)s AND {OWNED_BY_WRITER} "
            "ON CONFLICT (key) DO UPDATE SET state = EXCLUDED.state, error = EXCLUDED.error, "
            "attempts = EXCLUDED.attempts, next_attempt = EXCLUDED.next_attempt, "
            "fetched_at = coalesce(EXCLUDED.fetched_at, gitlab_nodes.fetched_at)",
            {
                "key": key,
                "state": attempt.state.value,
                "error": attempt.error,
                "attempts": attempt.attempts,
                "next": utc(attempt.next_attempt),
                "fetched": utc(attempt.fetched_at),
            },
        )

    def queue(self, entities: Sequence[Entity]) -> None:
        """The refs a person asks to enrich, written as ``upsert_entities`` writes them (a request
        is no memory others see): a new one is theirs, their own take the new name and project;
        the team's and another's private one are left as they are (``core.entity_owners``)."""
        write_entities(self._store.db, entities)

    # -- storing what GitLab said (core/gitlab_edits.py decided what) -------------------

    def apply(self, edit: GitLabEdit) -> None:
        with self._store.transaction():
            if not self._save_facts(edit.facts):
                return
            for scope in edit.drop:
                end = "target" if scope.into else "source"
                self._store.db.run(
                    f"DELETE FROM gitlab_edges WHERE rel = %s AND {end} = %s", (scope.rel, scope.key)
                )
            named = [keys.person_key(username=p.username) for p in edit.people] + [n.key for n in edit.nodes]
            held = self._held(edit.facts.key, named)
            asked = held[edit.facts.key].owner  # its facts were just saved: it is there
            owners = {key: owner_after(asked, held.get(key)) for key in named}
            written = {key for key in named if writes_on(held.get(key), owners[key])}
            self._put_people(edit.people, owners, written)
            self._add_nodes(edit.nodes, held, owners, written)
            self._store.db.many(
                "INSERT INTO gitlab_edges (rel, source, target) "
                "SELECT %(rel)s, a.key, b.key FROM entities a, entities b "
                "WHERE a.key = %(s)s AND b.key = %(t)s ON CONFLICT DO NOTHING",
                [{"rel": e.rel, "s": e.source, "t": e.target} for e in edit.edges],
            )

    def _save_facts(self, facts: SavedFacts) -> bool:
        """Save GitLab's facts of the asked entity when it is the team's or the role's own; else
        (absent, another person's private row) nothing of the answer is stored."""
        rows = self._store.db.rows(
            f"SELECT e.kind FROM entities e WHERE e.key = %s AND e.kind = ANY(%s) AND {OWNED_BY_WRITER}",
            (facts.key, _KIND_VALUES),
        )
        if not rows:
            return False
        kind = EntityKind(rows[0][0])
        data = facts.data
        self._store.db.run("UPDATE entities SET title = %s WHERE key = %s", (data.title, facts.key))
        self._store.db.run(
            "INSERT INTO gitlab_nodes (key, state, error, attempts, fetched_at, next_attempt, data, "
            "gl_state, updated_at, merged_at) VALUES (%(key)s, 'ok', NULL, 0, %(fetched)s, %(next)s, "
            "%(data)s::jsonb, %(gl_state)s, %(updated)s, %(merged)s) "
            "ON CONFLICT (key) DO UPDATE SET state = 'ok', error = NULL, "
            "attempts = 0, fetched_at = EXCLUDED.fetched_at, next_attempt = EXCLUDED.next_attempt, "
            "data = EXCLUDED.data, gl_state = EXCLUDED.gl_state, updated_at = EXCLUDED.updated_at, "
            "merged_at = EXCLUDED.merged_at",
            {
                "key": facts.key,
                "fetched": utc(facts.fetched_at),
                "next": utc(facts.next_attempt),
                "data": DATA[kind].dump_json(data).decode(),
                "gl_state": data.state,
                "updated": utc(data.updated_at),
                "merged": utc(data.merged_at if isinstance(data, MergeRequestData) else None),
            },
        )
        return True

    def _held(self, asked: str, named: Sequence[str]) -> dict[str, Held]:
        """The asked entity and the named ones the store holds, whoever's (``Held``)."""
        rows = self._store.db.rows(
            f"SELECT e.key, e.owner, {FOUND}, e.owner = current_user::text FROM entities e "
            "LEFT JOIN gitlab_nodes n ON n.key = e.key WHERE e.key = ANY(%s)",
            ([asked, *named],),
        )
        return {str(key): Held(owner, bool(found), bool(own)) for key, owner, found, own in rows}

    def _put_people(self, people: Sequence[Person], owners: dict[str, str | None], written: set[str]) -> None:
        """The people the answer names: created owned as ``owners`` says, GitLab's name and title
        written on those in ``written``; one made the team's loses its owner, none gains one."""
        rows = [
            {"k": k, "u": p.username, "n": p.name, "w": p.web_url, "o": owners[k]}
            for p in people
            if (k := keys.person_key(username=p.username)) in written
        ]
        self._store.db.many(
            "INSERT INTO entities (key, kind, name, project, title, owner) "
            "VALUES (%(k)s, 'Person', %(u)s, NULL, %(n)s, %(o)s) "
            "ON CONFLICT (key) DO UPDATE SET name = EXCLUDED.name, title = EXCLUDED.title, "
            "owner = CASE WHEN %(o)s::text IS NULL THEN NULL ELSE entities.owner END",
            sorted(rows, key=lambda row: str(row["k"])),
        )
        self._store.db.many(
            "INSERT INTO gitlab_people (key, username, name, web_url) VALUES (%(k)s, %(u)s, %(n)s, %(w)s) "
            "ON CONFLICT (key) DO UPDATE SET username = EXCLUDED.username, name = EXCLUDED.name, "
            "web_url = EXCLUDED.web_url",
            rows,
        )

    def _add_nodes(
        self,
        nodes: Sequence[NewNode],
        held: dict[str, Held],
        owners: dict[str, str | None],
        written: set[str],
    ) -> None:
        """Nodes created when absent (``core.gitlab_edits.NewNode``), owned as ``owners`` says: an
        existing one in ``written`` keeps what it has but loses its owner when made the team's,
        an empty title takes the new one, a ``linked`` one named pending becomes pending."""
        rows = [
            {"k": n.key, "kind": n.kind.value, "name": n.name, "p": n.project, "title": n.title,
             "state": n.state, "hops": n.hops, "queue": n.queue.value if n.queue else None,
             "o": owners[n.key]}
            for n in sorted(nodes, key=lambda node: node.key)
            if n.key in written
        ]  # fmt: skip
        fresh = [r for r in rows if r["k"] not in held]
        created: set[str] = set()
        if fresh:  # only what this answer created gets a queue row (a row made meanwhile keeps its own)
            created = {
                str(key)
                for (key,) in self._store.db.rows(
                    "INSERT INTO entities (key, kind, name, project, title, owner) "
                    "SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], "
                    "%s::text[]) ON CONFLICT (key) DO NOTHING RETURNING key",
                    [[r[c] for r in fresh] for c in ("k", "kind", "name", "p", "title", "o")],
                )
            }
        self._store.db.many(
            "INSERT INTO gitlab_nodes (key, state, hops, gl_state) "
            "VALUES (%(k)s, %(queue)s, %(hops)s, %(state)s) ON CONFLICT (key) DO NOTHING",
            [r for r in rows if r["k"] in created and r["queue"] is not None],
        )
        known = [r for r in rows if r["k"] in held]
        self._store.db.many(
            "UPDATE entities SET owner = NULL WHERE key = %(k)s AND owner IS NOT NULL",
            [r for r in known if r["o"] is None],
        )
        self._store.db.many(
            "UPDATE entities SET title = %(title)s WHERE key = %(k)s AND title = ''",
            [r for r in known if r["title"]],
        )
        self._store.db.many(
            "UPDATE gitlab_nodes SET state = 'pending' WHERE key = %(k)s AND state = 'linked'",
            [r for r in known if r["queue"] == EnrichState.PENDING.value],
        )

    # -- reading ----------------------------------------------------------------------

    def entities(self, keys: Collection[str]) -> dict[str, Entity]:
        return {k: e for k, e in self._store.get_entities(keys).items() if e.kind.value in _KIND_VALUES}

    def merge_request(self, key: str) -> MergeRequestData | None:
        data = self._read(key, EntityKind.MERGE_REQUEST)
        return data if isinstance(data, MergeRequestData) else None

    def issue(self, key: str) -> IssueData | None:
        data = self._read(key, EntityKind.ISSUE)
        return data if isinstance(data, IssueData) else None

    def epic(self, key: str) -> EpicData | None:
        data = self._read(key, EntityKind.EPIC)
        return data if isinstance(data, EpicData) else None

    def merge_requests_closing(self, issue_key: str) -> list[Entity]:
        closing = self.targets(EdgeScope("CLOSES", issue_key, into=True))
        return sorted(self._store.get_entities(closing).values(), key=lambda e: e.key)

    def changed_by(self, file_key: str, limit: int) -> list[tuple[Entity, str, datetime | None]]:
        if limit <= 0:
            return []
        changing = self.targets(EdgeScope("CHANGES", file_key, into=True))
        found = latest_first(changing, self._stamps(changing))[:limit]
        entities = self._store.get_entities(found)
        facts = self._facts(found)
        return [  # one removed since the edges were read is left out
            (entities[k], facts.get(k, ("", None, None))[0], facts.get(k, ("", None, None))[1])
            for k in found
            if k in entities
        ]

    def changed_symbols(self, mr_key: str) -> list[str]:
        return sorted(k for k in self.targets(EdgeScope("CHANGES", mr_key)) if k.startswith("Symbol:"))

    def related_edges(self, keys: Collection[str], limit: int) -> list[Step]:
        asked = sorted(set(keys))
        if (
            not asked
            or limit <= 0
            or not self._store.db.rows("SELECT 1 FROM gitlab_nodes WHERE data IS NOT NULL LIMIT 1")
        ):
            return []
        rows = self._store.db.rows(
            f"SELECT g.rel, g.source, g.target FROM {EDGES} "
            f"WHERE (g.source = ANY(%(k)s) OR g.target = ANY(%(k)s)) AND {SEEN_EDGE}",
            {"k": asked},
        )
        edges = [(str(rel), str(source), str(target)) for rel, source, target in rows]
        return related_steps(edges, asked, limit, self._stamps)

    # -- helpers ----------------------------------------------------------------------

    def _read(self, key: str, kind: EntityKind) -> GitLabData | None:
        """GitLab's answer about ``key`` (its JSON) as the graph holds it now; None until saved,
        or when the role is not shown ``key``."""
        rows = self._store.db.rows(
            "SELECT n.data, e.title FROM gitlab_nodes n JOIN entities e ON e.key = n.key "
            f"WHERE n.key = %s AND e.kind = %s AND n.data IS NOT NULL AND {SEEN_ENTITY}",
            (key, kind.value),
        )
        if not rows:
            return None
        try:
            data: GitLabData = DATA[kind].validate_python(rows[0][0])
        except ValidationError:  # not an answer graphmem saved (written by hand): none saved yet
            not_understood("GitLab answer", kind.value, key, "none saved yet")
            return None
        return read_back(data, key, str(rows[0][1] or ""), self)

    def targets(self, scope: EdgeScope, kind: EntityKind | None = None) -> list[str]:
        """The other ends of the edges in ``scope`` (of ``kind``) the role sees, by key (``EdgeRows``)."""
        given, other, end = ("target", "source", "src") if scope.into else ("source", "target", "dst")
        rows = self._store.db.rows(
            f"SELECT DISTINCT g.{other} FROM {EDGES} WHERE g.rel = %(rel)s AND g.{given} = %(key)s "
            f"AND (%(kind)s::text IS NULL OR {end}.kind = %(kind)s) AND {SEEN_EDGE} ORDER BY g.{other}",
            {"rel": scope.rel, "key": scope.key, "kind": kind.value if kind else None},
        )
        return [str(r[0]) for r in rows]

    def _facts(self, keys: Collection[str]) -> dict[str, tuple[str, datetime | None, datetime | None]]:
        """key -> (GitLab's state, merged_at, updated_at), of the keys the role is shown."""
        if not keys:
            return {}
        rows = self._store.db.rows(
            "SELECT n.key, n.gl_state, n.merged_at, n.updated_at FROM gitlab_nodes n "
            f"JOIN entities e ON e.key = n.key WHERE n.key = ANY(%s) AND {SEEN_ENTITY}",
            (list(keys),),
        )
        return {str(r[0]): (str(r[1] or ""), utc(r[2]), utc(r[3])) for r in rows}

    def issue_refs(self, keys: Sequence[str]) -> tuple[IssueRefData, ...]:
        entities, facts = self._store.get_entities(keys), self._facts(keys)
        return tuple(
            IssueRefData(
                t.namespace,
                t.iid,
                entities[k].title,
                facts.get(k, ("", None, None))[0],
            )
            for k in keys
            if k in entities and (t := parse_key(k)) is not None
        )

    def people_of(self, key: str) -> dict[str, list[Person]]:
        rows = self._store.db.rows(
            f"SELECT g.rel, p.username, p.name, p.web_url FROM {EDGES} "
            f"JOIN gitlab_people p ON p.key = g.source WHERE g.target = %s AND g.rel = ANY(%s) "
            f"AND {SEEN_EDGE} ORDER BY p.username",
            (key, list(PEOPLE_RELS)),
        )
        people: dict[str, list[Person]] = {rel: [] for rel in PEOPLE_RELS}
        for rel, username, name, web_url in rows:
            people[str(rel)].append(Person(str(username), str(name or ""), str(web_url or "")))
        return people

    def _stamps(self, keys: Collection[str]) -> Stamps:
        """MR key -> (merged_at, updated_at)."""
        return {key: (merged, updated) for key, (_, merged, updated) in self._facts(keys).items()}
