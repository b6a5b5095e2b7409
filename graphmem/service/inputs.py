"""Reading what callers pass in: categories, scopes, link kinds, trust, memory ids, paths, projects.

Each kind of value is checked here, once, for every verb and surface.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TypeVar

from graphmem.core.keys import EVENT_ID_PREFIX, file_key
from graphmem.core.models import Category, Entity, EntityKind, LinkKind, Scope, Trust
from graphmem.core.path_rules import MAX_NAME_BYTES, MAX_PATH_BYTES, Flaw, path_flaw
from graphmem.errors import InvalidInputError, NotFoundError

MAX_ID_CHARS = 200


Named = TypeVar("Named", bound=Enum)


def _named(kind: type[Named], value: str | Named, what: str) -> Named:
    """The member of ``kind`` that ``value`` names, in any case and with blanks around it."""
    try:
        return kind(str(value).strip().lower())
    except ValueError:
        raise InvalidInputError(
            f"Unknown {what} {value!r}; use one of: {', '.join(member.value for member in kind)}."
        ) from None


def parse_category(value: str | Category) -> Category:
    return _named(Category, value, "category")


def parse_scope(value: str | Scope) -> Scope:
    try:
        return Scope(str(value).strip().lower())
    except ValueError:
        raise InvalidInputError(f"Unknown scope {value!r}; use 'global' or 'project'.") from None


def default_scope(category: Category, project: str | None) -> Scope:
    """The scope of a memory whose call names none: global without a project or for a
    preference, else the project's (``Rememberer.remember`` then reads the text)."""
    if project is None or category is Category.PREFERENCE:
        return Scope.GLOBAL
    return Scope.PROJECT


def parse_link_kind(value: str | LinkKind) -> LinkKind:
    return _named(LinkKind, value, "link kind")


def parse_trust(value: str | Trust) -> Trust:
    try:
        return Trust(value)
    except ValueError:
        raise InvalidInputError(
            f"Unknown trust {value!r}: use one of {', '.join(t.value for t in Trust)}."
        ) from None


@dataclass(frozen=True, slots=True)
class MemoryEdit:
    """A change of a memory's text and/or category, as a caller asks it (its id and links stay):
    new text is read for entities in ``project``, else in the memory's own."""

    text: str | None = None
    category: str | Category | None = None
    project: str | None = None

    def __post_init__(self) -> None:
        if self.text is None and self.category is None:
            raise InvalidInputError("Nothing to change: give new text and/or --category.")


def parse_memory_id(value: object) -> str:
    """A memory id as given, minus surrounding whitespace (``" mem_x "`` names ``mem_x``)."""
    return _id_text(value, "Give a memory id (as printed by remember, recall or list).")


def _id_text(value: object, missing: str) -> str:
    """``value`` minus surrounding whitespace, as an id or its beginning: ``missing`` when there is
    none; a text no id is (over ``MAX_ID_CHARS``, a blank or an unprintable character inside) names
    no memory."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(missing)
    given = value.strip()
    if len(given) > MAX_ID_CHARS or any(c.isspace() or not c.isprintable() for c in given):
        raise unknown_memory(given)
    return given


def parse_event_id(value: object) -> str:
    """A history event's id (``evt_`` and 16 hex digits, as ``graphmem history`` prints it)."""
    if not isinstance(value, str) or not re.fullmatch(r"evt_[0-9a-f]{16}", value.strip()):
        shown = repr(value)[:80]
        raise InvalidInputError(
            f"{shown} is no event id: give one of `graphmem history MEMORY_ID` (evt_ and 16 hex digits)."
        )
    return value.strip()


# The shortest id prefix a person may give for a whole id: "mem_" or "evt_" and 4 hex digits, as
# git asks at least 4 digits of a commit.
MIN_ID_PREFIX_CHARS = 8
# Ids an ambiguous prefix's error names.
MAX_ID_CANDIDATES_SHOWN = 10


def parse_id_prefix(value: object) -> str:
    """The beginning of a memory's or an event's id, as a person types it (``mem_6850df``)."""
    prefix = _id_text(value, "Give a memory id or an event id, or its beginning (mem_6850df, evt_7bf2).")
    if len(prefix) < MIN_ID_PREFIX_CHARS:
        raise InvalidInputError(
            f"{prefix!r} is too short to name one memory or event: give at least its first "
            f"{MIN_ID_PREFIX_CHARS} characters (mem_6850, evt_7bf2), or the whole id."
        )
    return prefix


def expanded_id(prefix: str, ids: Iterable[str]) -> str:
    """The one id of ``ids`` that starts with ``prefix``; an error naming the candidates when
    several do, or saying where to find an id when none does."""
    found = sorted({each for each in ids if each.startswith(prefix)})
    if len(found) == 1:
        return found[0]
    what = "event" if prefix.startswith(EVENT_ID_PREFIX) else "memory"
    if not found and re.fullmatch(r"(?:mem|evt)_[0-9a-f]{16}", prefix):  # a whole id, not a prefix
        if what == "event":
            raise NotFoundError(f"No event {prefix}: `graphmem history MEMORY_ID` lists a memory's events.")
        raise unknown_memory(prefix)
    if not found:
        where = "`graphmem history MEMORY_ID`" if what == "event" else "`graphmem list` or recall"
        raise NotFoundError(f"No {what} id starts with {prefix}: check the id with {where}.")
    shown = ", ".join(found[:MAX_ID_CANDIDATES_SHOWN])
    more = f" and {len(found) - MAX_ID_CANDIDATES_SHOWN} more" if len(found) > MAX_ID_CANDIDATES_SHOWN else ""
    raise InvalidInputError(
        f"{prefix} is the beginning of {len(found)} {what} ids ({shown}{more}): give more of the id."
    )


def unknown_memory(memory_id: str) -> NotFoundError:
    """The error every verb raises for an id no memory has."""
    shown = memory_id if len(memory_id) <= 80 else memory_id[:80] + "..."
    if not shown.isprintable() or any(c.isspace() for c in shown):
        shown = repr(shown)
    return NotFoundError(f"No memory with id {shown}: check the id with `graphmem list` or recall.")


def parse_path(value: str, *, what: str = "path") -> Path:
    """A path the operating system can take (``graphmem.core.path_rules``, the rules a setting's
    path meets too): no NUL, UTF-8, at most 4,096 bytes, names of at most 255 bytes."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"Give a {what}.")
    flaw = path_flaw(value)
    if flaw is None:
        return Path(value)
    if flaw.kind is Flaw.NUL:
        raise InvalidInputError(f"The {what} contains a NUL character: give a real path.")
    if flaw.kind is Flaw.TOO_LONG:
        size = f"{len(value):,} characters" + (f" ({flaw.size:,} bytes)" if flaw.size != len(value) else "")
        raise InvalidInputError(f"The {what} is {size}; a path has at most {MAX_PATH_BYTES:,} bytes.")
    if flaw.kind is Flaw.NOT_UTF8:
        raise InvalidInputError(f"The {what} is not valid UTF-8 (at character {flaw.at}).")
    if flaw.kind is Flaw.UNENCODABLE:
        raise InvalidInputError(
            f"The {what} holds a character this system's file names cannot hold (at character {flaw.at})."
        )
    raise InvalidInputError(
        f"A part of the {what} is over {MAX_NAME_BYTES} bytes, longer than any file name can be."
    )


def parse_project(value: object) -> str | None:
    """A project path as given (None or empty: no project), once it is a path at all."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        raise InvalidInputError("The project must be a path.")
    parse_path(value, what="project")
    return value


def file_entity(root: Path, candidate: str, project: str | None = None) -> Entity | None:
    """The ``File`` entity for ``candidate`` when it names a file or folder inside ``root``, the
    checkout of ``project`` (by default: the project named by its path)."""
    try:
        path = Path(candidate).expanduser()
        full = (path if path.is_absolute() else root / path).resolve()
        relative = full.relative_to(root)
        if not full.exists() or str(relative) == ".":
            return None
    except (ValueError, OSError, RuntimeError):  # not a path this system can look up
        return None
    name = relative.as_posix()
    project = project or str(root)
    return Entity(file_key(project, name), EntityKind.FILE, name, project=project)
