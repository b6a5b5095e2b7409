"""JSON-ready views of graphmem's data, shared by the CLI, MCP tools and exports."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from graphmem.core.events import MemoryEvent, describe
from graphmem.core.models import ChannelRank, Entity, Hit, Link, MemoryRecord
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
        "session": record.session,
        "reinforced": record.reinforced,
        "embedded": record.embedded,
        "origin": record.origin,
        "trust": record.trust.value,
        "stale": record.stale,
        "expires_at": iso(record.expires_at),
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


def channel_view(rank: ChannelRank) -> dict[str, Any]:
    return {"channel": rank.channel, "rank": rank.rank, "score": round(rank.score, 4)}


def why(hit: Hit) -> str:
    """One line: which channels found the hit, at which rank, through which path."""
    parts = [f"{c.channel} #{c.rank}" for c in hit.channels]
    text = ", ".join(parts)
    if hit.reason:
        return f"{hit.reason}; {text}" if text else hit.reason
    if hit.path and len(hit.path) > 1:
        text += " via " + " → ".join(hit.path)
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
