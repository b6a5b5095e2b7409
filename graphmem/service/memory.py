"""The Memory service: every use case of graphmem, called by the CLI, the MCP tools and Python.

``MemoryService`` is a facade: each verb resolves the project a call names (or this
memory's own, ``project``) and hands the call to the part that owns it (``MemoryParts``,
``parts.py``, built once by ``graphmem.app``, the composition root):

- ``Rememberer`` (``remember.py``): remember -- what it means; ``MemoryWriter`` (``writer.py``)
  applies it, and every other write of a memory passes it too;
- ``Lifecycle`` (``lifecycle.py``): archive, restore, resolve, unresolve, delete, link, unlink,
  history, undo; ``Listing`` (``listing.py``): show, select, list, stats; ``Review``: review;
- ``Recaller`` (``recall.py``) and ``ContextBuilder`` (``context.py``): recall, get_context, boot;
- ``TransferFiles`` (``transfer_files.py``): export and import, as text or through files;
- ``Enricher`` (``enrichment.py``): enrich; ``Bootstrapper`` and ``Ingester``: what it learns;
- ``Coordinator`` (``coordination.py``, the daemon's or a team store's): sessions and claims.

Entry points parse input and present results; nothing but delegation happens here. Each verb's
doc is written once, where ``graphmem.api.Memory`` declares it: ``MemoryService`` implements
that protocol by name, so ``help`` and ``inspect.getdoc`` find a method's doc there, and a
part's verb (``PartVerb``) carries it.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

from graphmem.api import Bound, Memory
from graphmem.core.branches import parse_branch
from graphmem.core.coordination import MAX_OVERRIDES, MAX_TTL
from graphmem.core.coordination import PERSON as OWNER_PERSON
from graphmem.core.enrichment import EnrichReport, GitLabStatus
from graphmem.core.events import USER
from graphmem.core.models import Category, Entity, MemoryRecord
from graphmem.core.provenance import Origin, origin_of
from graphmem.errors import ConfigError, InvalidInputError
from graphmem.service.bootstrap import HistoryWalk
from graphmem.service.branches import BranchChanges
from graphmem.service.context import ContextBuilder
from graphmem.service.coordination import (
    NO_DAEMON,
    ActiveSessions,
    AgentSession,
    Claim,
    Coordination,
    EndedSession,
    Override,
)
from graphmem.service.enrichment import Enricher
from graphmem.service.ingest import IngestOptions
from graphmem.service.inputs import MemoryEdit, parse_path, parse_project
from graphmem.service.lifecycle import Lifecycle
from graphmem.service.listing import Listing
from graphmem.service.mentions import Mentions, parse_ref_entities
from graphmem.service.parts import CheckoutVerb, MemoryParts, PartVerb, writes
from graphmem.service.project_names import ProjectNames
from graphmem.service.recall import Recaller
from graphmem.service.remember import Rememberer
from graphmem.service.results import (
    BootstrapReport,
    IngestReport,
)
from graphmem.service.review import Review
from graphmem.service.semantic import SemanticIndex
from graphmem.service.transfer_files import Progress, TransferFiles
from graphmem.service.writer import MemoryWriter
from graphmem.service.writer_history import WriterHistory


def _archive_expired(parts: MemoryParts) -> None:
    """What a ``remember`` does first, and a read never (the daemon's idle worker does it too)."""
    parts.writer.history.expire_due()


NO_SOURCES = (
    "This Memory service was built without sources to learn from: open it with "
    "graphmem.open_memory(), which gives it the code parser, git and OpenCode's sessions."
)


class MemoryService(Bound, Memory):
    """Remember, recall, get context, and manage memories in one store (see the module doc). A
    value: ``bound`` and ``serving`` give another one on the same parts; nothing changes it."""

    def __init__(self, parts: MemoryParts, *, project: str | None = None, branch: str | None = None) -> None:
        super().__init__(project, branch)
        self._parts = parts
        self.store = parts.writer.store  # behind the redaction door
        self.semantic: SemanticIndex | None = parts.writer.semantic
        self.code = parts.code
        self.enricher = parts.enricher
        self.data_dir = parts.transfer.data_dir
        self._mentions = parts.mentions
        self._recaller = parts.recaller
        self._listing = parts.listing
        self._lifecycle = parts.lifecycle
        self._names = parts.names  # a checkout's project name

    # export and import are the transfer part's own verbs (``transfer_files.py``); an export only
    # reads the store (its file forms write a file, no memory), an import is a write (``parts.py``)
    export = PartVerb(lambda parts: parts.transfer, TransferFiles.export)
    export_repository = PartVerb(lambda parts: parts.transfer, TransferFiles.export_repository)
    import_text = PartVerb(lambda parts: parts.transfer, TransferFiles.import_text, writes=True)
    export_file = PartVerb(lambda parts: parts.transfer, TransferFiles.export_file)
    export_dir = PartVerb(lambda parts: parts.transfer, TransferFiles.export_dir)
    import_file = PartVerb(lambda parts: parts.transfer, TransferFiles.import_file, writes=True)

    @property
    def parts(self) -> MemoryParts:
        """What this service is made of (``service/parts.py``), shared by every value of it."""
        return self._parts

    @property
    def coordinator(self) -> Coordination | None:
        """Sessions and claims: the daemon's (or a team's store's); None in a plain process."""
        return self._parts.coordinator

    @property
    def serves_agents(self) -> bool:
        """Whether this is the daemon's service (``serving``): path verbs confined, a coordinator."""
        return self._parts.transfer.agent_files and self._parts.coordinator is not None

    def bound(self, project: str | None, branch: str | None = None) -> MemoryService:
        """This service for the checkout of ``project`` on ``branch``: the same parts."""
        return MemoryService(self._parts, project=project, branch=branch)

    def serving(self, coordinator: Coordination) -> MemoryService:
        """This service as the daemon serves it: its path verbs held to what an agent may touch
        (``service/file_access.py``), ``coordinator`` its sessions and claims."""
        parts = replace(self._parts, transfer=self._parts.transfer.confined(), coordinator=coordinator)
        return MemoryService(parts, project=self.project, branch=self.branch)

    @property
    def writer(self) -> MemoryWriter:
        """The one door for writing memories (``service/writer.py``)."""
        return self._parts.writer

    def close(self) -> None:
        try:
            self._recaller.close()  # its threads end before what they read closes
        finally:
            try:
                if self.semantic is not None:
                    self.semantic.close()  # saves the vector index for the next run
            finally:
                self.store.close()

    def own_project(self, project: object) -> str | None:
        """``project`` (checked: a NUL or an over-long path is refused), or this memory's own
        project when the call names none, by the name the store keeps it under (``ProjectNames``)."""
        return self._names.of(self.project if project is None else parse_project(project))

    def own_branch(self, project: object, branch: object) -> str | None:
        """``branch`` (checked), or this memory's own when the call names none and is about its project."""
        if branch is not None:
            return parse_branch(branch)
        return self.branch if project is None or project == self.project else None

    # -- the model ------------------------------------------------------------------

    def load_model(self) -> None:
        if self.semantic is not None:
            self.semantic.index()
            self.semantic.embed_query("graphmem")

    def warm_up(self) -> None:
        if self.semantic is not None:
            self.semantic.embedder.warm_up()

    @property
    def embeds_on_read(self) -> bool:
        return self.semantic is not None and self.semantic.embed_on_read

    def embed_pending(self, progress: Progress | None = None) -> int:
        return self.semantic.embed_pending(progress) if self.semantic is not None else 0

    reindex = PartVerb(lambda parts: parts.writer, MemoryWriter.reindex)

    # -- the entities a text names ----------------------------------------------------

    entities_in = PartVerb(lambda parts: parts.mentions, Mentions.entities_in)

    def code_described(self, question: str, *, project: str | None = None) -> list[Entity]:
        """The symbols ``question`` describes without naming them, best first (waits for the
        project's symbol index, which ``recall`` builds in the background)."""
        return self._recaller.described(question, self.own_project(project), wait=True)

    # -- writing ------------------------------------------------------------------------

    # the rememberer's own verb, for this memory's checkout; a write (``parts.py``): the project's
    # other names' memories move to it first, then what expired is archived (a read sees the former
    # where they are and leaves the latter out)
    remember = CheckoutVerb(
        lambda parts: parts.rememberer,
        Rememberer.remember,
        writes=True,
        first=_archive_expired,
    )

    # the daemon's idle worker runs them too; reads never do (they leave such memories out unwritten,
    # and see the memories still kept under a project's other names as its own: ``ProjectNames``)
    expire_due = PartVerb(lambda parts: parts.writer.history, WriterHistory.expire_due)
    move_pending_projects = PartVerb(lambda parts: parts.names, ProjectNames.move_pending)

    @writes
    def edit(
        self,
        memory_id: str,
        *,
        text: str | None = None,
        category: str | Category | None = None,
        project: str | None = None,
        actor: str = USER,
    ) -> MemoryRecord:
        change = MemoryEdit(text, category, self.own_project(project))
        return self._lifecycle.edit(memory_id, change, actor=actor)

    # -- lifecycle: status and links ------------------------------------------------------

    archive = PartVerb(lambda parts: parts.lifecycle, Lifecycle.archive)
    restore = PartVerb(lambda parts: parts.lifecycle, Lifecycle.restore)
    resolve = PartVerb(lambda parts: parts.lifecycle, Lifecycle.resolve)
    unresolve = PartVerb(lambda parts: parts.lifecycle, Lifecycle.unresolve)

    def confirm(self, memory_id: str, *, actor: str = USER) -> MemoryRecord:
        return self._listing.marked(self._lifecycle.confirm(memory_id, actor=actor))

    def reject(self, memory_id: str) -> MemoryRecord:
        return self._listing.marked(self._lifecycle.reject(memory_id))

    def widen(self, memory_id: str) -> MemoryRecord:
        return self._listing.marked(self._lifecycle.widen(memory_id))

    delete = PartVerb(lambda parts: parts.lifecycle, Lifecycle.delete)
    link = PartVerb(lambda parts: parts.lifecycle, Lifecycle.link)
    unlink = PartVerb(lambda parts: parts.lifecycle, Lifecycle.unlink)
    history = PartVerb(lambda parts: parts.lifecycle, Lifecycle.history)
    undo = PartVerb(lambda parts: parts.lifecycle, Lifecycle.undo)

    # -- reading --------------------------------------------------------------------------

    show = PartVerb(lambda parts: parts.listing, Listing.show)
    expand_id = PartVerb(lambda parts: parts.listing, Listing.expand_id)
    review = CheckoutVerb(lambda parts: parts.review, Review.review)

    # the listing's own verbs, for this memory's checkout
    select = CheckoutVerb(lambda parts: parts.listing, Listing.select)
    list = CheckoutVerb(lambda parts: parts.listing, Listing.list)
    stats = PartVerb(lambda parts: parts.listing, Listing.stats)
    gauges = PartVerb(lambda parts: parts.listing, Listing.gauges)

    # recall and the contexts, for this memory's checkout: the hits are marked stale as they go
    recall = CheckoutVerb(lambda parts: parts.recaller, Recaller.ask)
    get_context = CheckoutVerb(lambda parts: parts.context, ContextBuilder.get_context)
    boot_context = CheckoutVerb(lambda parts: parts.context, ContextBuilder.boot_context)

    # -- GitLab ---------------------------------------------------------------------------

    def enrich(
        self,
        refs: Sequence[str] | None = None,
        *,
        project: str | None = None,
        all: bool = False,
        refresh: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> EnrichReport:
        enricher = self._enricher()
        try:
            if refs:
                own = self.own_project(project)
                entities = parse_ref_entities(refs, own, self._mentions.namespace)
                report = enricher.enrich_refs(entities, refresh=refresh, progress=progress)
            else:
                report = enricher.enrich(None, all=all, refresh=refresh, progress=progress)
        except ConfigError:  # no GitLab: a branch deleted since still counts
            self.check_branches()
            raise
        self.check_branches()  # after the MRs, so a merged branch's memories are promoted first
        return report

    def check_branches(self, *, project: str | None = None) -> BranchChanges:
        """Archive the memories of branches deleted from their repository (``project``'s, or every
        project's); the (memory id, rule) of each change. ``enrich``, ``bootstrap`` and the idle
        daemon run it."""
        return self._parts.branches.check(project) if self._parts.branches is not None else []

    def enrich_due(self, limit: int = 10) -> int:
        """Fetch a few entities whose enrichment is due (the daemon's worker); how many were tried."""
        return self.enricher.run_due(limit) if self.enricher is not None else 0

    def gitlab_status(self, *, probe: bool = False) -> GitLabStatus:
        return self._enricher().status(probe=probe)

    def _enricher(self) -> Enricher:
        if self.enricher is None:
            raise ConfigError("This store has no GitLab enrichment: open it with graphmem.open_memory().")
        return self.enricher

    # -- learning ---------------------------------------------------------------------------

    @writes
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
        root = parse_path(str(path))  # a NUL or an overlong path: the error every path verb gives
        if self.code is None:
            raise InvalidInputError("This store has no code graph.")
        if self._parts.bootstrapper is None:
            raise InvalidInputError(NO_SOURCES)
        walk = HistoryWalk(history, history_before, history_merges, history_revision)
        project = self._names.of(str(root.resolve()))  # in a write: its other names' memories moved
        report = self._parts.bootstrapper.run(root, walk, progress=progress, project=project)
        self.check_branches(project=report.project)
        return replace(report, pending_vectors=self.store.count_pending_embeddings())

    @property
    def ingest_options(self) -> IngestOptions:
        """How sessions are ingested (``[ingest]``); the daemon reads ``background`` and its interval."""
        return self._parts.ingest

    @writes
    def ingest_opencode(
        self,
        *,
        db_path: str | None = None,
        since: datetime | None = None,
        session_id: str | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> IngestReport:
        if self._parts.ingester is None:
            raise InvalidInputError(NO_SOURCES)
        return self._parts.ingester.run(
            db_path=db_path,
            since=since,
            session_id=session_id,
            progress=progress,
        )

    # -- sessions and claims (the daemon's Coordinator) ----------------------------------------

    def _coordinator(self) -> Coordination:
        if self._parts.coordinator is None:
            raise InvalidInputError(NO_DAEMON)
        return self._parts.coordinator

    def session_start(
        self, agent: str, *, project: str | None = None, task: str | None = None, owner: str = OWNER_PERSON
    ) -> AgentSession:
        return self._coordinator().start(agent, self.own_project(project), task, owner)

    def session_heartbeat(self, session_id: str, *, task: str | None = None) -> AgentSession:
        return self._coordinator().heartbeat(session_id, task)

    def session_end(
        self,
        session_id: str,
        *,
        summary: str | None = None,
        source: str = "user",
        owner: str = OWNER_PERSON,
        force: bool = False,
    ) -> EndedSession:
        if summary and summary.strip() and origin_of(source) is Origin.AGENT:
            # Refused before the session ends: an agent's summary would be global (``Rememberer``).
            ending = {s.id: s for s in self._coordinator().active()}.get(session_id.strip())
            if ending is not None and ending.project is None:
                raise InvalidInputError(
                    f"Session {ending.id} has no project, so its summary cannot be stored: an agent's "
                    "memory belongs to the project it works on. End it without a summary, and remember "
                    "the summary with project, the absolute path of the repository."
                )
        session = self._coordinator().end(session_id, owner, force)
        stored = None
        if summary and summary.strip():
            result = self.remember(
                summary, category=Category.EVENT, project=session.project, session=session.id, source=source
            )
            stored = result.memory.id
        return EndedSession(session, stored)

    def active_sessions(self, *, project: str | None = None, all_projects: bool = False) -> ActiveSessions:
        coordinator = self._coordinator()
        resolved = None if all_projects else self.own_project(project)
        return ActiveSessions(coordinator.active(resolved), coordinator.claims(resolved))

    def claim_item(self, session_id: str, item: str, *, ttl_seconds: int | None = None) -> Claim:
        longest = int(MAX_TTL.total_seconds())
        if ttl_seconds and not 1 <= ttl_seconds <= longest:  # before the timedelta: 10**30 s overflows it
            raise InvalidInputError(f"ttl_seconds must be between 1 and {longest}.")
        ttl = timedelta(seconds=ttl_seconds) if ttl_seconds else None
        return self._coordinator().claim(session_id, item, ttl)

    def release_item(
        self, session_id: str, item: str, *, owner: str = OWNER_PERSON, force: bool = False
    ) -> bool:
        return self._coordinator().release(session_id, item, owner, force)

    def session_overrides(self, *, limit: int = 50) -> builtins.list[Override]:  # ``list`` is a verb here
        if not 1 <= limit <= MAX_OVERRIDES:
            raise InvalidInputError(f"limit must be between 1 and {MAX_OVERRIDES}.")
        return self._coordinator().overrides(limit)
