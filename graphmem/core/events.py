"""A memory's history: every change that is not its creation, as an event that can be undone.

An event holds the memory's state before and after the change -- only the parts the change
touched: ``text`` (with ``about``, the entity keys the text was about), ``category``,
``status``, ``valid_to``, ``expires_at``, ``branch``, ``trust``, ``reinforced`` (how many times
it was remembered again) and ``links`` (the ``RELATES`` edges the change added or removed, as
``[source, target, kind, created_at]``). Undoing an event makes those
parts what ``before`` says again, and is itself an event (``undoes``); it is refused when
the memory no longer is as ``after`` says (something changed it since) or the event was
undone already. Pure: the writer (``service/writer.py``) applies and records.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from graphmem.core.models import Category, Link, LinkKind, MemoryRecord, Status, Trust

__all__ = [
    "AGENT",
    "BY_USER",
    "CHANGES",
    "FIELDS",
    "USER",
    "Cause",
    "EventKind",
    "MemoryEvent",
    "State",
    "actor_of",
    "describe",
    "differences",
    "field_state",
    "field_value",
    "link_from_value",
    "link_keys",
    "link_value",
    "parse_time",
    "time_value",
    "wanted_links",
]

USER = "user"  # a person, through the CLI or Python
AGENT = "agent"  # a model, through the MCP tools
# The fields of a memory an event can change, besides ``text`` and ``links``.
FIELDS = ("category", "status", "valid_to", "expires_at", "branch", "trust", "reinforced")

State = dict[str, Any]  # JSON values only: it is stored and exported as JSON


class EventKind(StrEnum):
    """What an event changed."""

    EDIT = "edit"  # text and/or category
    STATUS = "status"  # archive, restore, resolve, unresolve, a rule's done / not merged
    SUPERSEDE = "supersede"  # a newer memory replaced it
    LINK = "link"
    UNLINK = "unlink"
    EXPIRY = "expiry"
    BRANCH = "branch"  # its branch merged: a memory on it became a project memory
    UNDO = "undo"  # reverses the event it ``undoes``
    DELETE = "delete"  # the memory was deleted for good: the last event of its history, never undone
    REINFORCE = "reinforce"  # remembered again: its count (``reinforced``) one more


# Every kind but a repeat: what a reader of a memory's newest events asks for when it looks for
# who last changed what it says or its standing (a person's edit, a rule's status). An agent may
# repeat a memory hundreds of times; its repeats must never push that change out of the window read.
CHANGES = frozenset(EventKind) - {EventKind.REINFORCE}


@dataclass(frozen=True, slots=True)
class Cause:
    """Who or what makes a change, and why: ``actor`` is ``user``, ``agent``, a source
    (``opencode``), or ``rule`` with the rule's name in ``rule``."""

    actor: str = USER
    reason: str = ""
    rule: str | None = None


BY_USER = Cause()  # a person's change, with no reason given


@dataclass(frozen=True, slots=True)
class MemoryEvent:
    """One change of one memory (``memory_id``; ``other_id`` is the other end of a link)."""

    id: str
    memory_id: str
    at: datetime
    kind: EventKind
    actor: str
    reason: str
    before: State = field(default_factory=dict)
    after: State = field(default_factory=dict)
    other_id: str | None = None
    rule: str | None = None
    undoes: str | None = None  # the event this one reversed
    undone_by: str | None = None  # the event that reversed this one
    # Who made it on a team's store: the database role that wrote the event, set by the database
    # (``current_user``), never by a caller; None on a store of one person and for older events.
    person: str | None = None


def actor_of(source: str) -> str:
    """The actor of a change a ``remember`` from ``source`` makes: ``mcp`` is an agent."""
    return AGENT if source == "mcp" else source


def time_value(value: datetime | None) -> str | None:
    """A time as a state holds it: ISO 8601 in UTC."""
    return None if value is None else value.astimezone(UTC).isoformat()


def parse_time(value: object) -> datetime | None:
    return None if value is None else datetime.fromisoformat(str(value)).astimezone(UTC)


def field_state(record: MemoryRecord, names: Iterable[str]) -> State:
    """``record``'s ``names`` fields (of ``FIELDS`` and ``text``) as JSON values."""
    state: State = {}
    for name in names:
        value = getattr(record, name, None)
        state[name] = time_value(value) if isinstance(value, datetime) else value
        if hasattr(state[name], "value"):  # an enum
            state[name] = state[name].value
    return state


def field_value(name: str, value: object) -> object:
    """A field's value as a state holds it (JSON), as a memory holds it."""
    if name == "category":
        return Category(str(value))
    if name == "status":
        return Status(str(value))
    if name == "branch":
        return None if value is None else str(value)
    if name == "trust":
        return Trust(str(value))
    if name == "reinforced":
        return int(str(value))
    return parse_time(value)  # valid_to, expires_at


def link_value(link: Link) -> list[str | None]:
    return [link.source, link.target, link.kind.value, time_value(link.created_at)]


def link_from_value(value: Iterable[Any]) -> Link:
    source, target, kind, created = list(value)
    when = parse_time(created) or datetime.now(UTC)
    return Link(str(source), str(target), LinkKind(kind), when)


def link_keys(event: MemoryEvent) -> set[tuple[str, str, str]]:
    """The links an event touched, as ``(source, target, kind)``."""
    values = [*event.before.get("links", []), *event.after.get("links", [])]
    return {(str(v[0]), str(v[1]), str(v[2])) for v in values}


def differences(event: MemoryEvent, record: MemoryRecord, links: Iterable[Link]) -> list[str]:
    """How ``record`` (with its current ``links``) differs from the state ``event`` left; empty
    when it is still as the event left it, so that undoing it loses no later change."""
    found: list[str] = []
    current = field_state(record, [n for n in ("text", *FIELDS) if n in event.after])
    for name, value in current.items():
        expected = event.after[name]
        if name in ("valid_to", "expires_at"):
            same = parse_time(value) == parse_time(expected)
        else:
            same = value == expected
        if not same:
            shown = "new text" if name == "text" else f"{value!r}"
            found.append(f"its {name} is now {shown}" if name != "text" else "its text changed")
    if "links" in event.after or "links" in event.before:
        touched = link_keys(event)
        now = {(link.source, link.target, link.kind.value) for link in links} & touched
        left = {(str(v[0]), str(v[1]), str(v[2])) for v in event.after.get("links", [])}
        if now != left:
            found.append("its links changed")
    return found


def wanted_links(state: Mapping[str, Any]) -> list[Link]:
    return [link_from_value(v) for v in state.get("links", [])]


def describe(event: MemoryEvent) -> str:
    """One line saying what the event did: ``status active → resolved``, ``text edited``."""
    parts: list[str] = []
    for name in FIELDS:
        if name in event.after or name in event.before:
            before, after = event.before.get(name), event.after.get(name)
            if name not in ("branch", "trust"):
                before, after = _short(before), _short(after)
            parts.append(f"{name} {before or 'none'} → {after or 'none'}")
    if "text" in event.after:
        parts.append("text edited")
    added = _link_set(event.after) - _link_set(event.before)
    removed = _link_set(event.before) - _link_set(event.after)
    parts += [f"link {s} {k} {t} added" for s, t, k in sorted(added)]
    parts += [f"link {s} {k} {t} removed" for s, t, k in sorted(removed)]
    return "; ".join(parts) or event.kind.value


def _link_set(state: Mapping[str, Any]) -> set[tuple[str, str, str]]:
    return {(str(v[0]), str(v[1]), str(v[2])) for v in state.get("links", [])}


def _short(value: object) -> str:
    if value is None:
        return "none"
    text = str(value)
    return text[:10] if len(text) > 19 and text[4:5] == "-" else text  # an ISO time: its date
