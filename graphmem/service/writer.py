"""The one door for writing memories: ``MemoryWriter``.

Every service code path that writes a memory, its entities or its links -- remember,
edit, the lifecycle verbs, bootstrap's facts and commit events, import, session ingest,
``enrich``'s refs -- calls this object, and only this object calls the store's write
methods (``tests/unit/test_architecture.py`` fails otherwise). So each of these happens
here, once:

- redaction: the store is wrapped by ``service/redacting.py`` (``guard_store``) first
  thing, and ``remember``/``edit`` redact before they derive a hash or read entities;
- validation of the text, category, scope and trust (``service/inputs.py``);
- the content hash (``core.dedup.memory_hash``) of a text written or rewritten here;
- ids and keys: ``core.keys`` (``memory_id``, ``file_key``, ``person_key``);
- the write lock (``lock``, re-entrant: a caller holding it may call any method);
- the entities a memory's text names (``Mentions``) and the session chain (``NEXT``);
- the semantic index's bookkeeping after a write (``added``, ``status_changed``,
  ``text_changed``, ``removed``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime

from graphmem.core.dedup import candidate_query, is_near_duplicate, memory_hash, similarity
from graphmem.core.keys import memory_id as new_memory_id
from graphmem.core.models import (
    SUPERSEDABLE,
    Category,
    Entity,
    Link,
    LinkKind,
    MemoryRecord,
    Scope,
    Status,
    Trust,
)
from graphmem.core.ports import GraphStore, TextMatch, Vector, Visibility
from graphmem.core.redaction import redact
from graphmem.core.text import clean_fts_query, validate_text
from graphmem.core.timeparse import to_utc, utc_now
from graphmem.core.trust import looks_like_injection
from graphmem.errors import ConflictError, InvalidInputError
from graphmem.service.inputs import parse_category, parse_memory_id, parse_scope, parse_trust, unknown_memory
from graphmem.service.mentions import Mentions
from graphmem.service.redacting import guard_store
from graphmem.service.results import RememberResult
from graphmem.service.semantic import SemanticIndex

# Lexical candidates compared with a new memory for near-duplicates / same subject.
DEDUP_CANDIDATES = 8


class MemoryWriter:
    """Writes memories, their entities and links; keeps the semantic index in step."""

    def __init__(
        self,
        store: GraphStore,
        semantic: SemanticIndex | None,
        mentions: Mentions,
        *,
        clock: Callable[[], datetime] = utc_now,
        near_duplicate: float = 0.35,
        same_subject: float = 0.5,
    ) -> None:
        store = guard_store(store)  # every write from here on passes redaction
        self.store = store
        self.semantic = semantic
        self.mentions = mentions
        self.clock = clock
        self.lock = threading.RLock()
        self._near_duplicate = near_duplicate
        self._same_subject = same_subject
        self._session_tail: dict[str, str] = {}

    def get(self, memory_id: str) -> MemoryRecord:
        """The memory ``memory_id`` names (see ``parse_memory_id``), or ``No memory mem_x``.

        Every verb goes on with the returned record's ``id``, never the id as given.
        """
        wanted = parse_memory_id(memory_id)
        found = self.store.get_memories([wanted])
        if wanted not in found:
            raise unknown_memory(wanted)
        return found[wanted]

    # -- one memory -------------------------------------------------------------------

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
        """Store a memory in ``project`` (as the caller resolved it), or reinforce the one it repeats.

        See ``MemoryService.remember``."""
        text = validate_text(text)
        redaction = redact(text)  # secrets never reach the store
        text = validate_text(redaction.text)
        trust = parse_trust(trust)
        if source != "user" and looks_like_injection(text):
            trust = Trust.LOW  # an agent's or a session's text that tries to instruct the model
        category = parse_category(category)
        scope = _default_scope(category, project) if scope is None else parse_scope(scope)
        if scope is Scope.PROJECT and not project:
            raise InvalidInputError(
                "Scope 'project' needs a project: run inside a git repository or pass --project PATH."
            )
        owner = project if scope is Scope.PROJECT else None
        now = self.clock()
        when = to_utc(occurred_at) if occurred_at is not None else now
        digest = memory_hash(scope, owner, text)
        with self.lock:
            old = self.get(supersedes) if supersedes else None
            for existing in self.store.find_by_hash(digest):
                if existing.status is not Status.SUPERSEDED or (old is not None and existing.id == old.id):
                    # an archived one comes back
                    return replace(self._reinforce(existing, now), redacted=redaction.count)
            similar = self._similar(text, Visibility(owner, frozenset({Status.ACTIVE})))
            if old is None:
                for candidate, _ in similar:
                    if candidate.category is category and is_near_duplicate(
                        text, candidate.text, self._near_duplicate
                    ):
                        repeated = self.store.get_memories([candidate.id]).get(candidate.id)
                        if repeated is not None:
                            return replace(self._reinforce(repeated, now), redacted=redaction.count)
            entities = self.mentions.entities_in(text, project)
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
            if old is not None:
                replaced = [old]
            else:
                same = [other.id for other in self._same_subject_as(record, entities, similar)]
                replaced = list(self.store.get_memories(same).values())
            with self.store.transaction():  # one commit for all of it: acknowledged = durable
                self.store.add_memories([record])
                if entities:
                    self.store.upsert_entities(entities)
                    self.store.link_about([(record.id, e) for e in entities])
                if tail:
                    self.store.add_next([(tail, record.id)])
                for older in replaced:
                    self.supersede(record, older, now)
            if session:
                self._session_tail[session] = record.id
        if self.semantic is not None:
            self.semantic.added()
        return RememberResult(
            record,
            True,
            superseded=tuple(p.id for p in replaced),
            entities=tuple(entities),
            redacted=redaction.count,
        )

    def _similar(self, text: str, visibility: Visibility) -> list[tuple[TextMatch, float]]:
        """Active memories that share words with ``text``, most similar first: their texts come
        with the full-text search's hits, so no record is read."""
        matches = self.store.text_matches(
            clean_fts_query(candidate_query(text)), visibility, DEDUP_CANDIDATES
        )
        scored = [(match, similarity(text, match.text)) for match in matches]
        return sorted(scored, key=lambda pair: (-pair[1], pair[0].id))

    def _same_subject_as(
        self, record: MemoryRecord, entities: Sequence[Entity], similar: Sequence[tuple[TextMatch, float]]
    ) -> list[TextMatch]:
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
        status = Status.ACTIVE if existing.status is Status.ARCHIVED else existing.status
        changes: dict[str, object] = {"reinforced": existing.reinforced + 1, "updated_at": now}
        if status is not existing.status:
            changes["status"] = status
        self.change(existing.id, changes)
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
        """Change a memory's text and/or category; new text is read for entities in ``project``
        (else the memory's own). See ``MemoryService.edit``."""
        if text is None and category is None:
            raise InvalidInputError("Nothing to change: give new text and/or --category.")
        new_category = parse_category(category) if category is not None else None
        new_text = validate_text(redact(text).text) if text is not None else None
        with self.lock:
            record = self.get(memory_id)
            memory_id = record.id  # as stored: the id given may carry whitespace
            now = self.clock()
            if new_text is not None and new_text != record.text:
                entities = self.mentions.entities_in(new_text, project or record.project)
                self.rewrite(record, new_text, updated_at=now, entities=entities)
            changes: dict[str, object] = {"updated_at": now}
            if new_category is not None:
                changes["category"] = new_category
            self.change(memory_id, changes)
            return self.get(memory_id)

    def rewrite(
        self, record: MemoryRecord, text: str, *, updated_at: datetime, entities: Sequence[Entity]
    ) -> None:
        """Give ``record`` new text (hashed here) about ``entities``; its vector is stale till re-embedded."""
        if self.semantic is not None:
            self.semantic.will_change([record.id])
        with self.lock:
            self.store.replace_text(
                record.id,
                text=text,
                content_hash=memory_hash(record.scope, record.project, text),
                updated_at=updated_at,
                entities=entities,
            )
        if self.semantic is not None:
            self.semantic.text_changed(record.id)

    def change(self, memory_id: str, changes: Mapping[str, object]) -> None:
        """Change fields of a memory (``status``, ``category``, times, ``reinforced``, ``trust``)."""
        if self.semantic is not None and ("status" in changes or "project" in changes):
            self.semantic.will_change([memory_id])
        with self.lock:
            self.store.update_memory(memory_id, changes)
        status = changes.get("status")
        if self.semantic is not None and isinstance(status, Status):
            self.semantic.status_changed(memory_id, status)

    def set_status(
        self, memory_id: str, status: Status, *, allowed_from: Iterable[Status], clear_valid_to: bool = False
    ) -> MemoryRecord:
        """Move a memory to ``status`` from one of ``allowed_from`` (a ``ConflictError`` otherwise)."""
        with self.lock:
            record = self.get(memory_id)
            memory_id = record.id
            if record.status is status:
                return record
            if record.status not in set(allowed_from):
                raise ConflictError(
                    f"Memory {memory_id} is {record.status.value}; cannot make it {status.value}."
                )
            changes: dict[str, object] = {"status": status, "updated_at": self.clock()}
            if clear_valid_to:
                changes["valid_to"] = None
            self.change(memory_id, changes)
            return self.get(memory_id)

    def supersede(self, newer: MemoryRecord, older: MemoryRecord, now: datetime) -> None:
        """``newer`` replaces ``older``: close it and link the two."""
        with self.lock:
            self.change(
                older.id, {"status": Status.SUPERSEDED, "valid_to": newer.valid_from, "updated_at": now}
            )
            self.store.add_links([Link(newer.id, older.id, LinkKind.SUPERSEDES, now)])

    def delete(self, memory_id: str) -> MemoryRecord:
        """Delete a memory and its edges for good."""
        with self.lock:
            record = self.get(memory_id)
            if self.semantic is not None:
                self.semantic.will_change([record.id])
            self.store.delete_memory(record.id)
        if self.semantic is not None:
            self.semantic.removed(record.id)
        return record

    # -- links and entities --------------------------------------------------------------

    def relate(self, links: Sequence[Link]) -> None:
        """Add links between memories (``RELATES``: supersedes, contradicts, extends, relates to)."""
        if links:
            with self.lock:
                self.store.add_links(links)

    def unrelate(self, source: str, target: str, kind: LinkKind) -> bool:
        """Remove one link; False when there was none."""
        with self.lock:
            return self.store.remove_link(source, target, kind)

    def chain(self, pairs: Sequence[tuple[str, str]]) -> None:
        """``NEXT`` edges between the turns of a session (an import's)."""
        with self.lock:
            self.store.add_next(pairs)

    def add_entities(self, entities: Sequence[Entity]) -> None:
        """Store entities (new ones, or new names and titles of known ones)."""
        if entities:
            with self.lock:
                self.store.upsert_entities(entities)

    def attach(self, memory_id: str, entities: Sequence[Entity]) -> None:
        """Store ``entities`` and make the memory about them."""
        if entities:
            with self.lock:
                self.store.upsert_entities(entities)
                self.store.link_about([(memory_id, e) for e in entities])

    def link_entities(self, pairs: Sequence[tuple[str, Entity]], *, store_entities: bool = True) -> None:
        """Make each memory about its entity; ``store_entities=False`` when they are stored already
        (a code graph's symbols)."""
        if not pairs:
            return
        with self.lock:
            if store_entities:
                self.store.upsert_entities(list({e.key: e for _, e in pairs}.values()))
            self.store.link_about(pairs)

    # -- many memories ---------------------------------------------------------------------

    def add(
        self,
        records: Sequence[MemoryRecord],
        *,
        about: Sequence[tuple[str, Entity]] = (),
        vectors: Vector | None = None,
    ) -> None:
        """Store new memories as they are (bootstrap's facts and commits, an import's batch, with
        their ``vectors`` when they have them), and what each is ``about``."""
        if not records:
            return
        ids = [record.id for record in records]
        if self.semantic is not None and vectors is not None:
            self.semantic.will_change(ids)
        with self.lock:
            self.store.add_memories(records, vectors)
            self.link_entities(about)
        if self.semantic is not None:
            if vectors is not None:
                self.semantic.stored(ids, vectors)
            else:
                self.semantic.added()

    def set_vectors(self, ids: Sequence[str], vectors: Vector) -> None:
        """Store vectors computed by the caller (an import embeds what it writes)."""
        if self.semantic is not None:
            self.semantic.will_change(ids)
        with self.lock:
            self.store.set_embeddings(ids, vectors)
        if self.semantic is not None:
            self.semantic.stored(ids, vectors)

    def reindex(self, progress: Callable[[int], None] | None = None) -> int:
        """Forget every vector and embed every memory with the configured model."""
        if self.semantic is None:
            raise InvalidInputError("This store has no embedding model configured.")
        embedder = self.semantic.embedder
        with self.lock:
            self.store.clear_embeddings(embedder.dimension)
            self.store.set_meta("embedding_model", embedder.model_name)
            self.store.set_meta("embedding_dimension", str(embedder.dimension))
            self.semantic.reset()
            return self.semantic.embed_pending(progress)


def _default_scope(category: Category, project: str | None) -> Scope:
    if project is None or category is Category.PREFERENCE:
        return Scope.GLOBAL
    return Scope.PROJECT
