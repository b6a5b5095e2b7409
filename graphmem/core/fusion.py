"""Recall plans (named data) and the fusion of channel scores.

Two fusions are available to plans:

* ``convex`` (default): a weighted sum of each channel's normalised score — BM25
  divided by the best BM25 of the query, cosine rescaled between an offset and
  the best cosine of the query — then spread over the memory graph: every
  memory gains a share of its best neighbour's score, hop by hop. On the LoCoMo
  development split this beat reciprocal-rank fusion by 0.09 R@10 and each
  channel alone (docs/benchmarks.md).
* ``rrf``: weighted reciprocal-rank fusion, ``Σ weight / (k + rank)``.

Two corrections keep what people said above what tools scraped (a bootstrapped
history of thousands of commits must not bury the user's decision):

* **hub damping**: an edge through an entity that ``n`` memories are about passes
  ``1 / log2(n)`` of a score (``hub_weight``): a file touched by 40 commits passes
  a fifth, a merge request two memories share passes all of it;
* **topicless edges**: an edge through an entity that says who or where, not what (a
  commit's author, the project), passes nothing (``carries_topic``);
* **source priors**: the fused score of a memory a tool scraped (a commit, a fact
  read from the docs) is multiplied by its source's prior (``source_prior``), unless a
  person confirmed it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from graphmem.core.models import ChannelRank

LEXICAL = "lexical"
SEMANTIC = "semantic"
ENTITY = "entity"
GRAPH = "graph"
CHANNELS = (LEXICAL, SEMANTIC, ENTITY, GRAPH)

# Memory sources (prefixes of ``MemoryRecord.source``) written by tools rather than
# said by a person or an agent, and the share of the fused score they keep: bootstrap
# writes ``git:<sha>`` for commits and ``bootstrap:<file>#...`` for facts from docs and
# manifests. Chosen by leave-one-out on the people-first protocol (docs/benchmarks.md):
# a person's memory that answers a question as well as a commit or a docs fact comes first,
# one a scraped memory answers about three times better does not. What a person confirmed
# keeps its whole score whatever its source.
SCRAPED_PRIORS: Mapping[str, float] = MappingProxyType({"git:": 0.35, "bootstrap:": 0.35})
# Entities that say who or where, not what: a memory's author (``Person``), its project.
TOPICLESS_KINDS = frozenset({"Person", "Project"})


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
    # A query of at least this many words that a memory holds word for word (the full-text
    # index's ``TextHits.exact``) is a sentence the user half-remembers: that memory clears
    # the floor and is raised to the best candidate's score, ahead of it on a tie; status
    # weights and source priors then apply as to any hit, so a scraped commit that holds a
    # few keywords stays below the user's own decision. 0 turns this off.
    exact_phrase_words: int = 3
    hub_damping: bool = True  # an edge through an entity of n memories passes 1/log2(n)
    # Entity kinds (node labels) whose edges carry no relevance in graph spreading: two commits
    # by one author, or two memories of one project, share no topic.
    topicless_kinds: frozenset[str] = TOPICLESS_KINDS
    # Entity channel: a memory scores the sum, over the named entities it is about, of each
    # entity's specificity (``hub_weight`` of how many memories are about it), over the best
    # such sum; off, every memory about a named entity scores 1.
    entity_specificity: bool = True
    # Share of an entity score that goes by age: the newest candidate keeps all of it, the
    # oldest ``1 - entity_recency`` (newer changes more likely wrote the code as it is now).
    entity_recency: float = 0.0
    # Entity-channel weight of a memory about an entity one code or GitLab edge from a named
    # one (and about none of the named ones).
    neighbour_weight: float = 0.6
    # Share of its entity score a memory keeps when what led to it is a symbol only a plain word
    # of the query named ("exit", "cancel"), not code, a path or a ref: a word of prose may
    # happen to be a method's name.
    guessed_weight: float = 0.3  # chosen by leave-one-out on the people-first protocol
    # How many code or GitLab edges the entity channel follows from a named entity (0: only
    # the named ones). Each hop's memories score ``neighbour_weight`` below all of the hop before.
    entity_hops: int = 2
    # source prefix -> share of the fused score a memory from that source keeps
    source_priors: Mapping[str, float] = field(default_factory=lambda: SCRAPED_PRIORS)
    description: str = ""

    def __post_init__(self) -> None:
        if not 0.0 <= self.neighbour_weight <= 1.0:
            raise ValueError(
                f"plan {self.name!r}: neighbour_weight must be in [0, 1], not {self.neighbour_weight}"
            )
        if not 0.0 <= self.guessed_weight <= 1.0:
            raise ValueError(
                f"plan {self.name!r}: guessed_weight must be in [0, 1], not {self.guessed_weight}"
            )
        if self.entity_hops not in (0, 1, 2):
            raise ValueError(f"plan {self.name!r}: entity_hops must be 0, 1 or 2, not {self.entity_hops}")
        if self.exact_phrase_words < 0:
            raise ValueError(
                f"plan {self.name!r}: exact_phrase_words must be 0 (off) or more, "
                f"not {self.exact_phrase_words}"
            )
        if not 0.0 <= self.entity_recency < 1.0:
            raise ValueError(
                f"plan {self.name!r}: entity_recency must be in [0, 1), not {self.entity_recency}"
            )
        for prefix, prior in self.source_priors.items():
            if not 0.0 < prior <= 1.0:
                raise ValueError(
                    f"plan {self.name!r}: the prior of {prefix!r} must be in (0, 1], not {prior}"
                )

    def uses(self, channel: str) -> bool:
        return self.weights.get(channel, 0.0) > 0.0


PLANS: Mapping[str, Plan] = MappingProxyType(
    {
        "hybrid": Plan(
            "hybrid",
            # Entity 3.0: chosen by leave-one-out across the blame-recall repositories (docs/recall.md).
            {LEXICAL: 1.0, SEMANTIC: 1.0, ENTITY: 3.0, GRAPH: 1.0},
            description="All channels, convex fusion, graph spreading over two hops; the default.",
        ),
        "no-graph": Plan(
            "no-graph",
            {LEXICAL: 1.0, SEMANTIC: 1.0, ENTITY: 3.0},
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


def source_prior(priors: Mapping[str, float], source: str) -> float:
    """The prior of the longest prefix of ``source`` in ``priors``; 1.0 when none matches."""
    best, prior = -1, 1.0
    for prefix, value in priors.items():
        if source.startswith(prefix) and len(prefix) > best:
            best, prior = len(prefix), value
    return prior


def hub_weight(fanout: int) -> float:
    """Share of a score an edge through an entity of ``fanout`` memories passes.

    Two memories about one entity pass all of it; more pass ``1 / log2(fanout)``,
    like inverse document frequency: 0.63 for 3, 0.30 for 10, 0.19 for 40. Edges
    that are no entity (``RELATES``, ``NEXT``) have fanout 0 and pass all of it.
    """
    return 1.0 if fanout <= 2 else 1.0 / math.log2(fanout)


def carries_topic(via: str, topicless: frozenset[str]) -> bool:
    """Whether a graph edge through ``via`` (an entity key ``Label:...``, or a link kind) may pass
    relevance: every link does; an entity does unless its kind says who or where, not what."""
    label, colon, _ = via.partition(":")
    return not colon or label not in topicless


def get_plan(name: str) -> Plan:
    """The plan called ``name``; raises ``KeyError`` listing the known ones."""
    try:
        return PLANS[name]
    except KeyError:
        raise KeyError(f"unknown recall plan {name!r}; known plans: {', '.join(PLANS)}") from None


def entity_scores(
    about: Mapping[str, Sequence[str]],
    groups: Sequence[tuple[Sequence[str], float]],
    *,
    specificity: bool = True,
) -> dict[str, float]:
    """Entity-channel score of each memory ``about`` a key of ``groups`` (keys, weight).

    With ``specificity`` a memory gains ``weight × hub_weight(n)`` per key it is about
    (``n`` memories are about that key), summed over the keys and divided by the best
    sum: a memory about the named method and its file beats hundreds about the file
    alone, one about two named symbols beats one about one. Without it, a memory scores
    the weight of the first group naming one of its entities (every named one 1.0).
    """
    scores: dict[str, float] = {}
    for keys, weight in groups:
        # A later group only scores memories no earlier one did, and below all of those.
        earlier = set(scores)
        ceiling = min(scores.values(), default=1.0) if specificity else 1.0
        for key in dict.fromkeys(keys):
            members = [m for m in dict.fromkeys(about.get(key, ())) if m not in earlier]
            gain = weight * ceiling * hub_weight(len(set(about.get(key, ())))) if specificity else weight
            for memory_id in members:
                if specificity:
                    scores[memory_id] = scores.get(memory_id, 0.0) + gain
                else:
                    scores.setdefault(memory_id, gain)
    best = max(scores.values(), default=0.0)
    if specificity and best > 0:
        scores = {item: score / best for item, score in scores.items()}
    return scores


def age_weighted(scores: Mapping[str, float], times: Mapping[str, float], share: float) -> dict[str, float]:
    """``scores`` with ``share`` of each going by age rank: the newest keeps all, the oldest ``1 - share``.

    Items without a time count as the oldest.
    """
    if share <= 0.0 or len(scores) < 2:
        return dict(scores)
    order = sorted(scores, key=lambda i: (times.get(i, float("-inf")), i))
    last = len(order) - 1
    return {item: scores[item] * (1.0 - share + share * rank / last) for rank, item in enumerate(order)}


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
            score += w_lex * (lexical.get(item, 0.0) / best_bm25)  # the ratio first: never above 1
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
    route: tuple[str, ...] = ()  # the nodes from ``source`` to the item, both included


def spread(
    base: Mapping[str, float],
    adjacency: Mapping[str, Sequence[str]],
    hop_weights: Sequence[float],
    edge_weights: Mapping[tuple[str, str], float] | None = None,
) -> dict[str, Spread]:
    """Each item gains ``hop_weights[h-1] ×`` the best weighted base score among its h-hop neighbours.

    A neighbour's score counts times the weight of the best path to it (the product
    of its edges' ``edge_weights``, 1.0 for an edge not listed), so a hub passes
    little. Only items that gain something are returned, each with the path its best
    gain came along. Neighbours missing from ``base`` count as zero.
    """
    weights = edge_weights or {}
    gains: dict[str, Spread] = {}
    for item in adjacency:  # an item with no neighbour gains nothing
        reach = {item: 1.0}  # best path weight from item to each node of the frontier
        came_from: dict[str, str] = {}  # node -> the node before it on its best path from item
        seen = {item}
        total = 0.0
        best: tuple[float, str, int] | None = None
        for hops, weight in enumerate(hop_weights, start=1):
            frontier: dict[str, float] = {}
            for node, path in reach.items():
                for n in adjacency.get(node, ()):
                    if n not in seen:
                        via = path * weights.get((node, n), 1.0)
                        if via > frontier.get(n, 0.0):
                            frontier[n] = via
                            came_from[n] = node
            seen |= frontier.keys()
            if not frontier:
                break
            reach = frontier
            source = max(frontier, key=lambda n: (base.get(n, 0.0) * frontier[n], n))
            value = base.get(source, 0.0) * frontier[source]
            if value > 0 and weight > 0:
                total += weight * value
                if best is None or weight * value > best[0]:
                    best = (weight * value, source, hops)
        if best is not None:
            route = [best[1]]
            while route[-1] != item:
                route.append(came_from[route[-1]])
            gains[item] = Spread(total, best[1], best[2], tuple(route))
    return gains
