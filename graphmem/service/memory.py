"""The Memory service: every use case of graphmem, called by the CLI, the MCP tools and Python.

Entry points parse input and present results; everything else happens here.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from graphmem.core.bundle import ContextBundle
from graphmem.core.dedup import candidate_query, is_near_duplicate, memory_hash, similarity
from graphmem.core.fusion import Plan, get_plan
from graphmem.core.models import (
    SUPERSEDABLE,
    Category,
    Entity,
    MemoryRecord,
    Scope,
    Status,
    Trust,
)
from graphmem.core.ports import CodeGraph, GraphStore, LearningSources, Visibility
from graphmem.core.redaction import redact
from graphmem.core.text import clean_fts_query, validate_text
from graphmem.core.timeparse import to_utc, utc_now
from graphmem.core.trust import looks_like_injection
from graphmem.errors import InvalidInputError
from graphmem.service.code_context import code_neighbours
from graphmem.service.context import ContextBuilder
from graphmem.service.enrichment import Enricher
from graphmem.service.gitlab_context import gitlab_neighbours
from graphmem.service.ingest import IngestOptions
from graphmem.service.inputs import (
    file_entity,
    new_memory_id,
    parse_category,
    parse_project,
    parse_scope,
    parse_trust,
)
from graphmem.service.memory_coordination import CoordinationVerbs
from graphmem.service.memory_gitlab import GitLabVerbs
from graphmem.service.memory_learning import LearningVerbs
from graphmem.service.memory_lifecycle import LifecycleVerbs
from graphmem.service.memory_mentions import Mentions
from graphmem.service.memory_transfer import TransferVerbs
from graphmem.service.recall import Recaller, RecallQuery
from graphmem.service.redacting import guard_store
from graphmem.service.results import MemoryDetail, RecallResult, RememberResult, Stats
from graphmem.service.semantic import SemanticIndex
from graphmem.service.transfer import Progress, Transfer

log = logging.getLogger(__name__)

# Lexical candidates compared with a new memory for near-duplicates / same subject.
DEDUP_CANDIDATES = 8
MAX_LIST_LIMIT = 10_000


class MemoryService(Mentions, LifecycleVerbs, GitLabVerbs, LearningVerbs, TransferVerbs, CoordinationVerbs):
    """Remember, recall, get context, and manage memories in one store.

    Writing, reading and the index are here; the other verbs live in modules beside
    this one, mixed in: ``memory_mentions`` (the entities a text names),
    ``memory_lifecycle`` (archive, restore, resolve, delete, link), ``memory_gitlab``
    (enrich, GitLab status), ``memory_learning`` (bootstrap, ingest OpenCode sessions),
    ``memory_transfer`` (export, import) and ``memory_coordination`` (sessions, claims).
    """

    def __init__(
        self,
        store: GraphStore,
        semantic: SemanticIndex | None,
        *,
        data_dir: Path,
        gitlab_namespace: Callable[[str], str | None] = lambda project: None,
        plan: str = "hybrid",
        recall_limit: int = 10,
        context_max_tokens: int = 1500,
        near_duplicate: float = 0.35,
        same_subject: float = 0.5,
        clock: Callable[[], datetime] = utc_now,
        code: CodeGraph | None = None,
        enricher: Enricher | None = None,
        ingest: IngestOptions | None = None,
        sources: LearningSources | None = None,
    ) -> None:
        store = guard_store(store)  # every write from here on passes redaction
        self.store = store
        self.code = code
        self.semantic = semantic
        self.data_dir = data_dir
        # The project a call that names none uses (``graphmem.open_memory`` sets the current
        # directory's, like the CLI); None: no project.
        self.project: str | None = None
        self._namespace = gitlab_namespace
        self._plan = get_plan(plan)
        self._recall_limit = recall_limit
        self._context_max_tokens = context_max_tokens
        self._near_duplicate = near_duplicate
        self._same_subject = same_subject
        self._clock = clock
        self._recaller = Recaller(store, semantic)
        self._transfer = Transfer(store, semantic, clock)
        self.enricher = enricher
        self._context = ContextBuilder(
            store, self.recall, self._project_namespace, file_entity, clock, code, enricher
        )
        self._write_lock = threading.RLock()
        self._session_tail: dict[str, str] = {}
        self._ingest = ingest or IngestOptions()
        self._sources = sources  # what bootstrap and ingest read (code, git, sessions)

    def close(self) -> None:
        self.store.close()

    def load_model(self) -> None:
        """Load the model and the vectors now and embed what is pending.

        Embeds a probe text, so a model that cannot run fails here, not at the
        first recall.
        """
        if self.semantic is not None:
            self.semantic.index()
            self.semantic.embed_query("graphmem")

    def warm_up(self) -> None:
        """Start loading what recall needs (the embedding model) in the background."""
        if self.semantic is not None:
            self.semantic.embedder.warm_up()

    def _project_namespace(self, project: str) -> str | None:
        return self._namespace(project)

    def _own(self, project: str | None) -> str | None:
        """``project`` (checked: a NUL or an over-long path is refused), or this memory's own
        project when the call names none."""
        return self.project if project is None else parse_project(project)

    # -- writing ----------------------------------------------------------------

    def remember(
        self,
        text: str,
        *,
        category: str | Category = Category.FACT,
        scope: str | Scope | None = None,
        project: str | None = None,
        supersedes: str | None = None,
        session: str | None = None,
        source: str = "user",
        occurred_at: datetime | None = None,
        origin: str | None = None,
        trust: str | Trust = Trust.NORMAL,
    ) -> RememberResult:
        """Store a memory, or reinforce the existing one it repeats.

        ``scope`` defaults to ``project`` inside a project (``global`` for
        preferences and outside projects). A decision on the same subject as an
        older one supersedes it; ``supersedes`` names the old one explicitly.
        ``origin`` says where in ``source`` it was learned (an OpenCode message id);
        ``trust`` is ``low`` for text that tries to instruct the model.
        """
        text = validate_text(text)
        redaction = redact(text)  # secrets never reach the store
        text = validate_text(redaction.text)
        trust = parse_trust(trust)
        if source != "user" and looks_like_injection(text):
            trust = Trust.LOW  # an agent's or a session's text that tries to instruct the model
        category = parse_category(category)
        project = self._own(project)
        scope = self._default_scope(category, project) if scope is None else parse_scope(scope)
        if scope is Scope.PROJECT and not project:
            raise InvalidInputError(
                "Scope 'project' needs a project: run inside a git repository or pass --project PATH."
            )
        owner = project if scope is Scope.PROJECT else None
        now = self._clock()
        when = to_utc(occurred_at) if occurred_at is not None else now
        digest = memory_hash(scope, owner, text)
        with self._write_lock:
            old = self._get(supersedes) if supersedes else None
            for existing in self.store.find_by_hash(digest):
                if existing.status is not Status.SUPERSEDED or (old is not None and existing.id == old.id):
                    # an archived one comes back
                    return replace(self._reinforce(existing, now), redacted=redaction.count)
            visibility = Visibility(owner, frozenset({Status.ACTIVE}))
            similar = self._similar(text, visibility)
            if old is None:
                for candidate, _ in similar:
                    if candidate.category is category and is_near_duplicate(
                        text, candidate.text, self._near_duplicate
                    ):
                        return replace(self._reinforce(candidate, now), redacted=redaction.count)
            entities = self.entities_in(text, project)
            record = MemoryRecord(
                id=new_memory_id(),
                text=text,
                category=category,
                scope=scope,
                project=owner,
                created_at=when,
                updated_at=now,
                valid_from=when,
                content_hash=digest,
                source=source,
                session=session,
                origin=origin,
                trust=trust,
            )
            # The session's last turn, looked up before this one becomes the last.
            tail = (
                (self._session_tail.get(session) or self.store.last_in_session(session)) if session else None
            )
            self.store.add_memories([record])
            if entities:
                self.store.upsert_entities(entities)
                self.store.link_about([(record.id, e) for e in entities])
            if session:
                if tail:
                    self.store.add_next([(tail, record.id)])
                self._session_tail[session] = record.id
            replaced = [old] if old is not None else self._same_subject_as(record, entities, similar)
            for older in replaced:
                self._supersede(record, older, now)
        if self.semantic is not None:
            self.semantic.added()
        return RememberResult(
            record,
            True,
            superseded=tuple(p.id for p in replaced),
            entities=tuple(entities),
            redacted=redaction.count,
        )

    def _default_scope(self, category: Category, project: str | None) -> Scope:
        if project is None or category is Category.PREFERENCE:
            return Scope.GLOBAL
        return Scope.PROJECT

    def _similar(self, text: str, visibility: Visibility) -> list[tuple[MemoryRecord, float]]:
        """Active memories that share words with ``text``, most similar first."""
        hits = self.store.search_text(clean_fts_query(candidate_query(text)), visibility, DEDUP_CANDIDATES)
        records = self.store.get_memories([memory_id for memory_id, _ in hits])
        scored = [(record, similarity(text, record.text)) for record in records.values()]
        return sorted(scored, key=lambda pair: (-pair[1], pair[0].id))

    def _same_subject_as(
        self, record: MemoryRecord, entities: Sequence[Entity], similar: Sequence[tuple[MemoryRecord, float]]
    ) -> list[MemoryRecord]:
        """Older memories of the same kind that ``record`` replaces.

        Only for categories where a newer statement replaces an older one, only in
        the same scope, and only when the two share a subject: a named entity, or
        most of their words.
        """
        if record.category not in SUPERSEDABLE:
            return []
        keys = {e.key for e in entities}
        about = self.store.about([r.id for r, _ in similar]) if keys else {}
        replaced = []
        for other, overlap in similar:
            if other.category is not record.category or other.scope is not record.scope:
                continue
            if other.project != record.project or other.id == record.id:
                continue
            shares_entity = bool(keys & {e.key for e in about.get(other.id, [])})
            threshold = self._same_subject * (0.6 if shares_entity else 1.0)
            if overlap >= threshold:
                replaced.append(other)
        return replaced[:1]

    def _reinforce(self, existing: MemoryRecord, now: datetime) -> RememberResult:
        changes: dict[str, object] = {"reinforced": existing.reinforced + 1, "updated_at": now}
        status = Status.ACTIVE if existing.status is Status.ARCHIVED else existing.status
        if status is not existing.status:
            changes["status"] = status
            if self.semantic is not None:
                self.semantic.status_changed(existing.id, status)
        self.store.update_memory(existing.id, changes)
        updated = replace(existing, reinforced=existing.reinforced + 1, updated_at=now, status=status)
        entities = self.store.about([existing.id]).get(existing.id, [])
        return RememberResult(updated, False, duplicate_of=existing.id, entities=tuple(entities))

    def edit(
        self,
        memory_id: str,
        *,
        text: str | None = None,
        category: str | Category | None = None,
        project: str | None = None,
    ) -> MemoryRecord:
        """Change a memory's text and/or category (its id, links and history stay).

        New text is re-read for refs and files: the memory is then about exactly
        what the new text names.
        """
        if text is None and category is None:
            raise InvalidInputError("Nothing to change: give new text and/or --category.")
        project = self._own(project)
        new_category = parse_category(category) if category is not None else None
        new_text = validate_text(redact(text).text) if text is not None else None
        with self._write_lock:
            record = self._get(memory_id)
            memory_id = record.id  # as stored: the id given may carry whitespace
            now = self._clock()
            if new_text is not None and new_text != record.text:
                self.store.replace_text(
                    memory_id,
                    text=new_text,
                    content_hash=memory_hash(record.scope, record.project, new_text),
                    updated_at=now,
                    entities=self.entities_in(new_text, project or record.project),
                )
                if self.semantic is not None:
                    self.semantic.text_changed(memory_id)
            changes: dict[str, object] = {"updated_at": now}
            if new_category is not None:
                changes["category"] = new_category
            self.store.update_memory(memory_id, changes)
            return self._get(memory_id)

    # -- reading ----------------------------------------------------------------

    def show(self, memory_id: str) -> MemoryDetail:
        """One memory, its entities and its links."""
        record = self._get(memory_id)
        entities = self.store.about([record.id]).get(record.id, [])
        return MemoryDetail(record, tuple(entities), tuple(self.store.links([record.id])))

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
        visibility = Visibility(
            self._own(project),
            frozenset(statuses) if statuses else frozenset({Status.ACTIVE, Status.RESOLVED}),
            frozenset(parse_category(c) for c in categories) if categories else None,
            to_utc(since) if since is not None else None,
        )
        cutoff = to_utc(before) if before is not None else None
        found: list[MemoryRecord] = []
        offset = 0
        while True:
            page = self.store.list_memories(visibility, limit=MAX_LIST_LIMIT, offset=offset)
            found += [r for r in page if cutoff is None or r.created_at < cutoff]
            if len(found) > MAX_LIST_LIMIT:
                raise InvalidInputError(
                    f"Over {MAX_LIST_LIMIT} memories match: narrow the filter (a category, a status, "
                    "an age) and run it again."
                )
            if len(page) < MAX_LIST_LIMIT:
                return found
            offset += MAX_LIST_LIMIT

    def list(
        self,
        *,
        project: str | None = None,
        categories: Iterable[str | Category] | None = None,
        statuses: Iterable[Status] | None = None,
        since: datetime | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[MemoryRecord]:
        """Memories visible from ``project``, newest first."""
        if not 1 <= limit <= MAX_LIST_LIMIT or offset < 0:
            raise InvalidInputError(f"limit must be 1..{MAX_LIST_LIMIT} and offset >= 0.")
        visibility = Visibility(
            self._own(project),
            frozenset(statuses) if statuses else frozenset({Status.ACTIVE, Status.RESOLVED}),
            frozenset(parse_category(c) for c in categories) if categories else None,
            to_utc(since) if since is not None else None,
        )
        return self.store.list_memories(visibility, limit=limit, offset=offset)

    def stats(self) -> Stats:
        counts = self.store.count_memories()
        by_category: Counter[str] = Counter()
        by_status: Counter[str] = Counter()
        by_scope: Counter[str] = Counter()
        for (category, scope, status), n in counts.items():
            by_category[category] += n
            by_status[status] += n
            by_scope[scope] += n
        entities = Counter(e.kind.value for e in self.store.all_entities())
        model = self.semantic.embedder.model_name if self.semantic is not None else "none"
        return Stats(
            total=sum(counts.values()),
            by_category=dict(by_category),
            by_status=dict(by_status),
            by_scope=dict(by_scope),
            entities=dict(entities),
            pending_embeddings=len(self.store.pending_embeddings(1_000_000)),
            data_dir=str(self.data_dir),
            model=model,
        )

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
    ) -> RecallResult:
        """The memories most relevant to ``query``; nothing when nothing is relevant."""
        if not isinstance(query, str):
            raise InvalidInputError("The query must be text.")
        limit = self._recall_limit if limit is None else limit
        if not 1 <= limit <= 200:
            raise InvalidInputError("limit must be between 1 and 200.")
        try:
            chosen = plan if isinstance(plan, Plan) else get_plan(plan or self._plan.name)
        except KeyError as exc:
            raise InvalidInputError(str(exc.args[0])) from None
        project = self._own(project)
        named = self.entities_in(query, project)
        request = RecallQuery(
            text=query,
            project=project,
            limit=limit,
            categories=frozenset(parse_category(c) for c in categories) if categories else None,
            since=to_utc(since) if since is not None else None,
            history=history,
            entity_keys=tuple(e.key for e in named),
            neighbour_keys=(tuple(code_neighbours(self.code, named)) if self.code is not None else ())
            + gitlab_neighbours(self.enricher, named),
        )
        return self._recaller.recall(request, chosen)

    def get_context(
        self, target: str, *, project: str | None = None, max_tokens: int | None = None
    ) -> ContextBundle:
        """What is known about ``target`` (a ref, a file path or free text), under a token budget."""
        budget = self._context_max_tokens if max_tokens is None else max_tokens
        return self._context.get_context(target, project=self._own(project), max_tokens=budget)

    def boot_context(self, *, project: str | None = None, max_tokens: int | None = None) -> ContextBundle:
        """What an agent should know at the start of a session: directives and
        preferences (this project's and global), open blockers, recent decisions."""
        budget = self._context_max_tokens if max_tokens is None else max_tokens
        return self._context.boot_context(project=self._own(project), max_tokens=budget)

    # -- the embedding index --------------------------------------------------------

    def embed_pending(self, progress: Progress | None = None) -> int:
        """Embed memories written since the model last ran; returns how many."""
        return self.semantic.embed_pending(progress) if self.semantic is not None else 0

    def reindex(self, progress: Progress | None = None) -> int:
        """Re-embed every memory with the configured model (after changing it)."""
        if self.semantic is None:
            raise InvalidInputError("This store has no embedding model configured.")
        embedder = self.semantic.embedder
        with self._write_lock:
            self.store.clear_embeddings(embedder.dimension)
            self.store.set_meta("embedding_model", embedder.model_name)
            self.store.set_meta("embedding_dimension", str(embedder.dimension))
            self.semantic.reset()
            return self.semantic.embed_pending(progress)
