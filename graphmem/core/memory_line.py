"""A memory line of an export as an import holds it, and the memory an import of it stores.

``core/export_format.py`` checks each line with its pydantic model; a memory line, of which one
file may hold half a million, is then kept as a ``MemoryLine``: the fields an import uses, in slots.
A model instance with its field dict and set of fields given took 1.6 KB a line: 0.9 GB of the
2 GB a dry run of 568,800 small memories peaked at. The fields an import never takes from a file
(``source``, ``reinforced``, ``trust``, ``stale``) are checked there, then dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from graphmem.core.models import Category, MemoryRecord, Scope, Status
from graphmem.core.provenance import CHANGE_OF, proposes
from graphmem.core.timeparse import to_utc
from graphmem.core.trust import trust_of


@dataclass(frozen=True, slots=True)
class MemoryLine:
    """A valid memory line, as an import takes it (the format's fields: docs/export-format.md)."""

    id: str
    text: str
    category: Category
    scope: Scope
    project: str | None
    status: Status
    created_at: datetime
    updated_at: datetime | None
    valid_from: datetime | None
    valid_to: datetime | None
    session: str | None
    origin: str | None
    expires_at: datetime | None
    branch: str | None
    entities: tuple[str, ...]  # the keys of the entities it is about

    def status_from(self, source: str) -> Status:
        """The status an import from ``source`` gives it: a current directive or preference that
        a file brings is a proposal (core/provenance.py)."""
        if self.status is Status.ACTIVE and proposes(source, self.category):
            return Status.PROPOSED
        return self.status

    def to_record(
        self, content_hash: str, project: str | None, *, source: str, now: datetime
    ) -> MemoryRecord:
        """The memory an import of this line stores from ``source`` (``import:NAME``, set by the
        import's code path): the file says what it holds, never who wrote it or how far to
        trust it. Provenance, trust and reinforcement are not taken from the file; times after
        ``now`` are ``now``; a directive or preference is a proposal (``status_from``)."""
        created = min(to_utc(self.created_at), now)
        return MemoryRecord(
            id=self.id,
            text=self.text,
            category=self.category,
            scope=self.scope,
            project=project,
            created_at=created,
            updated_at=min(to_utc(self.updated_at), now) if self.updated_at else created,
            valid_from=min(to_utc(self.valid_from), now) if self.valid_from else created,
            valid_to=to_utc(self.valid_to) if self.valid_to else None,
            status=self.status_from(source),
            content_hash=content_hash,
            source=source,
            session=self.session,
            reinforced=0,
            # What a proposal would replace is set by the code path that proposed it, never by a file.
            origin=None if self.origin and self.origin.startswith(CHANGE_OF) else self.origin,
            trust=trust_of(self.text),
            expires_at=to_utc(self.expires_at) if self.expires_at else None,
            branch=self.branch if self.scope is Scope.PROJECT else None,
        )
