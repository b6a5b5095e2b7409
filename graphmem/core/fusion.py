"""Recall plans (named data) and the fusion of channel scores.

Two fusions are available to plans:

* ``convex`` (default): a weighted sum of each channel's normalised score — BM25
  divided by the best BM25 of the query, cosine rescaled between an offset and
  the best cosine of the query — then spread over the memory graph: every
  memory gains a share of its best neighbour's score, hop by hop. On the LoCoMo
  development split this beat reciprocal-rank fusion by 0.09 R@10 and each
  channel alone (docs/benchmarks.md).
* ``rrf``: weighted reciprocal-rank fusion, ``Σ weight / (k + rank)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from graphmem.core.models import ChannelRank

LEXICAL = "lexical"
SEMANTIC = "semantic"
ENTITY = "entity"
GRAPH = "graph"
CHANNELS = (LEXICAL, SEMANTIC, ENTITY, GRAPH)


@dataclass(frozen=True, slots=True)
class Plan:
    """Which channels a recall runs, how much each counts, how far the graph reaches."""

    name: str
    weights: Mapping[str, float]
    fusion: str = "convex"  # or "rrf"
    rrf_k: int = 60
    depth: int = 100  # candidates taken from the lexical and semantic channels
    semantic_offset: float = 0.2  # cosine that counts as zero in convex fusion
    hop_weights: tuple[float, ...] = (0.5, 0.3)  # share of the best neighbour's score, per hop
    graph_seeds: int = 30  # best candidates the graph expands from
    semantic_floor: float = 0.30  # cosine a hit needs on its own to clear the floor
    lexical_floor: float = 0.18  # cosine a lexical or graph hit still needs (when embedded)
    description: str = ""

    def uses(self, channel: str) -> bool:
        return self.weights.get(channel, 0.0) > 0.0


PLANS: Mapping[str, Plan] = MappingProxyType(
    {
        "hybrid": Plan(
            "hybrid",
            {LEXICAL: 1.0, SEMANTIC: 1.0, ENTITY: 1.0, GRAPH: 1.0},
            description="All channels, convex fusion, graph spreading over two hops; the default.",
        ),
        "no-graph": Plan(
            "no-graph",
            {LEXICAL: 1.0, SEMANTIC: 1.0, ENTITY: 1.0},
            description="Lexical, semantic and entity channels without graph spreading.",
        ),
        "rrf": Plan(
            "rrf",
            {LEXICAL: 1.0, SEMANTIC: 0.7, ENTITY: 1.2},
            fusion="rrf",
            depth=50,
            description="Weighted reciprocal-rank fusion of lexical, semantic and entity channels.",
        ),
        "lexical": Plan("lexical", {LEXICAL: 1.0}, description="BM25 over the full-text index only."),
        "semantic": Plan("semantic", {SEMANTIC: 1.0}, description="Embedding cosine only."),
    }
)


def get_plan(name: str) -> Plan:
    """The plan called ``name``; raises ``KeyError`` listing the known ones."""
    try:
        return PLANS[name]
    except KeyError:
        raise KeyError(f"unknown recall plan {name!r}; known plans: {', '.join(PLANS)}") from None


@dataclass(frozen=True, slots=True)
class Fused:
    """One candidate after fusion."""

    id: str
    score: float
    channels: tuple[ChannelRank, ...]


def weighted_rrf(
    rankings: Mapping[str, Sequence[tuple[str, float]]],
    weights: Mapping[str, float],
    *,
    k: int = 60,
) -> list[Fused]:
    """Fuse ranked lists: ``score = Σ weight_c / (k + rank_c)``, best first.

    Ties break by the number of channels that found an item, then by id, so the
    order is deterministic.
    """
    scores: dict[str, float] = {}
    found: dict[str, list[ChannelRank]] = {}
    for channel, ranking in rankings.items():
        weight = weights.get(channel, 0.0)
        if weight <= 0.0:
            continue
        seen: set[str] = set()
        for rank, (item, raw) in enumerate(ranking, start=1):
            if item in seen:
                continue
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
            found.setdefault(item, []).append(ChannelRank(channel, rank, raw))
    ordered = sorted(scores, key=lambda item: (-scores[item], -len(found[item]), item))
    return [Fused(item, scores[item], tuple(found[item])) for item in ordered]


def convex_scores(
    lexical: Mapping[str, float],
    cosines: Mapping[str, float],
    entity: Mapping[str, float],
    weights: Mapping[str, float],
    *,
    semantic_offset: float,
) -> dict[str, float]:
    """Weighted sum of normalised channel scores for every item any channel scored."""
    best_bm25 = max(lexical.values(), default=0.0)
    best_cosine = max(cosines.values(), default=0.0)
    span = best_cosine - semantic_offset
    w_lex, w_sem, w_ent = (weights.get(c, 0.0) for c in (LEXICAL, SEMANTIC, ENTITY))
    scores: dict[str, float] = {}
    for item in {*lexical, *cosines, *entity}:
        score = 0.0
        if w_lex and best_bm25 > 0:
            score += w_lex * lexical.get(item, 0.0) / best_bm25
        if w_sem and span > 0 and item in cosines:
            score += w_sem * max(0.0, (cosines[item] - semantic_offset) / span)
        if w_ent:
            score += w_ent * entity.get(item, 0.0)
        scores[item] = score
    return scores


@dataclass(frozen=True, slots=True)
class Spread:
    """What graph spreading added to one item, and from where."""

    gain: float
    source: str  # the neighbour whose score it took
    hops: int


def spread(
    base: Mapping[str, float],
    adjacency: Mapping[str, Sequence[str]],
    hop_weights: Sequence[float],
) -> dict[str, Spread]:
    """Each item gains ``hop_weights[h-1] ×`` the best base score among its h-hop neighbours.

    Only items that gain something are returned. Neighbours missing from ``base``
    count as zero.
    """
    gains: dict[str, Spread] = {}
    for item in {*base, *adjacency}:
        frontier = {item}
        seen = {item}
        total = 0.0
        best: tuple[float, str, int] | None = None
        for hops, weight in enumerate(hop_weights, start=1):
            frontier = {n for f in frontier for n in adjacency.get(f, ()) if n not in seen}
            seen |= frontier
            if not frontier:
                break
            source = max(frontier, key=lambda n: (base.get(n, 0.0), n))
            value = base.get(source, 0.0)
            if value > 0 and weight > 0:
                total += weight * value
                if best is None or weight * value > best[0]:
                    best = (weight * value, source, hops)
        if best is not None:
            gains[item] = Spread(total, best[1], best[2])
    return gains
