"""``review``: the memories a person should look at again -- what agents and imports proposed
(directives and preferences waiting to be confirmed or rejected), expired or about to, contradicted,
possibly stale (the code they are about changed), unconfirmed (learned, never repeated, or
low trust), or old (unchanged for long) -- to confirm, edit or archive them in one pass.

Reads only; each reason is one line a person can act on.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from graphmem.core.models import LinkKind, MemoryRecord, Status, Trust
from graphmem.core.ports import Visibility
from graphmem.core.provenance import CONVENTIONS, SESSION_SOURCES, is_persons, label
from graphmem.core.timeparse import format_age
from graphmem.errors import InvalidInputError
from graphmem.service.listing import scan
from graphmem.service.proposals import changed_memory
from graphmem.service.results import ReviewItem
from graphmem.service.staleness import Staleness
from graphmem.service.stores import Stores

# Memories looked at, newest first: past this the oldest are not reviewed (say so in docs).
REVIEW_SCAN_MAX = 20_000
# An expiry this close is worth a look now.
EXPIRES_SOON = timedelta(days=7)
MAX_REVIEW_LIMIT = 1_000
# Sources of memories graphmem learned by itself from a person's sessions (OpenCode, Claude Code, Codex).
LEARNED_SOURCES = SESSION_SOURCES
_SHOWN = frozenset({Status.ACTIVE, Status.RESOLVED, Status.NOT_MERGED, Status.ARCHIVED, Status.PROPOSED})


class Review:
    """Finds what to review (see the module doc); ``review`` is documented where
    ``graphmem.api.Memory`` declares it."""

    def __init__(self, stores: Stores, staleness: Staleness) -> None:
        self._stores = stores
        self._staleness = staleness

    def review(
        self, *, project: str | None = None, older_than: datetime | None = None, limit: int = 50
    ) -> list[ReviewItem]:
        if not 1 <= limit <= MAX_REVIEW_LIMIT:
            raise InvalidInputError(f"limit must be between 1 and {MAX_REVIEW_LIMIT}, not {limit}.")
        now = self._stores.clock()
        cutoff = older_than if older_than is not None else now - timedelta(days=180)
        records = [_as_seen(r, now) for r in self._candidates(project)]
        current = {r.id: r for r in records if r.is_current}
        reasons: dict[str, list[str]] = {r.id: [] for r in records}
        for record in records:
            if record.expires_at is not None:
                if record.expires_at <= now and record.status is Status.ARCHIVED:
                    reasons[record.id].append(f"expired {format_age(record.expires_at, now=now)}")
                elif record.is_current and record.expires_at <= now + EXPIRES_SOON:
                    reasons[record.id].append(f"expires {format_age(record.expires_at, now=now)}")
        for link in self._stores.store.links(list(current)) if current else []:
            if link.kind is LinkKind.CONTRADICTS and link.source in current and link.target in current:
                reasons[link.target].append(f"contradicted by {link.source}")
                reasons[link.source].append(f"contradicts {link.target}")
        if current:
            about = self._stores.store.about(list(current))
            for memory_id, flag in self._staleness.flags(current.values(), about).items():
                reasons[memory_id].append(flag)
        for record in current.values():
            if record.status is Status.PROPOSED:
                reasons[record.id].append(
                    f"proposed by {label(record).removesuffix(', proposed, unconfirmed')}: `graphmem confirm "
                    f"{record.id}` makes it yours ({_on_confirm(record)}), `graphmem reject {record.id}` "
                    "turns it down"
                )
            elif record.category in CONVENTIONS and record.status is Status.ACTIVE and not is_persons(record):
                reasons[record.id].append(
                    f"not a rule: a {record.category.value} from {label(record)}, shown as data; "
                    f"`graphmem confirm {record.id}` makes it one"
                )
            if record.trust is Trust.LOW:
                reasons[record.id].append("low trust: its text reads like instructions to the model")
            elif record.source in LEARNED_SOURCES and record.reinforced == 0:
                reasons[record.id].append(
                    f"unconfirmed: learned from a session ({record.source}), never repeated"
                )
            if record.status is Status.ACTIVE and record.updated_at < cutoff:
                reasons[record.id].append(f"old: unchanged since {record.updated_at:%Y-%m-%d}")
        found = [ReviewItem(r, tuple(reasons[r.id])) for r in records if reasons[r.id]]
        return sorted(found, key=_urgency)[:limit]

    def _candidates(self, project: str | None) -> list[MemoryRecord]:
        visibility = Visibility(project, _SHOWN, all_branches=True, aliases=self._stores.aliases(project))
        return scan(self._stores.store, visibility, REVIEW_SCAN_MAX)


def _on_confirm(record: MemoryRecord) -> str:
    """What confirming the proposal ``record`` does: a proposed change of the user's memory
    replaces it (whatever its category); a directive or preference becomes a rule."""
    replaced = changed_memory(record)
    if replaced is not None:
        return f"it replaces {replaced}"
    if record.category in CONVENTIONS:
        return f"a {record.category.value} becomes a rule in every session"
    return f"an active {record.category.value}"


def _as_seen(record: MemoryRecord, now: datetime) -> MemoryRecord:
    """``record`` as a read sees it at ``now``: archived once its expiry has passed, before the
    daemon's worker or the next write archives it in the store (a review writes nothing)."""
    if record.is_current and record.expires_at is not None and record.expires_at <= now:
        return replace(record, status=Status.ARCHIVED)
    return record


_ORDER = (
    "proposed",
    "not a rule",
    "expired",
    "expires",
    "contradict",
    "possibly stale",
    "about ",
    "low trust",
    "unconfirmed",
    "old",
)


def _urgency(item: ReviewItem) -> tuple[int, datetime]:
    first = min(
        next((i for i, word in enumerate(_ORDER) if reason.startswith(word)), len(_ORDER))
        for reason in item.reasons
    )
    return first, item.memory.updated_at
