"""The data graphmem works with: memories, entities, links, hits.

Frozen dataclasses; no I/O. Times are timezone-aware UTC datetimes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

__all__ = [
    "CURRENT_STATUSES",
    "GITLAB_KINDS",
    "SUPERSEDABLE",
    "Category",
    "ChannelRank",
    "Entity",
    "EntityKind",
    "Hit",
    "Link",
    "LinkKind",
    "LoginRole",
    "MemoryRecord",
    "Scope",
    "Status",
    "Step",
    "Trust",
]


class Category(StrEnum):
    """What kind of knowledge a memory holds."""

    DECISION = "decision"
    BLOCKER = "blocker"
    PROCEDURE = "procedure"
    FACT = "fact"
    PREFERENCE = "preference"
    DIRECTIVE = "directive"
    EVENT = "event"
    PLAN = "plan"
    IDEA = "idea"
    CONVERSATION = "conversation"


# Categories where a newer memory on the same subject replaces the older one.
SUPERSEDABLE = frozenset({Category.DECISION, Category.DIRECTIVE, Category.PREFERENCE, Category.PLAN})


class Scope(StrEnum):
    """Who sees a memory: every project (global) or one project."""

    GLOBAL = "global"
    PROJECT = "project"


class Status(StrEnum):
    """Lifecycle of a memory. Default recall shows ``active``, ``resolved`` and ``not_merged``
    (the last two ranked lower); boot context and injection only ``active``."""

    ACTIVE = "active"
    RESOLVED = "resolved"  # a blocker that no longer blocks
    SUPERSEDED = "superseded"  # replaced by a newer memory; has valid_to
    ARCHIVED = "archived"  # soft-deleted by the user
    NOT_MERGED = "not_merged"  # a decision tied to an MR closed without merging (core/forge_rules.py)
    # A directive or preference no person wrote (an agent's, an import's), or a person's memory an
    # agent changed: recalled as data, never injected as a rule until a person confirms it
    # (core/provenance.py).
    PROPOSED = "proposed"


# The statuses of a memory that still holds: recalled, expiring, moved with its branch.
CURRENT_STATUSES = frozenset({Status.ACTIVE, Status.RESOLVED, Status.NOT_MERGED, Status.PROPOSED})


class Trust(StrEnum):
    """How far a memory's text can be taken at its word."""

    NORMAL = "normal"
    LOW = "low"  # learned from text that tries to instruct the model ("ignore previous instructions ...")
    CONFIRMED = "confirmed"  # a person confirmed what an agent, a file or an import wrote


class LinkKind(StrEnum):
    """How one memory relates to another (``RELATES`` edge kind)."""

    SUPERSEDES = "supersedes"
    CONTRADICTS = "contradicts"
    EXTENDS = "extends"
    RELATED = "related"


class EntityKind(StrEnum):
    """Things memories are about. The value is the store's node label."""

    PROJECT = "Project"
    FILE = "File"
    SYMBOL = "Symbol"
    MERGE_REQUEST = "MergeRequest"
    ISSUE = "Issue"
    EPIC = "Epic"
    PERSON = "Person"
    SESSION = "Session"
    EXTERNAL_MODULE = "ExternalModule"


# What a forge (GitLab) holds, in the order a key's label is tried; their titles are its text.
GITLAB_KINDS = (EntityKind.MERGE_REQUEST, EntityKind.ISSUE, EntityKind.EPIC)


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """One stored memory."""

    id: str
    text: str
    category: Category
    scope: Scope
    project: str | None
    created_at: datetime
    updated_at: datetime
    valid_from: datetime
    valid_to: datetime | None = None
    status: Status = Status.ACTIVE
    content_hash: str = ""
    source: str = "user"
    session: str | None = None
    reinforced: int = 0
    embedded: bool = False
    origin: str | None = None  # where in its source it was learned, e.g. an OpenCode message id
    trust: Trust = Trust.NORMAL
    # Why it may no longer hold (the code it is about changed or is gone since): worked out
    # when it is shown (``service/staleness.py``), never stored.
    stale: str | None = None
    expires_at: datetime | None = None  # after this it leaves recall and context (archived, in history)
    # The branch it was written on, other than the default one (``core/branches.py``): seen on
    # that branch only until its MR merges (then None: a project memory).
    branch: str | None = None
    # On a team's store, the teammate (the database role) who wrote it, when it is not the reader:
    # what ``core/provenance.py`` names instead of "the user". None for the reader's own, on a
    # store of one person, and for a memory from before schema 6 (no writer kept). Read, never written.
    author: str | None = None
    # On a team's store, who confirmed it (``Trust.CONFIRMED``) when it was not the reader: a
    # teammate's role, or "" when the store does not know (a confirmation from before schema 21
    # that no event names a person for). None for the reader's confirmation, a memory not
    # confirmed, and on a store of one person. Read, never written.
    confirmed_by: str | None = None

    @property
    def is_current(self) -> bool:
        return self.status in CURRENT_STATUSES


@dataclass(frozen=True, slots=True)
class Entity:
    """A thing a memory can be about: an MR, an issue, a file, a project..."""

    key: str
    kind: EntityKind
    name: str  # how a user writes it: "!123", "group/proj#4", "src/app.py"
    project: str | None = None
    title: str = ""


@dataclass(frozen=True, slots=True)
class Link:
    """A ``RELATES`` edge between two memories."""

    source: str
    target: str
    kind: LinkKind
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Step:
    """One hop of the way recall reached a hit, walked from ``start`` to ``end``.

    ``relation`` is the stored edge: ``ABOUT`` (memory → entity), ``CALLS``, ``CONTAINS``
    (file → symbol), ``IMPORTS``, ``CHANGES`` (MR → file or symbol), ``CLOSES`` (MR → issue),
    ``PART_OF`` (issue or epic → epic), or between two memories a ``RELATES`` kind
    (``supersedes``, ``related``...) or ``next``. ``forward`` is False when the walk went
    against the edge (from a file to the MR that changed it). The names are how a user
    writes each end (``!12``, ``src/shop/checkout.py``, ``RefundService.fee``, a memory id).
    """

    start: str  # an entity key or a memory id
    relation: str
    end: str
    forward: bool = True
    start_name: str = ""
    end_name: str = ""


@dataclass(frozen=True, slots=True)
class ChannelRank:
    """Where one recall channel ranked a hit, and the edges it walked to reach it."""

    channel: str
    rank: int  # 1-based
    score: float
    steps: tuple[Step, ...] = ()  # entity and graph channels: from a named entity or a seed memory


@dataclass(frozen=True, slots=True)
class Hit:
    """A recalled memory with its fused score and the reasons it was found."""

    memory: MemoryRecord
    score: float
    channels: tuple[ChannelRank, ...]
    # The walk that reached it, nodes and edges in turn: graph spreading's (memory, via, memory[,
    # via, memory]) when it lifted the hit, else the entity channel's (entity key, relation, ...,
    # "ABOUT", memory id); empty when only words and meaning found it.
    path: tuple[str, ...] = ()
    entities: tuple[Entity, ...] = field(default=())
    reason: str = ""  # why it is there, when no channel says it (get_context of lines)
    why: str = ""  # why it is there in words, every channel's reason (``core.views.why``)


@dataclass(frozen=True, slots=True)
class LoginRole:
    """Who a shared store's database knows the caller as: on PostgreSQL, ``current_user``."""

    name: str
    writes: bool  # may store memories (not a read-only role for bots, nor on a read replica)
    sees_all: bool  # row-level security does not apply (owner, superuser): every global memory is seen
