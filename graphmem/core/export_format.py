"""The export file format (JSON Lines) and its validation.

One JSON object per line, each with a ``type``::

    {"type": "header", "format": "graphmem-export", "version": 1, ...}
    {"type": "entity", "key": "Issue:group/proj#4", "kind": "Issue", "name": "#4", ...}
    {"type": "memory", "id": "mem_…", "text": "…", "category": "decision", ..., "entities": [...]}
    {"type": "link", "source": "mem_…", "target": "mem_…", "kind": "supersedes", ...}
    {"type": "next", "source": "mem_…", "target": "mem_…"}
    {"type": "event", "id": "evt_…", "memory_id": "mem_…", "kind": "status", "before": {...}, ...}

Validation collects every problem with its line number before anything is
imported; a string no store holds is one too (``core/unstorable.py``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from datetime import datetime
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from graphmem.core.branches import MAX_BRANCH_CHARS, parse_branch
from graphmem.core.events import EventKind, MemoryEvent
from graphmem.core.held_lines import EventLine, LinkLine, NextLine
from graphmem.core.memory_line import MemoryLine
from graphmem.core.models import (
    Category,
    Entity,
    EntityKind,
    Link,
    LinkKind,
    MemoryRecord,
    Scope,
    Status,
    Trust,
)
from graphmem.core.redaction import redact
from graphmem.core.text import (
    MAX_ORIGIN_CHARS,
    MAX_SESSION_CHARS,
    MAX_SOURCE_CHARS,
    MAX_TEXT_CHARS,
    validate_text,
)
from graphmem.core.timeparse import UTC_RANGE, to_utc
from graphmem.core.unstorable import UNPAIRED, unstorable
from graphmem.core.views import entity_view, event_view, iso, link_view, memory_view
from graphmem.errors import ConflictError, InvalidInputError

FORMAT_NAME = "graphmem-export"
FORMAT_VERSION = 1

# -- the longest line -----------------------------------------------------------------------------
# Import refuses a longer line before it parses it (a hostile file must not make it hold gigabytes:
# parsing the longest line takes about 120 MB at worst), and export refuses to write one
# (``jsonl_line``): every line export writes, import reads. The bound is the longest line whose
# fields are each at their bound, every character escaped at its worst.
# A character outside the BMP is two \uXXXX escapes where a writer escapes non-ASCII (json.dumps'
# default); graphmem's own export writes a control character as one, 6 characters.
ESCAPED_CHAR_MAX = 12
MAX_ID_CHARS = 200  # a memory's id (as service/inputs.py takes one), an event's actor or rule
MAX_KEY_CHARS = 2000  # an entity's key or name
MAX_PATH_CHARS = 4096  # a project: a checkout's path (PATH_MAX), as service/inputs.py takes one
MAX_REASON_CHARS = 2000  # why an event happened
MAX_STALE_CHARS = 2000
# The keys of the entities one memory is about, as a JSON list: 110 files of a project whose path
# is 200 characters take 27,000.
MAX_ABOUT_CHARS = 100_000
MAX_STATE_LINKS = 100  # the links one event adds or removes
MAX_COUNT = 2**63 - 1  # how many times a memory was remembered, as the stores hold it (INT64, bigint)
_LINK_CHARS = 2 * MAX_ID_CHARS + 64  # [source, target, kind, created_at]
# What an event changed, in words (``core.events.describe``): its fields, and each link added or removed.
MAX_CHANGE_CHARS = 1_000 + 2 * MAX_STATE_LINKS * _LINK_CHARS
_SYNTAX_CHARS = 1_000  # field names, quotes and commas, times, kinds and numbers of one line
_STATE_CHARS = MAX_TEXT_CHARS + MAX_ABOUT_CHARS + MAX_STATE_LINKS * _LINK_CHARS + MAX_BRANCH_CHARS + 500
_MEMORY_CHARS = (
    MAX_ID_CHARS + MAX_TEXT_CHARS + MAX_PATH_CHARS + MAX_SOURCE_CHARS + MAX_SESSION_CHARS + MAX_ORIGIN_CHARS
    + MAX_STALE_CHARS + MAX_BRANCH_CHARS + MAX_ABOUT_CHARS + _SYNTAX_CHARS
)  # fmt: skip
# The longest line: an event that holds a text, the keys it was about and links before and after.
_EVENT_CHARS = (
    4 * MAX_ID_CHARS + MAX_REASON_CHARS + MAX_CHANGE_CHARS + 2 * _STATE_CHARS + _SYNTAX_CHARS
)  # fmt: skip
# Entity, link, next and header lines are far shorter (an entity: two keys, a title and a project).
MAX_LINE_CHARS = ESCAPED_CHAR_MAX * max(_MEMORY_CHARS, _EVENT_CHARS)


def _held_in_utc(value: datetime) -> datetime:
    try:
        to_utc(value)
    except InvalidInputError:
        raise ValueError(f"a time outside what graphmem can hold: give one {UTC_RANGE}") from None
    return value


def _written_as_iso(value: object) -> object:
    """Refuses a number where a time is due, which pydantic would read as seconds since 1970: the
    format writes times in ISO 8601, and ``1700000000`` may as well be milliseconds."""
    if (isinstance(value, (int, float)) and not isinstance(value, bool)) or (
        isinstance(value, str) and _NUMBER.fullmatch(value)
    ):
        raise ValueError("a number, not a date-time: write it in ISO 8601 (2026-03-01T12:00:00+00:00)")
    return value


_NUMBER = re.compile(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*")
# Every time of a line. One that UTC cannot hold (9999-12-31T23:59:59-14:00) is a problem of its
# line, named by its field, rather than an error in the middle of the import that stores it.
Moment = Annotated[datetime, BeforeValidator(_written_as_iso), AfterValidator(_held_in_utc)]


class _Record(BaseModel):
    # Each line's validator is built at its first use, not when a command imports this
    # module (that cost 20-35 ms of every command's start).
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class HeaderLine(_Record):
    type: Literal["header"]
    format: Literal["graphmem-export"]
    version: int = Field(ge=1, le=FORMAT_VERSION)
    exported_at: Moment | None = None
    project: str | None = None
    counts: dict[str, int] = {}


class EntityLineModel(_Record):
    type: Literal["entity"]
    key: str = Field(min_length=3, max_length=MAX_KEY_CHARS)
    kind: EntityKind
    name: str = Field(min_length=1, max_length=MAX_KEY_CHARS)
    project: str | None = None
    title: str = ""

    @model_validator(mode="after")
    def _key_matches_kind(self) -> EntityLineModel:
        label = self.key.split(":", 1)[0]
        if label != self.kind.value:
            raise ValueError(f"entity key must start with its kind, '{self.kind.value}:'")
        return self

    def held(self) -> Entity:
        """What an import keeps of this line: the entity it stores."""
        return Entity(self.key, self.kind, self.name, self.project, self.title)


class MemoryLineModel(_Record):
    """A memory line's fields and their checks; an import keeps a ``MemoryLine`` of it (``held``)."""

    type: Literal["memory"]
    id: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_.:-]+$")
    text: str
    category: Category
    scope: Scope
    project: str | None = None
    status: Status = Status.ACTIVE
    created_at: Moment
    updated_at: Moment | None = None
    valid_from: Moment | None = None
    valid_to: Moment | None = None
    source: str = "import"
    session: str | None = Field(None, max_length=MAX_SESSION_CHARS)
    reinforced: int = Field(0, ge=0)
    origin: str | None = Field(None, max_length=MAX_ORIGIN_CHARS)
    trust: Trust = Trust.NORMAL
    expires_at: Moment | None = None
    branch: str | None = None  # the branch it was written on (core/branches.py)
    entities: list[str] = []
    # Why the exporting store thought it stale: for readers; an import works it out again.
    stale: str | None = Field(None, max_length=MAX_STALE_CHARS)

    @field_validator("branch")
    @classmethod
    def _branch_ok(cls, branch: str | None) -> str | None:
        return _checked_branch(branch)

    @field_validator("text")
    @classmethod
    def _text_ok(cls, text: str) -> str:
        try:
            return validate_text(redact(text).text)  # an import file may be hand-written
        except InvalidInputError as exc:
            raise ValueError(str(exc)) from None

    def held(self) -> MemoryLine:
        """What an import keeps of this line (``core/memory_line.py``)."""
        return MemoryLine(**{name: getattr(self, name) for name in _HELD}, entities=tuple(self.entities))


_HELD = tuple(f.name for f in fields(MemoryLine) if f.name != "entities")


def _checked_branch(branch: str | None) -> str | None:
    try:
        return parse_branch(branch)
    except InvalidInputError as exc:
        raise ValueError(str(exc)) from None


def _two_memories(source: str, target: str) -> None:
    """A link's two ends differ, as `graphmem link X X` refuses: the one check of a link line and of
    each link an event's state holds (``undo`` adds those; a self-link hid its memory as superseded)."""
    if source == target:
        raise ValueError("source and target are the same memory: a memory cannot be linked to itself")


class LinkLineModel(_Record):
    type: Literal["link"]
    source: str
    target: str
    kind: LinkKind
    created_at: Moment | None = None

    @model_validator(mode="after")
    def _two_ends(self) -> LinkLineModel:
        _two_memories(self.source, self.target)
        return self

    def held(self) -> LinkLine:
        """What an import keeps of this line (``core/held_lines.py``)."""
        return LinkLine(self.source, self.target, self.kind, self.created_at)


class NextLineModel(_Record):
    type: Literal["next"]
    source: str
    target: str

    def held(self) -> NextLine:
        """What an import keeps of this line (``core/held_lines.py``)."""
        return NextLine(self.source, self.target)


# The parts of an event's state a memory may lack, given as null (``EventState``).
CLEARABLE_PARTS = frozenset({"valid_to", "expires_at", "branch"})
StateLink = tuple[str, str, LinkKind, Moment | None]  # a link an event added or removed


class EventState(_Record):
    """The parts of a memory an event touched (``core/events.py``): only these keys, each checked,
    because ``undo`` applies them."""

    text: str | None = Field(None, max_length=MAX_TEXT_CHARS)
    # As many keys as a memory line's ``entities`` (the line's bound holds them): an edit of a
    # memory about more than a thousand entities is exported, and imported back.
    about: list[Annotated[str, Field(max_length=MAX_KEY_CHARS)]] | None = None
    category: Category | None = None
    status: Status | None = None
    valid_to: Moment | None = None
    expires_at: Moment | None = None
    branch: str | None = None
    trust: Trust | None = None
    # A repeat's count (``reinforce``), a whole number as graphmem writes it: never "3", 3.0 or true.
    reinforced: int | None = Field(None, ge=0, le=MAX_COUNT, strict=True)
    links: list[StateLink] | None = Field(None, max_length=MAX_STATE_LINKS)

    @field_validator("branch")
    @classmethod
    def _branch_ok(cls, branch: str | None) -> str | None:
        return _checked_branch(branch)

    @field_validator("links")
    @classmethod
    def _links_ok(cls, links: list[StateLink] | None) -> list[StateLink] | None:
        for source, target, _, _ in links or ():
            _two_memories(source, target)
        return links

    @model_validator(mode="after")
    def _null_only_where_a_memory_has_none(self) -> EventState:
        """A part given as null is one a memory can lack (no end of validity, no expiry, on no
        branch): graphmem writes no null text, entities, category, status, trust or links, and
        ``undo`` would write one into the memory."""
        nulls = sorted(n for n in self.model_fields_set - CLEARABLE_PARTS if getattr(self, n) is None)
        if nulls:
            raise ValueError(f"{nulls[0]} is null: only {', '.join(sorted(CLEARABLE_PARTS))} may be")
        return self

    def state(self) -> dict[str, Any]:
        """As the store keeps it: the keys the line gave, as JSON values (times in UTC), but for
        ``trust``. An import never takes trust from the file, and ``undo`` applies a state: a forged
        ``"before": {"trust": "confirmed"}`` would make the file's directive a person's rule."""
        data: dict[str, Any] = self.model_dump(mode="json", exclude_unset=True)
        data.pop("trust", None)
        for name in ("valid_to", "expires_at"):
            if data.get(name) is not None:
                data[name] = to_utc(getattr(self, name)).isoformat()
        if self.links is not None:
            data["links"] = [[s, t, k.value, iso(to_utc(c)) if c else None] for s, t, k, c in self.links]
        return data


class EventLineModel(_Record):
    type: Literal["event"]
    id: str = Field(pattern=r"^evt_[0-9a-f]{16}$")
    memory_id: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    other_id: str | None = Field(None, max_length=MAX_ID_CHARS)
    at: Moment
    kind: EventKind
    actor: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    # Who made it on a team's store: written, not read (the store of an import records its own role).
    person: str | None = Field(None, max_length=MAX_ID_CHARS)
    rule: str | None = Field(None, max_length=MAX_ID_CHARS)
    reason: str = Field("", max_length=MAX_REASON_CHARS)
    change: str | None = Field(None, max_length=MAX_CHANGE_CHARS)  # what history shows: written, not read
    before: EventState = Field(default_factory=EventState)  # made when a line has none, not at import
    after: EventState = Field(default_factory=EventState)
    undoes: str | None = Field(None, pattern=r"^evt_[0-9a-f]{16}$")
    undone_by: str | None = Field(None, pattern=r"^evt_[0-9a-f]{16}$")

    def held(self) -> EventLine:
        """What an import keeps of this line (``core/held_lines.py``): its states as a store keeps them."""
        given = {name: getattr(self, name) for name in _EVENT_HELD}
        return EventLine(**given, before=self.before.state(), after=self.after.state())


_EVENT_HELD = tuple(f.name for f in fields(EventLine) if f.name not in {"before", "after"})


Line = Annotated[
    HeaderLine | EntityLineModel | MemoryLineModel | LinkLineModel | NextLineModel | EventLineModel,
    Field(discriminator="type"),
]


@cache
def _line_adapter() -> TypeAdapter[Line]:
    return TypeAdapter(Line)


@dataclass
class ParsedExport:
    """Every record of a file, by kind, with the line it came from: what an import holds of each
    valid line (``held``; ``core/memory_line.py``, ``core/held_lines.py``)."""

    header: HeaderLine | None = None
    entities: list[tuple[int, Entity]] = field(default_factory=list)
    memories: list[tuple[int, MemoryLine]] = field(default_factory=list)
    links: list[tuple[int, LinkLine]] = field(default_factory=list)
    nexts: list[tuple[int, NextLine]] = field(default_factory=list)
    events: list[tuple[int, EventLine]] = field(default_factory=list)
    problems: list[tuple[int, str]] = field(default_factory=list)

    @property
    def records(self) -> int:
        return len(self.entities) + len(self.memories) + len(self.links) + len(self.nexts) + len(self.events)


def parse_lines(lines: Iterable[tuple[int, str]]) -> ParsedExport:
    """Parse and validate JSONL lines; problems are collected, not raised."""
    parsed = ParsedExport()
    for number, raw in lines:
        text = raw.strip()
        if not text:
            continue
        if len(text) > MAX_LINE_CHARS:
            parsed.problems.append(
                (number, f"line is {len(text):,} characters; the limit is {MAX_LINE_CHARS:,}")
            )
            continue
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            parsed.problems.append((number, f"not valid JSON ({exc.msg} at column {exc.colno})"))
            continue
        except RecursionError:  # deeper than the parser recurses: no line graphmem writes is
            parsed.problems.append((number, "not valid JSON (nested too deep)"))
            continue
        except ValueError:  # a number of more digits than Python converts (4,300): none graphmem writes
            parsed.problems.append((number, "not valid JSON (a number too long to read)"))
            continue
        try:
            record = _line_adapter().validate_python(data)
        except ValidationError as exc:
            parsed.problems.append((number, _describe(exc)))
            continue
        unstored = unstorable(data, record.type)
        if unstored is not None:
            parsed.problems.append((number, unstored))
            continue
        if isinstance(record, HeaderLine):
            if parsed.header is not None:
                parsed.problems.append((number, "a second header line"))
            parsed.header = record
        elif isinstance(record, EntityLineModel):
            parsed.entities.append((number, record.held()))
        elif isinstance(record, MemoryLineModel):
            parsed.memories.append((number, record.held()))
        elif isinstance(record, LinkLineModel):
            parsed.links.append((number, record.held()))
        elif isinstance(record, EventLineModel):
            parsed.events.append((number, record.held()))
        else:
            parsed.nexts.append((number, record.held()))
    return parsed


def _describe(exc: ValidationError) -> str:
    """The problems of one line: the field and what is wrong, never a value from the line."""
    parts = []
    for error in exc.errors()[:3]:
        kind = error["type"]
        if kind == "union_tag_invalid":
            parts.append(
                "unknown record type: 'type' must be one of header, entity, memory, link, next, event"
            )
            continue
        where = ".".join(
            str(p) if p in _FIELD_NAMES else "(a field)" for p in error["loc"] if not isinstance(p, int)
        )
        if kind == "extra_forbidden":
            top = len(error["loc"]) == 2  # (record type, field); deeper: inside an event's state
            record = str(error["loc"][0]) if top and error["loc"][0] in _MODELS else ""
            fields = ", ".join(f for f in _MODELS[record].model_fields if f != "type") if record else ""
            message = (
                f"a field {record} lines do not have (they have: {fields})" if record else "an unknown field"
            )
            where = record or where
        elif kind == "string_unicode":
            message = UNPAIRED
        elif kind in _OWN_MESSAGES:
            message = error["msg"].removeprefix("Value error, ")
        else:
            message = _GENERIC.get(kind.split("_", 1)[0], "invalid value")
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts)


_MODELS: dict[str, type[_Record]] = {
    "header": HeaderLine, "entity": EntityLineModel, "memory": MemoryLineModel, "link": LinkLineModel,
    "next": NextLineModel, "event": EventLineModel,
}  # fmt: skip
# Field names (and record types) of the format: the only words of a line an error repeats.
_LINE_MODELS: tuple[type[_Record], ...] = (*_MODELS.values(), EventState)
_FIELD_NAMES = frozenset(name for model in _LINE_MODELS for name in model.model_fields) | frozenset(_MODELS)
# Pydantic messages that say what is expected, never what was given.
_OWN_MESSAGES = frozenset(
    {
        "value_error", "missing", "literal_error", "enum", "string_too_short", "string_too_long",
        "string_pattern_mismatch", "greater_than_equal", "less_than_equal", "string_type", "int_type",
        "int_parsing", "bool_type", "bool_parsing", "list_type", "dict_type", "model_type",
        "model_attributes_type", "union_tag_not_found", "datetime_type", "datetime_parsing",
        "datetime_from_date_parsing", "int_from_float", "none_required",
    }
)  # fmt: skip
_GENERIC = {
    "datetime": "not a date-time (use ISO 8601)",
    "int": "not a whole number",
    "string": "not a string",
}


def jsonl_line(record: dict[str, Any]) -> str:
    """``record`` as a line of an export file, ``\\n`` included. A line longer than an import reads
    is refused with a ``ConflictError``, never cut; only a memory about thousands of entities
    would make one (``MAX_ABOUT_CHARS``)."""
    line = json.dumps(record, ensure_ascii=False)
    if len(line) > MAX_LINE_CHARS:
        kind = record["type"]
        named = record.get("memory_id") or record.get("id") or record.get("key") or record.get("source")
        raise ConflictError(
            f"Nothing was exported: the {kind} line of {named} would be {len(line):,} characters, more "
            f"than an import reads ({MAX_LINE_CHARS:,}). A memory that long names too many files and "
            "refs: edit it to name fewer (`graphmem edit ID`), or delete it, then export again."
        )
    return line + "\n"


def header_line(project: str | None, counts: dict[str, int], now: datetime) -> dict[str, Any]:
    return {
        "type": "header",
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "exported_at": iso(now),
        "project": project,
        "counts": counts,
    }


def entity_line(entity: Entity) -> dict[str, Any]:
    view = entity_view(entity)
    return {"type": "entity", **view}


def memory_line(record: MemoryRecord, entity_keys: list[str]) -> dict[str, Any]:
    view = memory_view(record)
    del view["embedded"]  # not part of the format: import embeds again
    del view["provenance"]  # said in words from ``source``: for readers of a view
    if view["stale"] is None:
        del view["stale"]  # said only of a stale memory
    if view["branch"] is None:
        del view["branch"]  # said only of a memory on a branch
    return {"type": "memory", **view, "entities": entity_keys}


def link_line(link: Link) -> dict[str, Any]:
    return {"type": "link", **link_view(link)}


def next_line(source: str, target: str) -> dict[str, Any]:
    return {"type": "next", "source": source, "target": target}


def event_line(event: MemoryEvent) -> dict[str, Any]:
    return {"type": "event", **event_view(event)}


# What each person's store sets itself on import (core/provenance.py): left out of the
# repository's file, so that everyone's re-export of it is the same bytes.
PERSONAL_FIELDS = ("source", "reinforced", "trust")


def repository_memory_line(record: MemoryRecord, entity_keys: list[str]) -> dict[str, Any]:
    """A memory as the repository's file holds it: what it says, not who here confirmed it."""
    line = memory_line(record, entity_keys)
    for name in PERSONAL_FIELDS:
        del line[name]
    if record.status is Status.PROPOSED:
        line["status"] = Status.ACTIVE.value  # each reader's store decides its standing again
    return line


# -- repository exports: project-relative, so the files fit any checkout ------------------

# Stands for the project root in a repository export (``project`` fields and the
# ``<Kind>:<root>::...`` keys of files, symbols and modules); never a real root, which is absolute.
RELATIVE_ROOT = "."


def repository_header_line() -> dict[str, Any]:
    """The header of a repository export: constant (no time, no counts), so merges keep one."""
    return {"type": "header", "format": FORMAT_NAME, "version": FORMAT_VERSION, "project": RELATIVE_ROOT}


def relative_key(key: str, root: str) -> str:
    """``File:/abs/root::src/a.py`` → ``File:.::src/a.py``; keys not under ``root`` are unchanged."""
    kind, colon, rest = key.partition(":")
    if colon and rest.startswith(root + "::"):
        return f"{kind}:{RELATIVE_ROOT}{rest[len(root) :]}"
    return key


def rooted_key(key: str, root: str) -> str:
    """The inverse of :func:`relative_key`: ``File:.::src/a.py`` → ``File:/abs/root::src/a.py``."""
    kind, colon, rest = key.partition(":")
    if colon and rest.startswith(RELATIVE_ROOT + "::"):
        return f"{kind}:{root}{rest[len(RELATIVE_ROOT) :]}"
    return key


def relative_project(project: str | None, root: str) -> str | None:
    return RELATIVE_ROOT if project == root else project


def rooted_project(project: str | None, root: str) -> str | None:
    return root if project == RELATIVE_ROOT else project


def is_relative(key_or_project: str | None) -> bool:
    """Whether a key or project field is project-relative (needs a root to import)."""
    if key_or_project is None:
        return False
    if key_or_project == RELATIVE_ROOT:
        return True
    return key_or_project.partition(":")[2].startswith(RELATIVE_ROOT + "::")
