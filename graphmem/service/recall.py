"""Hybrid recall: lexical, semantic, entity and graph channels, fused and floored."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import networkx as nx

from graphmem.core.fusion import ENTITY, GRAPH, LEXICAL, SEMANTIC, Plan, weighted_rrf
from graphmem.core.models import Category, ChannelRank, Entity, Hit, MemoryRecord, Status
from graphmem.core.ports import GraphStore, Vector, Visibility
from graphmem.core.text import MAX_TEXT_CHARS, clean_fts_query
from graphmem.errors import InvalidInputError
from graphmem.service.semantic import SemanticIndex

log = logging.getLogger(__name__)

# Edges fetched per hop of graph expansion: bounds work on hub entities.
GRAPH_EDGE_LIMIT = 400
# Multipliers on the fused score by status (only visible with --history or resolved).
STATUS_WEIGHT: Mapping[Status, float] = {
    Status.ACTIVE: 1.0,
    Status.RESOLVED: 0.8,
    Status.SUPERSEDED: 0.7,
    Status.ARCHIVED: 0.6,
}


@dataclass(frozen=True, slots=True)
class RecallQuery:
    """What the caller asked, validated."""

    text: str
    project: str | None
    limit: int = 10
    categories: frozenset[Category] | None = None
    since: datetime | None = None
    history: bool = False
    entity_keys: tuple[str, ...] = ()

    def visibility(self) -> Visibility:
        statuses = frozenset(Status) if self.history else frozenset({Status.ACTIVE, Status.RESOLVED})
        return Visibility(self.project, statuses, self.categories, self.since)


@dataclass(frozen=True, slots=True)
class RecallResult:
    """Ranked hits and how the recall ran."""

    query: str
    plan: str
    hits: list[Hit]
    channels: Mapping[str, int] = field(default_factory=dict)  # candidates per channel
    took_ms: float = 0.0
    semantic_ready: bool = True


class Recaller:
    """Runs a recall plan against the store."""

    def __init__(self, store: GraphStore, semantic: SemanticIndex | None) -> None:
        self._store = store
        self._semantic = semantic

    def recall(self, query: RecallQuery, plan: Plan) -> RecallResult:
        started = time.perf_counter()
        text = query.text.strip()
        if not text:
            raise InvalidInputError("The query is empty: say what you are looking for.")
        if len(text) > MAX_TEXT_CHARS:
            raise InvalidInputError(f"The query is over {MAX_TEXT_CHARS:,} characters: shorten it.")
        visibility = query.visibility()
        depth = max(plan.depth, query.limit)
        rankings: dict[str, list[tuple[str, float]]] = {}

        if plan.uses(LEXICAL):
            rankings[LEXICAL] = self._store.search_text(clean_fts_query(text), visibility, depth)
        query_vector: Vector | None = None
        if self._semantic is not None and (plan.uses(SEMANTIC) or plan.semantic_floor > 0):
            query_vector = self._semantic.embed_query(text)
        if plan.uses(SEMANTIC) and query_vector is not None and self._semantic is not None:
            rankings[SEMANTIC] = self._semantic_channel(query_vector, visibility, depth)
        if plan.uses(ENTITY) and query.entity_keys:
            rankings[ENTITY] = self._entity_channel(query.entity_keys)

        seeds = weighted_rrf(rankings, plan.weights, k=plan.rrf_k)
        records = self._store.get_memories([f.id for f in seeds[: depth * 2]])
        seeds = [f for f in seeds if f.id in records and _visible(records[f.id], visibility)]
        paths: dict[str, tuple[str, ...]] = {}
        if plan.uses(GRAPH) and seeds:
            graph_ranking, paths = self._graph_channel(seeds[: plan.graph_seeds], plan)
            rankings[GRAPH] = graph_ranking
            fused = weighted_rrf(rankings, plan.weights, k=plan.rrf_k)
            missing = [f.id for f in fused[: depth * 2] if f.id not in records]
            records.update(self._store.get_memories(missing))
        else:
            fused = seeds
        candidates = [f for f in fused if f.id in records and _visible(records[f.id], visibility)]
        candidates = candidates[: max(query.limit * 4, 40)]

        similarities: dict[str, float] = {}
        if query_vector is not None and self._semantic is not None:
            similarities = self._semantic.similarities(query_vector, [f.id for f in candidates])
        best = sum(w / (plan.rrf_k + 1) for w in plan.weights.values()) or 1.0
        hits: list[Hit] = []
        passing: set[str] = set()
        for item in candidates:
            record = records[item.id]
            if not _clears_floor(item.channels, similarities.get(item.id), plan, paths.get(item.id), passing):
                continue
            passing.add(item.id)
            score = item.score / best * STATUS_WEIGHT.get(record.status, 1.0)
            hits.append(Hit(record, round(score, 4), item.channels, paths.get(item.id, ())))
        hits.sort(key=lambda h: (-h.score, h.memory.id))
        hits = hits[: query.limit]
        entities = self._store.about([h.memory.id for h in hits])
        hits = [
            Hit(h.memory, h.score, h.channels, h.path, tuple(entities.get(h.memory.id, ()))) for h in hits
        ]
        took = (time.perf_counter() - started) * 1000
        log.debug("recall plan=%s hits=%d took=%.1fms", plan.name, len(hits), took)
        return RecallResult(
            query=text,
            plan=plan.name,
            hits=hits,
            channels={name: len(ranking) for name, ranking in rankings.items()},
            took_ms=took,
            semantic_ready=query_vector is not None,
        )

    # -- channels ---------------------------------------------------------------

    def _semantic_channel(self, vector: Vector, visibility: Visibility, depth: int) -> list[tuple[str, float]]:
        assert self._semantic is not None
        over = depth * 3 if (visibility.categories or visibility.since) else depth
        found = self._semantic.search(vector, over, project=visibility.project, statuses=visibility.statuses)
        if visibility.categories or visibility.since:
            records = self._store.get_memories([i for i, _ in found])
            found = [(i, s) for i, s in found if i in records and _visible(records[i], visibility)]
        return found[:depth]

    def _entity_channel(self, keys: Sequence[str]) -> list[tuple[str, float]]:
        about = self._store.memories_about(keys)
        ranking: list[tuple[str, float]] = []
        seen: set[str] = set()
        for key in keys:
            for memory_id in about.get(key, []):
                if memory_id not in seen:
                    seen.add(memory_id)
                    ranking.append((memory_id, 1.0))
        return ranking

    def _graph_channel(self, seeds: Sequence[object], plan: Plan) -> tuple[list[tuple[str, float]], dict[str, tuple[str, ...]]]:
        """Personalised PageRank from the seeds over their neighbourhood."""
        graph: nx.Graph = nx.Graph()
        personalization: dict[str, float] = {}
        parents: dict[str, tuple[str, str]] = {}
        frontier: list[str] = []
        for seed in seeds:
            seed_id = seed.id  # type: ignore[attr-defined]
            personalization[_mem(seed_id)] = seed.score  # type: ignore[attr-defined]
            graph.add_node(_mem(seed_id))
            frontier.append(seed_id)
        seen = set(frontier)
        for _ in range(plan.graph_hops):
            if not frontier:
                break
            next_frontier: list[str] = []
            for edge in self._store.neighbours(frontier, GRAPH_EDGE_LIMIT):
                a, b = _mem(edge.memory_id), _mem(edge.other_id)
                if ":" in edge.via:  # an entity key, not a RELATES/NEXT kind
                    hub = f"e:{edge.via}"
                    graph.add_edge(a, hub)
                    graph.add_edge(hub, b)
                else:
                    graph.add_edge(a, b)
                if edge.other_id not in seen:
                    seen.add(edge.other_id)
                    parents[edge.other_id] = (edge.memory_id, edge.via)
                    next_frontier.append(edge.other_id)
            frontier = next_frontier
        if graph.number_of_edges() == 0:
            return [], {}
        ranks = nx.pagerank(graph, alpha=plan.graph_alpha, personalization=personalization, max_iter=100, tol=1e-8)
        ranking = sorted(
            ((node[2:], score) for node, score in ranks.items() if node.startswith("m:")),
            key=lambda pair: (-pair[1], pair[0]),
        )
        paths = {memory_id: _path(memory_id, parents) for memory_id in parents}
        return ranking[: plan.depth], paths


def _mem(memory_id: str) -> str:
    return f"m:{memory_id}"


def _path(memory_id: str, parents: Mapping[str, tuple[str, str]]) -> tuple[str, ...]:
    """Seed → via → ... → memory, from the expansion's parent links."""
    steps: list[str] = [memory_id]
    current = memory_id
    while current in parents and len(steps) < 8:
        parent, via = parents[current]
        steps += [via, parent]
        current = parent
    return tuple(reversed(steps))


def _visible(record: MemoryRecord, visibility: Visibility) -> bool:
    if record.status not in visibility.statuses:
        return False
    if record.project is not None and record.project != visibility.project and record.scope.value != "global":
        return False
    if visibility.categories is not None and record.category not in visibility.categories:
        return False
    return visibility.since is None or record.created_at >= visibility.since


def _clears_floor(
    channels: Collection[ChannelRank],
    similarity: float | None,
    plan: Plan,
    path: tuple[str, ...] | None,
    passing: Collection[str],
) -> bool:
    """Whether a candidate is relevant enough to show at all."""
    found_by = {c.channel for c in channels}
    if ENTITY in found_by:
        return True
    graph_only = found_by == {GRAPH}
    if graph_only and not (path and path[0] in passing):
        return False
    if similarity is None or math.isnan(similarity):
        # Not embedded yet (or no model): trust the exact channels.
        return bool(found_by & {LEXICAL, GRAPH})
    if similarity >= plan.semantic_floor:
        return True
    return bool(found_by & {LEXICAL, GRAPH}) and similarity >= plan.lexical_floor


def entities_named(entities: Sequence[Entity]) -> tuple[str, ...]:
    return tuple(entity.key for entity in entities)
