"""JSON-ready views of graphmem's data, shared by the CLI, MCP tools and exports."""

from __future__ import annotations

from dataclasses import fields
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from graphmem.core.events import MemoryEvent, describe
from graphmem.core.models import ChannelRank, Entity, Hit, Link, MemoryRecord, Step
from graphmem.core.provenance import label
from graphmem.core.timeparse import format_age

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = [
    "channel_view",
    "entity_view",
    "entity_words",
    "event_view",
    "hit_view",
    "iso",
    "link_view",
    "memory_view",
    "reasons",
    "record_view",
    "step_name",
    "step_text",
    "step_view",
    "why",
]


def iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def record_view(record: DataclassInstance) -> dict[str, Any]:
    """Every field of ``record`` by its name, in order, its times in ISO 8601: the view of a record
    that shows all it holds (a claim, an override), so a field added is shown with no list to edit."""
    view: dict[str, Any] = {}
    for field in fields(record):
        value = getattr(record, field.name)
        view[field.name] = iso(value) if isinstance(value, datetime) else value
    return view


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


class _EdgeWords(NamedTuple):
    """How a stored edge reads: walked along it and against it ("MR !12 changed src/x.py",
    "src/x.py changed by MR !12"), and read from its far end back toward what the question named,
    after "which" ("`refund_all`, which is called by `cancel`": walked along the edge, the far
    end is its target)."""

    along: str
    against: str
    which_along: str
    which_against: str


# One row per kind of stored edge; an edge between two memories reads as its kind.
_EDGE_WORDS = {
    "ABOUT": _EdgeWords("is about", "is the subject of", "is the subject of", "is about"),
    "CALLS": _EdgeWords("calls", "called by", "is called by", "calls"),
    "CHANGES": _EdgeWords("changed", "changed by", "was changed by", "changed"),
    "CLOSES": _EdgeWords("closes", "closed by", "is closed by", "closes"),
    "CONTAINS": _EdgeWords("defines", "defined in", "is defined in", "defines"),
    "IMPORTS": _EdgeWords("imports", "imported by", "is imported by", "imports"),
    "PART_OF": _EdgeWords("is part of", "contains", "contains", "is part of"),
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
    words = _EDGE_WORDS.get(step.relation)
    if words is None:
        return f"{start} is linked to {end} ({step.relation})"
    return f"{start} {words.along if step.forward else words.against} {end}"


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


# How a channel that walked no edge found a hit, in words.
_FOUND_BY = {"lexical": "its words match", "semantic": "close in meaning"}
# Entity kinds written as code in an explanation; refs (!12, #34, &5) and people read as they are.
_CODE_KINDS = frozenset({"File", "Symbol", "ExternalModule"})
# A link between two memories, as a graph hop through it reads.
_LINK_WORDS = {"next": "the next turn of a session"}


def entity_words(key: str, name: str) -> str:
    """An entity as an explanation names it: `src/cart.py`, `Order.close`, !12, #34, Maria."""
    kind = key.split(":", 1)[0]
    shown = name or key.split("::")[-1]
    return f"`{shown}`" if kind in _CODE_KINDS else shown


def _mentions(text: str, key: str, name: str) -> bool:
    """Whether ``text`` names the entity: its name, a file's base name or a symbol's last part."""
    kind = key.split(":", 1)[0]
    short = name.rsplit("/", 1)[-1] if kind == "File" else name.rsplit(".", 1)[-1]
    return bool(name) and (name in text or (len(short) > 2 and short in text))


def _entity_reason(hit: Hit, steps: tuple[Step, ...]) -> str:
    """How the entity channel reached a hit: "mentions `HTTPAdapter`", "about `src/app.py`, which
    was changed by !12" — from the entity the memory is about back to what the question named."""
    about = next((s for s in reversed(steps) if s.relation == "ABOUT"), None)
    if about is None:
        return "about what the question names"
    verb = "mentions" if _mentions(hit.memory.text, about.start, about.start_name) else "about"
    text = f"{verb} {entity_words(about.start, about.start_name)}"
    for step in reversed([s for s in steps if s.relation != "ABOUT"]):
        words = _EDGE_WORDS.get(step.relation)
        if words is None:
            which = f"is linked to ({step.relation})"
        else:
            which = words.which_along if step.forward else words.which_against
        text += f", which {which} {entity_words(step.start, step.start_name)}"
    return text


def _graph_reason(hit: Hit, steps: tuple[Step, ...]) -> str:
    """How graph spreading lifted a hit: "1 hop via `cart.py`", "2 hops via !12 → #34" — the
    entities (or links) joining it to a memory that matched, never a memory's id."""
    vias = [
        entity_words(s.end, s.end_name) if s.relation == "ABOUT" else _LINK_WORDS.get(s.relation, s.relation)
        for s in steps
        if s.forward  # each hop once: through an entity, or along a link
    ]
    if not vias and len(hit.path) > 1:
        vias = [_LINK_WORDS.get(v, v) if ":" not in v else entity_words(v, "") for v in hit.path[1::2]]
    vias = _without_loops(vias)
    hops = len(vias)
    return (
        f"{hops} hop{'s' if hops != 1 else ''} via {' → '.join(vias)}"
        if vias
        else "near a memory that matched"
    )


def _without_loops(vias: list[str]) -> list[str]:
    """``vias`` with each loop cut out: a walk that came back to an entity (through a memory
    about it) is said as the walk that stayed there ("via `a.py` → `a.py`" was a loop)."""
    kept: list[str] = []
    for via in vias:
        if via in kept:
            del kept[kept.index(via) + 1 :]
        else:
            kept.append(via)
    return kept


def reasons(hit: Hit) -> list[tuple[str, str]]:
    """Each channel that found ``hit`` and why, in words a person reads (no ids)."""
    found: list[tuple[str, str]] = []
    for rank in hit.channels:
        if rank.channel == "entity":
            found.append((rank.channel, _entity_reason(hit, rank.steps)))
        elif rank.channel == "graph":
            found.append((rank.channel, _graph_reason(hit, rank.steps)))
        else:
            found.append((rank.channel, _FOUND_BY.get(rank.channel, f"found by {rank.channel}")))
    return found


def why(hit: Hit) -> str:
    """One line in words: why the hit is there ("its words match; mentions `HTTPAdapter`; 1 hop
    via `cart.py`"); the ids and ranks are in ``hit_view``'s ``channels`` and ``path``."""
    text = "; ".join(reason for _, reason in reasons(hit))
    if hit.reason:
        return f"{hit.reason}; {text}" if text else hit.reason
    return text


def hit_view(hit: Hit, *, now: datetime) -> dict[str, Any]:
    view = memory_view(hit.memory, now=now)
    view["score"] = hit.score
    view["why"] = {
        "summary": why(hit),
        "reasons": [{"channel": channel, "text": text} for channel, text in reasons(hit)],
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
        "person": event.person,
        "rule": event.rule,
        "reason": event.reason,
        "change": describe(event),
        "before": event.before,
        "after": event.after,
        "undoes": event.undoes,
        "undone_by": event.undone_by,
    }
