"""Edges between memories in graphmem's Kùzu store: RELATES (with a kind) and NEXT.

A part of ``KuzuGraphStore`` (``kuzu_store.py``), given the store's connection and its edge
cache: the ``MemoryLinks`` port, and the load of every edge into the in-process
``GraphCache`` that graph expansion walks (``load_edges``). Adding RELATES edges
(``add_links``) picks a MERGE per link or one bulk statement by ``LOOKUP_MAX_IDS``; reading
the edges of many memories joins them with the tables or looks each up as the tables' sizes
say (``kuzu_keyed.py``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Sequence
from datetime import UTC, datetime
from functools import partial

from graphmem.adapters.graph_cache import ENTITY_FANOUT, GraphCache
from graphmem.adapters.kuzu_connection import FEW_EDGE_KEYS, KuzuConnection
from graphmem.adapters.kuzu_keyed import table_sizes
from graphmem.adapters.kuzu_rows import ADD_LINK, ADD_LINKS, aware, naive_utc
from graphmem.adapters.kuzu_schema import ENTITY_TABLES
from graphmem.core.models import Link, LinkKind
from graphmem.core.ports import Neighbour

# Graph expansions answered from the edges around their seeds before the store loads every
# edge (a recall asks once or twice): a one-shot recall never loads them all.
DIRECT_GRAPH_ASKS = 8


# Above this many links, one UNWIND of them all beats a MERGE each (and above this many ids,
# ``KuzuGraphStore.get_memories`` reads them in one query).
LOOKUP_MAX_IDS = 200


class KuzuMemoryLinks:
    """RELATES and NEXT edges: removed, listed, added (NEXT) and walked."""

    def __init__(self, db: KuzuConnection, graph: GraphCache) -> None:
        self._db = db
        self._graph = graph  # the store's copy of the edges, kept in step with these writes
        self._graph_asks = 0  # expansions asked before the graph was loaded
        self._sizes = table_sizes(db)

    def add_links(self, links: Sequence[Link]) -> None:
        rows = [
            {"s": link.source, "t": link.target, "k": link.kind.value, "c": naive_utc(link.created_at)}
            for link in links
        ]
        many = len(rows) > LOOKUP_MAX_IDS  # UNWIND's MERGE costs ~0.1 s however few; one each ~2 ms
        with self._db.lock, self._db.translated():
            for params in [{"rows": rows}] if many else rows:
                self._db.write(ADD_LINKS if many else ADD_LINK, params)

        def cache() -> None:
            for link in links:
                self._graph.related_added(link.source, link.target, link.kind.value)

        self._db.then(cache)

    def remove_link(self, source: str, target: str, kind: LinkKind) -> bool:
        rows = self._db.rows(
            "MATCH (a:Memory {id: $s})-[x:RELATES {kind: $k}]->(b:Memory {id: $t}) DELETE x RETURN count(*)",
            {"s": source, "t": target, "k": kind.value},
        )
        self._db.then(partial(self._graph.related_removed, source, target))
        return bool(rows and rows[0][0])

    def links(self, memory_ids: Collection[str] | None = None) -> list[Link]:
        returned = "RETURN a.id, b.id, x.kind, x.created_at"
        if memory_ids is None:
            rows = self._db.rows(f"MATCH (a:Memory)-[x:RELATES]->(b:Memory) {returned}")
        else:
            # From and to each id, by primary key: ``a.id IN $ids OR b.id IN $ids`` read every
            # link (about 100 ms for one id at 100,000 memories, 9 s for 5,000).
            with self._db.lock:
                few = self._sizes.few_keys(["Memory"], FEW_EDGE_KEYS)
                rows = [
                    row
                    for pattern in (
                        "(b:Memory)<-[x:RELATES]-(a:Memory {id: $key})",
                        "(a:Memory)-[x:RELATES]->(b:Memory {id: $key})",
                    )
                    for row in self._db.keyed_rows(f"MATCH {pattern} {returned}", memory_ids, few=few)
                ]
            # A link between two of the ids is found from both ends; (a, b, kind) is one link.
            rows = list({(r[0], r[1], r[2]): r for r in rows}.values())
        links = [Link(r[0], r[1], LinkKind(r[2]), aware(r[3]) or datetime.now(UTC)) for r in rows]
        return sorted(links, key=lambda link: (link.created_at, link.source, link.target))

    def add_next(self, pairs: Sequence[tuple[str, str]]) -> None:
        if not pairs:
            return
        self._db.run(
            "UNWIND $rows AS r WITH r, r.a AS i MATCH (a:Memory {id: i}) "  # see kuzu_rows.ADD_LINKS
            "WITH a, r, r.b AS j MATCH (b:Memory {id: j}) MERGE (a)-[:NEXT]->(b)",
            {"rows": [{"a": a, "b": b} for a, b in pairs]},
        )
        self._db.then(partial(self._graph.next_added, list(pairs)))

    def next_pairs(self, memory_ids: Collection[str] | None = None) -> list[tuple[str, str]]:
        if memory_ids is None:
            rows = self._db.rows("MATCH (a:Memory)-[:NEXT]->(b:Memory) RETURN a.id, b.id")
        else:
            query = "MATCH (b:Memory)<-[:NEXT]-(a:Memory {id: $key}) RETURN a.id, b.id"
            rows = self._db.keyed_rows(query, memory_ids, few=self._sizes.few_keys(["Memory"], FEW_EDGE_KEYS))
        return [(r[0], r[1]) for r in rows]

    def neighbours(self, memory_ids: Collection[str], limit: int) -> list[Neighbour]:
        with self._db.lock:
            if not self._graph.ready:
                self._graph_asks += 1
                if self._graph_asks <= DIRECT_GRAPH_ASKS:  # see graph_cache.py
                    edges = self._edges_around(memory_ids)
                    return GraphCache(lambda: edges).neighbours(memory_ids, limit)
                self._graph.load()
        return self._graph.neighbours(memory_ids, limit)

    def _edges_around(
        self, memory_ids: Collection[str]
    ) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]], list[tuple[str, str]]]:
        """The edges ``GraphCache.neighbours`` walks from ``memory_ids``: their NEXT and RELATES
        edges, and every memory about each of their entities but the hubs (left out, as the
        walk skips them)."""
        # A few seeds one lookup each (see keyed_rows): 10 seeds at 100,000 memories 0.1 s, where
        # UNWIND joined them with every NEXT, RELATES and ABOUT edge (0.4-0.6 s). All three
        # kinds in one lookup: 30 seeds took 41 ms where a lookup per kind took 75-80 ms. On a
        # smaller store, one join (kuzu_keyed.py). The keyed node last: written first, a store
        # of a million memories without links planned a scan of every memory for each seed
        # (85-140 ms a seed against 1-4; tests/unit/adapters/test_kuzu_plans.py).
        rows = self._db.keyed_rows(
            "MATCH (b)-[x:NEXT|RELATES|ABOUT]-(a:Memory {id: $key}) "
            "RETURN a.id, label(x), b.id, b.key, x.kind",
            memory_ids,
            few=self._sizes.few_keys(["Memory", *ENTITY_TABLES], FEW_EDGE_KEYS),
        )
        nexts = [(a, b) for a, kind, b, _, _ in rows if kind == "NEXT"]
        relates = [(a, b, how) for a, kind, b, _, how in rows if kind == "RELATES"]
        own = [(a, key) for a, kind, _, key, _ in rows if kind == "ABOUT"]
        by_label: dict[str, set[str]] = defaultdict(set)
        for _, key in own:
            by_label[key.split(":", 1)[0]].add(key)
        about: list[tuple[str, str]] = []
        for label, keys in by_label.items():
            if label not in ENTITY_TABLES:
                continue
            # Counted first: a hub's members (thousands, at scale) are never read.
            few = self._sizes.few_keys(["Memory", label], FEW_EDGE_KEYS)
            counts = self._db.keyed_rows(
                f"MATCH (:Memory)-[:ABOUT]->(e:{label} {{key: $key}}) RETURN e.key, count(*)",
                sorted(keys),
                few=few,
            )
            small = [key for key, n in counts if n <= ENTITY_FANOUT]
            members = self._db.keyed_rows(
                f"MATCH (m:Memory)-[:ABOUT]->(e:{label} {{key: $key}}) RETURN m.id, e.key",
                small,
                few=few,
            )
            about += [(str(m), str(k)) for m, k in members]
        return (
            about,
            [(str(a), str(b), str(kind)) for a, b, kind in relates],
            [(str(a), str(b)) for a, b in nexts],
        )

    def load_edges(
        self,
    ) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]], list[tuple[str, str]]]:
        about = [(r[0], r[1]) for r in self._db.rows("MATCH (m:Memory)-[:ABOUT]->(e) RETURN m.id, e.key")]
        relates = [
            (r[0], r[1], r[2])
            for r in self._db.rows("MATCH (a:Memory)-[x:RELATES]->(b:Memory) RETURN a.id, b.id, x.kind")
        ]
        return about, relates, self.next_pairs()
