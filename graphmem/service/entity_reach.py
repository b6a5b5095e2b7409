"""How far recall's entity channel reaches: the code and GitLab edges from the entities a query
names, up to two hops, and the steps that explain each hit (``core.models.Step``).

``reach`` walks from the named entities (``code_neighbours``, ``gitlab_neighbours``), then from
what it found (``code_callers_and_callees``, ``gitlab_edges``), each hop a bounded number of
batched queries; ``graph_steps`` spells out a graph-spreading path the same way, and
``explained`` puts both on a hit with each end named (``step_names``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from graphmem.core.fusion import ENTITY, GRAPH
from graphmem.core.gitlab_ports import GitLabGraph
from graphmem.core.models import Entity, EntityKind, Hit, Step
from graphmem.core.ports import CodeGraph

# Code-graph neighbours of the named files and symbols that join the entity channel (per hop).
CODE_NEIGHBOUR_LIMIT = 30
# Entities one GitLab edge from what a recall query names, whose memories join the entity channel
# (per hop): as many as get_context lists per section, so a 3,000-file MR adds no more than a
# bundle shows.
RECALL_NEIGHBOUR_LIMIT = 25
# The relations of the stored GitLab graph (``GitLabGraph.related_edges``).
GITLAB_RELATIONS = frozenset({"CHANGES", "CLOSES", "PART_OF"})
_GITLAB_NEIGHBOUR_KINDS = (
    EntityKind.MERGE_REQUEST,
    EntityKind.ISSUE,
    EntityKind.EPIC,
    EntityKind.FILE,
    EntityKind.SYMBOL,
)


Walk = Mapping[str, tuple[Step, ...]]  # channel -> the steps it walked to one hit


def walks_of(hit: Hit, entity_steps: tuple[Step, ...]) -> Walk:
    """The steps that reached ``hit``: the entity channel's, and graph spreading's path."""
    walk: dict[str, tuple[Step, ...]] = {}
    if len(hit.path) > 1:
        walk[GRAPH] = graph_steps(hit.path)
    if entity_steps:
        walk[ENTITY] = entity_steps
    return walk


def step_names(
    walks: Iterable[Walk], about: Mapping[str, Sequence[Entity]]
) -> tuple[dict[str, str], set[str]]:
    """Names of the entities the walks pass through: as the walk named them (a symbol by its
    qualified name), else as the hits' own entities are named; and the keys still unnamed."""
    steps = [step for walk in walks for channel in walk.values() for step in channel]
    names = {
        key: name
        for step in steps
        for key, name in ((step.start, step.start_name), (step.end, step.end_name))
        if name
    }
    for entities in about.values():
        for entity in entities:
            names.setdefault(entity.key, entity.name)
    keys = {end for step in steps for end in (step.start, step.end) if ":" in end}  # not memory ids
    return names, keys - names.keys()


def explained(hit: Hit, walk: Walk, names: Mapping[str, str], about: Sequence[Entity]) -> Hit:
    """``hit`` with its entities, each channel's steps with both ends named, and its path: graph
    spreading's when it has one, else the entity channel's."""
    named = {
        channel: tuple(
            replace(s, start_name=names.get(s.start, s.start), end_name=names.get(s.end, s.end))
            for s in steps
        )
        for channel, steps in walk.items()
    }
    channels = tuple(replace(c, steps=named.get(c.channel, ())) for c in hit.channels)
    return replace(
        hit, channels=channels, path=hit.path or path_of(named.get(ENTITY, ())), entities=tuple(about)
    )


def path_of(steps: Sequence[Step]) -> tuple[str, ...]:
    """Steps as a path of nodes and edges in turn: (start, relation, end, relation, end...)."""
    if not steps:
        return ()
    path = [steps[0].start]
    for step in steps:
        path += [step.relation, step.end]
    return tuple(path)


def graph_steps(path: Sequence[str]) -> tuple[Step, ...]:
    """The steps of a graph-spreading path (memory, via, memory[, via, memory]): through a shared
    entity two ``ABOUT`` edges (the second walked against it), else one ``RELATES`` kind or ``next``."""
    steps: list[Step] = []
    for n in range(0, len(path) - 2, 2):
        a, via, b = path[n], path[n + 1], path[n + 2]
        if ":" in via:
            steps += [Step(a, "ABOUT", via, True, a), Step(via, "ABOUT", b, False, end_name=b)]
        else:
            steps.append(Step(a, via, b, True, a, b))
    return tuple(steps)


@dataclass(frozen=True, slots=True)
class Reach:
    """Entities up to two code or GitLab edges from the ones a query names, and the way to each."""

    hops: tuple[tuple[str, ...], ...] = ()  # keys one edge out, then two
    routes: Mapping[str, tuple[Step, ...]] = field(default_factory=dict)

    def keys(self, hop: int) -> tuple[str, ...]:
        return self.hops[hop - 1] if len(self.hops) >= hop else ()


def reach(code: CodeGraph | None, gitlab: GitLabGraph | None, named: Sequence[Entity], hops: int) -> Reach:
    """What the entity channel follows from ``named``: ``hops`` (0–2) edges of the code graph
    (callers, callees, a file's symbols) and of the stored GitLab graph (``gitlab_neighbours``).
    Never two code edges in a row: callers of callers lowered blame recall on click
    (docs/recall.md), so the second hop takes code edges only from what a GitLab edge led to
    (an MR's changed symbol to its callers and callees).

    Each hop is a bounded number of batched queries, whatever the number of entities: at most
    ``CODE_NEIGHBOUR_LIMIT`` + ``RECALL_NEIGHBOUR_LIMIT`` entities join per hop.
    """
    routes: dict[str, tuple[Step, ...]] = {}
    seen = {e.key for e in named}
    layers: list[tuple[str, ...]] = []
    frontier: list[Step] = []
    for hop in range(1, hops + 1):
        if hop == 1:
            found = (code_neighbours(code, named) if code is not None else []) + list(
                gitlab_neighbours(gitlab, named)
            )
        else:  # GitLab edges from all; code edges only from what GitLab led to, never twice
            keys = [s.end for s in frontier]
            via_gitlab = [s.end for s in frontier if s.relation in GITLAB_RELATIONS]
            names = {s.end: s.end_name for s in frontier}
            found = (code_callers_and_callees(code, via_gitlab, names) if code is not None else []) + list(
                gitlab_edges(gitlab, keys)
            )
        layer: list[Step] = []
        for step in found:
            if step.end not in seen:
                seen.add(step.end)
                routes[step.end] = (*routes.get(step.start, ()), step)
                layer.append(step)
        layers.append(tuple(s.end for s in layer))
        frontier = layer
        if not frontier:
            break
    return Reach(tuple(layers), routes)


def code_neighbours(
    code: CodeGraph, entities: Iterable[Entity], limit: int = CODE_NEIGHBOUR_LIMIT
) -> list[Step]:
    """The code edges from named files and symbols, walked from them: a symbol's callers and
    callees, a file's symbols."""
    found: list[Step] = []
    for entity in entities:
        if entity.kind is EntityKind.SYMBOL:
            for other, _, _ in code.calls([entity.key], incoming=True, limit=limit):
                found.append(Step(entity.key, "CALLS", other.key, False, entity.name, other.qualified_name))
            for other, _, _ in code.calls([entity.key], incoming=False, limit=limit):
                found.append(Step(entity.key, "CALLS", other.key, True, entity.name, other.qualified_name))
        elif entity.kind is EntityKind.FILE and entity.project:
            found += [
                Step(entity.key, "CONTAINS", s.key, True, entity.name, s.qualified_name)
                for s in code.symbols_in(entity.project, entity.name)[:limit]
            ]
    named = {e.key for e in entities}
    unique = {step.end: step for step in reversed(found) if step.end not in named}  # the first way wins
    return [unique[key] for key in dict.fromkeys(s.end for s in found) if key in unique][:limit]


def code_callers_and_callees(
    code: CodeGraph, keys: Sequence[str], names: Mapping[str, str], limit: int = CODE_NEIGHBOUR_LIMIT
) -> list[Step]:
    """The callers and callees of the symbols among ``keys`` (two queries for all of them)."""
    symbols = [k for k in keys if k.startswith(f"{EntityKind.SYMBOL.value}:")]
    if not symbols:
        return []
    found = [
        Step(given, "CALLS", other.key, not incoming, names.get(given, ""), other.qualified_name)
        for incoming in (True, False)
        for other, given, _ in code.calls(symbols, incoming=incoming, limit=limit)
    ]
    return found[:limit]


def gitlab_neighbours(
    gitlab: GitLabGraph | None, entities: Iterable[Entity], limit: int = RECALL_NEIGHBOUR_LIMIT
) -> tuple[Step, ...]:
    """The edges from named entities in the stored GitLab graph, for recall: an MR's changed files
    and symbols and the issues it closes; an issue's closing MRs and its epic; an epic's issues
    and its parent and child epics; the MRs that changed a file or symbol. Empty until enrichment
    stored those edges."""
    return gitlab_edges(gitlab, [e.key for e in entities if e.kind in _GITLAB_NEIGHBOUR_KINDS], limit)


def gitlab_edges(
    gitlab: GitLabGraph | None, keys: Sequence[str], limit: int = RECALL_NEIGHBOUR_LIMIT
) -> tuple[Step, ...]:
    """``GitLabGraph.related_edges`` of the keys it has edges for (none asked without any)."""
    labels = tuple(f"{kind.value}:" for kind in _GITLAB_NEIGHBOUR_KINDS)
    wanted = [k for k in keys if k.startswith(labels)]
    if gitlab is None or not wanted:
        return ()
    return tuple(gitlab.related_edges(wanted, limit))
