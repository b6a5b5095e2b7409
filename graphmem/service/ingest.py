"""Learning from finished agent sessions: read, extract, redact, remember, link.

``Ingester.run`` reads a client's sessions (the ``SessionSource`` port: OpenCode's database,
``adapters/opencode_sessions.py``; a Claude Code transcript, ``adapters/claude_code_transcripts.py``)
from the stored cursor on, and for each *finished* session (unchanged for ``idle_seconds``, or
named explicitly by the client's plugin or hook):

1. extracts what it teaches -- with the deterministic rules (``core/extraction.py``), or
   with the configured LLM extractor, falling back to the rules on any failure;
2. redacts every text (``core/redaction.py``) before it reaches the store;
3. remembers each learned item with the client's source (``opencode``, ``claude-code``: the
   user's own words; what the agent's own shell runs taught: ``source="mcp"``, an agent's),
   ``session=<session id>``,
   ``origin=<message id>`` and its trust, in the project of the session's directory,
   linked to the ``Session:<id>`` entity and to the files it names;
4. writes (or rewrites) one summary ``event`` per session with its files and refs, with the
   source ``summary:<client>``: its title is the client's (OpenCode's title agent writes it),
   the files it touched the agent's, so it is data about the session, never the user's words.

Incremental and resumable: each session's progress is kept in the store's meta
(``<source>_session:<id>``, e.g. ``opencode_session:<id>``: the ``time_updated`` ingested,
the last message ingested and the summary memory), written only once the session is stored; the run's cursor
(``opencode_cursor``) moves past a session only when it and every session before it are
done, so a crash mid-run repeats at most the session it was in, and a session still being
written is revisited by the next run. Re-ingesting a session that grew stores only what its
new messages teach. The service's write lock is held per session, never per run.

A session whose row the store cannot keep (an over-long id, a NUL, no absolute directory:
``ingest_rows.row_problem``) is skipped and counted (``sessions_skipped``, a line in ``errors``)
before anything of it is read or written, and the run goes on: it never holds the cursor, which
moves past it onto the next session it stores.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable
from contextlib import closing
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

from graphmem.core.events import Cause
from graphmem.core.keys import file_key
from graphmem.core.models import Category, Entity, EntityKind, Trust
from graphmem.core.ports import ProjectRoots, SessionExtractor, SessionReader, SessionSource
from graphmem.core.provenance import (
    AGENT_SOURCE,
    CLAUDE_CODE_SOURCE,
    CODEX_SOURCE,
    SESSION_SOURCE,
    summary_source,
)
from graphmem.core.redaction import redact
from graphmem.core.refs import find_refs
from graphmem.core.sessions import Learned, SessionRead, SessionRow, Transcript
from graphmem.core.text import clip
from graphmem.core.timeparse import to_utc
from graphmem.errors import GraphmemError, InvalidInputError, NotFoundError, SessionStoreError
from graphmem.service.ingest_rows import Refusals, id_problem, row_problem, shown, title_of, usable_path
from graphmem.service.inputs import MemoryEdit, parse_path
from graphmem.service.project_names import ProjectNames
from graphmem.service.remember import Rememberer
from graphmem.service.results import IngestReport
from graphmem.service.writer import MemoryWriter

log = logging.getLogger(__name__)

# What the agent's own shell runs taught (core/shell_runs.py): the agent's doing, never the user's words.
AGENTS_RULES = ("procedure.retry", "procedure.error-fix")
CURSOR_KEY = "opencode_cursor"
SESSION_KEY = "{source}_session:{id}"
# A session unchanged for this long is finished (OpenCode writes every few seconds while it works).
DEFAULT_IDLE_S = 60.0
# A session whose last message never completed (OpenCode crashed) is taken as it is after this.
STALE_IN_PROGRESS_S = 3_600.0
# Files named in a summary's text; all of them (up to MAX_LINKED_FILES) are linked.
SUMMARY_FILES_SHOWN = 15
MAX_LINKED_FILES = 100
SUMMARY_REFS_SHOWN = 20
SUMMARY_NAME_CHARS = 200  # of each file or ref named in a summary (a patch may name a path of 4,096)
# A summary's text: under a memory's limit (MAX_TEXT_CHARS), with room for redaction's markers.
MAX_SUMMARY_CHARS = 6_000
# Category of learned text that tries to instruct the model: data to look at, never a rule to follow.
LOW_TRUST_CATEGORY = Category.FACT

IngestProgress = Callable[[int], None]


@dataclass(frozen=True, slots=True)
class SessionClient:
    """The client whose sessions an ``Ingester`` reads: the ``source`` of what it learns (and of
    its session's progress in the store's meta), its name in words, and the name of the path to
    its sessions' store as callers give it (in errors)."""

    source: str
    name: str
    how_to_list: str  # where the user finds a session's id
    path_name: str = "db_path"


OPENCODE = SessionClient(SESSION_SOURCE, "OpenCode", "`opencode session list`")
CLAUDE_CODE = SessionClient(CLAUDE_CODE_SOURCE, "Claude Code", "the hook's session_id", "transcript_path")
CODEX = SessionClient(
    CODEX_SOURCE, "Codex", "the hook's session_id (`codex resume` lists them)", "transcript_path"
)


@dataclass(frozen=True, slots=True)
class IngestOptions:
    """``[ingest]`` and the parts of ``[extraction]`` the ingester needs."""

    opencode_db: str | None = None  # None: OPENCODE_DB, then the XDG data dir
    idle_seconds: float = DEFAULT_IDLE_S
    llm_max_sessions_per_run: int = 20
    background: bool = False  # whether the daemon ingests on its own ([ingest] enabled)
    interval_seconds: float = 30.0  # how often it does


@dataclass(slots=True)
class _Mark:
    """What is already stored from one session (kept as JSON in the store's meta)."""

    updated_ms: int = -1
    through_ms: int = -1  # creation time of the last message whose learnings are stored
    summary: str | None = None  # id of the session's summary event

    @classmethod
    def parse(cls, raw: str | None) -> _Mark:
        if not raw:
            return cls()
        try:
            data = json.loads(raw)
            return cls(int(data["updated"]), int(data["through"]), data.get("summary"))
        except (ValueError, KeyError, TypeError):
            return cls()

    def dump(self) -> str:
        return json.dumps({"updated": self.updated_ms, "through": self.through_ms, "summary": self.summary})


@dataclass(slots=True)
class _Run:
    """Counters of one run, turned into the IngestReport at the end."""

    report: IngestReport
    llm_used: int = 0
    categories: Counter[str] = field(default_factory=Counter)


def _ms(moment: datetime) -> int:
    return int(to_utc(moment).timestamp() * 1000)


def parse_cursor(raw: str | None) -> tuple[int, str] | None:
    """The stored cursor ``"<time_updated_ms> <session id>"`` as a tuple."""
    if not raw:
        return None
    updated, _, session_id = raw.partition(" ")
    try:
        return int(updated), session_id
    except ValueError:
        return None


class Ingester:
    """Ingests one client's sessions: each item through ``rememberer``, its links and the session's
    summary through ``writer``. Safe to run from several threads."""

    def __init__(
        self,
        writer: MemoryWriter,
        rememberer: Rememberer,
        *,
        options: IngestOptions,
        clock: Callable[[], datetime],
        sessions: SessionSource,
        roots: ProjectRoots,
        names: ProjectNames | None = None,
        llm: SessionExtractor | None = None,
        client: SessionClient = OPENCODE,
    ) -> None:
        self._client = client
        # The summary's source (never the client's: that is the user's words) and the cause of
        # its rewrite, in its history.
        self._summary_source = summary_source(client.source)
        self._more = Cause(self._summary_source, "the session went on")
        self._writer = writer
        self._rememberer = rememberer
        self._meta = writer.store  # the cursor and each session's progress (``StoreMeta``)
        self._options = options
        self._lock = writer.lock
        self._clock = clock
        self._sessions = sessions
        self._roots = roots
        self._names = names or ProjectNames(roots, writer)  # the checkout's project name
        self._llm = llm
        self._refusals = Refusals()  # the rows it could not store, each logged once

    def locate(self, db_path: str | None, session_id: str | None = None) -> Path:
        """The database or session file ``run`` would read for ``db_path`` and ``session_id``,
        checked as the client's ``SessionSource.locate`` checks it, without reading a session:
        ``SessionStoreError`` saying what is wrong (and what to send instead).

        ``db_path`` is hostile (a ``/rpc`` caller's, the plugin's, the command line's): one the
        system cannot look up (a NUL, a part over 255 bytes, over 4096 characters, no UTF-8) is
        ``InvalidInputError`` here (``inputs.parse_path``), as the MCP tools refuse it, before any
        lookup raises ``OSError``. Every ingest goes through here (``run``, the daemon's route)."""
        if db_path:
            parse_path(db_path, what=self._client.path_name)
        return self._sessions.locate(db_path or self._options.opencode_db, session_id)

    def run(
        self,
        *,
        db_path: str | None = None,
        since: datetime | None = None,
        session_id: str | None = None,
        progress: IngestProgress | None = None,
    ) -> IngestReport:
        """Ingest the finished sessions changed since the cursor (or ``since``), or one session.

        Each session is learned in its own directory's project: one without a usable directory
        is skipped (``ingest_rows.row_problem``), never learned in the caller's project nor in
        every one."""
        started = time.perf_counter()
        path = self.locate(db_path)
        run = _Run(IngestReport(db_path=str(path), extractor="llm" if self._llm else "rules"))
        with closing(self._sessions.open(path)) as reader:
            if session_id is not None:
                self._one(reader, session_id, run)
            else:
                self._changed(reader, since, run, progress)
        run.report.memories = dict(run.categories)
        run.report.seconds = round(time.perf_counter() - started, 3)
        return run.report

    def _one(self, reader: SessionReader, session_id: str, run: _Run) -> None:
        if not session_id.strip():
            raise InvalidInputError(
                f"Give a {self._client.name} session id, as {self._client.how_to_list} shows."
            )
        row = reader.session(session_id.strip())
        if row is None:
            raise NotFoundError(
                f"No session {shown(session_id)!r} in {self._client.name}'s store {reader.path}: "
                f"check the id with {self._client.how_to_list}, or the database with --db."
            )
        self._session(reader, row, run, explicit=True)

    def _changed(
        self,
        reader: SessionReader,
        since: datetime | None,
        run: _Run,
        progress: IngestProgress | None,
    ) -> None:
        cursor = parse_cursor(self._meta.get_meta(CURSOR_KEY))
        position = (_ms(since) - 1, "") if since is not None else cursor
        advance: tuple[int, str] | None = None  # the last session before the first one left pending
        blocked = False
        done = 0
        while True:
            rows = reader.changed_sessions(position)
            if not rows:
                break
            for row in rows:
                finished = self._session(reader, row, run, explicit=False)
                blocked = blocked or not finished
                if not blocked and id_problem(row.id) is None:  # an id the store refuses is no position
                    advance = (row.time_updated_ms, row.id)
                done += 1
                if progress is not None:
                    progress(done)
            position = (rows[-1].time_updated_ms, rows[-1].id)
        if advance is not None and (cursor is None or advance > cursor):
            with self._lock:
                stored = parse_cursor(self._meta.get_meta(CURSOR_KEY))
                if stored is None or advance > stored:  # another run may have gone further
                    self._meta.set_meta(CURSOR_KEY, f"{advance[0]} {advance[1]}")
                    run.report.cursor = f"{advance[0]} {advance[1]}"

    def _session(self, reader: SessionReader, row: SessionRow, run: _Run, *, explicit: bool) -> bool:
        """Ingest one session if it is finished. Returns False when it must be revisited later (a
        session skipped for good, its row unusable, returns True: it never holds the cursor)."""
        report = run.report
        report.sessions_read += 1
        problem = row_problem(row)
        if problem is not None:
            self._skip(row, problem, report)
            return True
        key = SESSION_KEY.format(source=self._client.source, id=row.id)
        if _Mark.parse(self._meta.get_meta(key)).updated_ms >= row.time_updated_ms:
            report.sessions_unchanged += 1
            return True
        if row.parent_id is not None:
            self._subagent(row, key, report)
            return True
        now_ms = _ms(self._clock())
        age_s = (now_ms - row.time_updated_ms) / 1000
        if not explicit and age_s < self._options.idle_seconds:
            report.sessions_pending += 1  # still active: the next run looks again
            return False
        try:
            read = reader.read(row)
        except SessionStoreError as exc:
            report.sessions_skipped += 1
            report.errors.append(f"{shown(row.id)}: {exc}")
            log.warning("session %s skipped: %s", shown(row.id), exc)
            return False
        report.skipped_parts += read.skipped_parts
        if read.in_progress and age_s < STALE_IN_PROGRESS_S:
            report.sessions_pending += 1  # a message is still being written
            return False
        learned = self._extract(read.transcript, run)
        with self._lock:
            mark = _Mark.parse(self._meta.get_meta(key))  # another run may have stored it meanwhile
            if mark.updated_ms >= row.time_updated_ms:
                report.sessions_unchanged += 1
                return True
            try:
                self._store(read, learned, mark, run)
            except InvalidInputError as exc:  # a value of it the store refuses that no check foresaw
                self._skip(row, str(exc), report)
                return True
            mark.updated_ms = row.time_updated_ms
            self._meta.set_meta(key, mark.dump())
        report.sessions_ingested += 1
        return True

    def _skip(self, row: SessionRow, problem: str, report: IngestReport) -> None:
        """Skip the session of ``row`` for good (until it changes): counted, said in the report."""
        report.sessions_skipped += 1
        report.errors.append(f'session "{shown(row.id)}" skipped: {problem}')
        self._refusals.tell(row, problem)

    def _subagent(self, row: SessionRow, key: str, report: IngestReport) -> None:
        """A subagent's session (a child: OpenCode's ``task`` tool, ``parent_id`` set): its "user"
        turns are the prompt the parent agent wrote, never a person's words, so nothing is learned
        from it -- as Claude Code's sidechain lines and a Codex subagent's turns teach nothing. The
        session is marked read, so the next run does not look at it again until it changes."""
        with self._lock:
            mark = _Mark.parse(self._meta.get_meta(key))
            if mark.updated_ms < row.time_updated_ms:
                mark.updated_ms = row.time_updated_ms
                self._meta.set_meta(key, mark.dump())
        report.sessions_subagent += 1

    def _extract(self, transcript: Transcript, run: _Run) -> list[Learned]:
        if self._llm is not None and run.llm_used < self._options.llm_max_sessions_per_run:
            run.llm_used += 1
            try:
                found = self._llm.extract(transcript)
                run.report.llm_sessions += 1
                return found
            except Exception as exc:  # any failure of the optional extractor: the rules still run
                run.report.llm_fallbacks += 1
                log.warning(
                    "LLM extraction failed for session %s (%s); using the rules",
                    transcript.session_id,
                    exc,
                )
        # Loaded only here: the rules' patterns (core/extraction.py, core/shell_runs.py) take
        # about 25 ms to compile, paid by every one-shot command that builds the service.
        from graphmem.core.extraction import extract

        return extract(transcript)

    # -- storing ------------------------------------------------------------------------------

    def _store(self, read: SessionRead, learned: list[Learned], mark: _Mark, run: _Run) -> None:
        transcript = read.transcript
        checkout = _project_of(transcript.directory, self._roots)
        root = Path(checkout) if checkout else None
        project = self._names.of(checkout)  # in a write: its other names' memories moved to it
        session = Entity(
            f"Session:{transcript.session_id}",
            EntityKind.SESSION,
            transcript.session_id,
            project=project,
            title=_clean(title_of(transcript.title)),
        )
        self._writer.add_entities([session])
        created = {m.id: m.created_at for m in transcript.messages}
        # Loaded only here: core/trust.py's patterns, which a command that ingests nothing (a
        # recall, a list) would otherwise compile at its start.
        from graphmem.core.trust import looks_like_injection

        # A message that tries to instruct the model taints what is learned from it.
        tainted = {m.id for m in transcript.messages if looks_like_injection(m.text)}
        through = mark.through_ms
        for item in learned:
            when = created.get(item.message_id)
            if when is not None and _ms(when) <= mark.through_ms:
                continue  # learned from a message an earlier run stored
            if item.message_id in tainted or looks_like_injection(item.text):
                item = replace(item, trust=Trust.LOW)
            self._remember(item, transcript, project, root, session, when, run)
            if when is not None:
                through = max(through, _ms(when))
        if transcript.messages:
            through = max(through, _ms(transcript.messages[-1].created_at))
        mark.through_ms = through
        mark.summary = self._summarise(read, learned, project, root, session, mark.summary, run)

    def _remember(
        self,
        item: Learned,
        transcript: Transcript,
        project: str | None,
        root: Path | None,
        session: Entity,
        when: datetime | None,
        run: _Run,
    ) -> None:
        text = _clean(item.text)
        if not text:
            return
        category = item.category
        if item.trust is Trust.LOW and category is not Category.EVENT:
            category = LOW_TRUST_CATEGORY
        source = AGENT_SOURCE if item.rule.startswith(AGENTS_RULES) else self._client.source
        if source == AGENT_SOURCE and not project:
            # What the agent did belongs to a project; a session outside any is taught nothing
            # of it (it would be global), and that is no error.
            run.report.agent_items_without_project += 1
            return
        try:
            result = self._rememberer.remember(
                text,
                category=category,
                project=project,
                session=transcript.session_id,
                source=source,
                occurred_at=when,
                origin=item.message_id,
                trust=item.trust,
            )
        except InvalidInputError as exc:
            run.report.errors.append(f"{shown(transcript.session_id)}/{shown(item.message_id)}: {exc}")
            return
        entities = [session, *_file_entities(root, project, item.files)]
        self._writer.attach([(result.memory.id, e) for e in entities])
        if result.created:
            run.categories[category.value] += 1
        else:
            run.report.reinforced += 1

    def _summarise(
        self,
        read: SessionRead,
        learned: list[Learned],
        project: str | None,
        root: Path | None,
        session: Entity,
        previous: str | None,
        run: _Run,
    ) -> str | None:
        """Write or rewrite the session's summary event; its id."""
        transcript = read.transcript
        users = [m for m in transcript.messages if m.role == "user" and m.text]
        if not users:
            return previous
        files = _session_files(transcript, learned, root)
        refs = _session_refs(transcript)
        text = _clean(_summary_text(self._client.name, transcript, len(users), files, refs))
        links = [session, *_file_entities(root, project, files[:MAX_LINKED_FILES])]
        if previous is not None:
            try:
                self._writer.edit(previous, MemoryEdit(text, project=project), cause=self._more)
            except NotFoundError:
                previous = None  # deleted by the user: write a new one
            else:
                self._writer.attach([(previous, e) for e in links])
                return previous
        result = self._rememberer.remember(
            text,
            category=Category.EVENT,
            project=project,
            session=transcript.session_id,
            source=self._summary_source,
            occurred_at=transcript.created_at,
            origin=transcript.session_id,
        )
        self._writer.attach([(result.memory.id, e) for e in links])
        if result.created:
            run.categories[Category.EVENT.value] += 1
        return result.memory.id


def _clean(text: str) -> str:
    """The text as it may be stored: secrets redacted, surrounding space stripped."""
    return redact(text).text.strip()


def _project_of(directory: str, roots: ProjectRoots) -> str | None:
    """The session's project: the git toplevel of its directory.

    A directory outside git is its own project; one that no longer exists keeps its
    path, so what the session taught still belongs to where it was learned.
    """
    if not directory:
        return None
    path = Path(directory).expanduser()
    if not path.is_absolute():
        return None
    try:
        root = roots.project_root(path)
    except GraphmemError:
        return str(path)  # gone since: keep the path it had
    return str(root) if root else str(path.resolve())


def _relative(root: Path | None, path: str) -> str | None:
    """``path`` relative to ``root`` (or as written when there is no root), None outside it or when
    it is no path the system can look up (a session's tool may name anything)."""
    if not usable_path(path):
        return None
    try:
        candidate = Path(path).expanduser()
    except RuntimeError:  # ~user that names no user
        return None
    if root is None:
        return candidate.as_posix() if not candidate.is_absolute() else None
    full = candidate if candidate.is_absolute() else root / candidate
    try:
        relative = Path(*full.parts).relative_to(root)
    except ValueError:
        try:
            relative = full.resolve().relative_to(root)
        except (ValueError, OSError, RuntimeError):  # RuntimeError: a symlink loop
            return None
    name = relative.as_posix()
    return None if name in ("", ".") or ".." in relative.parts else name


def _file_entities(root: Path | None, project: str | None, paths: Iterable[str]) -> list[Entity]:
    """``File`` entities of ``project`` for the paths inside its checkout ``root`` (a file a
    tool wrote need not exist now)."""
    if root is None or project is None:
        return []
    found: dict[str, Entity] = {}
    for path in paths:
        name = _relative(root, path)
        if name is not None:
            key = file_key(project, name)
            found.setdefault(key, Entity(key, EntityKind.FILE, name, project=project))
    return list(found.values())


def _session_files(transcript: Transcript, learned: list[Learned], root: Path | None) -> list[str]:
    """Files the session touched (tool inputs, patches, attached files), project-relative, in order."""
    seen: dict[str, None] = {}
    paths = [f for m in transcript.messages for p in m.parts for f in p.files]
    paths += [f for item in learned for f in item.files]
    for path in filter(usable_path, paths):
        name = _relative(root, path) if root is not None else path
        if name:
            seen.setdefault(name, None)
    return list(seen)


def _session_refs(transcript: Transcript) -> list[str]:
    seen: dict[str, None] = {}
    for message in transcript.messages:
        for part in message.parts:
            for text in (part.text, part.tool_input):
                for ref in find_refs(text):
                    seen.setdefault(ref.name, None)
    return list(seen)


def _summary_text(
    client: str, transcript: Transcript, user_turns: int, files: list[str], refs: list[str]
) -> str:
    title = title_of(transcript.title) or transcript.session_id
    parts = [f'{client} session "{title}" ({user_turns} user message{"s" if user_turns != 1 else ""})']
    if files:
        names = ", ".join(clip(name, SUMMARY_NAME_CHARS) for name in files[:SUMMARY_FILES_SHOWN])
        more = f" and {len(files) - SUMMARY_FILES_SHOWN} more" if len(files) > SUMMARY_FILES_SHOWN else ""
        parts.append(f"touched {names}{more}")
    if refs:
        parts.append("refs " + ", ".join(clip(ref, SUMMARY_NAME_CHARS) for ref in refs[:SUMMARY_REFS_SHOWN]))
    return clip("; ".join(parts) + ".", MAX_SUMMARY_CHARS)
