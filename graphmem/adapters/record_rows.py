"""The mappings every store shares from its rows to graphmem's records (Kùzu, PostgreSQL):
a row of memory columns in ``MEMORY_FIELDS`` order, then whether the memory has a vector,
to a ``MemoryRecord``; a row of symbol columns in ``SYMBOL_FIELDS`` order to a ``SymbolInfo``
(followed by a call's two columns, to what ``CodeGraph.calls`` gives); a row of event columns in
``EVENT_FIELDS`` order to a ``MemoryEvent``."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from graphmem.core.codegraph import SYMBOL_COLUMNS, SymbolInfo
from graphmem.core.events import EventKind, MemoryEvent
from graphmem.core.models import Category, MemoryRecord, Scope, Status, Trust

# A memory's columns (PostgreSQL's ``memories``, a Kùzu ``Memory`` node's but the store's own),
# in the order ``memory_from_row`` reads them (then whether the memory has a vector).
MEMORY_FIELDS = (
    "id",
    "text",
    "category",
    "scope",
    "project",
    "created_at",
    "updated_at",
    "valid_from",
    "valid_to",
    "status",
    "content_hash",
    "source",
    "session",
    "reinforced",
    "origin",
    "trust",
    "expires_at",
    "branch",
)
# What ``update_memory`` may change: a memory's fields but its id and its text (``replace_text``
# gives new text), and its vector (``embedding``; None drops it).
UPDATABLE = frozenset(MEMORY_FIELDS) - {"id", "text"} | {"embedding"}
# The memory fields a store keeps as their enum's string, and the enum each is read back as.
ENUM_FIELDS: dict[str, type[Category | Scope | Status | Trust]] = {
    "category": Category,
    "scope": Scope,
    "status": Status,
    "trust": Trust,
}
# A symbol's columns (a Kùzu ``Symbol`` node's, PostgreSQL's ``code_symbols``): its key, then
# the columns a pass compares (``core.codegraph.SYMBOL_COLUMNS``), in the order
# ``symbol_from_row`` reads them; ``SYMBOL_RETURN`` asks them of a symbol named ``s``.
SYMBOL_FIELDS = ("key", *SYMBOL_COLUMNS)
SYMBOL_RETURN = ", ".join(f"s.{name}" for name in SYMBOL_FIELDS)
# An event's columns, in the order ``event_from_row`` reads them.
EVENT_FIELDS = (
    "id",
    "memory_id",
    "at",
    "kind",
    "actor",
    "reason",
    "before",
    "after",
    "other_id",
    "rule",
    "undoes",
    "undone_by",
)


def utc(value: datetime | None) -> datetime | None:
    """``value`` in UTC, aware; a naive value (Kùzu's TIMESTAMP) is taken as UTC."""
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def check_changes(changes: Collection[str]) -> None:
    """Refuse the ``update_memory`` changes every store refuses: the text, or a field that is not
    ``UPDATABLE`` (ValueError, naming the fields)."""
    if "text" in changes:
        raise ValueError("change a memory's text with replace_text")
    unknown = set(changes) - UPDATABLE
    if unknown:
        raise ValueError(f"unknown memory fields: {sorted(unknown)}")


def column_value(value: object) -> object:
    """A memory field's value as a store writes it: an ``ENUM_FIELDS`` enum as its string, any
    other value as it is (a time is the store's own to convert)."""
    return value.value if isinstance(value, (Category, Scope, Status, Trust)) else value


def memory_from_row(row: Sequence[Any]) -> MemoryRecord:
    (
        id_,
        text,
        category,
        scope,
        project,
        created,
        updated,
        valid_from,
        valid_to,
        status,
        chash,
        source,
        session,
        reinforced,
        origin,
        trust,
        expires_at,
        branch,
        embedded,
    ) = row
    return MemoryRecord(
        id=id_,
        text=text,
        category=Category(category),
        scope=Scope(scope),
        project=project,
        created_at=utc(created) or datetime.now(UTC),
        updated_at=utc(updated) or datetime.now(UTC),
        valid_from=utc(valid_from) or datetime.now(UTC),
        valid_to=utc(valid_to),
        status=Status(status),
        content_hash=chash or "",
        source=source or "user",
        session=session,
        reinforced=int(reinforced or 0),
        embedded=bool(embedded),
        origin=origin,
        trust=Trust(trust) if trust else Trust.NORMAL,
        expires_at=utc(expires_at),
        branch=branch or None,
    )


def symbol_from_row(row: Sequence[Any]) -> SymbolInfo:
    """A ``SymbolInfo`` from a row of ``SYMBOL_FIELDS``."""
    key, path, kind, name, qualified, start, end, signature, docstring, body_hash, changed, deleted = row
    return SymbolInfo(
        key,
        path,
        kind or "",
        name or "",
        qualified or "",
        int(start or 0),
        int(end or 0),
        signature or "",
        docstring,
        body_hash or "",
        utc(changed),
        utc(deleted),
    )


def call_from_row(row: Sequence[Any]) -> tuple[SymbolInfo, str, str]:
    """A call as ``CodeGraph.calls`` gives it, from a row of ``SYMBOL_FIELDS`` (the other symbol)
    followed by the given symbol's key and the call's confidence ("" when none is stored)."""
    width = len(SYMBOL_FIELDS)
    return symbol_from_row(row[:width]), row[width], row[width + 1] or ""


def event_from_row(row: Sequence[Any]) -> MemoryEvent:
    """A ``MemoryEvent`` from a row of ``EVENT_FIELDS``; ``before`` and ``after`` as JSON text
    (Kùzu) or as read from ``jsonb`` (PostgreSQL)."""
    event_id, memory_id, at, kind, actor, reason, before, after, other_id, rule, undoes, undone_by = row
    when = utc(at)
    assert when is not None
    return MemoryEvent(
        id=event_id,
        memory_id=memory_id,
        at=when,
        kind=EventKind(kind),
        actor=actor or "",
        reason=reason or "",
        before=_state(before),
        after=_state(after),
        other_id=other_id,
        rule=rule,
        undoes=undoes,
        undone_by=undone_by,
    )


def _state(value: str | Mapping[str, Any] | None) -> dict[str, Any]:
    if isinstance(value, str):
        loaded: dict[str, Any] = json.loads(value or "{}")
        return loaded
    return dict(value or {})
