"""The mappings every store shares from its rows to graphmem's records (Kùzu, PostgreSQL):
a row of memory columns in ``MEMORY_FIELDS`` order, then whether the memory has a vector (and on
PostgreSQL its writer when not the reader), to a ``MemoryRecord``; a row of symbol columns in
``SYMBOL_FIELDS`` order to a ``SymbolInfo`` (followed by a call's two columns, to what
``CodeGraph.calls`` gives); a row of event columns in ``EVENT_FIELDS`` order to a ``MemoryEvent``.

**A row graphmem did not write is read within graphmem's own bounds.** A team's database is
written by hand too (``psql``, a script, a newer graphmem): a column may hold a value graphmem
never writes. Such a row is still read, never a traceback, and never with more authority than
the least: an unknown trust is low trust, an unknown category a fact, an unknown status
archived (and filtered so, ``visibility_clause.one_of_as_read``: ``list --status archived``
lists it, what asks current memories never does), an unknown scope what its project says; a
text over ``MAX_TEXT_CHARS`` is cut there with a mark that says so (``CUT_MARK``), a source,
session or origin at the write door's bound (``LABEL_CHARS``), a writer's name at a role name's
(``MAX_AUTHOR_CHARS``); an event's state that is not one graphmem writes
(``core.export_format.EventState``: ``undo`` applies it) is read as empty. Each is logged once,
by the row's id and never its content."""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from enum import StrEnum
from functools import lru_cache
from typing import Any, TypeVar

from graphmem.core.codegraph import SYMBOL_COLUMNS, SymbolInfo
from graphmem.core.events import EventKind, MemoryEvent, State
from graphmem.core.models import Category, MemoryRecord, Scope, Status, Trust
from graphmem.core.text import MAX_ORIGIN_CHARS, MAX_SESSION_CHARS, MAX_SOURCE_CHARS, MAX_TEXT_CHARS

log = logging.getLogger(__name__)

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
# What a value graphmem never writes is read as (see the module doc): no more authority than the least.
UNKNOWN_CATEGORY = Category.FACT
UNKNOWN_STATUS = Status.ARCHIVED
UNKNOWN_TRUST = Trust.LOW
# The end of a text cut at ``MAX_TEXT_CHARS`` as it is read: what is shown says it is not whole.
CUT_MARK = f" […cut: the stored text is longer than graphmem's {MAX_TEXT_CHARS:,} characters]"
# A memory's names of where it came from, read no longer than ``remember`` takes them (an import
# refuses a longer one): a row written by hand may hold any length.
LABEL_CHARS = {"source": MAX_SOURCE_CHARS, "session": MAX_SESSION_CHARS, "origin": MAX_ORIGIN_CHARS}
# A memory's writer on a team's store is a PostgreSQL role: at most 63 bytes (NAMEDATALEN - 1); one
# written by hand longer is read one character longer (``core.provenance`` shows no such name).
MAX_AUTHOR_CHARS = 63
# Values not understood that are logged, each once per process.
_LOGGED_VALUES = 256
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
    """A ``MemoryRecord`` from a row of ``MEMORY_FIELDS`` and whether it has a vector, within
    graphmem's bounds (see the module doc)."""
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
        *team,  # PostgreSQL's: whose the memory is and who confirmed it, when not the reader
    ) = row
    return MemoryRecord(
        id=id_,
        text=memory_text(text, id_),
        category=read_enum(Category, category, UNKNOWN_CATEGORY, id_),
        scope=read_scope(scope, project, id_),
        project=project,
        created_at=utc(created) or datetime.now(UTC),
        updated_at=utc(updated) or datetime.now(UTC),
        valid_from=utc(valid_from) or datetime.now(UTC),
        valid_to=utc(valid_to),
        status=read_enum(Status, status, UNKNOWN_STATUS, id_),
        content_hash=chash or "",
        source=_label(source, "source") or "",
        session=_label(session, "session"),
        reinforced=max(int(reinforced or 0), 0),
        embedded=bool(embedded),
        origin=_label(origin, "origin"),
        # None: a Kùzu store from before trust was kept (schema 3), as graphmem wrote it then.
        trust=Trust.NORMAL if trust is None else read_enum(Trust, trust, UNKNOWN_TRUST, id_),
        expires_at=utc(expires_at),
        branch=branch or None,
        author=_role(team[0]) if team else None,
        confirmed_by=_role(team[1]) if len(team) > 1 else None,
    )


def _role(value: object) -> str | None:
    """A team role's name as a row holds it, within the bound of one (``MAX_AUTHOR_CHARS``)."""
    return None if value is None else str(value)[: MAX_AUTHOR_CHARS + 1]


E = TypeVar("E", bound=StrEnum)


def read_enum(kind: type[E], value: object, unknown: E, row_id: object) -> E:
    """``value`` as the member of ``kind`` it names; ``unknown`` (logged) when it names none."""
    known = _member(kind, value)
    if known is None:
        not_understood(kind.__name__.lower(), value, row_id, unknown.value)
        return unknown
    return known


def read_kind(kind: type[E], value: object, row_id: object) -> E | None:
    """``value`` as the member of ``kind`` it names; None (logged) when it names none: a row of a
    kind graphmem does not know (an entity, a link) is left out of what is read."""
    known = _member(kind, value)
    if known is None:
        not_understood(kind.__name__.lower(), value, row_id, "left out")
    return known


def _member(kind: type[E], value: object) -> E | None:
    try:
        return kind(value) if isinstance(value, str) else None
    except ValueError:
        return None


# How much of an enum column's value a count asks (graphmem's longest is a dozen characters; a log
# shows 40): values cut alike are all unknown, counted alike.
ENUM_READ_CHARS = 40
# The row named in the log of a value ``memory_counts`` reads: a count, not one memory.
COUNTED = "(counted by graphmem stats)"


def memory_counts(rows: Iterable[Sequence[Any]]) -> dict[tuple[str, str, str], int]:
    """How many memories there are of each (category, scope, status) as graphmem reads them, from
    rows of a category, a scope, whether it has a project, a status and a count: a value graphmem
    never writes is counted as what a read makes of it (a status "bogus" as archived), never shown
    as itself (``graphmem stats``, ``/stats`` and ``/metrics`` gave a hand-written status of a
    team's store a count of its own, however long, which no memory ``show`` reads has)."""
    counts: Counter[tuple[str, str, str]] = Counter()
    for category, scope, has_project, status, n in rows:
        counts[
            read_enum(Category, category, UNKNOWN_CATEGORY, COUNTED).value,
            read_scope(scope, has_project, COUNTED).value,
            read_enum(Status, status, UNKNOWN_STATUS, COUNTED).value,
        ] += int(n)
    return dict(counts)


# graphmem's statuses: a set, as a vector index's load tests a million rows' (``status_as_read``).
_STATUSES = frozenset(Status)


def status_as_read(value: object, row_id: object) -> str:
    """A status column's value as a read gives it (``UNKNOWN_STATUS`` for one graphmem never
    writes): the status a vector index filters its row by, as every other filter reads it."""
    return str(value) if value in _STATUSES else read_enum(Status, value, UNKNOWN_STATUS, row_id).value


def read_scope(value: object, project: object, row_id: object) -> Scope:
    """A memory's scope; one graphmem does not know is what its project says: of a project when
    it has one, else global."""
    return read_enum(Scope, value, Scope.PROJECT if project else Scope.GLOBAL, row_id)


def memory_text(text: object, row_id: object) -> str:
    """A memory's text as read: cut at ``MAX_TEXT_CHARS`` with ``CUT_MARK`` when longer (graphmem
    never writes one that long), so that what is shown, exported or edited stays within bounds."""
    value = "" if text is None else str(text)
    if len(value) <= MAX_TEXT_CHARS:
        return value
    not_understood("text", f"over {MAX_TEXT_CHARS:,} characters", row_id, "cut")
    return value[: MAX_TEXT_CHARS - len(CUT_MARK)] + CUT_MARK


def _label(value: object, name: str) -> str | None:
    return None if value is None else str(value)[: LABEL_CHARS[name]]


def not_understood(what: str, value: object, row_id: object, read_as: str) -> None:
    """Log, once, that the row ``row_id`` holds in ``what`` a ``value`` graphmem never writes, and
    what it is read as: the value's start, never a memory's content."""
    _log_once(what, repr(value)[:40], repr(row_id)[:80], read_as)


@lru_cache(maxsize=_LOGGED_VALUES)
def _log_once(what: str, value: str, row_id: str, read_as: str) -> None:
    log.warning(
        "row %s of the store: %s %s is none graphmem writes; read as %s", row_id, what, value, read_as
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
        before=_state(before, event_id),
        after=_state(after, event_id),
        other_id=other_id,
        rule=rule,
        undoes=undoes,
        undone_by=undone_by,
    )


def _state(value: object, event_id: object) -> State:
    """An event's ``before`` or ``after``: JSON text (Kùzu) or as read from ``jsonb`` (PostgreSQL).
    One that is not a state graphmem writes (not a JSON object, or not an ``EventState``: what
    ``undo`` applies) is read as empty."""
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value or "{}")
        except (ValueError, RecursionError):
            value = None
    if isinstance(value, Mapping):
        from graphmem.core.export_format import EventState  # pydantic: loaded when history is read

        try:
            EventState.model_validate(dict(value))
        except ValueError:
            pass
        else:
            return dict(value)
    not_understood("event state", type(value).__name__, event_id, "empty")
    return {}
