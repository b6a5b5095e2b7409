"""What the OpenCode plugin adds to a session's model calls, and into compaction.

Providers cache prompts by prefix, so what graphmem adds must never change bytes that an
earlier request already sent. Two parts:

- ``Injector.boot_block``: the session's boot context (directives and preferences, open
  blockers, recent decisions) for the system prompt, picked on the session's first call
  and kept, byte for byte, until the session is compacted (``compaction`` forgets it).
- ``Injector.turn``: what recall finds for the newest user message and the files in play,
  above recall's relevance floor, for that message only. The block applied to a message
  (keyed by its id and a hash of its text) is kept and given back unchanged on every later
  request, so earlier turns read exactly as they were sent; an edited message has a new
  hash, hence a new block. A memory already shown by the boot block or by a block of a
  message still in the conversation is not shown again unless its text changed.

``Injector.inject`` is the older single block (boot and recall together, for the system
prompt), kept for plugins installed before the split. ``Injector.compaction`` gives the
conventions, decisions and open blockers that must survive OpenCode's compaction.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, TypeVar

from graphmem.core import injection
from graphmem.core.injection import Prompt, Section
from graphmem.core.keys import shown_key
from graphmem.core.models import Category, MemoryRecord, Status
from graphmem.core.provenance import Origin, is_convention, origin_of, record_origin
from graphmem.core.text import clip, content_hash, estimate_tokens
from graphmem.core.timeparse import utc_now
from graphmem.core.trust import looks_like_injection
from graphmem.errors import InvalidInputError
from graphmem.service.results import RecallResult

log = logging.getLogger(__name__)

# The whole block; about a page of a model's context, a few % of a small window.
INJECT_MAX_TOKENS = 1200
# What recall's part of the block may use at most; the rest goes to the boot context.
RECALL_MAX_TOKENS = 500
# The defaults of [plugin] boot_max_tokens and turn_max_tokens: a first turn adds at most 1,200.
BOOT_MAX_TOKENS = 700
TURN_MAX_TOKENS = 500
# User messages of a session whose block is kept (a session rarely has more).
TURN_CACHE_MESSAGES = 2000
RECALL_LIMIT = 6
# A past session's summary (its title, the files it touched) says what that session was about,
# not what this message asks, and shares its words: at most this many in a block, after the
# memories recall found, never the session's own. Recall is asked for more to make up for them.
MAX_SUMMARIES = 1
RECALL_FETCH = 4 * RECALL_LIMIT
COMPACTION_MAX_TOKENS = 1500
# The user's message as a recall query: its start says what it is about; a pasted log
# would only slow the search down.
QUERY_MAX_CHARS = 1_000
MAX_FILES = 20
# Sessions whose boot context is kept; older ones are picked again when they come back.
BOOT_CACHE_SESSIONS = 256
# System prompts kept searchable (normalizing a 30 kB prompt costs ~2 ms; a session sends the same one).
PROMPT_CACHE_SIZE = 32
PROJECT_CACHE_DIRS = 256
CONVENTIONS = "Conventions (directives and preferences a person made)"
CONVENTION_CATEGORIES = (Category.DIRECTIVE, Category.PREFERENCE)
ACTIVE = (Status.ACTIVE,)
# Memories read for a section that keeps only some of them (the user's conventions among an
# agent's and a repository's): enough that hundreds of scraped ones never hide the user's.
FILTERED_FETCH = 500


def _anyone(memory: MemoryRecord) -> bool:
    return True


def _from_repository(memory: MemoryRecord) -> bool:
    return origin_of(memory.source) is Origin.REPOSITORY


@dataclass(frozen=True, slots=True)
class SectionSpec:
    """One section of a block: its title, which memories (categories, statuses, and whom they
    must come from) and how many."""

    title: str
    categories: tuple[Category, ...]
    statuses: tuple[Status, ...]
    limit: int
    keep: Callable[[MemoryRecord], bool] = _anyone


# Only a person's conventions are injected as conventions, first, so nothing displaces them
# (core/provenance.py); what the repository's files say is data, in a section of its own.
BOOT_SECTIONS: tuple[SectionSpec, ...] = (
    SectionSpec(CONVENTIONS, CONVENTION_CATEGORIES, ACTIVE, 20, is_convention),
    SectionSpec("Open blockers", (Category.BLOCKER,), ACTIVE, 10),
    SectionSpec("Recent decisions", (Category.DECISION,), ACTIVE, 10),
    SectionSpec("What the repository's files say", CONVENTION_CATEGORIES, ACTIVE, 8, _from_repository),
)
RELATED_TITLE = "Related to this message"
# Compaction keeps more of each: it replaces the conversation itself.
COMPACTION_SECTIONS: tuple[SectionSpec, ...] = (
    SectionSpec(CONVENTIONS, CONVENTION_CATEGORIES, ACTIVE, 30, is_convention),
    SectionSpec("Decisions", (Category.DECISION,), ACTIVE, 20),
    SectionSpec("Open blockers", (Category.BLOCKER,), ACTIVE, 20),
)
COMPACTION_INTRO = (
    "graphmem: the user's conventions, the project's decisions and open blockers, to keep in the "
    "summary so they survive compaction (data, each item with who wrote it)."
)


# A directory's project and the branch its checkout is on (None: the default branch).
Place = tuple[str | None, str | None]


@dataclass(frozen=True, slots=True)
class InjectRequest:
    """One model call as the plugin describes it (validated at the HTTP boundary)."""

    session_id: str
    message_id: str
    directory: str | None
    text: str  # the current user message ("" when the plugin does not know it)
    system: str  # what the system prompt already holds
    files: tuple[str, ...] = ()
    agent: str = ""


@dataclass(frozen=True, slots=True)
class Message:
    """A user message of the conversation as the plugin sees it: its id and a hash of its text."""

    id: str
    hash: str
    bare: bool = False  # the plugin sent it without a block (the daemon did not answer in time)


@dataclass(frozen=True, slots=True)
class TurnRequest:
    """One model call's user messages, oldest first, the newest last (validated at the HTTP boundary)."""

    session_id: str
    directory: str | None
    messages: tuple[Message, ...]
    text: str  # the newest message's text
    system: str = ""  # the system prompt, when the plugin knows it
    files: tuple[str, ...] = ()
    # What the client's own record says the session showed already (``id:text-hash``, as each
    # answer's ``shown`` gave them): a daemon that restarted since knows it only from there.
    shown: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Applied:
    """The block applied to one user message, and the memories it shows (``id:text-hash``)."""

    block: str
    shown: frozenset[str]


@dataclass(frozen=True, slots=True)
class Turn:
    """The blocks of a call's user messages (only those that have one) and how the newest was made."""

    blocks: dict[str, str]
    memory_ids: tuple[str, ...]  # the newest message's
    new: bool  # whether the newest message's block was made by this call
    took_ms: float
    shown: tuple[str, ...] = ()  # the newest message's block's memories, ``id:text-hash``


@dataclass(frozen=True, slots=True)
class Boot:
    """A session's boot sections, with their lines rendered once."""

    sections: tuple[Section, ...]
    lines: dict[str, str]


@dataclass(frozen=True, slots=True)
class Injection:
    """The block (or "") and how it was made."""

    block: str
    memory_ids: tuple[str, ...]
    boot: int  # memories from the boot context
    related: int  # memories from recall
    took_ms: float
    shown: tuple[str, ...] = ()  # the block's memories, ``id:text-hash``


class Memories(Protocol):
    """What the injector reads: ``MemoryService``'s ``list`` and ``recall``, with the arguments it
    passes them."""

    def list(
        self,
        *,
        project: str | None = None,
        categories: Iterable[str | Category] | None = None,
        statuses: Iterable[Status] | None = None,
        limit: int = 50,
        branch: str | None = None,
        all_branches: bool = True,
    ) -> list[MemoryRecord]: ...

    def recall(
        self, query: str, *, project: str | None = None, limit: int | None = None, branch: str | None = None
    ) -> RecallResult: ...


Key = TypeVar("Key")
Value = TypeVar("Value")


def _recent(cache: OrderedDict[Key, Value], key: Key) -> Value | None:
    """What ``cache`` holds under ``key``, now its most recently used entry; None when nothing."""
    found = cache.get(key)
    if found is not None:
        cache.move_to_end(key)
    return found


def _keep(cache: OrderedDict[Key, Value], key: Key, value: Value, size: int) -> Value:
    """Keep ``value`` under ``key`` unless a value is there already (a concurrent first call
    wins), as the most recently used entry, dropping the least recently used beyond ``size``;
    the value kept. The caller holds the injector's lock."""
    kept = cache.setdefault(key, value)
    cache.move_to_end(key)
    _trim(cache, size)
    return kept


def _trim(cache: OrderedDict[Key, Value], size: int) -> None:
    """Drop the least recently used entries of ``cache`` beyond ``size``. The caller holds the lock."""
    while len(cache) > size:
        cache.popitem(last=False)


class Injector:
    """Builds ``<memory>`` blocks for the plugin; thread-safe."""

    def __init__(
        self,
        memory: Memories,
        resolve_project: Callable[[str | None], str | None],
        *,
        suspicious: Callable[[str], bool] = looks_like_injection,
        clock: Callable[[], datetime] = utc_now,
        boot_max_tokens: int = BOOT_MAX_TOKENS,
        turn_max_tokens: int = TURN_MAX_TOKENS,
        resolve_branch: Callable[[str], str | None] = lambda directory: None,
    ) -> None:
        self._memory = memory
        self.boot_max_tokens = boot_max_tokens
        self.turn_max_tokens = turn_max_tokens
        self._resolve = resolve_project
        self._branch_of = resolve_branch  # read each call: a checkout changes branch
        self._suspicious = suspicious
        self._now = clock
        self._lock = threading.Lock()
        self._boot: OrderedDict[tuple[str, Place], Boot] = OrderedDict()
        self._prompts: OrderedDict[str, Prompt] = OrderedDict()
        self._projects: OrderedDict[str, str | None] = OrderedDict()
        self._boot_blocks: OrderedDict[tuple[str, Place], Applied] = OrderedDict()
        self._turns: OrderedDict[str, OrderedDict[tuple[str, str], Applied]] = OrderedDict()

    def project(self, directory: str | None) -> str | None:
        """The project of a directory (its git toplevel), cached: a lookup runs git."""
        if not directory:
            return None
        with self._lock:
            if directory in self._projects:
                self._projects.move_to_end(directory)
                return self._projects[directory]
        project = self._resolve(directory)
        with self._lock:
            return _keep(self._projects, directory, project, PROJECT_CACHE_DIRS)

    def where(self, directory: str | None) -> Place:
        """The project of a directory and the branch its checkout is on (None: the default)."""
        project = self.project(directory)
        return project, (self._branch_of(directory) if project and directory else None)

    def _sections(self, specs: Sequence[SectionSpec], place: Place) -> tuple[Section, ...]:
        project, branch = place
        sections: list[Section] = []
        for spec in specs:
            fetch = spec.limit if spec.keep is _anyone else FILTERED_FETCH
            found = self._memory.list(
                project=project, categories=spec.categories, statuses=spec.statuses, limit=fetch,
                branch=branch, all_branches=False,
            )  # fmt: skip
            sections.append(Section(spec.title, tuple([m for m in found if spec.keep(m)][: spec.limit])))
        return tuple(sections)

    def boot(self, session_id: str, place: Place) -> Boot:
        """The session's boot sections, picked on its first call and kept for the session."""
        key = (session_id, place)
        with self._lock:
            cached = _recent(self._boot, key)
            if cached is not None:
                return cached
        sections = self._sections(BOOT_SECTIONS, place)
        now = self._now()
        memories = {m.id: m for s in sections for m in s.memories}
        lines = {
            i: injection.line(m, now=now, suspicious=self._suspicious(m.text)) for i, m in memories.items()
        }
        with self._lock:
            return _keep(self._boot, key, Boot(sections, lines), BOOT_CACHE_SESSIONS)

    def prompt(self, system: str) -> Prompt:
        """What a system prompt holds, cached: a session sends the same prompt call after call."""
        with self._lock:
            found = _recent(self._prompts, system)
            if found is not None:
                return found
        prompt = Prompt.of(system)
        with self._lock:
            return _keep(self._prompts, system, prompt, PROMPT_CACHE_SIZE)

    def related(self, request: InjectRequest | TurnRequest, place: Place) -> list[MemoryRecord]:
        """What recall finds for the message and the files in play (nothing below the floor)."""
        query = " ".join([clip(request.text.strip(), QUERY_MAX_CHARS), *request.files[:MAX_FILES]]).strip()
        if not query:
            return []
        try:
            result = self._memory.recall(query, project=place[0], limit=RECALL_FETCH, branch=place[1])
        except InvalidInputError:  # e.g. a message of symbols only: nothing to look for
            return []
        # Only current memories: a blocker resolved, work done or a decision not merged (by a
        # person or by a forge rule) is no longer what the model should act on.
        found = [hit.memory for hit in result.hits if hit.memory.status is Status.ACTIVE]
        asked = [m for m in found if record_origin(m) is not Origin.SUMMARY]
        summaries = [
            m for m in found if record_origin(m) is Origin.SUMMARY and m.session != request.session_id
        ]
        return [*asked[:RECALL_LIMIT], *summaries[:MAX_SUMMARIES]]

    def inject(self, request: InjectRequest) -> Injection:
        """The block for one model call, or "" when nothing clears the floor or all is in the prompt."""
        started = time.perf_counter()
        place = self.where(request.directory)
        boot = self.boot(request.session_id, place)
        related = self.related(request, place)
        now = self._now()
        prompt = self.prompt(request.system)
        boot_ids = set(boot.lines)
        extra = tuple(m for m in related if m.id not in boot_ids)
        recall_part = injection.fit(
            [Section(RELATED_TITLE, extra)],
            prompt,
            max_tokens=RECALL_MAX_TOKENS,
            now=now,
            suspicious=self._flagged(extra),
        )
        recall_ids = {i for _, lines in recall_part for i in injection.MEMORY_ID_RE.findall("\n".join(lines))}
        boot_part = injection.fit(
            boot.sections,
            prompt,
            max_tokens=INJECT_MAX_TOKENS - _tokens(recall_part),
            now=now,
            lines=boot.lines,
        )
        fitted = boot_part + recall_part
        block = injection.render(fitted)
        ids = tuple(injection.MEMORY_ID_RE.findall(block))
        boot_count = len(ids) - len(recall_ids)
        took = (time.perf_counter() - started) * 1000
        log.debug("inject session=%s memories=%d took=%.1fms", request.session_id, len(ids), took)
        return Injection(block, ids, boot_count, len(recall_ids), round(took, 2))

    def boot_block(self, session_id: str, directory: str | None, system: str = "") -> Injection:
        """The session's boot block for the system prompt ("" when there is none), the same bytes all session.

        Picked on the session's first call (leaving out what ``system`` already holds) and kept
        until ``forget`` (compaction) or until the daemon restarts.
        """
        started = time.perf_counter()
        place = self.where(directory)
        key = (session_id, place)
        with self._lock:
            kept = _recent(self._boot_blocks, key)
        if kept is None:
            boot = self.boot(session_id, place)
            fitted = injection.fit(
                boot.sections,
                self.prompt(system),
                max_tokens=self.boot_max_tokens,
                now=self._now(),
                lines=boot.lines,
            )
            block = injection.render(fitted)
            shown = {m.id: m for s in boot.sections for m in s.memories}
            kept = Applied(block, frozenset(_key(shown[i]) for i in injection.MEMORY_ID_RE.findall(block)))
            with self._lock:
                kept = _keep(self._boot_blocks, key, kept, BOOT_CACHE_SESSIONS)
        ids = tuple(injection.MEMORY_ID_RE.findall(kept.block))
        took = round((time.perf_counter() - started) * 1000, 2)
        return Injection(kept.block, ids, len(ids), 0, took, tuple(sorted(kept.shown)))

    def turn(self, request: TurnRequest) -> Turn:
        """The blocks of the call's user messages: kept ones as they were, a new one for the newest.

        Only the newest message may get a new block, and only once (per text): an older message
        the daemon has no block for stays bare, as it was sent. The newest message's block holds
        what recall finds that the boot block, the blocks of the conversation's other messages and
        the system prompt do not show already; "" when nothing clears the floor.
        """
        started = time.perf_counter()
        if not request.messages:
            return Turn({}, (), False, 0.0)
        *older, newest = request.messages
        blocks: dict[str, str] = {}
        shown: set[str] = set(request.shown)
        with self._lock:
            kept = _recent(self._turns, request.session_id)
            if kept is None:
                kept = _keep(self._turns, request.session_id, OrderedDict(), BOOT_CACHE_SESSIONS)
            for message in request.messages:
                if message.bare:
                    kept[(message.id, message.hash)] = Applied("", frozenset())
                    kept.move_to_end((message.id, message.hash))
            for message in older:
                applied = kept.get((message.id, message.hash))
                if applied is not None and applied.block:
                    blocks[message.id] = applied.block
                    shown |= applied.shown
            done = kept.get((newest.id, newest.hash))
            _trim(kept, TURN_CACHE_MESSAGES)  # bare messages too: a client may name 500 new ones a call
        if done is None:
            done = self._new_turn(request, shown)
            with self._lock:
                kept = self._turns.setdefault(request.session_id, OrderedDict())
                done = _keep(kept, (newest.id, newest.hash), done, TURN_CACHE_MESSAGES)
            new = True
        else:
            new = False
        if done.block:
            blocks[newest.id] = done.block
        took = round((time.perf_counter() - started) * 1000, 2)
        log.debug("turn session=%s new=%s took=%.1fms", request.session_id, new, took)
        ids = tuple(injection.MEMORY_ID_RE.findall(done.block))
        return Turn(blocks, ids, new, took, tuple(sorted(done.shown)))

    def _new_turn(self, request: TurnRequest, shown: set[str]) -> Applied:
        place = self.where(request.directory)
        with self._lock:
            boot_block = self._boot_blocks.get((request.session_id, place))
        if boot_block is not None:
            shown = shown | boot_block.shown
            in_boot: set[str] = set()
        else:  # the boot block is not picked yet: leave out what it may show
            in_boot = set(self.boot(request.session_id, place).lines)
        related = [m for m in self.related(request, place) if m.id not in in_boot and _key(m) not in shown]
        fitted = injection.fit(
            [Section(RELATED_TITLE, tuple(related))],
            self.prompt(request.system),
            max_tokens=self.turn_max_tokens,
            now=self._now(),
            suspicious=self._flagged(related),
        )
        block = injection.render(fitted)
        by_id = {m.id: m for m in related}
        return Applied(block, frozenset(_key(by_id[i]) for i in injection.MEMORY_ID_RE.findall(block)))

    def compaction(self, session_id: str, directory: str | None) -> str:
        """What compaction must keep: conventions, decisions, open blockers ("" when there are none).

        The session's boot block is picked again on its next call (what matters may have changed).
        """
        self.forget(session_id)
        sections = self._sections(COMPACTION_SECTIONS, self.where(directory))
        memories = [m for s in sections for m in s.memories]
        fitted = injection.fit(
            sections,
            Prompt(frozenset(), ""),
            max_tokens=COMPACTION_MAX_TOKENS,
            now=self._now(),
            suspicious=self._flagged(memories),
        )
        block = injection.render(fitted)
        return f"{COMPACTION_INTRO}\n{block}" if block else ""

    def forget(self, session_id: str) -> None:
        """Drop a session's boot context (it is picked again on its next call)."""
        with self._lock:
            for key in [k for k in self._boot if k[0] == session_id]:
                del self._boot[key]
            for key in [k for k in self._boot_blocks if k[0] == session_id]:
                del self._boot_blocks[key]

    def _flagged(self, memories: Sequence[MemoryRecord]) -> list[str]:
        return [m.id for m in memories if self._suspicious(m.text)]


def _key(memory: MemoryRecord) -> str:
    """A memory as shown: its id and its text (a memory whose text changed may be shown again)."""
    return shown_key(memory.id, content_hash(memory.text))


def _tokens(fitted: Sequence[tuple[str, Sequence[str]]]) -> int:
    return sum(
        estimate_tokens(title) + sum(estimate_tokens(line) for line in lines) for title, lines in fitted
    )
