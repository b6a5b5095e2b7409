"""Entities, ABOUT edges and the edges between memories in PostgreSQL.

A part of ``PostgresGraphStore`` (``postgres_store.py``) over its connection part: the
``EntityGraph`` and ``MemoryLinks`` ports over tables ``entities``, ``about``, ``links``
(RELATES) and ``next_links`` (NEXT), each edge table keyed by its ends (and kind) and indexed
from its other end, with foreign keys that drop a memory's edges with it. Graph expansion
(``neighbours``) reads only the edges of the asked memories and the memberships of their
entities that are no hub, in one query, and walks them as the other stores do
(``adapters/graph_cache.py``): no copy of the graph is kept in the process, since other daemons
write to the same tables.

Entities have owners (schema 15, docs/team.md): each read shows a role the rows it is shown
(``seen_entity``) as it is shown them (``shown_columns``), and each write changes only the rows
``core/entity_owners.py`` lets it change: every write the writer's own (``write_entities``), a
memory others see the team's and those it publishes (``link_about``).

A row written by hand is read within graphmem's bounds (``record_rows.py``): an entity or a link of
a kind graphmem does not know is left out (logged), and a title is read no longer than
``MAX_TITLE_CHARS``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from graphmem.adapters.graph_cache import ENTITY_FANOUT, GraphCache
from graphmem.adapters.postgres_connection import PostgresConnection
from graphmem.adapters.postgres_rows import utc
from graphmem.adapters.record_rows import read_kind
from graphmem.core.models import Entity, EntityKind, Link, LinkKind
from graphmem.core.ports import Neighbour

# The entities graphmem_remembered() and graphmem_move_about() answer for (schema 10): code, what
# a scan keeps or moves.
CODE_KINDS = frozenset({EntityKind.FILE, EntityKind.SYMBOL, EntityKind.EXTERNAL_MODULE})

_ENTITY = "key, kind, name, project, title"
_LINK_KINDS = sorted(kind.value for kind in LinkKind)
# GitLab's titles end at 255 characters, a person's name sooner: a longer title was written by hand.
MAX_TITLE_CHARS = 1024


def seen_entity(alias: str) -> str:
    """The condition that the role is shown the ``entities`` row ``alias`` (schema 15): the
    team's (no owner), its own, and those a memory it sees is about (``about``'s row-level
    security decides which links it sees); an administrator (row-level security not applied)
    every one. An entity only another person's global memories name is theirs: its name, title
    or path is of their memory. Every read of entities, and of the GitLab rows that go with them
    (``postgres_gitlab.py``), applies it."""
    return (
        f"({alias}.owner IS NULL OR {alias}.owner = current_user::text "
        f"OR EXISTS (SELECT FROM about WHERE about.entity_key = {alias}.key) "
        "OR NOT row_security_active('memories'))"
    )


SEEN_ENTITY = seen_entity("e")
# The stored entities ``e`` any write of the role changes (``core.entity_owners.changes`` of a
# write not shared): its own; never the team's row nor another person's private one.
CHANGED_BY_WRITER = "e.owner = current_user::text"
# The stored entities ``e`` the role's daemon enriches (``core.gitlab_edits.writes_on``): the
# team's and its own, never a row another person owns, whether the role is shown it or not.
OWNED_BY_WRITER = "(e.owner IS NULL OR e.owner = current_user::text)"


def shown_project(alias: str) -> str:
    """The ``project`` of the ``entities`` row ``alias`` as the role is shown it
    (``core.entity_owners``): none of another person's private row, shown through a memory of the
    role's own (its project is where its owner's memory was written); an administrator's as
    stored. Every read of entities applies it, as it applies ``seen_entity``."""
    own = f"{alias}.owner IS NULL OR {alias}.owner = current_user::text"
    return f"CASE WHEN {own} OR NOT row_security_active('memories') THEN {alias}.project END"


def shown_columns(alias: str) -> str:
    """The columns of ``_ENTITY`` of the ``entities`` row ``alias`` as the role is shown them."""
    title = f"left({alias}.title, {MAX_TITLE_CHARS})"
    return f"{alias}.key, {alias}.kind, {alias}.name, {shown_project(alias)}, {title}"


SHOWN = shown_columns("e")
# A memory others see (a project one, a team-wide global one): one naming an entity changes it
# and makes it the team's (``link_about``).
SEEN_BY_OTHERS = "(m.scope <> 'global' OR m.owner IS NULL)"
# A memory written or confirmed later than it was (``update_memory``): each of its links to a
# symbol records the symbol's body of now (``about_bodies``).
RECORD_BODIES = (
    "UPDATE about a SET body_hash = s.body_hash FROM code_symbols s, memories m "
    "WHERE a.memory_id = %(id)s AND s.key = a.entity_key AND m.id = a.memory_id "
    "AND m.updated_at < %(updated_at)s AND a.body_hash IS DISTINCT FROM s.body_hash"
)


def write_entities(db: PostgresConnection, entities: Sequence[Entity]) -> None:
    """Add ``entities``, or update the stored ones every write of this role changes
    (``CHANGED_BY_WRITER``): its own take the new name and project, and the title unless it is
    empty; the team's and another person's private ones are left as they are, changed only by
    a memory others see (``link_about``, which knows the memory). A new one is the writer's
    until such a memory names it. A memory, an edit, an import and an ``enrich`` request all
    write their entities here, knowing nothing of who sees the memory."""
    rows = {
        e.key: {"key": e.key, "kind": e.kind.value, "name": e.name, "project": e.project, "title": e.title}
        for e in entities
    }
    db.many(
        f"INSERT INTO entities AS e ({_ENTITY}, owner) "
        "VALUES (%(key)s, %(kind)s, %(name)s, %(project)s, %(title)s, current_user) "
        "ON CONFLICT (key) DO UPDATE SET kind = EXCLUDED.kind, name = EXCLUDED.name, "
        "project = EXCLUDED.project, "
        "title = CASE WHEN EXCLUDED.title = '' THEN e.title ELSE EXCLUDED.title END "
        f"WHERE {CHANGED_BY_WRITER}",
        sorted(rows.values(), key=lambda row: str(row["key"])),  # one lock order: no deadlock
    )


def _entity(row: Sequence[object]) -> Entity | None:
    """The entity of a row of ``SHOWN``; None for a kind graphmem does not know."""
    key, kind, name, project, title = row
    known = read_kind(EntityKind, kind, key)
    return None if known is None else Entity(str(key), known, str(name or key), project, str(title or ""))  # type: ignore[arg-type]


def _entities(rows: Iterable[Sequence[object]]) -> list[Entity]:
    return [entity for entity in map(_entity, rows) if entity is not None]


def _links(rows: Iterable[Sequence[object]]) -> list[Link]:
    """The links of rows of (source, target, kind, created_at) whose kind graphmem knows."""
    found = []
    for source, target, kind, created_at in rows:
        known = read_kind(LinkKind, kind, f"{source} -> {target}")
        at = utc(created_at)  # type: ignore[arg-type]
        if known is not None and at is not None:
            found.append(Link(str(source), str(target), known, at))
    return found


class PostgresGraph:
    """The entity and edge parts of the PostgreSQL store (see the module doc)."""

    def __init__(self, db: PostgresConnection) -> None:
        self._db = db

    # -- entities -----------------------------------------------------------------------

    def upsert_entities(self, entities: Sequence[Entity]) -> None:
        write_entities(self._db, entities)

    def get_entities(self, keys: Collection[str]) -> dict[str, Entity]:
        if not keys:
            return {}
        rows = self._db.rows(
            f"SELECT {SHOWN} FROM entities e WHERE key = ANY(%s) AND {SEEN_ENTITY}", (list(keys),)
        )
        found = {entity.key: entity for entity in _entities(rows)}
        return {key: found[key] for key in dict.fromkeys(keys) if key in found}

    def find_entities(self, name: str, kinds: Collection[EntityKind]) -> list[Entity]:
        rows = self._db.rows(
            f"SELECT {SHOWN} FROM entities e WHERE kind = ANY(%(kinds)s) "
            f"AND (name = %(name)s OR right(key, length(%(name)s) + 2) = '::' || %(name)s) AND {SEEN_ENTITY} "
            "ORDER BY key",
            {"kinds": [k.value for k in kinds], "name": name},
        )
        return _entities(rows)

    def all_entities(self) -> Iterable[Entity]:
        rows = self._db.rows(f"SELECT {SHOWN} FROM entities e WHERE {SEEN_ENTITY} ORDER BY key")
        return _entities(rows)

    def link_about(self, pairs: Sequence[tuple[str, Entity]]) -> None:
        rows = sorted({(memory_id, entity.key) for memory_id, entity in pairs})
        self._db.many(  # a new link to a symbol records its body of now; one there keeps its own
            "INSERT INTO about (memory_id, entity_key, body_hash) SELECT m.id, e.key, "
            "(SELECT s.body_hash FROM code_symbols s WHERE s.key = e.key) FROM memories m, entities e "
            "WHERE m.id = %(m)s AND e.key = %(e)s ON CONFLICT DO NOTHING",
            [{"m": m, "e": e} for m, e in rows],
        )
        if rows:
            self._publish(pairs)

    def _publish(self, pairs: Sequence[tuple[str, Entity]]) -> None:
        """Give each entity of ``pairs`` that a memory others see names what that memory says of
        it (``core.entity_owners.changes`` of a shared write): its kind, name and project, and its
        title unless empty; one still private becomes the team's. A private memory's entity is
        left as ``write_entities`` left it. A row the memory's words already hold is not
        written again."""
        named = sorted(pairs, key=lambda pair: (pair[1].key, pair[0]))
        self._db.run(
            "UPDATE entities e SET owner = NULL, kind = w.kind, name = w.name, project = w.project, "
            "title = CASE WHEN w.title = '' THEN e.title ELSE w.title END "
            "FROM (SELECT DISTINCT ON (w.key) w.* FROM unnest(%(m)s::text[], %(k)s::text[], "
            "%(kind)s::text[], %(n)s::text[], %(p)s::text[], %(t)s::text[]) "
            "AS w(memory_id, key, kind, name, project, title) JOIN memories m ON m.id = w.memory_id "
            f"WHERE {SEEN_BY_OTHERS} ORDER BY w.key, w.memory_id) AS w "
            "WHERE e.key = w.key AND (e.owner IS NOT NULL OR e.kind IS DISTINCT FROM w.kind "
            "OR e.name IS DISTINCT FROM w.name OR e.project IS DISTINCT FROM w.project "
            "OR (w.title <> '' AND e.title IS DISTINCT FROM w.title))",
            {
                "m": [memory_id for memory_id, _ in named],
                "k": [e.key for _, e in named],
                "kind": [e.kind.value for _, e in named],
                "n": [e.name for _, e in named],
                "p": [e.project for _, e in named],
                "t": [e.title for _, e in named],
            },
        )

    def about(self, memory_ids: Collection[str]) -> dict[str, list[Entity]]:
        if not memory_ids:
            return {}
        rows = self._db.rows(
            f"SELECT a.memory_id, {SHOWN} "
            "FROM about a JOIN entities e ON e.key = a.entity_key WHERE a.memory_id = ANY(%s) "
            "ORDER BY a.memory_id, e.key",
            (list(memory_ids),),
        )
        found: dict[str, list[Entity]] = {}
        for row in rows:
            entity = _entity(row[1:])
            if entity is not None:
                found.setdefault(str(row[0]), []).append(entity)
        return found

    def about_bodies(self, memory_ids: Collection[str]) -> dict[str, dict[str, str]]:
        if not memory_ids:
            return {}
        rows = self._db.rows(
            "SELECT memory_id, entity_key, body_hash FROM about "
            "WHERE memory_id = ANY(%s) AND body_hash IS NOT NULL",
            (list(memory_ids),),
        )
        found: dict[str, dict[str, str]] = {}
        for memory_id, key, body in rows:
            found.setdefault(str(memory_id), {})[str(key)] = str(body)
        return found

    def memories_about(self, entity_keys: Collection[str]) -> dict[str, list[str]]:
        if not entity_keys:
            return {}
        rows = self._db.rows(
            "SELECT entity_key, memory_id FROM about WHERE entity_key = ANY(%s) "
            "ORDER BY entity_key, memory_id",
            (list(entity_keys),),
        )
        found: dict[str, list[str]] = {}
        for key, memory_id in rows:
            found.setdefault(str(key), []).append(str(memory_id))
        return found

    def remembered(self, keys: Collection[str]) -> set[str]:
        """The keys of ``keys`` that some memory is about. Of files, symbols and external
        modules, anyone's memories: the global memories row-level security hides from this role
        included (``graphmem_remembered()``, schemas 8 and 10), never which. What decides whether
        code nobody remembers may go: ``memories_about`` sees only this role's, and removing an
        entity takes every link to it (foreign keys). Of other entities (an MR, an issue), the
        memories this role sees only: nothing says what a hidden memory names.

        Ask it inside the transaction that removes the others: the entities are locked first (in
        key order), so a memory being linked to one meanwhile waits for that transaction, then
        stores the entity again (``upsert_entities``) instead of its link going with the removal."""
        if not keys:
            return set()
        wanted = sorted(set(keys))
        with self._db.transaction():
            self._db.rows("SELECT key FROM entities WHERE key = ANY(%s) ORDER BY key FOR UPDATE", (wanted,))
            rows = self._db.rows(
                "SELECT k FROM graphmem_remembered(%(keys)s::text[]) AS k "
                "UNION SELECT entity_key FROM about WHERE entity_key = ANY(%(keys)s)",
                {"keys": wanted},
            )
        return {str(row[0]) for row in rows}

    def move_about(self, kind: EntityKind, old: str, new: str) -> list[str]:
        """Make the memories about entity ``old`` about ``new`` instead (both of ``kind``, ``new``
        stored); the ids of the memories moved that this role sees. Of a file, symbol or external
        module, another person's global memories (row-level security hides them) move too,
        through ``graphmem_move_about()`` (schemas 9, 10 and 14: each link with the body it
        records), which counts only the links this role sees: their links follow moved code
        whoever's scan sees it move. Of other entities,
        the links this role sees only."""
        if old == new:
            return []
        with self._db.transaction():
            ids = [
                str(row[0])
                for row in self._db.rows(
                    "SELECT a.memory_id FROM about a JOIN entities e ON e.key = a.entity_key "
                    "WHERE a.entity_key = %s AND e.kind = %s ORDER BY a.memory_id",
                    (old, kind.value),
                )
            ]
            if kind in CODE_KINDS:
                self._db.rows("SELECT graphmem_move_about(%s, %s, %s)", (old, new, kind.value))
            elif ids:
                self._db.run(
                    "INSERT INTO about (memory_id, entity_key) SELECT memory_id, %(new)s FROM about "
                    "WHERE entity_key = %(old)s AND EXISTS (SELECT FROM entities n WHERE n.key = %(new)s "
                    "AND n.kind = %(kind)s) ON CONFLICT DO NOTHING",
                    {"old": old, "new": new, "kind": kind.value},
                )
                self._db.run(
                    "DELETE FROM about WHERE entity_key = %(old)s AND EXISTS (SELECT FROM entities n "
                    "WHERE n.key = %(new)s AND n.kind = %(kind)s)",
                    {"old": old, "new": new, "kind": kind.value},
                )
        return ids

    # -- RELATES and NEXT -----------------------------------------------------------------

    def add_links(self, links: Sequence[Link]) -> None:
        rows = {
            (link.source, link.target, link.kind.value): {
                "s": link.source,
                "t": link.target,
                "k": link.kind.value,
                "c": utc(link.created_at),
            }
            for link in reversed(links)  # the first of duplicates wins, as a merge keeps it
        }
        self._db.many(
            "INSERT INTO links (source, target, kind, created_at) SELECT a.id, b.id, %(k)s, %(c)s "
            "FROM memories a, memories b WHERE a.id = %(s)s AND b.id = %(t)s ON CONFLICT DO NOTHING",
            [rows[key] for key in sorted(rows)],
        )

    def remove_link(self, source: str, target: str, kind: LinkKind) -> bool:
        return (
            self._db.run(
                "DELETE FROM links WHERE source = %s AND target = %s AND kind = %s",
                (source, target, kind.value),
            )
            > 0
        )

    def links(self, memory_ids: Collection[str] | None = None) -> list[Link]:
        select = "SELECT source, target, kind, created_at FROM links"
        if memory_ids is None:
            rows = self._db.rows(f"{select} ORDER BY created_at, seq")
        else:
            rows = self._db.rows(
                f"{select} WHERE source = ANY(%(ids)s) OR target = ANY(%(ids)s) ORDER BY created_at, seq",
                {"ids": list(memory_ids)},
            )
        return _links(rows)

    def add_next(self, pairs: Sequence[tuple[str, str]]) -> None:
        self._db.many(
            "INSERT INTO next_links (source, target) SELECT a.id, b.id FROM memories a, memories b "
            "WHERE a.id = %(s)s AND b.id = %(t)s ON CONFLICT DO NOTHING",
            [{"s": s, "t": t} for s, t in sorted(set(pairs))],
        )

    def next_pairs(self, memory_ids: Collection[str] | None = None) -> list[tuple[str, str]]:
        if memory_ids is None:
            rows = self._db.rows("SELECT source, target FROM next_links ORDER BY source, target")
        else:
            rows = self._db.rows(
                "SELECT source, target FROM next_links WHERE source = ANY(%s) ORDER BY source, target",
                (list(memory_ids),),
            )
        return [(str(s), str(t)) for s, t in rows]

    def neighbours(self, memory_ids: Collection[str], limit: int) -> list[Neighbour]:
        if not memory_ids or limit <= 0:
            return []
        rows = self._db.rows(
            # One statement for the three kinds of edge (a round trip each cost more than reading them).
            "SELECT 0, source, target, NULL, NULL::timestamptz, NULL::bigint FROM next_links "
            "WHERE source = ANY(%(ids)s) OR target = ANY(%(ids)s) "
            "UNION ALL SELECT 1, source, target, kind, created_at, seq FROM links "
            "WHERE (source = ANY(%(ids)s) OR target = ANY(%(ids)s)) AND kind = ANY(%(kinds)s) "
            # Every member of the asked memories' entities, unless the entity is a hub.
            "UNION ALL SELECT 2, a.memory_id, a.entity_key, NULL, NULL, NULL FROM about a JOIN ("
            "SELECT b.entity_key FROM about b WHERE b.entity_key IN "
            "(SELECT entity_key FROM about WHERE memory_id = ANY(%(ids)s)) "
            "GROUP BY b.entity_key HAVING count(*) <= %(fanout)s) AS small USING (entity_key) "
            "ORDER BY 1, 5, 6",
            {"ids": list(memory_ids), "fanout": ENTITY_FANOUT, "kinds": _LINK_KINDS},
        )
        edges = (
            [(str(m), str(k)) for tag, m, k, *_ in rows if tag == 2],
            [(str(s), str(t), str(k)) for tag, s, t, k, *_ in rows if tag == 1],
            [(str(s), str(t)) for tag, s, t, *_ in rows if tag == 0],
        )
        return GraphCache(lambda: edges).neighbours(memory_ids, limit)
