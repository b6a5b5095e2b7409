"""JSON-ready views of graphmem's data, shared by the CLI, MCP tools and exports."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from graphmem.core.events import MemoryEvent, describe
from graphmem.core.models import ChannelRank, Entity, Hit, Link, MemoryRecord, Step
from graphmem.core.provenance import label
from graphmem.core.timeparse import format_age


def iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def memory_view(record: MemoryRecord, *, now: datetime | None = None) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": record.id,
        "text": record.text,
        "category": record.category.value,
        "scope": record.scope.value,
        "project": record.project,
        "status": record.status.value,
        "created_at": iso(record.created_at),
        "updated_at": iso(record.updated_at),
        "valid_from": iso(record.valid_from),
        "valid_to": iso(record.valid_to),
        "source": record.source,
        "provenance": label(record),  # who wrote it, in words (core/provenance.py)
        "session": record.session,
        "reinforced": record.reinforced,
        "embedded": record.embedded,
        "origin": record.origin,
        "trust": record.trust.value,
        "stale": record.stale,
        "expires_at": iso(record.expires_at),
        "branch": record.branch,  # None: seen on every branch
    }
    if now is not None:
        view["age"] = format_age(record.created_at, now=now)
    return view


def entity_view(entity: Entity) -> dict[str, Any]:
    return {
        "key": entity.key,
        "kind": entity.kind.value,
        "name": entity.name,
        "project": entity.project,
        "title": entity.title,
    }


def link_view(link: Link) -> dict[str, Any]:
    return {
        "source": link.source,
        "target": link.target,
        "kind": link.kind.value,
        "created_at": iso(link.created_at),
    }


# How each stored edge reads, walked along it and against it ("MR !12 changed src/x.py",
# "src/x.py changed by MR !12"); an edge between two memories reads as its kind.
_PHRASES = {
    "ABOUT": ("is about", "is the subject of"),
    "CALLS": ("calls", "called by"),
    "CHANGES": ("changed", "changed by"),
    "CLOSES": ("closes", "closed by"),
    "CONTAINS": ("defines", "defined in"),
    "IMPORTS": ("imports", "imported by"),
    "PART_OF": ("is part of", "contains"),
}
# Entity kinds whose name alone does not say what they are.
_KIND_WORDS = {"MergeRequest": "MR "}


def step_name(key: str, name: str) -> str:
    """How an explanation names one end of a step: ``MR !12``, ``#34``, ``src/x.py``, ``mem_...``."""
    return _KIND_WORDS.get(key.split(":", 1)[0], "") + (name or key) if ":" in key else (name or key)


def step_text(step: Step) -> str:
    """One step in words: "MR !12 changed src/shop/checkout.py", "refund_all called by cancel".

    A link between two memories (``supersedes``, ``next``...) is walked either way and its
    direction is not kept along the walk, so it reads "mem_a is linked to mem_b (supersedes)".
    """
    start, end = step_name(step.start, step.start_name), step_name(step.end, step.end_name)
    if step.relation not in _PHRASES:
        return f"{start} is linked to {end} ({step.relation})"
    forward, backward = _PHRASES[step.relation]
    return f"{start} {forward if step.forward else backward} {end}"


def step_view(step: Step) -> dict[str, Any]:
    return {
        "from": step.start,
        "edge": step.relation,
        "to": step.end,
        "forward": step.forward,
        "text": step_text(step),
    }


def channel_view(rank: ChannelRank) -> dict[str, Any]:
    return {
        "channel": rank.channel,
        "rank": rank.rank,
        "score": round(rank.score, 4),
        "steps": [step_view(step) for step in rank.steps],
    }


def _walk(rank: ChannelRank) -> str:
    """The edges a channel walked, in words: "MR !12 changed src/x.py", "&5 contains #34, closed by
    MR !12" for the entity channel (the last edge, to the memory, goes without saying); the
    memories and what joins each to the next for the graph."""
    steps = rank.steps
    if rank.channel == "graph":
        parts = [step_name(steps[0].start, steps[0].start_name)]
        for step in steps:  # through an entity both memories are about, else a link's kind
            if step.relation != "ABOUT":
                parts.append(step.relation)
            parts.append(step_name(step.end, step.end_name))
        return " → ".join(parts)
    edges = [s for s in steps if s.relation != "ABOUT"]
    if not edges:
        return "about " + step_name(steps[-1].start, steps[-1].start_name)
    text = step_text(edges[0])
    for step in edges[1:]:
        forward, backward = _PHRASES.get(step.relation, (step.relation, step.relation))
        text += f", {forward if step.forward else backward} {step_name(step.end, step.end_name)}"
    return text


def why(hit: Hit) -> str:
    """One line: which channels found the hit, at which rank, through which edges."""
    parts = []
    for rank in hit.channels:
        part = f"{rank.channel} #{rank.rank}"
        if rank.steps:
            part += (" " if rank.channel == "entity" and len(rank.steps) == 1 else " via ") + _walk(rank)
        elif rank.channel == "graph" and len(hit.path) > 1:
            part += " via " + " → ".join(hit.path)
        parts.append(part)
    text = ", ".join(parts)
    if hit.reason:
        return f"{hit.reason}; {text}" if text else hit.reason
    return text


def hit_view(hit: Hit, *, now: datetime) -> dict[str, Any]:
    view = memory_view(hit.memory, now=now)
    view["score"] = hit.score
    view["why"] = {
        "summary": why(hit),
        "channels": [channel_view(c) for c in hit.channels],
        "path": list(hit.path),
    }
    view["entities"] = [entity.name for entity in hit.entities]
    return view


def event_view(event: MemoryEvent) -> dict[str, Any]:
    """One history event: what changed (``change``, and ``before``/``after``), who and why."""
    return {
        "id": event.id,
        "memory_id": event.memory_id,
        "other_id": event.other_id,
        "at": iso(event.at),
        "kind": event.kind.value,
        "actor": event.actor,
        "rule": event.rule,
        "reason": event.reason,
        "change": describe(event),
        "before": event.before,
        "after": event.after,
        "undoes": event.undoes,
        "undone_by": event.undone_by,
    }
