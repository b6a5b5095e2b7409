"""What each MCP tool returns, typed, so that FastMCP publishes an output schema per tool.

A key a tool sets only sometimes is ``NotRequired``; a tool whose answer has several shapes
(``update_memory``'s actions, ``export_memories``' destinations) declares every key of every
shape, each not required. The memories, events, entities and sessions inside are the views
of ``core/views.py`` and ``core/coordination.py``: JSON objects. Only declared keys reach the
client (FastMCP serialises a result through its type), so a key a tool adds is declared here.
"""

from __future__ import annotations

from typing import Any, NotRequired

from typing_extensions import TypedDict  # pydantic reads TypedDicts from here on Python < 3.12

from graphmem.service.results import SupersededView

View = dict[str, Any]  # a memory, hit, entity, event, link, session or claim as JSON


class Remembered(TypedDict):
    id: str
    created: bool
    duplicate_of: str | None
    superseded: list[str]
    # each: memory_id, text (what it said), event_id (undo it to make it current again), automatic
    supersessions: list[SupersededView]
    entities: list[str]
    memory: View
    note: NotRequired[str]


class Recalled(TypedDict):
    query: str
    hits: list[View]
    entities: list[View]
    semantic_ready: bool
    took_ms: float


class Context(TypedDict):
    """A context bundle (``ContextBundle.to_dict``) with its Markdown."""

    target: str
    found: bool | None
    entity: View | None
    groups: dict[str, list[View]]
    related_memories: list[View]
    related_entities: list[View]
    tokens: int
    max_tokens: int
    omitted: int
    omitted_about: int
    omitted_history: int
    omitted_related: int
    notes: list[str]
    code: dict[str, list[str]]
    markdown: str


class BootContext(Context):
    active_sessions: list[View]


class Updated(TypedDict):
    """``update_memory``'s answer: the action, and what it changed."""

    action: str
    memory: NotRequired[View]  # edit, archive, restore, resolve, unresolve, confirm, undo
    note: NotRequired[str]  # edit of the user's own memory: stored as a proposal
    event: NotRequired[View]  # undo: the event it recorded
    link: NotRequired[View]  # link, supersede
    source: NotRequired[str]  # unlink
    target: NotRequired[str | View]  # unlink: the other id; link, supersede: the other memory
    kind: NotRequired[str]  # unlink


class History(TypedDict):
    memory_id: str
    events: list[View]


class Deleted(TypedDict):
    deleted: View


class Exported(TypedDict):
    """``export_memories``' answer: the text (no ``path``), the file written, or the folder."""

    format: NotRequired[str]
    content: NotRequired[str]
    path: NotRequired[str]
    written: NotRequired[list[str]]
    unchanged: NotRequired[list[str]]
    memories: int
    entities: int
    links: int


class Imported(TypedDict):
    dry_run: bool
    records: int
    memories_added: int
    memories_skipped: int
    memories_updated: int
    proposed: int  # new directives and preferences stored as proposals, for a person to confirm
    changes_proposed: int  # newer copies of a person's memories: proposals beside them, never taken
    entities: int
    links: int
    links_refused: int  # links that would supersede a person's memory or hide the team's: left out


class Status(TypedDict):
    """``Runtime.status``: the daemon's state."""

    healthy: bool
    reasons: list[str]
    version: str
    uptime_s: float
    data_dir: str
    store_bytes: int
    model: str
    model_loaded: bool
    memories: int
    ingest: View
    by_category: dict[str, int]
    by_status: dict[str, int]
    by_scope: dict[str, int]
    entities: dict[str, int]
    embedding_backlog: int
    stale_memories: int
    stale_share: float
    active_sessions: int
    gitlab: View | None
    role: View | None
    full_text: str | None  # a team's store's word search: "index" or "database"; None embedded


class Enriched(TypedDict):
    ref: str
    outcome: str
    counts: dict[str, int]
    problems: list[str]
    paused: str | None
    gitlab: View | None


class SessionStarted(TypedDict):
    session: View
    ttl_seconds: int


class SessionKept(TypedDict):
    session: View


class SessionEnded(TypedDict):
    session: View
    summary_memory_id: str | None


class Sessions(TypedDict):
    sessions: list[View]
    claims: list[View]


class Claimed(TypedDict):
    """The claim, or (claim null) the conflict naming the holder."""

    claim: View | None
    conflict: View | None


class Released(TypedDict):
    released: bool
    item: str
