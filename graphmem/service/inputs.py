"""Reading what callers pass in: categories, scopes, link kinds, trust, file paths."""

from __future__ import annotations

import uuid
from pathlib import Path

from graphmem.core.models import Category, Entity, EntityKind, LinkKind, Scope, Trust
from graphmem.errors import InvalidInputError


def parse_category(value: str | Category) -> Category:
    try:
        return Category(str(value).strip().lower())
    except ValueError:
        raise InvalidInputError(
            f"Unknown category {value!r}; use one of: {', '.join(c.value for c in Category)}."
        ) from None


def parse_scope(value: str | Scope) -> Scope:
    try:
        return Scope(str(value).strip().lower())
    except ValueError:
        raise InvalidInputError(f"Unknown scope {value!r}; use 'global' or 'project'.") from None


def parse_link_kind(value: str | LinkKind) -> LinkKind:
    try:
        return LinkKind(str(value).strip().lower())
    except ValueError:
        raise InvalidInputError(
            f"Unknown link kind {value!r}; use one of: {', '.join(k.value for k in LinkKind)}."
        ) from None


def parse_trust(value: str | Trust) -> Trust:
    try:
        return Trust(value)
    except ValueError:
        raise InvalidInputError(
            f"Unknown trust {value!r}: use one of {', '.join(t.value for t in Trust)}."
        ) from None


def new_memory_id() -> str:
    return f"mem_{uuid.uuid4().hex[:16]}"


def file_entity(root: Path, candidate: str) -> Entity | None:
    """The ``File`` entity for ``candidate`` when it names a file or folder inside ``root``."""
    try:
        path = Path(candidate).expanduser()
        full = (path if path.is_absolute() else root / path).resolve()
        relative = full.relative_to(root)
    except (ValueError, OSError, RuntimeError):
        return None
    if not full.exists() or str(relative) == ".":
        return None
    name = relative.as_posix()
    return Entity(f"File:{root}::{name}", EntityKind.FILE, name, project=str(root))
