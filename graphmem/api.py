"""The Python API's one type: ``Memory``, what ``graphmem.open_memory()`` returns.

Two classes implement it, and mypy holds both to it: ``MemoryService``
(``graphmem/service/memory.py``), the store opened in this process, and ``RemoteMemory``
(``graphmem/server/remote.py``), the same verbs sent to the daemon that holds the store,
each made from its declaration here (``with_table_verbs``: no line of its own there). It
declares the verbs of the table (``graphmem/server/verbs.py``) that ``/rpc`` serves, plus
what every memory has: its project and branch, ``bound``, ``warm_up``, ``embeds_on_read``
and ``close`` (tests/unit/test_api.py keeps the three in step).

Each verb's doc is written here and only here: both classes subclass ``Memory``, so ``help``
and ``inspect.getdoc`` find it on their methods, the service's verbs that are a part's own
(``service/parts.PartVerb``) and the remote ones carry it, the MCP tools made from a verb
and docs/reference/python-api.md are given it (a test fails when a verb has none). How to
use them: docs/python-api.md.

Light on purpose: the types are named for mypy only, so importing this module imports
none of the service.
"""

from __future__ import annotations

import builtins
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
    from graphmem.service.coordination import ActiveSessions, AgentSession, Claim, EndedSession, Override
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

    @property
    def embeds_on_read(self) -> bool:
        """Whether no worker embeds what waits for its vector in the background (the store
        opened in this process, with no daemon): each read then embeds a share of it, and
        ``embed_pending`` embeds the rest. False through a daemon, whose worker embeds it."""

    def close(self) -> None:
        """Release the store (a daemon's memory: its connections to the daemon)."""

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
    ) -> RememberResult:
        """Store a memory, or reinforce the existing one it repeats.

        ``scope`` defaults to ``project`` inside a project (``global`` for preferences and outside
        projects); an agent's (``source="mcp"``) is always its project's, and refused without one.
        A decision that changes one choice of an older one on the same subject supersedes it
        (``core.dedup.replaces``; the result's ``supersessions`` say what it replaced and the event
        that ``undo`` reverses); ``supersedes`` names the old one explicitly. ``origin`` says
        where in ``source`` it was learned (an OpenCode message id); ``trust`` is ``low`` for text
        that tries to instruct the model. After ``expires_at`` it leaves recall, context and lists
        (archived, in its history). Written on ``branch`` (the checkout's, not the default one), it
        is seen on that branch only until the branch's MR merges (see ``service/branches.py``)."""

    def edit(
        self,
        memory_id: str,
        *,
        text: str | None = None,
        category: str | Category | None = None,
        project: str | None = None,
        actor: str = "user",
    ) -> MemoryRecord:
        """Change a memory's text and/or category (its id and links stay; the old text goes to its
        history). New text is re-read for refs and files: the memory is about what it names."""

    def archive(self, memory_id: str, *, actor: str = "user") -> MemoryRecord:
        """Hide a memory from recall without deleting it (``restore`` brings it back)."""

    def restore(self, memory_id: str, *, actor: str = "user") -> MemoryRecord:
        """Make an archived or superseded memory current again.

        Undoes a supersession: the ``supersedes`` edges pointing at it are removed; an expired
        memory loses its expiry.
        """

    def resolve(self, memory_id: str, *, actor: str = "user") -> MemoryRecord:
        """Mark a blocker as no longer blocking."""

    def unresolve(self, memory_id: str, *, actor: str = "user") -> MemoryRecord:
        """Mark a resolved blocker as blocking again."""

    def confirm(self, memory_id: str, *, actor: str = "user") -> MemoryRecord:
        """Mark a memory as still valid: it is no longer "possibly stale" for earlier code changes.
        A person's confirmation also makes a proposal theirs: a proposed directive or preference
        becomes a convention."""

    def reject(self, memory_id: str) -> MemoryRecord:
        """Turn down a proposal: it is archived (the user's memory it would change stays as it is)."""

    def widen(self, memory_id: str) -> MemoryRecord:
        """Make a project memory global (an agent's stay in their project until the user does):
        the user's own copy for every project, which supersedes it."""

    def delete(self, memory_id: str, *, actor: str = "user") -> MemoryRecord:
        """Delete a memory and its edges for good (its history stays readable)."""

    def link(self, source: str, target: str, kind: str | LinkKind, *, actor: str = "user") -> Link:
        """Relate two memories: ``source`` supersedes / contradicts / extends / relates to ``target``."""

    def unlink(self, source: str, target: str, kind: str | LinkKind, *, actor: str = "user") -> None:
        """Remove a link; removing ``supersedes`` makes the target current again."""

    def history(self, memory_id: str, *, limit: int = 100) -> list[MemoryEvent]:
        """The changes of a memory, newest first: edits (with the old text), status changes,
        supersessions and links, each with its ``id``, who made it (``actor``) and why (``rule``,
        ``reason``); a deleted memory's too."""

    def undo(self, event_id: str, *, actor: str = "user") -> MemoryEvent:
        """Reverse one event of a memory's history exactly; returns the undo's own event. Refused
        when it was undone already or the memory changed since; only a person undoes a person's
        change."""

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
    ) -> RecallResult:
        """The memories most relevant to ``query``; nothing when nothing is relevant. A hit about
        code that changed or went away since it was written says so (``stale``). Memories on a
        branch are seen on that branch (``branch``, by default the checkout's), every branch's
        with ``all_branches``."""

    def get_context(
        self,
        target: str,
        *,
        project: str | None = None,
        max_tokens: int | None = None,
        branch: str | None = None,
    ) -> ContextBundle:
        """What is known about ``target`` (a ref, a file path or free text), under a token budget."""

    def boot_context(
        self, *, project: str | None = None, max_tokens: int | None = None, branch: str | None = None
    ) -> ContextBundle:
        """What an agent should know at the start of a session: directives and
        preferences (this project's and global), open blockers, recent decisions."""

    def show(self, memory_id: str) -> MemoryDetail:
        """One memory, its entities and its links."""

    def expand_id(self, prefix: str) -> str:
        """The whole id of the one memory, or event (``evt_...``), whose id starts with ``prefix``
        (at least 8 characters: ``mem_6850``), as git takes a commit's; an error naming the
        candidates when several do. The CLI's ``show`` and ``undo`` take prefixes this way; the
        other verbs, and the MCP tools, take whole ids only."""

    def stats(self) -> Stats:
        """Counts by category, status and scope, entities by kind, the embedding backlog, and on
        a team's store the role it logs in with (whose global memories the counts include)."""

    def review(
        self, *, project: str | None = None, older_than: datetime | None = None, limit: int = 50
    ) -> list[ReviewItem]:
        """Memories to confirm, edit or archive, with why, most pressing first: expired,
        contradicted, stale, unconfirmed, then old (unchanged since ``older_than``; by default
        180 days ago)."""

    def select(
        self,
        *,
        project: str | None = None,
        categories: Iterable[str | Category] | None = None,
        statuses: Iterable[Status] | None = None,
        since: datetime | None = None,
        before: datetime | None = None,
    ) -> list[MemoryRecord]:
        """Every memory visible from ``project`` that matches the filter, newest first: what a
        bulk lifecycle verb acts on (``graphmem archive --category event --older-than 90d``).

        ``since`` and ``before`` bound the creation time; without any statuses, active and
        resolved memories match. Refuses a filter matching more than ``MAX_LIST_LIMIT``."""

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
    ) -> list[MemoryRecord]:
        """Memories visible from ``project``, newest first: every branch's, or without
        ``all_branches`` those seen on ``branch`` (by default the checkout's)."""

    # -- moving memories ------------------------------------------------------------------

    def export(
        self, out: TextIO, *, project: str | None = None, fmt: str = "jsonl", repository: bool = False
    ) -> ExportSummary:
        """Write memories as JSONL (lossless, importable) or Markdown (for reading).

        ``repository``: only the memories ``project`` shares with a team, project-relative.
        """

    def export_dir(
        self, directory: Path, *, project: str | None, fmt: str = "jsonl", force: bool = False
    ) -> RepositoryExport:
        """Write the project's shared memories into its ``.graphmem/`` folder (or a folder in
        ``<data_dir>/exports/``): ``memories.jsonl`` and ``MEMORY.md``, each only when changed."""

    def export_repository(
        self,
        *,
        project: str | None,
        fmt: str = "jsonl",
        force: bool = False,
        current: str | None = None,
        folder: str = ".graphmem/",
    ) -> RepositoryFiles:
        """The files of a repository export (``memories.jsonl``, ``MEMORY.md``) as text, for
        the caller to write; ``current`` is the folder's ``memories.jsonl`` now, checked for
        memories this store lacks unless ``force``."""

    def import_file(
        self,
        path: Path,
        *,
        name: str | None = None,
        project: str | None = None,
        dry_run: bool = False,
        progress: Callable[[int], None] | None = None,
        actor: str = "user",
    ) -> ImportSummary:
        """Import a JSONL export file (or a folder's ``memories.jsonl``) inside the project's
        checkout or ``<data_dir>/exports/``: validates everything first, imports all or nothing.
        ``name``: the file the memories say they came from (``import:NAME``) and errors name; by
        default the file read (the CLI hands a daemon a large file as a copy, named the user's)."""

    def import_text(
        self,
        text: str | bytes,
        *,
        name: str = "The export",
        project: str | None = None,
        dry_run: bool = False,
        progress: Callable[[int], None] | None = None,
        actor: str = "user",
    ) -> ImportSummary:
        """Import JSONL export text, or an export file's UTF-8 bytes (decoded a line at a time, never
        held as one text): validates everything first, imports all or nothing."""

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
    ) -> BootstrapReport:
        """Scan a repository into files, symbols and edges, facts from its docs, and its history.

        Incremental: unchanged files cost a ``stat``; see ``service/bootstrap.py``.
        ``history_before`` keeps only commits older than that time and
        ``history_merges=False`` leaves merge commits out, and ``history_revision`` (a sha)
        walks the history from that commit instead of HEAD (the code-memory benchmark's cut).
        """

    def ingest_opencode(
        self,
        *,
        db_path: str | None = None,
        since: datetime | None = None,
        session_id: str | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> IngestReport:
        """Learn from finished OpenCode sessions: decisions, blockers, procedures, preferences...

        Reads OpenCode's SQLite store read-only (``db_path``, else ``[ingest] opencode_db``,
        ``OPENCODE_DB``, the XDG data dir) from the stored cursor on, or every session
        changed since ``since``; ``session_id`` ingests that one session now, finished or
        not (the OpenCode plugin calls this on ``session.idle``). Idempotent: a session is
        stored once, and again only with what its new messages teach. ``progress`` gets
        the number of sessions looked at so far. See ``service/ingest.py``.
        """

    def enrich(
        self,
        refs: Sequence[str] | None = None,
        *,
        project: str | None = None,
        all: bool = False,
        refresh: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> EnrichReport:
        """Fetch GitLab facts now: for ``refs`` (``!12``, ``#4``, ``&7``, ``group/proj!12``,
        URLs; relative ones resolved in ``project``), else for everything waiting, or with
        ``all`` for every MR, issue and epic. Within ``[gitlab] ttl_seconds`` an enriched
        entity is not asked again unless ``refresh``. ``progress(done, total)``.
        """

    def gitlab_status(self, *, probe: bool = False) -> GitLabStatus:
        """Whether GitLab is configured, reachable, rate-limited, the token's state (never
        the token), and how many entities wait for enrichment. ``probe`` asks GitLab now."""

    # -- the model ------------------------------------------------------------------------

    def load_model(self) -> None:
        """Load the model and the vectors now and embed what is pending.

        Embeds a probe text, so a model that cannot run fails here, not at the
        first recall.
        """

    def embed_pending(self, progress: Callable[[int], None] | None = None) -> int:
        """Embed memories written since the model last ran; returns how many."""

    def reindex(self, progress: Callable[[int], None] | None = None) -> int:
        """Forget every vector and embed every memory with the configured model."""

    # -- agents' sessions and claims --------------------------------------------------------

    def session_start(
        self, agent: str, *, project: str | None = None, task: str | None = None, owner: str = "person"
    ) -> AgentSession:
        """Announce a working session other agents on the project see; it expires without
        ``session_heartbeat``. ``owner`` (set by the code path: a person, or an MCP client) is
        the only client that may end it or release its claims."""

    def session_heartbeat(self, session_id: str, *, task: str | None = None) -> AgentSession:
        """Keep a session and its claims alive for another TTL (and change its task)."""

    def session_end(
        self,
        session_id: str,
        *,
        summary: str | None = None,
        source: str = "user",
        owner: str = "person",
        force: bool = False,
    ) -> EndedSession:
        """End a session, release its claims, and store ``summary`` as an event memory. Only
        the session's ``owner`` may, unless ``force`` (a person's override, from the CLI)."""

    def active_sessions(self, *, project: str | None = None, all_projects: bool = False) -> ActiveSessions:
        """The live sessions and claims of ``project`` (and of none), or of every project."""

    def claim_item(self, session_id: str, item: str, *, ttl_seconds: int | None = None) -> Claim:
        """Claim ``item`` for the session; a ``ClaimConflictError`` names the holder when
        another live session holds it."""

    def release_item(self, session_id: str, item: str, *, owner: str = "person", force: bool = False) -> bool:
        """Release an item the session claimed; False when it did not hold it. Only the session's
        ``owner`` may, unless ``force`` (a person's override, from the CLI)."""

    def session_overrides(self, *, limit: int = 50) -> builtins.list[Override]:  # ``list`` is a verb here
        """The forced ends of another's session and releases of its claims (``force``), newest
        first, at most ``limit`` (1 to 1000): when, what, the session, its agent and, on a team's
        store, its person and who forced it (written by the database). The embedded store keeps
        them while its daemon runs."""
