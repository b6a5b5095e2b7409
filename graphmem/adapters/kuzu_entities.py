"""Entities and the ABOUT edges from memories to them, in graphmem's Kùzu store.

A part of ``KuzuGraphStore`` (``kuzu_store.py``), given the store's connection and its edge
cache: the ``EntityGraph`` port over the entity tables of ``kuzu_schema.ENTITY_TABLES``, one
query per entity kind; many keys are joined with the tables or looked up one by one as their
sizes say (``kuzu_keyed.py``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from graphmem.adapters.graph_cache import GraphCache
from graphmem.adapters.kuzu_connection import FEW_EDGE_KEYS, FEW_NODE_KEYS, KuzuConnection
from graphmem.adapters.kuzu_keyed import table_sizes
from graphmem.adapters.kuzu_rows import entity_from_row
from graphmem.adapters.kuzu_schema import CODE_COLUMNS, ENTITY_TABLES
from graphmem.core.code_moves import Body, moved_body
from graphmem.core.models import Entity, EntityKind

# The entity kinds a code pass also stores (their tables have its columns: a path).
_CODE_KINDS = frozenset(EntityKind(table) for table in CODE_COLUMNS)


class KuzuEntities:
    """Entities by kind, and which memories are about which."""

    def __init__(self, db: KuzuConnection, graph: GraphCache) -> None:
        self._db = db
        self._graph = graph  # the store's copy of the edges, kept in step with these writes
        self._sizes = table_sizes(db)

    def upsert_entities(self, entities: Sequence[Entity]) -> None:
        by_kind: dict[EntityKind, list[dict[str, Any]]] = defaultdict(list)
        for entity in entities:
            by_kind[entity.kind].append(
                {"key": entity.key, "name": entity.name, "project": entity.project, "title": entity.title}
            )
        for kind, rows in by_kind.items():
            # A file or symbol a pass stored (it has a path) keeps the name the pass gave it: a
            # symbol's is its simple name, which ``unique_symbols`` looks up, where an entity
            # names it by its qualified name (the other stores keep code apart from entities).
            name = "CASE WHEN e.path IS NULL THEN r.name ELSE e.name END" if kind in _CODE_KINDS else "r.name"
            self._db.run(
                # r.key named first: matched on the index (see kuzu_rows.ADD_LINKS)
                f"UNWIND $rows AS r WITH r, r.key AS k MERGE (e:{kind.value} {{key: k}}) "
                f"SET e.name = {name}, e.project = r.project, "
                "e.title = CASE WHEN r.title = '' THEN coalesce(e.title, '') ELSE r.title END",
                {"rows": rows},
            )

    def get_entities(self, keys: Collection[str]) -> dict[str, Entity]:
        found: dict[str, Entity] = {}
        for label, group in _by_table(keys).items():
            query = f"MATCH (e:{label} {{key: $key}}) RETURN e.key, e.name, e.project, e.title"
            few = self._sizes.few_keys([label], FEW_NODE_KEYS)
            for row in self._db.keyed_rows(query, group, few=few):
                found[row[0]] = entity_from_row(label, row)
        return found

    def find_entities(self, name: str, kinds: Collection[EntityKind]) -> list[Entity]:
        found: list[Entity] = []
        for kind in kinds:
            rows = self._db.rows(
                f"MATCH (e:{kind.value}) WHERE e.name = $n OR e.key ENDS WITH $suffix "
                "RETURN e.key, e.name, e.project, e.title LIMIT 20",
                {"n": name, "suffix": f"::{name}"},
            )
            found.extend(entity_from_row(kind.value, row) for row in rows)
        return found

    def all_entities(self) -> Iterable[Entity]:
        found: list[Entity] = []
        for label in ENTITY_TABLES:
            rows = self._db.rows(f"MATCH (e:{label}) RETURN e.key, e.name, e.project, e.title ORDER BY e.key")
            found.extend(entity_from_row(label, row) for row in rows)
        return found

    def link_about(self, pairs: Sequence[tuple[str, Entity]]) -> None:
        by_kind: dict[EntityKind, list[dict[str, str]]] = defaultdict(list)
        for memory_id, entity in pairs:
            by_kind[entity.kind].append({"m": memory_id, "e": entity.key})
        for kind, rows in by_kind.items():
            # An edge to a symbol records its body as it is now (``about_bodies``); one that was
            # there keeps what it recorded.
            made = " ON CREATE SET a.body_hash = e.body_hash" if kind is EntityKind.SYMBOL else ""
            self._db.run(
                f"UNWIND $rows AS r WITH r, r.m AS i MATCH (m:Memory {{id: i}}) "
                f"WITH m, r, r.e AS k MATCH (e:{kind.value} {{key: k}}) MERGE (m)-[a:ABOUT]->(e){made}",
                {"rows": rows},
            )
        about = [(memory_id, entity.key) for memory_id, entity in pairs]
        self._db.then(lambda: self._graph.about_added(about))

    def move_about(self, kind: EntityKind, old: str, new: str) -> list[str]:
        """Make the memories about entity ``old`` about ``new`` instead (both of ``kind``, ``new``
        stored); the ids of the memories moved."""
        label = kind.value
        rows = self._db.rows(
            f"MATCH (m:Memory)-[a:ABOUT]->(e:{label} {{key: $k}}) RETURN m.id, a.body_hash", {"k": old}
        )
        ids = [r[0] for r in rows]
        if not ids or old == new:
            return []
        bodies: dict[str, Body] = {}
        if kind is EntityKind.SYMBOL:
            query = "MATCH (s:Symbol {key: $key}) RETURN s.key, s.body_hash, s.body_changed_at"
            bodies = {r[0]: (r[1], r[2]) for r in self._db.keyed_rows(query, [old, new])}
        moved = [{"i": i, "h": moved_body(h, bodies.get(old), bodies.get(new))} for i, h in rows]
        self._db.run(  # the body each edge recorded goes with it (core/code_moves.py)
            f"UNWIND $rows AS r MATCH (m:Memory {{id: r.i}}) MATCH (e:{label} {{key: $k}}) "
            "MERGE (m)-[a:ABOUT]->(e) ON CREATE SET a.body_hash = r.h",
            {"rows": moved, "k": new},
        )
        self._db.run(f"MATCH (:Memory)-[a:ABOUT]->(e:{label} {{key: $k}}) DELETE a", {"k": old})
        self._db.then(lambda: self._graph.about_moved(ids, old, new))
        return ids

    def about(self, memory_ids: Collection[str]) -> dict[str, list[Entity]]:
        memory_ids = self._naming_entities(memory_ids)
        if not memory_ids:
            return {}
        query = (
            "MATCH (e)<-[:ABOUT]-(m:Memory {id: $key}) "
            "RETURN m.id, label(e), e.key, e.name, e.project, e.title"
        )
        # Each lookup walks ABOUT to every entity table (2-15 ms): the join wins from a few dozen
        # at 100,000 memories, from a few on a repository's store (kuzu_keyed.py).
        few = self._sizes.few_keys(["Memory", *ENTITY_TABLES], FEW_NODE_KEYS)
        rows = self._db.keyed_rows(query, memory_ids, few=few)
        found: dict[str, list[Entity]] = defaultdict(list)
        for row in rows:
            found[row[0]].append(entity_from_row(row[1], row[2:]))
        # In the order asked, each memory's entities by key: the same whichever way they were read.
        return {i: sorted(found[i], key=lambda e: e.key) for i in memory_ids if i in found}

    def about_bodies(self, memory_ids: Collection[str]) -> dict[str, dict[str, str]]:
        memory_ids = self._naming_entities(memory_ids)
        if not memory_ids:
            return {}
        query = (
            "MATCH (s:Symbol)<-[a:ABOUT]-(m:Memory {id: $key}) WHERE a.body_hash IS NOT NULL "
            "RETURN m.id, s.key, a.body_hash"
        )
        few = self._sizes.few_keys(["Memory", "Symbol"], FEW_NODE_KEYS)
        found: dict[str, dict[str, str]] = defaultdict(dict)
        for memory_id, key, body in self._db.keyed_rows(query, memory_ids, few=few):
            found[memory_id][key] = body
        return dict(found)

    def _naming_entities(self, memory_ids: Collection[str]) -> list[str]:
        """``memory_ids`` once each, in order, but those the graph cache, once loaded, says are
        about no entity: most memories name none, and their ``ABOUT`` edges are never looked up."""
        return [i for i in dict.fromkeys(memory_ids) if not self._graph.ready or self._graph.has_entities(i)]

    def remembered(self, keys: Collection[str]) -> set[str]:
        return set(self.memories_about(keys))  # one user: every memory is seen

    def memories_about(self, entity_keys: Collection[str]) -> dict[str, list[str]]:
        if not entity_keys:
            return {}
        # Per label: in Kùzu 0.11.3 an unlabelled `(e) WHERE e.key IN $keys` misses matches
        # once a reopened store holds two or more File nodes.
        found: dict[str, list[str]] = defaultdict(list)
        for label, keys in _by_table(entity_keys).items():
            query = f"MATCH (m:Memory)-[:ABOUT]->(e:{label} {{key: $key}}) RETURN e.key, m.id"
            few = self._sizes.few_keys(["Memory", label], FEW_EDGE_KEYS)
            for key, memory_id in self._db.keyed_rows(query, keys, few=few):
                found[key].append(memory_id)
        return {key: sorted(ids) for key, ids in found.items()}  # the same whichever way they were read


def _by_table(keys: Iterable[str]) -> dict[str, list[str]]:
    """``keys`` grouped by the entity table their label prefix names (``Issue:group/proj#4``), in
    order; a key of no table is left out."""
    by_table: dict[str, list[str]] = defaultdict(list)
    for key in keys:
        label = key.split(":", 1)[0]
        if label in ENTITY_TABLES:
            by_table[label].append(key)
    return by_table
