"""A memory as the in-memory fake store (``fake_store.py``) holds it, and the rules its values
follow: times aware and in UTC, enums by value, which memories a ``Visibility`` shows, as the
Kùzu store returns and filters them.

The fake holds a memory as a read gives it: a value graphmem never writes, changed in
(``update_memory``, as a real store takes it), is held as the real stores read it back
(``record_rows``: a status "bogus" as archived), so its filters see it as they do.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from graphmem.adapters.record_rows import (
    ENUM_FIELDS,
    UNKNOWN_CATEGORY,
    UNKNOWN_STATUS,
    UNKNOWN_TRUST,
    read_enum,
    read_scope,
)
from graphmem.core.models import EntityKind, MemoryRecord, Scope
from graphmem.core.ports import Vector, Visibility

TIME_FIELDS = frozenset({"created_at", "updated_at", "valid_from", "valid_to", "expires_at"})


def utc(value: datetime) -> datetime:
    """Times as the Kùzu store returns them: aware, UTC (a naive time is taken as UTC)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def stored(record: MemoryRecord, *, embedded: bool) -> MemoryRecord:
    times: dict[str, Any] = {name: field_value(name, getattr(record, name), record) for name in TIME_FIELDS}
    return replace(record, **times, embedded=embedded)


@dataclass(slots=True)
class FakeRow:
    """One memory, its words, its vector and its ABOUT edges."""

    record: MemoryRecord
    seq: int  # orders memories stored within the same microsecond
    terms: Counter[str]
    vector: Vector | None = None
    about: dict[str, EntityKind] = field(default_factory=dict)  # entity key -> kind, in link order
    # symbol key -> the body hash its edge records (``EntityGraph.about_bodies``)
    bodies: dict[str, str] = field(default_factory=dict)

    def copy(self) -> FakeRow:
        """The row with its own edges: what a transaction puts back."""
        return replace(self, about=dict(self.about), bodies=dict(self.bodies))


def kind_of(key: str) -> EntityKind | None:
    """The entity kind a key names by its label prefix (``Issue:group/proj#4``), as Kùzu looks it up."""
    label = key.split(":", 1)[0]
    return EntityKind(label) if label in EntityKind.__members__.values() else None


# What a value graphmem never writes in each enum field is read as (a scope: what its project says).
UNKNOWN_VALUES = {"category": UNKNOWN_CATEGORY, "status": UNKNOWN_STATUS, "trust": UNKNOWN_TRUST}


def field_value(name: str, value: object, record: MemoryRecord) -> object:
    """A changed field of ``record`` as the fake holds it: as a real store reads it back."""
    if name == "scope" and value is not None:
        return read_scope(value, record.project, record.id)
    if name in ENUM_FIELDS and value is not None:
        return read_enum(ENUM_FIELDS[name], value, UNKNOWN_VALUES[name], record.id)
    if name in TIME_FIELDS:
        return utc(value) if isinstance(value, datetime) else value
    return value


def visible(record: MemoryRecord, visibility: Visibility) -> bool:
    if record.status not in visibility.statuses:
        return False
    if record.scope is not Scope.GLOBAL and not visibility.shows_project(record.project):
        return False
    if visibility.categories is not None and record.category not in visibility.categories:
        return False
    since = None if visibility.since is None else utc(visibility.since)
    if not visibility.shows_expiry(record):
        return False
    return (since is None or record.created_at >= since) and visibility.shows_branch(record.branch)
