"""Enrichment of GitLab entities: their states, keys, back-off and diff-to-symbol overlap.

Pure functions and data; the queue itself is ``service/enrichment.py`` and the storage
``adapters/kuzu_gitlab.py``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING

from graphmem.core.models import GITLAB_KINDS, EntityKind
from graphmem.core.projects import ForeignRemote, project_key

if TYPE_CHECKING:
    from graphmem.core.codegraph import SymbolInfo

SIGILS = {EntityKind.MERGE_REQUEST: "!", EntityKind.ISSUE: "#", EntityKind.EPIC: "&"}
# Entities found *through* enrichment are fetched up to this many hops from one a
# memory names (MR -> closing issue -> its epic); further ones are stored as links only.
MAX_HOPS = 2


class EnrichState(StrEnum):
    """Where an MR, issue or epic stands with GitLab."""

    PENDING = "pending"  # waits for a fetch (also: never fetched)
    OK = "ok"  # fetched; fetched again after the TTL
    MISSING = "missing"  # 404: asked again after the long TTL
    FORBIDDEN = "forbidden"  # 403: asked again after the long TTL
    ERROR = "error"  # 5xx, timeout, bad answer: retried with exponential back-off
    LINKED = "linked"  # found through another entity, too far to fetch on its own
    UNRESOLVABLE = "unresolvable"  # a relative ref with no GitLab project to resolve it against


class Outcome(StrEnum):
    """What one enrichment attempt did (the counts of an ``EnrichReport``)."""

    FETCHED = "fetched"  # stored new or changed facts
    UNCHANGED = "unchanged"  # GitLab's updated_at is the stored one: nothing rewritten
    FRESH = "fresh"  # fetched within the TTL: not asked (use refresh)
    MISSING = "missing"
    FORBIDDEN = "forbidden"
    ERROR = "error"
    UNRESOLVABLE = "unresolvable"
    FOREIGN = "foreign"  # a ref of a repository on another forge (``foreign_ref``): not asked
    DEFERRED = "deferred"  # not tried: the token was rejected or GitLab asked to wait


# GitLab answered about the entity (a 404 or 403 is an answer: the ref is wrong or hidden).
ANSWERED_OUTCOMES = (Outcome.FETCHED, Outcome.UNCHANGED, Outcome.MISSING, Outcome.FORBIDDEN)
# No answer because of a fault, not because of the entity.
FAULT_OUTCOMES = (Outcome.ERROR, Outcome.DEFERRED)


@dataclass(frozen=True, slots=True)
class GitLabTarget:
    """What to ask GitLab for: a project's MR or issue, or a group's epic."""

    kind: EntityKind
    namespace: str  # group/sub/project (MR, issue) or group/sub (epic)
    iid: int

    @property
    def key(self) -> str:
        return target_key(self.kind, self.namespace, self.iid)

    @property
    def name(self) -> str:
        return f"{self.namespace}{SIGILS[self.kind]}{self.iid}"


def target_key(kind: EntityKind, namespace: str, iid: int) -> str:
    """The entity key, as ``core.refs.Ref.key`` writes it: ``MergeRequest:group/proj!12``."""
    return f"{kind.value}:{namespace}{SIGILS[kind]}{iid}"


def parse_key(key: str) -> GitLabTarget | None:
    """The GitLab target of an entity key, or None when its namespace is no GitLab path
    (a relative ref outside any GitLab project: ``Issue:#4``, ``MergeRequest:/home/me/x!2``)."""
    label, _, rest = key.partition(":")
    kind = next((k for k in GITLAB_KINDS if k.value == label), None)
    if kind is None:
        return None
    namespace, sigil, digits = rest.rpartition(SIGILS[kind])
    if not sigil or not digits.isdigit() or not is_gitlab_path(namespace):
        return None
    return GitLabTarget(kind, namespace, int(digits))


def is_gitlab_path(namespace: str) -> bool:
    """``group/sub/project`` or ``group``: no leading slash, no empty segment, no spaces."""
    if not namespace or namespace.startswith(("/", "~", ".")) or " " in namespace or "\\" in namespace:
        return False
    return all(segment and segment not in (".", "..") for segment in namespace.split("/"))


def epic_group(project_path: str) -> str:
    """The group a relative ``&7`` written in ``project_path`` belongs to (its parent)."""
    head, slash, _ = project_path.rpartition("/")
    return head if slash else project_path


def relative_namespace(kind: EntityKind, project_namespace: str | None) -> str | None:
    """What a relative ref (``!12``, ``#4``, ``&7``) written in a project resolves against:
    the project's GitLab path, or for an epic the group that holds the project."""
    if kind is EntityKind.EPIC and project_namespace and is_gitlab_path(project_namespace):
        return epic_group(project_namespace)
    return project_namespace


def foreign_ref(key: str, remote: ForeignRemote | None) -> bool:
    """Whether the MR, issue or epic ``key`` is a ref of ``remote``, a repository on a forge other
    than GitLab: its ``#12`` and ``!3`` resolve in the repository's path, its ``&7`` in the group
    above it (``relative_namespace``), in any case of ASCII letters (those forges ignore it).
    GitLab has none of them; a GitLab project of the same path would answer about another MR or
    issue, so none is ever asked for."""
    target = parse_key(key)
    if target is None or remote is None:
        return False
    host, home = remote.name.partition("/")[0], relative_namespace(target.kind, remote.path)
    return project_key(f"{host}/{target.namespace}") == project_key(f"{host}/{home}")


def backoff_s(attempts: int, *, base_s: float, cap_s: float) -> float:
    """Seconds to wait after ``attempts`` failures in a row: doubling, capped."""
    if attempts <= 0:
        return 0.0
    return float(min(cap_s, base_s * 2 ** min(attempts - 1, 30)))


def symbols_touched(ranges: Iterable[tuple[int, int]], symbols: Sequence[SymbolInfo]) -> list[SymbolInfo]:
    """The symbols whose lines meet one of the diff's new-file line ranges (innermost too)."""
    spans = [(start, end) for start, end in ranges if start <= end]
    return [
        symbol
        for symbol in symbols
        if symbol.deleted_at is None
        and any(start <= symbol.end_line and symbol.start_line <= end for start, end in spans)
    ]


@dataclass(frozen=True, slots=True)
class EnrichmentRow:
    """An MR, issue or epic as the queue sees it."""

    key: str
    kind: EntityKind
    name: str
    project: str | None  # the local project root it was named in, if any
    state: EnrichState
    attempts: int = 0
    fetched_at: datetime | None = None
    next_attempt: datetime | None = None
    updated_at: datetime | None = None  # GitLab's, as last stored
    error: str | None = None
    hops: int = 0
    # Whether the reader's daemon enriches it: False only for another person's private row on a
    # team's store that the reader is shown through a memory of their own (its owner's daemon does).
    owned: bool = True


def count_states(rows: Iterable[EnrichmentRow]) -> dict[str, int]:
    """How many of ``rows`` are in each enrichment state (``GitLabGraph.counts``)."""
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.state.value] = counts.get(row.state.value, 0) + 1
    return counts


@dataclass(frozen=True, slots=True)
class Attempt:
    """What one attempt leaves in the queue for an entity, its facts untouched: its state, why
    it failed, how many attempts in a row, when to ask again, when GitLab was asked (None:
    left as it was)."""

    state: EnrichState
    error: str | None = None
    attempts: int = 0
    next_attempt: datetime | None = None
    fetched_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class EnrichReport:
    """What ``MemoryService.enrich`` did: counts by outcome, and a line per problem."""

    counts: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    paused: str | None = None  # why the queue stopped early (token rejected, rate-limited)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def failed(self) -> bool:
        """Whether a fault (a rejected token, a rate limit, GitLab down or unreachable) kept every
        entity asked about from an answer: nothing fetched, unchanged, missing or forbidden."""
        faults = sum(self.counts.get(o.value, 0) for o in FAULT_OUTCOMES)
        return faults > 0 and not any(self.counts.get(o.value, 0) for o in ANSWERED_OUTCOMES)


@dataclass(frozen=True, slots=True)
class GitLabStatus:
    """What ``memory_status`` and ``graphmem status`` say about GitLab (never the token)."""

    configured: bool
    url: str
    enabled: bool
    token: str  # "missing", "unchecked", "ok", "rejected"
    reachable: bool | None  # None: not asked yet
    rate_limited_until: datetime | None
    paused: str | None
    # Both of the rows this person's daemon enriches (``GitLabGraph.due``'s; on a team's store the
    # team's and their own, not another person's they are shown: that one's daemon fetches it).
    pending: int  # never fetched, or failed and waiting for the retry
    by_state: dict[str, int]
    last_error: str | None = None
    user: str | None = None
