"""What a ``remember`` means: ``Rememberer``.

A text given to ``remember`` is decided here, once, whatever path calls it (the verb, an
ingested session, ``widen``):

- what it may be: validated and redacted before anything is derived from it; its category,
  scope and trust read from the call, the text and who wrote it (``core/provenance.py``: an
  agent's memory stays in its project, a proposal waits for a person);
- the memory again: the same content hash, or a near-duplicate wording
  (``service/subjects.py``), reinforces that memory, an audited ``reinforce`` event of who
  counted it and the count before and after (an archived one comes back when whoever
  remembers it may replace it); a person's memory is reinforced only by a person, never by an
  agent's repeat of it (nothing is written: it restores information, never authority); a
  person who asks by name for a scope others see shares their private memory's words as a new
  memory (``_shares``);
- a new memory (its record built by ``new_record``) after its session's last turn
  (``NEXT``), replacing the memory ``supersedes`` names, or else those on the same subject
  that its author may replace, unless others see them.

It writes nothing itself: ``MemoryWriter`` (``writer.py``) applies what is decided
(``add_remembered``, ``reinforce``), and the writer's lock is held for the whole decision,
so that one text written twice at once is one memory.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from graphmem.core.branches import parse_branch
from graphmem.core.dedup import memory_hash
from graphmem.core.events import Cause, actor_of
from graphmem.core.keys import memory_id as new_memory_id
from graphmem.core.models import SUPERSEDABLE, Category, MemoryRecord, Scope, Status, Trust
from graphmem.core.ports import Visibility
from graphmem.core.provenance import (
    PERSON_SOURCE,
    Origin,
    acts_as_person,
    is_persons,
    label,
    may_replace,
    origin_of,
    proposes,
)
from graphmem.core.redaction import redact
from graphmem.core.text import MAX_ORIGIN_CHARS, MAX_SESSION_CHARS, validate_label, validate_text
from graphmem.core.timeparse import to_utc
from graphmem.errors import InvalidInputError, NotAllowedError
from graphmem.service.inputs import default_scope, parse_category, parse_scope, parse_trust
from graphmem.service.mentions import names_code
from graphmem.service.results import RememberResult, Supersession
from graphmem.service.stores import Stores
from graphmem.service.subjects import near_duplicate_of, same_subject_as, similar_memories
from graphmem.service.writer import MemoryWriter

# Why an agent's memory without a project is refused: it would be global, in every project's recall.
AGENT_WITHOUT_PROJECT = (
    "An agent's memory belongs to the project it works on, and this call names no project (a "
    "directory outside any git repository is none): pass project, the absolute path of the "
    "repository. Only the user makes a memory global (`graphmem widen ID`)."
)


class Rememberer:
    """Decides what each ``remember`` is (see the module doc) and has ``writer`` apply it;
    ``remember`` is documented where ``graphmem.api.Memory`` declares it. The thresholds are
    ``[dedup]``'s (``near_duplicate``, ``same_subject``); ``stores``, what the answer says a
    memory is about is read from (``Stores.shown_about``; the writer's store alone without)."""

    def __init__(
        self,
        writer: MemoryWriter,
        *,
        stores: Stores | None = None,
        near_duplicate: float = 0.35,
        same_subject: float = 0.5,
    ) -> None:
        self._writer = writer
        self._store = writer.store  # the writer's: read behind the redaction door
        self._stores = stores if stores is not None else Stores(writer.store)
        self._near_duplicate = near_duplicate
        self._same_subject = same_subject
        self._session_tail: dict[str, str] = {}  # each session's last turn remembered here

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
        expires_at: datetime | None = None,
        branch: str | None = None,
    ) -> RememberResult:
        writer, store = self._writer, self._store
        text = validate_text(text)
        redaction = redact(text)  # secrets never reach the store
        text = validate_text(redaction.text)
        session = validate_label(session, what="session", most=MAX_SESSION_CHARS)
        origin = validate_label(origin, what="origin", most=MAX_ORIGIN_CHARS)
        trust = parse_trust(trust)
        if trust is Trust.CONFIRMED:
            raise InvalidInputError("trust 'confirmed' is a person's: `graphmem confirm ID` sets it.")
        if source != PERSON_SOURCE:
            # Loaded only here: core/trust.py compiles some 50 patterns (about 14 ms of a cold
            # start), which a person's remember, a recall or a list never use.
            from graphmem.core.trust import looks_like_injection

            if looks_like_injection(text):
                trust = Trust.LOW  # an agent's or a session's text that tries to instruct the model
        category = parse_category(category)
        named = None  # what the text names, read here when the default scope depends on it
        asked_scope = scope is not None
        if scope is None:
            scope = default_scope(category, project)
            if scope is Scope.GLOBAL and project:
                named = writer.mentions.named_in(text, project)
                if names_code(*named):  # "prefer X in lib/response.js": about this project's code
                    scope = Scope.PROJECT
        else:
            scope = parse_scope(scope)
        if origin_of(source) is Origin.AGENT:
            if not project:
                raise InvalidInputError(AGENT_WITHOUT_PROJECT)
            scope = Scope.PROJECT  # an agent's writes stay in its project unless a person widens them
        if scope is Scope.PROJECT and not project:
            raise InvalidInputError(
                "Scope 'project' needs a project: run inside a git repository or pass --project PATH."
            )
        owner = project if scope is Scope.PROJECT else None
        seen = Visibility(owner, frozenset({Status.ACTIVE}), branch=parse_branch(branch) if owner else None)
        now = writer.clock()
        when = min(to_utc(occurred_at), now) if occurred_at is not None else now  # never in the future
        expires = to_utc(expires_at) if expires_at is not None else None  # checked before anything is stored
        digest = memory_hash(scope, owner, text)
        with writer.lock:
            old = writer.get(supersedes) if supersedes else None
            if old is not None and not may_replace(source, old):
                raise NotAllowedError(
                    f"{old.id} is a person's {old.category.value} (from {label(old)}): only a person "
                    "can replace it. Remember yours without supersedes; the user sees it in "
                    "`graphmem review` and decides."
                )
            for existing in store.find_by_hash(digest):
                if not seen.shows_branch(existing.branch):
                    continue  # another branch's: this one has its own
                if existing.status is not Status.SUPERSEDED or (old is not None and existing.id == old.id):
                    # an archived one comes back
                    reinforced = self._reinforce(existing, now, actor_of(source), project)
                    return replace(reinforced, redacted=redaction.count)
            # A memory that may replace one on its subject is compared with any that shares
            # its words; any other, only with those that may be its near-duplicates.
            repeats_only = category not in SUPERSEDABLE
            similar = similar_memories(store, text, seen, repeats_only=repeats_only)
            repeated = (
                None if old else near_duplicate_of(store, text, category, similar, self._near_duplicate)
            )
            if repeated is not None and self._shares(source, asked_scope, scope, repeated):
                repeated = None  # a memory of its own for the team to see
            if repeated is not None:
                reinforced = self._reinforce(repeated, now, actor_of(source), project)
                return replace(reinforced, redacted=redaction.count)
            entities = named[0] if named is not None else writer.mentions.entities_in(text, project)
            record = replace(
                new_record(text, category, scope, owner, now=now),
                created_at=when,
                valid_from=when,
                status=Status.PROPOSED if proposes(source, category) else Status.ACTIVE,
                source=source,
                trust=trust,
                origin=origin,
                session=session,
                expires_at=expires,
                branch=seen.branch,
            )
            # The session's last turn, looked up before this one becomes the last.
            tail = (self._session_tail.get(session) or store.last_in_session(session)) if session else None
            if old is not None:
                replaced = [old]
            else:
                same = [other.id for other in same_subject_as(record, similar, self._same_subject)]
                shared = store.shared_memories(same) if scope is Scope.GLOBAL else set()  # keep_in_sight
                replaced = [m for m in store.get_memories(same).values() if may_replace(source, m)]
                replaced = [m for m in replaced if m.id not in shared]  # never hide what others see
            why = Cause(actor_of(source), f"replaced by {record.id}, a newer {category.value} on the subject")
            events = writer.add_remembered(record, entities, follows=tail, replaces=replaced, cause=why)
            if session:
                self._session_tail[session] = record.id
        supersessions = [
            Supersession(older.id, older.text, event.id, automatic=old is None)
            for older, event in zip(replaced, events, strict=True)
        ]
        return RememberResult(
            record,
            True,
            superseded=tuple(p.id for p in replaced),
            entities=tuple(entities),
            redacted=redaction.count,
            supersessions=tuple(supersessions),
            private=record.scope not in (others := store.shared_scopes()) and bool(others),
        )

    def _shares(self, source: str, asked_scope: bool, scope: Scope, repeated: MemoryRecord) -> bool:
        """Whether a person, asking for ``scope`` by name, shares with others what only they see:
        on a team's store their own global memory said again in the project's scope. It is a
        memory of its own (the team sees it), and theirs stays as it is, in every project; a
        default scope, an agent's or a session's words publish nothing of a memory kept private."""
        return (
            source == PERSON_SOURCE
            and asked_scope
            and scope in self._store.shared_scopes()
            and not self._store.shared_memories([repeated.id])
        )

    def _reinforce(
        self, existing: MemoryRecord, now: datetime, actor: str, project: str | None
    ) -> RememberResult:
        """``existing`` remembered again by ``actor`` in ``project``: counted once more (an event
        ``undo`` reverses), and an archived one comes back when ``actor`` may replace it (a
        person's: by a person). A person's memory said again by anyone else (an agent, a session's
        summary) is left as it is, with no event: only the person's own repeat confirms it
        (``graphmem review``'s "never repeated") or moves its ``updated_at``. What it is about, as
        the caller in ``project`` is shown it."""
        if acts_as_person(actor) or not is_persons(existing):
            back = existing.status is Status.ARCHIVED and may_replace(actor, existing)
            cause = Cause(actor, "remembered again")
            updated = self._writer.reinforce(existing, cause, at=now, restore=back)
        else:
            updated = existing  # memory restores information, never authority
        entities = tuple(self._stores.shown_about([existing.id], project).get(existing.id, []))
        private = bool(self._store.shared_scopes()) and not self._store.shared_memories([existing.id])
        return RememberResult(updated, False, duplicate_of=existing.id, entities=entities, private=private)


def new_record(
    text: str, category: Category, scope: Scope, project: str | None, *, now: datetime
) -> MemoryRecord:
    """A memory written ``now``: a new id, the content hash of its text where it is kept, created
    and valid from now; the rest of ``MemoryRecord``'s fields at their defaults, for the caller
    to ``replace``. ``remember`` stores one, and so does a proposed change of a person's memory
    (``service/proposals.py``): nothing of an older memory carries over."""
    content_hash = memory_hash(scope, project, text)
    return MemoryRecord(
        new_memory_id(), text, category, scope, project,
        created_at=now, updated_at=now, valid_from=now, content_hash=content_hash,
    )  # fmt: skip
