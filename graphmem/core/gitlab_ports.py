"""The ports of the GitLab enrichment: the instance's REST API and the graph its answers are
stored in (implemented in ``adapters``; the store's own ports are in ``core/ports.py``)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Protocol

from graphmem.core.enrichment import Attempt, EnrichmentRow
from graphmem.core.gitlab import EpicData, GitLabProbe, IssueData, MergeRequestData
from graphmem.core.gitlab_edits import GitLabEdit
from graphmem.core.models import Entity, Step


class GitLabClient(Protocol):
    """One GitLab instance's REST API (``adapters/gitlab_api.py``; a fixture server in tests).

    Every method raises a ``GitLabError`` subclass (see ``graphmem.errors``) and
    nothing else; none ever logs or returns the token.
    """

    @property
    def url(self) -> str: ...

    def probe(self) -> GitLabProbe:
        """Check the instance and the token (``GET /version`` or ``/user``)."""

    def merge_request(self, project: str, iid: int) -> MergeRequestData: ...
    def issue(self, project: str, iid: int) -> IssueData: ...
    def epic(self, group: str, iid: int) -> EpicData: ...

    def clear_cache(self) -> None:
        """Forget cached answers, so the next calls ask the instance (``enrich --refresh``)."""


class GitLabGraph(Protocol):
    """MRs, issues, epics and people, stored: the enrichment queue, primitive writes (``mark``,
    ``apply``) and reads. What an answer means is decided in ``core/gitlab_edits.py``; who sees a row in
    ``core/gitlab_reads.py``: a read shows only the nodes whose entity the reader sees and the edges whose
    two ends it sees; ``all_rows``, ``due``, ``counts`` and ``waiting`` only the rows its daemon enriches
    (``writes_on``). ``tests/unit/adapters/test_gitlab_graph_contract.py`` holds every store to them."""

    def rows(self, keys: Collection[str]) -> dict[str, EnrichmentRow]: ...
    def all_rows(self) -> list[EnrichmentRow]: ...
    def due(self, now: datetime, limit: int) -> list[EnrichmentRow]: ...
    def counts(self) -> dict[str, int]: ...
    def waiting(self) -> int: ...
    def mark(self, key: str, attempt: Attempt) -> None:
        """Record an attempt's outcome without touching the entity's facts (nothing when it is not
        in the graph, or another person's private entity, shown or not: ``due`` lists none)."""

    def queue(self, entities: Sequence[Entity]) -> None:
        """Store the MRs, issues and epics a person asks to enrich (``graphmem enrich REF``):
        created when absent (theirs, on a team's store), their own given the new name and
        project; the team's and another's private one left as they are (``core.entity_owners``)."""

    def apply(self, edit: GitLabEdit) -> None:
        """Store one GitLab answer as ``core.gitlab_edits.edit_for`` decided it, in one step:
        the asked node's facts (nothing at all when it is not in the graph, or another person's
        private entity, shown to the writer or not), the edges in the dropped scopes removed,
        the people upserted, the named nodes created when absent (see ``NewNode``), the edges
        added where both ends exist. A store that keeps owners owns and writes on the people and
        nodes as ``core.gitlab_edits``'s ``owner_after`` and ``writes_on`` say."""

    def entities(self, keys: Collection[str]) -> dict[str, Entity]: ...
    def merge_request(self, key: str) -> MergeRequestData | None: ...
    def issue(self, key: str) -> IssueData | None: ...
    def epic(self, key: str) -> EpicData | None: ...
    def merge_requests_closing(self, issue_key: str) -> list[Entity]: ...
    def changed_by(self, file_key: str, limit: int) -> list[tuple[Entity, str, datetime | None]]: ...
    def changed_symbols(self, mr_key: str) -> list[str]: ...
    def related_edges(self, keys: Collection[str], limit: int) -> list[Step]:
        """The GitLab edges from ``keys`` to entities one edge away, walked from the asked key
        (``Step.forward`` False against the edge): an MR's closing issues, an issue's epic and
        closing MRs, an epic's parent, issues and child epics, the MRs that changed a file or
        symbol, then an MR's changed files and symbols; at most ``limit``, each other end once."""
