"""The Python API's one type: ``Memory``, what ``graphmem.open_memory()`` returns.

Two classes implement it, and mypy holds both to it: ``MemoryService``
(``graphmem/service/memory.py``), the store opened in this process, and ``RemoteMemory``
(``graphmem/server/remote.py``), the same verbs sent to the daemon that holds the store,
whose methods are made from the declarations here (``remote_verb``). It declares the verbs
of the table (``graphmem/server/verbs.py``) that ``/rpc`` serves, plus what every memory
has: its project and branch, ``bound``, ``warm_up`` and ``close``
(tests/unit/test_api.py keeps the three in step). What each does: docs/python-api.md.

Light on purpose: the types are named for mypy only, so importing this module imports
none of the service.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TextIO

if TYPE_CHECKING:
    from graphmem.core.bundle import ContextBundle
    from graphmem.core.enrichment import EnrichReport, GitLabStatus
    from graphmem.core.events import MemoryEvent
    from graphmem.core.fusion import Plan
    from graphmem.core.models import Category, Link, LinkKind, MemoryRecord, Scope, Status, Trust
    from graphmem.service.coordination import ActiveSessions, AgentSession, Claim, EndedSession
    from graphmem.service.results import (
        BootstrapReport,
        ExportSummary,
        ImportSummary,
        IngestReport,
        MemoryDetail,
        RecallResult,
        RememberResult,
        RepositoryExport,
        RepositoryFiles,
        ReviewItem,
        Stats,
    )

__all__ = ["Bound", "Memory"]


class Bound:
    """What every memory is bound to: the checkout, the project (and its branch) a call that
    names none is about. Read-only: ``bound`` gives a memory for another checkout, a new value.
    ``MemoryService`` and ``RemoteMemory`` are each one."""

    def __init__(self, project: str | None = None, branch: str | None = None) -> None:
        self.__project = project
        self.__branch = branch

    @property
    def project(self) -> str | None:
        """The project a call that names none uses (``open_memory``: the current directory's)."""
        return self.__project

    @property
    def branch(self) -> str | None:
        """The branch of that project's checkout, when it is not the default one."""
        return self.__branch


class Memory(Protocol):
    """Remember, recall, get context and manage memories in one store, in this process or
    through its daemon (see the module doc)."""

    @property
    def project(self) -> str | None:
        """The project a call that names none uses."""

    @property
    def branch(self) -> str | None:
        """The branch of that project's checkout, when it is not the default one."""

    def bound(self, project: str | None, branch: str | None = None) -> Memory:
        """This memory for the checkout of ``project`` on ``branch``: a new value."""

    def warm_up(self) -> None:
        """Start loading what recall needs (the embedding model) in the background."""

    def close(self) -> None:
        """Release the store (a daemon's memory: nothing to release)."""

    # -- writing ------------------------------------------------------------------------

    def remember(
        self,
        text: str,
        *,
        category: str | Category = "fact",
        scope: str | Scope | None = None,
        project: str | None = None,
        supersedes: str | None = None,
        session: str | None = None,
        source: str = "user",
        occurred_at: datetime | None = None,
        origin: str | None = None,
        trust: str | Trust = "normal",
        expires_at: datetime | None = None,
        branch: str | None = None,
    ) -> RememberResult: ...

    def edit(
        self,
        memory_id: str,
        *,
        text: str | None = None,
        category: str | Category | None = None,
        project: str | None = None,
        actor: str = "user",
    ) -> MemoryRecord: ...

    def archive(self, memory_id: str, *, actor: str = "user") -> MemoryRecord: ...
    def restore(self, memory_id: str, *, actor: str = "user") -> MemoryRecord: ...
    def resolve(self, memory_id: str, *, actor: str = "user") -> MemoryRecord: ...
    def unresolve(self, memory_id: str, *, actor: str = "user") -> MemoryRecord: ...
    def confirm(self, memory_id: str, *, actor: str = "user") -> MemoryRecord: ...
    def reject(self, memory_id: str) -> MemoryRecord: ...
    def widen(self, memory_id: str) -> MemoryRecord: ...
    def delete(self, memory_id: str, *, actor: str = "user") -> MemoryRecord: ...
    def link(self, source: str, target: str, kind: str | LinkKind, *, actor: str = "user") -> Link: ...
    def unlink(self, source: str, target: str, kind: str | LinkKind, *, actor: str = "user") -> None: ...
    def history(self, memory_id: str, *, limit: int = 100) -> list[MemoryEvent]: ...
    def undo(self, event_id: str, *, actor: str = "user") -> MemoryEvent: ...

    # -- reading ------------------------------------------------------------------------

    def recall(
        self,
        query: str,
        *,
        project: str | None = None,
        limit: int | None = None,
        categories: Iterable[str | Category] | None = None,
        since: datetime | None = None,
        history: bool = False,
        plan: str | Plan | None = None,
        branch: str | None = None,
        all_branches: bool = False,
    ) -> RecallResult: ...

    def get_context(
        self,
        target: str,
        *,
        project: str | None = None,
        max_tokens: int | None = None,
        branch: str | None = None,
    ) -> ContextBundle: ...

    def boot_context(
        self, *, project: str | None = None, max_tokens: int | None = None, branch: str | None = None
    ) -> ContextBundle: ...

    def show(self, memory_id: str) -> MemoryDetail: ...
    def stats(self) -> Stats: ...

    def review(
        self, *, project: str | None = None, older_than: datetime | None = None, limit: int = 50
    ) -> list[ReviewItem]: ...

    def select(
        self,
        *,
        project: str | None = None,
        categories: Iterable[str | Category] | None = None,
        statuses: Iterable[Status] | None = None,
        since: datetime | None = None,
        before: datetime | None = None,
    ) -> list[MemoryRecord]: ...

    def list(
        self,
        *,
        project: str | None = None,
        categories: Iterable[str | Category] | None = None,
        statuses: Iterable[Status] | None = None,
        since: datetime | None = None,
        limit: int = 50,
        offset: int = 0,
        branch: str | None = None,
        all_branches: bool = True,
    ) -> list[MemoryRecord]: ...

    # -- moving memories ------------------------------------------------------------------

    def export(
        self, out: TextIO, *, project: str | None = None, fmt: str = "jsonl", repository: bool = False
    ) -> ExportSummary: ...

    def export_dir(
        self, directory: Path, *, project: str | None, fmt: str = "jsonl", force: bool = False
    ) -> RepositoryExport: ...

    def export_repository(
        self,
        *,
        project: str | None,
        fmt: str = "jsonl",
        force: bool = False,
        current: str | None = None,
        folder: str = ".graphmem/",
    ) -> RepositoryFiles: ...

    def import_file(
        self,
        path: Path,
        *,
        project: str | None = None,
        dry_run: bool = False,
        progress: Callable[[int], None] | None = None,
    ) -> ImportSummary: ...

    def import_text(
        self,
        text: str,
        *,
        name: str = "The export",
        project: str | None = None,
        dry_run: bool = False,
        progress: Callable[[int], None] | None = None,
    ) -> ImportSummary: ...

    # -- learning -------------------------------------------------------------------------

    def bootstrap(
        self,
        path: str | Path,
        *,
        history: int = 500,
        progress: Callable[[int, int], None] | None = None,
        history_before: datetime | None = None,
        history_merges: bool = True,
        history_revision: str = "HEAD",
    ) -> BootstrapReport: ...

    def ingest_opencode(
        self,
        *,
        db_path: str | None = None,
        since: datetime | None = None,
        session_id: str | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> IngestReport: ...

    def enrich(
        self,
        refs: Sequence[str] | None = None,
        *,
        project: str | None = None,
        all: bool = False,
        refresh: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> EnrichReport: ...

    def gitlab_status(self, *, probe: bool = False) -> GitLabStatus: ...

    # -- the model ------------------------------------------------------------------------

    def load_model(self) -> None: ...
    def embed_pending(self, progress: Callable[[int], None] | None = None) -> int: ...
    def reindex(self, progress: Callable[[int], None] | None = None) -> int: ...

    # -- agents' sessions and claims --------------------------------------------------------

    def session_start(
        self, agent: str, *, project: str | None = None, task: str | None = None, owner: str = "person"
    ) -> AgentSession: ...

    def session_heartbeat(self, session_id: str, *, task: str | None = None) -> AgentSession: ...

    def session_end(
        self,
        session_id: str,
        *,
        summary: str | None = None,
        source: str = "user",
        owner: str = "person",
        force: bool = False,
    ) -> EndedSession: ...

    def active_sessions(
        self, *, project: str | None = None, all_projects: bool = False
    ) -> ActiveSessions: ...

    def claim_item(self, session_id: str, item: str, *, ttl_seconds: int | None = None) -> Claim: ...

    def release_item(
        self, session_id: str, item: str, *, owner: str = "person", force: bool = False
    ) -> bool: ...
