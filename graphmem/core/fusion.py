"""Recall plans (named data) and weighted reciprocal-rank fusion."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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
    rrf_k: int = 60
    depth: int = 50  # candidates taken from each channel
    graph_seeds: int = 8  # best fused hits the graph expands from
    graph_hops: int = 2
    graph_alpha: float = 0.5  # PageRank damping: lower keeps the walk near the seeds
    semantic_floor: float = 0.30  # cosine a hit needs on its own to clear the floor
    lexical_floor: float = 0.18  # cosine a lexical-only hit still needs (when embedded)
    description: str = ""
    extra: Mapping[str, float] = field(default_factory=dict)

    def uses(self, channel: str) -> bool:
        return self.weights.get(channel, 0.0) > 0.0


PLANS: Mapping[str, Plan] = MappingProxyType(
    {
        "hybrid": Plan(
            "hybrid",
            {LEXICAL: 1.0, SEMANTIC: 0.7, ENTITY: 1.2, GRAPH: 0.5},
            description="All channels; the default.",
        ),
        "lexical": Plan("lexical", {LEXICAL: 1.0}, description="BM25 over the full-text index only."),
        "semantic": Plan("semantic", {SEMANTIC: 1.0}, description="Embedding cosine only."),
        "no-graph": Plan(
            "no-graph",
            {LEXICAL: 1.0, SEMANTIC: 0.7, ENTITY: 1.2},
            description="Lexical, semantic and entity channels without graph expansion.",
        ),
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
