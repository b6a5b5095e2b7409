"""Hybrid recall: lexical, semantic, entity and graph channels, fused and floored.

``Recaller.ask`` reads a caller's query (limits, plan, categories), the entities it names
(``Mentions``) and their neighbours in the code graph and the GitLab graph
(``code_neighbours``, ``gitlab_neighbours``), and runs the plan (``Recaller.recall``).
"""

from __future__ import annotations

import itertools
import logging
import math
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import ParamSpec, Protocol, TypeVar, runtime_checkable

from graphmem.core.branches import parse_branch
from graphmem.core.fusion import (
    ENTITY,
    GRAPH,
    LEXICAL,
    SEMANTIC,
    Plan,
    Spread,
    age_weighted,
    carries_topic,
    convex_scores,
    entity_scores,
    get_plan,
    hub_weight,
    source_prior,
    spread,
    weighted_rrf,
)
from graphmem.core.models import (
    CURRENT_STATUSES,
    Category,
    ChannelRank,
    Entity,
    EntityKind,
    Hit,
    MemoryRecord,
    Status,
    Step,
)
from graphmem.core.ports import TextHits, Vector, VectorQuery, Visibility
from graphmem.core.provenance import is_persons
from graphmem.core.recall_limit import check_recall_limit
from graphmem.core.text import MAX_TEXT_CHARS, ensure_utf8, lexical_query, words
from graphmem.core.timeparse import to_utc
from graphmem.core.views import why
from graphmem.errors import InvalidInputError, StoreError
from graphmem.service.described_code import DescribedCode
from graphmem.service.entity_reach import explained, reach, step_names, walks_of
from graphmem.service.inputs import parse_category
from graphmem.service.mentions import Mentions
from graphmem.service.results import RecallResult
from graphmem.service.staleness import Staleness
from graphmem.service.stores import Stores

log = logging.getLogger(__name__)
P = ParamSpec("P")
T = TypeVar("T")

# What a recall of a closed service answers (``Recaller.close``).
CLOSED = "This memory service is closed: open the memory again."
SEARCH_THREADS = 4  # word searches at once, beside their callers: within a team store's 8 connections
# Edges fetched per hop of graph expansion: bounds work on hub entities.
GRAPH_EDGE_LIMIT = 400
# Multipliers on the fused score by status (only visible with --history or resolved).
STATUS_WEIGHT: Mapping[Status, float] = {
    Status.ACTIVE: 1.0,
    Status.RESOLVED: 0.8,
    Status.SUPERSEDED: 0.7,
    Status.ARCHIVED: 0.6,
    Status.NOT_MERGED: 0.5,  # its MR was closed without merging: what it decided did not happen
    Status.PROPOSED: 0.9,  # no person confirmed it yet (core/provenance.py)
}
# What default recall shows (``history`` shows every status).
RECALLED = CURRENT_STATUSES


@runtime_checkable
class NearTextSearch(Protocol):
    """A store that may give the words' hits with their cosines to the query's vector in one read
    (PostgreSQL's search: a round trip less than ``search_text`` then the cosines); others do not.
    ``cosines_with_words``: whether it does now (not when a daemon's index answers)."""

    @property
    def cosines_with_words(self) -> bool: ...

    def search_text_near(
        self, query: str, visibility: Visibility, limit: int, vector: Vector, *, phrase: str | None = None
    ) -> tuple[TextHits, dict[str, float]]: ...


@dataclass(frozen=True, slots=True)
class RecallQuery:
    """What the caller asked, validated."""

    text: str
    project: str | None
    limit: int = 10
    categories: frozenset[Category] | None = None
    since: datetime | None = None
    history: bool = False
    branch: str | None = None  # the caller's branch: memories on another are left out
    all_branches: bool = False  # ...unless this
    entity_keys: tuple[str, ...] = ()
    guessed_keys: frozenset[str] = frozenset()  # of entity_keys, those a plain word may name
    # Entities one code or GitLab edge from the named ones (a symbol's callers and callees, an
    # MR's changed files), then two edges; and the edges that lead to each (``Reach``).
    neighbour_keys: tuple[str, ...] = ()
    far_keys: tuple[str, ...] = ()
    routes: Mapping[str, tuple[Step, ...]] = field(default_factory=dict)
    expired_by: datetime | None = None  # the time of the question: what expired by then is not recalled
    aliases: frozenset[str] = frozenset()  # seen as ``project`` (``Visibility.aliases``)

    def visibility(self) -> Visibility:
        statuses = frozenset(Status) if self.history else RECALLED
        return Visibility(
            self.project,
            statuses,
            self.categories,
            self.since,
            self.branch,
            self.all_branches,
            self.expired_by,
            self.aliases,
        )


class Recaller:
    """Runs a recall plan against the store. ``ask`` is the Memory service's ``recall``, documented
    where ``graphmem.api.Memory`` declares it."""

    def __init__(
        self,
        stores: Stores,
        staleness: Staleness,
        *,
        mentions: Mentions | None = None,
        plan: str = "hybrid",
        limit: int = 10,
    ) -> None:
        self._stores = stores
        self._staleness = staleness  # what changed in the code since a hit was written
        self._mentions = mentions
        self._described = DescribedCode(stores.code) if stores.code is not None else None
        self._plan = get_plan(plan)
        self._limit = limit
        # Full-text searches run on these threads while the callers embed their queries (the model,
        # tantivy and usearch let go of the interpreter), SEARCH_THREADS at once so that a daemon's
        # concurrent recalls do not queue behind one another's. ``close`` ends them.
        self._pool = ThreadPoolExecutor(SEARCH_THREADS, "graphmem-recall-search")
        self._closed = False
        self._near_text = stores.store if isinstance(stores.store, NearTextSearch) else None

    def close(self) -> None:
        """End the search threads once the searches under way have, and the symbol indexes being
        built (``DescribedCode.close``): the service is closed, a recall is refused from now on."""
        self._closed = True
        self._pool.shutdown(wait=True)
        if self._described is not None:
            self._described.close()

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(CLOSED)

    def _submit(self, search: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """``search`` on the search thread (see ``__init__``)."""
        try:
            return self._pool.submit(search, *args, **kwargs)
        except RuntimeError:  # shut down since this recall began: the service was closed
            raise StoreError(CLOSED) from None

    def ask(
        self,
        query: str,
        *,
        project: str | None = None,
        limit: int | None = None,
        categories: Iterable[str | Category] | None = None,
        since: datetime | None = None,
        history: bool = False,
        plan: str | Plan | None = None,
        branch: str | None = None,
        all_branches: bool = False,
    ) -> RecallResult:
        if not isinstance(query, str):
            raise InvalidInputError("The query must be text.")
        limit = self._limit if limit is None else limit
        limit = check_recall_limit(limit)
        try:
            chosen = plan if isinstance(plan, Plan) else get_plan(plan or self._plan.name)
        except KeyError as exc:
            raise InvalidInputError(str(exc.args[0])) from None
        asked = RecallQuery(
            text=query,
            project=project,
            limit=limit,
            categories=frozenset(parse_category(c) for c in categories) if categories else None,
            since=to_utc(since) if since is not None else None,
            history=history,
            branch=parse_branch(branch),
            all_branches=bool(all_branches),
        )
        result = self._answer(asked, chosen)
        return replace(result, hits=self._staleness.annotate_hits(result.hits))

    def unmarked(self, query: str, *, project: str | None, limit: int, branch: str | None) -> RecallResult:
        """What ``ask`` finds on the default plan, its hits not marked stale yet: ``ContextBuilder``
        marks them with its own hits, at once."""
        return self._answer(RecallQuery(query, project, limit, branch=parse_branch(branch)), self._plan)

    def _answer(self, asked: RecallQuery, plan: Plan) -> RecallResult:
        """``asked`` with the entities its text names, describes or reaches, run on ``plan``."""
        self._check_open()
        query, project = asked.text, asked.project
        named, guessed = self._mentions.named_in(query, project) if self._mentions else ([], frozenset())
        hops = plan.entity_hops if plan.uses(ENTITY) else 0
        near = reach(self._stores.code, self._stores.gitlab, named, hops)
        # A question that names no code itself may describe some: weak evidence, as a plain word is.
        described = (
            self.described(query, project) if plan.uses(ENTITY) and _names_no_code(named, guessed) else []
        )
        described = [e for e in described if e.key not in {n.key for n in named}]
        request = replace(
            asked,
            entity_keys=tuple(e.key for e in [*named, *described]),
            guessed_keys=guessed | {e.key for e in described},
            neighbour_keys=near.keys(1),
            far_keys=near.keys(2),
            routes=near.routes,
            expired_by=self._stores.clock(),
            aliases=self._stores.aliases(project),
        )
        # What the question writes as code first, then what it describes, then its plain words.
        ordered = sorted(named, key=lambda e: e.key in guessed)
        found = [*ordered[: len(named) - len(guessed)], *described, *ordered[len(named) - len(guessed) :]]
        return replace(self.recall(request, plan), entities=found)

    def described(self, question: str, project: str | None, *, wait: bool = False) -> list[Entity]:
        """The symbols ``question`` describes in ``project`` without naming them (``DescribedCode``);
        ``wait`` waits for the project's symbol index, else none until it is built."""
        self._check_open()
        return self._described.entities_in(question, project, wait=wait) if self._described else []

    def recall(self, query: RecallQuery, plan: Plan) -> RecallResult:
        self._check_open()
        started = time.perf_counter()
        text = query.text.strip()
        if not text:
            raise InvalidInputError("The query is empty: say what you are looking for.")
        if len(text) > MAX_TEXT_CHARS:
            raise InvalidInputError(f"The query is over {MAX_TEXT_CHARS:,} characters: shorten it.")
        ensure_utf8(text, what="The query")
        visibility = query.visibility()
        depth = max(plan.depth, query.limit)
        rankings: dict[str, list[tuple[str, float]]] = {}
        semantic = self._stores.semantic
        embeds = semantic is not None and semantic.ready and plan.uses(SEMANTIC)
        # A store that reads the words' hits' cosines with them (``NearTextSearch``) is asked once
        # the query is embedded: one round trip less on the words' chain shortened it more than
        # starting it beside the embedding (benchmarks.md); a daemon's index needs no vector.
        near = self._near_text if embeds and plan.uses(LEXICAL) else None
        near = near if near is not None and near.cosines_with_words else None
        searched: Future[TextHits] | None = None
        if plan.uses(LEXICAL) and near is None:  # side by side with the query's embedding (see __init__)
            searched = self._submit(
                self._stores.store.search_text, lexical_query(text), visibility, depth, phrase=text
            )
        query_vector: Vector | None = None
        in_store = False  # the vectors are the database's (pgvector), not this process's
        if embeds and semantic is not None:
            # Load the vectors first: needs no model unless some are pending.
            in_store = semantic.index().in_store
            query_vector = semantic.embed_query(text)
        searched_near: Future[tuple[TextHits, dict[str, float]]] | None = None
        if near is not None and query_vector is not None:
            searched_near = self._submit(
                near.search_text_near, lexical_query(text), visibility, depth, query_vector, phrase=text
            )
        # On a database store that does not read them with the words, the cosines of the words'
        # candidates are asked on the search's thread once it found them, while this one asks for
        # the nearest vectors: both run at once, each on its own connection.
        cosined: Future[dict[str, float | None]] | None = None
        if searched is not None and query_vector is not None and in_store:
            cosined = self._submit(self._cosines_of_hits, query_vector, searched)
        nearest = (
            self._semantic_channel(query_vector, visibility, depth) if query_vector is not None else None
        )
        exact: frozenset[str] = frozenset()  # hold the whole query word for word
        asked: Mapping[str, float | None] = {}
        found: TextHits | None = searched.result() if searched is not None else None
        if searched_near is not None:
            found, cosines = searched_near.result()
            asked = {i: cosines.get(i) for i, _ in found}
        elif cosined is not None:
            asked = cosined.result()
        elif searched is not None and query_vector is not None:
            # In this process they are asked here, after the nearest vectors: on the other
            # thread they only took turns with the graph's search for the interpreter, and
            # this thread waited for them. A copy of the vector: for the one it searched
            # with, the index would give its search's own scores, and the words' candidates
            # are scored from their vectors, as on the other thread.
            asked = self._cosines_of_hits(query_vector.copy(), searched)
        if found is not None:
            rankings[LEXICAL] = found
            if found.exact and 0 < plan.exact_phrase_words <= len(words(text)):
                exact = found.exact
        if nearest is not None:
            rankings[SEMANTIC] = nearest
        entity_steps: dict[str, tuple[Step, ...]] = {}
        if plan.uses(ENTITY) and query.entity_keys:
            rankings[ENTITY], entity_steps = self._entity_channel(query, plan)

        if plan.fusion == "rrf":
            fused = weighted_rrf(rankings, plan.weights, k=plan.rrf_k)
            best = sum(w / (plan.rrf_k + 1) for w in plan.weights.values()) or 1.0
            scored = [(f.id, f.score / best) for f in fused]
            channels_of = {f.id: list(f.channels) for f in fused}.__getitem__
            paths: dict[str, tuple[str, ...]] = {}
            similarities = self._similarities(query_vector, [f.id for f in fused[: depth * 2]], asked)
        else:
            scored, channels_of, paths, similarities = self._convex(rankings, query_vector, plan, asked)

        if exact:  # the sentence the user half-remembers: evidence enough, level with the best
            level = max((s for _, s in scored), default=0.0)
            scored = [(i, level if i in exact else s) for i, s in scored]
            scored.sort(key=lambda candidate: candidate[0] not in exact)
        first = {item: n for n, item in enumerate(i for i, _ in scored if i in exact)}
        candidates = {item for item, _ in scored}

        def relevant(item: str) -> bool:
            return item in first or (
                item in candidates and _relevant(channels_of(item), similarities.get(item), plan)
            )

        # Below the floor: nothing rather than noise. A graph hit rides on its source. Read
        # as far as the walk below goes, not further: it mostly stops within a few chunks.
        above = (
            (item, score)
            for item, score in scored
            if relevant(item) or ((path := paths.get(item)) is not None and relevant(path[0]))
        )
        hits: list[Hit] = []
        records: dict[str, MemoryRecord | None] = {}
        window: list[tuple[str, float]] = []
        # Status and source weights are at most 1: once ``limit`` hits are kept, a candidate
        # whose unweighted score is below the last of them cannot enter, and the walk stops.
        # The records are read as many at a time as hits are still missing: the candidates
        # above the floor are mostly visible (the channels filter), and a record read for
        # nothing cost 0.15 ms on Kùzu at 100,000 memories.
        while window or (window := list(itertools.islice(above, max(query.limit - len(hits), 1)))):
            item, score = window.pop(0)
            if len(hits) >= query.limit and round(score, 4) < hits[query.limit - 1].score:
                break
            if item not in records:  # the records of a chunk at a time
                batch = [item, *(other for other, _ in window)]
                fetched = self._stores.store.get_memories(batch)
                records.update({other: fetched.get(other) for other in batch})
            record = records[item]
            if record is None or not _visible(record, visibility):
                continue
            prior = 1.0 if is_persons(record) else source_prior(plan.source_priors, record.source)
            weight = STATUS_WEIGHT.get(record.status, 1.0) * prior
            hits.append(Hit(record, round(score * weight, 4), tuple(channels_of(item)), paths.get(item, ())))
            hits.sort(key=lambda h: (-h.score, first.get(h.memory.id, len(first)), h.memory.id))
        hits = self._explained(hits[: query.limit], entity_steps, query.project)
        took = (time.perf_counter() - started) * 1000
        log.debug("recall plan=%s hits=%d took=%.1fms", plan.name, len(hits), took)
        return RecallResult(
            query=text,
            plan=plan.name,
            hits=hits,
            channels={name: len(ranking) for name, ranking in rankings.items()},
            took_ms=took,
            # False while some memories wait for their vectors: those are found by words,
            # entities and the graph only.
            semantic_ready=(
                query_vector is not None
                and self._stores.semantic is not None
                and self._stores.semantic.complete
            )
            or not plan.uses(SEMANTIC),
        )

    def _similarities(
        self, vector: Vector | None, ids: Sequence[str], asked: Mapping[str, float | None] | None = None
    ) -> dict[str, float]:
        """The cosine similarity of ``vector`` to each of ``ids`` that has a vector; ``asked``:
        those known already (None: it has no vector)."""
        if vector is None or self._stores.semantic is None:
            return {}
        known = asked or {}
        found = dict(self._stores.semantic.similarities(vector, [i for i in ids if i not in known]))
        found.update({i: cosine for i in ids if (cosine := known.get(i)) is not None})
        return found

    def _cosines_of_hits(self, vector: Vector, searched: Future[TextHits]) -> dict[str, float | None]:
        """The cosine of ``vector`` to each memory the full-text search found (None: no vector)."""
        ids = [i for i, _ in searched.result()]
        found = self._similarities(vector, ids)
        return {i: found.get(i) for i in ids}

    def _convex(
        self,
        rankings: Mapping[str, Sequence[tuple[str, float]]],
        query_vector: Vector | None,
        plan: Plan,
        asked: Mapping[str, float | None],
    ) -> tuple[
        list[tuple[str, float]],
        Callable[[str], list[ChannelRank]],
        dict[str, tuple[str, ...]],
        dict[str, float],
    ]:
        """Convex fusion of the channels, then spreading over the memory graph: the candidates
        best first with their scores, and how to name the channels that found one (asked of
        the few the walk reaches, not of all of them); ``asked``: cosines known already."""
        lexical = dict(rankings.get(LEXICAL, ()))
        entity = dict(rankings.get(ENTITY, ()))
        candidates = {*lexical, *entity, *(i for i, _ in rankings.get(SEMANTIC, ()))}
        cosines = self._similarities(query_vector, list(candidates), asked) if plan.uses(SEMANTIC) else {}
        base = convex_scores(lexical, cosines, entity, plan.weights, semantic_offset=plan.semantic_offset)
        paths: dict[str, tuple[str, ...]] = {}
        gains: dict[str, Spread] = {}
        if plan.uses(GRAPH) and base:
            seeds = sorted(base, key=lambda i: (-base[i], i))[: plan.graph_seeds]
            adjacency, vias, strengths = self._neighbourhood(seeds, len(plan.hop_weights), plan)
            new = [n for n in adjacency if n not in base]
            if new and plan.uses(SEMANTIC):
                extra = self._similarities(query_vector, new)
                cosines.update(extra)
                base = convex_scores(
                    lexical, cosines, entity, plan.weights, semantic_offset=plan.semantic_offset
                )
            hops = [w * plan.weights[GRAPH] for w in plan.hop_weights]
            gains = spread(base, adjacency, hops, strengths)
            for item, gain in gains.items():
                route = gain.route or (gain.source, item)
                path = [route[0]]
                for a, b in itertools.pairwise(route):
                    path += [vias.get((a, b), "graph"), b]
                paths[item] = tuple(path)
        ranks = {
            channel: {item: r for r, (item, _) in enumerate(ranking, 1)}
            for channel, ranking in rankings.items()
        }
        totals = {
            item: base.get(item, 0.0) + (gains[item].gain if item in gains else 0.0)
            for item in {*base, *gains}
        }
        ordered = sorted(totals, key=lambda i: (-totals[i], i))
        graph_rank = {item: r for r, item in enumerate(sorted(gains, key=lambda i: (-gains[i].gain, i)), 1)}
        top = sum(plan.weights.get(c, 0.0) for c in (LEXICAL, SEMANTIC, ENTITY)) or 1.0
        channel_scores = {channel: dict(ranking) for channel, ranking in rankings.items()}

        def channels_of(item: str) -> list[ChannelRank]:
            channels = [
                ChannelRank(channel, ranks[channel][item], channel_scores[channel].get(item, 0.0))
                for channel in rankings
                if item in ranks[channel]
            ]
            if item in gains:
                channels.append(ChannelRank(GRAPH, graph_rank[item], gains[item].gain))
            return channels

        scored = [(item, min(1.0, totals[item] / top)) for item in ordered]
        return scored, channels_of, paths, cosines

    # -- channels ---------------------------------------------------------------

    def _semantic_channel(
        self, vector: Vector, visibility: Visibility, depth: int
    ) -> list[tuple[str, float]]:
        assert self._stores.semantic is not None
        over = depth * 3 if (visibility.categories or visibility.since) else depth
        found = self._stores.semantic.search(VectorQuery.of(vector, over, visibility))
        if visibility.categories or visibility.since:
            records = self._stores.store.get_memories([i for i, _ in found])
            found = [(i, s) for i, s in found if i in records and _visible(records[i], visibility)]
        return found[:depth]

    def _entity_channel(
        self, query: RecallQuery, plan: Plan
    ) -> tuple[list[tuple[str, float]], dict[str, tuple[Step, ...]]]:
        """Memories about the named entities, then about those one and two code or GitLab
        edges away, best first; and for each, the edges from a named entity to it.

        Scores follow ``entity_scores`` (specific entities count more, evidence over several
        named entities adds up, each hop below all of the one before), then ``age_weighted``
        by the plan's ``entity_recency``.
        """
        named, near, far = query.entity_keys, query.neighbour_keys, query.far_keys
        about = self._stores.store.memories_about([*named, *near, *far])
        groups = ((named, 1.0), (near, plan.neighbour_weight), (far, plan.neighbour_weight))
        scores = entity_scores(about, groups, specificity=plan.entity_specificity)
        if plan.entity_recency > 0.0 and len(scores) > 1:
            records = self._stores.store.get_memories(list(scores))
            times = {item: record.created_at.timestamp() for item, record in records.items()}
            scores = age_weighted(scores, times, plan.entity_recency)
        steps: dict[str, tuple[Step, ...]] = {}
        for keys, _ in groups:  # the way through the closest entity the memory is about
            for key in keys:
                for memory_id in about.get(key, ()):
                    if memory_id in scores and memory_id not in steps:
                        about_it = Step(key, "ABOUT", memory_id, False, end_name=memory_id)
                        steps[memory_id] = (*query.routes.get(key, ()), about_it)
        if query.guessed_keys and plan.guessed_weight < 1.0:
            # Reached from a symbol only a plain word named ("exit"): weaker evidence of topic.
            scores = {
                item: score * (plan.guessed_weight if steps[item][0].start in query.guessed_keys else 1.0)
                for item, score in scores.items()
            }
        return sorted(scores.items(), key=lambda pair: (-pair[1], pair[0])), steps

    def _explained(
        self, hits: Sequence[Hit], entity_steps: Mapping[str, tuple[Step, ...]], project: str | None
    ) -> list[Hit]:
        """``hits`` with the entities they are about, as a reader in ``project`` is shown them
        (``Stores.shown_about``), and, on the entity and graph channels, the edges that reached
        them, each end named as a user writes it (one entity read for all)."""
        about = self._stores.shown_about([h.memory.id for h in hits], project)
        walks = {h.memory.id: walks_of(h, entity_steps.get(h.memory.id, ())) for h in hits}
        names, missing = step_names(walks.values(), about)
        if missing:
            names.update({key: e.name for key, e in self._stores.store.get_entities(missing).items()})
        told = [explained(h, walks[h.memory.id], names, about.get(h.memory.id, ())) for h in hits]
        return [replace(h, why=why(h)) for h in told]

    def _neighbourhood(
        self, seeds: Sequence[str], hops: int, plan: Plan
    ) -> tuple[dict[str, list[str]], dict[tuple[str, str], str], dict[tuple[str, str], float]]:
        """Memory-to-memory adjacency around ``seeds`` (entities shared count as one hop).

        Also the edge each pair is best joined by (``vias``) and its weight: with the plan's
        ``hub_damping``, an edge through an entity passes ``hub_weight`` of its fanout; an edge
        through an entity of its ``topicless_kinds`` (an author) is no edge at all.
        """
        adjacency: dict[str, set[str]] = {}
        vias: dict[tuple[str, str], str] = {}
        strengths: dict[tuple[str, str], float] = {}
        frontier = list(seeds)
        seen = set(frontier)
        for _ in range(hops):
            if not frontier:
                break
            next_frontier: list[str] = []
            for edge in self._stores.store.neighbours(frontier, GRAPH_EDGE_LIMIT):
                if not carries_topic(edge.via, plan.topicless_kinds):
                    continue
                a, b = edge.memory_id, edge.other_id
                adjacency.setdefault(a, set()).add(b)
                adjacency.setdefault(b, set()).add(a)
                strength = hub_weight(edge.fanout) if plan.hub_damping else 1.0
                if strength > strengths.get((a, b), 0.0):
                    strengths[(a, b)] = strengths[(b, a)] = strength
                    vias[(a, b)] = vias[(b, a)] = edge.via
                if b not in seen:
                    seen.add(b)
                    next_frontier.append(b)
            frontier = next_frontier
        return {item: sorted(n) for item, n in adjacency.items()}, vias, strengths


def _visible(record: MemoryRecord, visibility: Visibility) -> bool:
    if record.status not in visibility.statuses:
        return False
    elsewhere = record.project is not None and not visibility.shows_project(record.project)
    if elsewhere and record.scope.value != "global":
        return False
    if visibility.categories is not None and record.category not in visibility.categories:
        return False
    if not visibility.shows_branch(record.branch) or not visibility.shows_expiry(record):
        return False
    return visibility.since is None or record.created_at >= visibility.since


def _names_no_code(named: Sequence[Entity], guessed: Collection[str]) -> bool:
    """Whether a question names no file or symbol but by plain words (``guessed``)."""
    code = (EntityKind.FILE, EntityKind.SYMBOL)
    return not any(e.kind in code and e.key not in guessed for e in named)


def _relevant(channels: Collection[ChannelRank], similarity: float | None, plan: Plan) -> bool:
    """Whether a candidate is relevant on its own evidence (graph spreading aside)."""
    found_by = {c.channel for c in channels}
    if ENTITY in found_by:
        return True
    if similarity is None or math.isnan(similarity):
        return LEXICAL in found_by  # not embedded yet (or no model): trust the words
    if similarity >= plan.semantic_floor:
        return True
    return LEXICAL in found_by and similarity >= plan.lexical_floor
