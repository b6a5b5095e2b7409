"""bootstrap: a repository's code, docs and history into the graph, incrementally.

The project's code graph is its default branch's once a pass ran there: a checkout on another
branch is then refused (``core/branches.py``); until then, any branch's pass writes it and says
so. One pass:

1. list the files (the ``RepositoryFiles`` port) while git says the checkout's branch (a pass
   refused for it stores nothing); a file whose size and mtime are unchanged costs a ``stat``;
   one whose bytes hash the same only has its mtime refreshed;
2. parse what changed (the ``CodeParser`` port: tree-sitter);
3. when anything changed or went away, resolve the edges of the whole project again
   from the stored parse results (``core.codegraph``) and store the pass: the edges are
   resolved on a thread while the store writes the pass's symbols and files, which need none;
4. docs and manifests, redacted first, become facts, directives and procedures, each
   linked to its file and updated (not duplicated) on later passes; rules that
   disappeared are archived (``service/repository_docs.py``);
5. new commits (bounded history) become event memories linked to the files they
   changed and to their author; files that change together get ``CO_CHANGES`` edges;
   each commit is also linked to the functions, methods and classes whose lines it
   last changed at HEAD (``git blame -w`` of the files the new commits touched, the
   innermost definition around each line, within a time budget: ``service/bootstrap_blames.py``).
   The history is read (with the commit checked out, and what to tell of the history) and the
   blames started on a thread of their own beside the parse (they need only the commits and the
   listing): git runs while the parser processes do, and the links are made from its answers
   at the end. The parser processes leave while the pass stores what they parsed.

On a team's store, the first pass after a checkout's project was named otherwise than by its
path (or bound to another spelling of its name) moves the memories' links from the graph kept
under the path (or the other spelling) to the new one, and removes the old graph
(``service/renamed_code.py``; the report says how many links followed).

A re-scan keeps memories on code that moved: a symbol renamed or moved to another file, and
a file git saw renamed (``git diff -M`` since the commit the last pass saw), take the links
of their old selves with them (``core.code_moves`` decides; the report says what moved).

Every memory and entity is written through the ``MemoryWriter`` (``service/writer.py``),
behind the store's redacting door, so commit messages lose their secrets too.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Protocol

from graphmem.core.branches import code_of_branch, code_pass_refused
from graphmem.core.code import Definition, ParsedFile
from graphmem.core.code_moves import MovePlan, file_moves, plan_moves
from graphmem.core.codegraph import CodeScan, FileState, ProjectCode, confidence_counts, symbol_key
from graphmem.core.commits import Commit, co_changes, commit_memory_text
from graphmem.core.dedup import memory_hash
from graphmem.core.keys import file_key, memory_id, person_key
from graphmem.core.models import Category, Entity, EntityKind, MemoryRecord, Scope
from graphmem.core.ports import CodeGraph, CodeParser, GitHistory, RepositoryFiles, SourceFile, SourceListing
from graphmem.core.skipped_files import SKIPPED_KEY, kept_skips, named_skips, skip_counts
from graphmem.errors import InvalidInputError
from graphmem.service.bootstrap_blames import Blames, blamed_definitions, innermost
from graphmem.service.renamed_code import RenamedCode
from graphmem.service.repository_docs import RepositoryDocs
from graphmem.service.results import BootstrapReport
from graphmem.service.writer import MemoryWriter

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]  # (done, total)
RefsIn = Callable[[str, str | None], list[Entity]]  # the GitLab refs a text names (``Mentions.refs_in``)
MAX_HISTORY = 100_000
GIT_SOURCE = "git:"
PARSE_ERROR_FILES_SHOWN = 5  # the report names the worst files, not all of them
COMMIT_FILES_LINKED = 50  # of a commit's files (it keeps ``MAX_COMMIT_FILES``): linked, blamed
# Files handed to the parser at a time (it may spread them over several cores), and the most
# of their bytes held at once.
PARSE_BATCH = 512
PARSE_BATCH_BYTES = 32 * 1024 * 1024
MOVES_SHOWN = 20  # moves the report describes, those that carried memories first
# The store's meta key (then the project) saying a pass stored commits but was stopped (Ctrl-C,
# kill -9) before linking them to the symbols they changed: the next pass links them all.
LINKING_KEY = "bootstrap_linking:"
# The store's meta key (then the project): the branch whose code the project's graph holds, ""
# for its default branch's (then no other branch's pass replaces it).
CODE_BRANCH_KEY = "bootstrap_branch:"


class JobSize(Protocol):
    """What a pass tells the job it runs inside (``Bootstrapper``'s ``large_job``) of its size."""

    rows: int


@dataclass(slots=True)
class _Unsized:
    rows: int = 0


@dataclass(frozen=True, slots=True)
class HistoryWalk:
    """The commits a pass learns from: the newest ``commits`` (0: none) reachable from
    ``revision`` (a sha: the code-memory benchmark's cut), only those older than ``before`` when
    given, and merge commits unless ``merges`` is False."""

    commits: int = 500
    before: datetime | None = None
    merges: bool = True
    revision: str = "HEAD"

    def __post_init__(self) -> None:
        if not 0 <= self.commits <= MAX_HISTORY:
            raise InvalidInputError(f"history must be between 0 and {MAX_HISTORY} commits.")


class Bootstrapper:
    def __init__(
        self,
        writer: MemoryWriter,
        code: CodeGraph,
        clock: Callable[[], datetime],
        *,
        refs_in: RefsIn,
        new_parser: Callable[[], CodeParser],
        files: RepositoryFiles,
        history: GitHistory,
        large_job: Callable[[], AbstractContextManager[JobSize]] = lambda: nullcontext(_Unsized()),
        branch_of: Callable[[Path], tuple[str, str] | None] = lambda root: None,
    ) -> None:
        self._writer = writer
        self._branch_of = branch_of  # a checkout's branch and default, when they differ: refused
        # What a pass runs inside: the process's policy for a job that builds and keeps millions
        # of objects, told the pass's size at its end (``adapters.process_memory.collecting_rarely``).
        self._large_job = large_job
        self._store = writer.store  # read here, written through the writer
        self._refs_in = refs_in
        self._code = code
        self._clock = clock
        self._new_parser = new_parser  # one parser per pass: a parser is not thread-safe
        self._files = files
        self._git = history
        self._renamed = RenamedCode(writer, code, clock)
        self._docs = RepositoryDocs(writer, files, clock)

    def run(
        self, root: Path, walk: HistoryWalk, *, progress: Progress | None = None, project: str | None = None
    ) -> BootstrapReport:
        """One pass over the repository at ``root`` (see the module doc), its history as ``walk``
        says, under the write lock; its files and memories are ``project``'s (by default its
        path's, ``ProjectRoots.project_name``)."""
        with self._writer.lock, self._large_job() as job:
            report = self._run(root, walk, progress=progress, project=project)
            # A pass that parsed or removed a file held every file's parse (the edges are resolved
            # again): its size is the project's symbols
            job.rows = report.symbols if report.parsed or report.removed else 0
            return report

    def _run(
        self, root: Path, walk: HistoryWalk, *, progress: Progress | None, project: str | None
    ) -> BootstrapReport:
        started = time.perf_counter()
        root = root.resolve()
        if not root.is_dir():
            raise InvalidInputError(f"{root} is not a directory: give the root of a repository.")
        project = project or str(root)
        branches = self._branch_of(root)  # (branch, default) when the checkout is off its default
        if branches is not None and self._store.get_meta(CODE_BRANCH_KEY + project) == "":
            raise InvalidInputError(code_pass_refused(str(root), *branches))  # nothing read or stored
        listing = self._files.list_sources(root)
        report = BootstrapReport(project)
        if branches is not None:
            report.notes.append(code_of_branch(*branches))
        skipped = dict(listing.skipped_files)  # path -> why; the pass adds those it cannot read
        known = self._code.file_states(project)
        stored = {} if self._code.scan_interrupted(project) else known
        parser = self._new_parser()
        try:
            if not stored:  # a first scan parses every file: its processes start before its first read
                parser.prepare(len(listing.files))
            # git reads the history (and the blames start) and a re-scan reads its stored parses
            # while the parser processes work; the parser processes leave beside the rest of the
            # pass, which waits for them at its end
            with (
                ThreadPoolExecutor(max_workers=1, thread_name_prefix="graphmem-parser-close") as leaving,
                ThreadPoolExecutor(max_workers=1, thread_name_prefix="graphmem-history") as git,
                ThreadPoolExecutor(max_workers=1, thread_name_prefix="graphmem-stored-parses") as reading,
            ):
                history = git.submit(self._read_history, root, project, walk, {f.path for f in listing.files})
                earlier = StoredParses(self._code, project, reading)
                try:
                    self._scan(
                        _Pass(root, project, listing, known, stored, parser, leaving, earlier),
                        history,
                        report,
                        skipped,
                        progress,
                        started,
                    )
                    self._store.set_meta(CODE_BRANCH_KEY + project, "" if branches is None else branches[0])
                    return report
                finally:
                    if history.exception() is None:  # a pass that failed: its blames stop
                        history.result().blames.close()
        finally:
            parser.close()  # closed already, unless the pass failed before its parse

    def _scan(
        self,
        scan: _Pass,
        reading: Future[_History],
        report: BootstrapReport,
        skipped: dict[str, str],
        progress: Progress | None,
        started: float,
    ) -> BootstrapReport:
        """The pass after its listing and its history's read (see the module doc)."""
        root, project, listing, known = scan.root, scan.project, scan.listing, scan.known
        touched: list[FileState] = []
        try:
            changed = self._parse_changed(scan, report, skipped, touched, progress)
        finally:
            # Its processes' memory, before the pass stores what they parsed: told to leave now,
            # not waited for (they take 0.1-0.2 s to go, in which the pass resolves its edges)
            scan.leaving.submit(scan.parser.close)
        history = reading.result()
        removed = sorted(
            path for path in set(known) - {f.path for f in listing.files} if not listing.may_hold(path)
        )
        report.parsed, report.removed = len(changed), len(removed)
        report.files = report.parsed + report.unchanged  # indexed: the skipped are told apart
        report.skipped, report.skipped_files = skip_counts(skipped), named_skips(skipped)
        kept = kept_skips(skipped)  # for ``graphmem context``; a pass that skipped the same writes nothing
        if self._store.get_meta(SKIPPED_KEY + project) != kept:
            self._store.set_meta(SKIPPED_KEY + project, kept)
        report.parse_errors = sum(parsed.error_count for parsed, _ in changed.values())
        report.parse_error_files = sorted(
            ((path, parsed.error_count) for path, (parsed, _) in changed.items() if parsed.error_count),
            key=lambda pair: (-pair[1], pair[0]),
        )[:PARSE_ERROR_FILES_SHOWN]
        if touched:
            self._code.touch(project, touched)
        symbols = (
            self._save_code(scan, changed, removed, history.head, report) if changed or removed else None
        )
        # The definitions the blames need, of the files this pass parsed; the parses themselves are
        # not held through the docs and history below
        history.definitions = {
            path: blamed_definitions(changed[path][0]) for path in history.blames.paths if path in changed
        }
        # The files the store holds now (``file_states``), as the pass left them: what commits link to
        live = (known.keys() - set(removed)) | changed.keys()
        del changed
        if project != str(root):  # named otherwise than by its path: graphs under its former names follow
            followed = self._renamed.follow_former(project, root)
            if followed:
                report.renamed_from = ", ".join(f.old for f in followed)
                report.links_followed = sum(f.followed for f in followed)
                report.links_kept = sum(f.kept for f in followed)
        if symbols is None:  # nothing changed: count what is stored
            symbols = sum(len(p.definitions) for p in self._code.load_parsed(project).values())
        report.symbols = symbols
        self._docs.learn(root, project, listing.docs, report)
        self._history(project, history, report, live)
        report.seconds = round(time.perf_counter() - started, 2)
        return report

    def _parse_changed(
        self,
        scan: _Pass,
        report: BootstrapReport,
        skipped: dict[str, str],
        touched: list[FileState],
        progress: Progress | None,
    ) -> dict[str, tuple[ParsedFile, FileState]]:
        """The files of the pass's listing new or changed since those ``stored``, parsed
        (:data:`PARSE_BATCH` at a time: the parser may spread a batch over several cores); those
        only touched (same content) go in ``touched``, unreadable ones in ``skipped``.

        The next batch is read while the parser has the last one: reading between batches on
        this thread left the parser's processes idle (3,030 files: 0.2-0.9 s of a 5 s scan).
        One batch is at the parser at a time, so at most two are held. A re-scan tells the parser
        of each changed file it finds before its first batch is full: the processes those files
        need start then, not when the batch is handed over (a first scan started them all), and the
        project's stored parses are read from its first changed file on (``StoredParses``)."""
        root, files, stored, parser = scan.root, scan.listing.files, scan.stored, scan.parser
        changed: dict[str, tuple[ParsedFile, FileState]] = {}
        batch: list[tuple[SourceFile, FileState, bytes]] = []
        sent: list[tuple[SourceFile, FileState, bytes]] = []
        parsing: Future[list[ParsedFile]] | None = None

        def collect() -> None:
            nonlocal parsing
            if parsing is not None:
                for (source, state, _), result in zip(sent, parsing.result(), strict=True):
                    changed[source.path] = (result, state)
                parsing = None
                sent.clear()

        def hand_over(ahead: ThreadPoolExecutor) -> None:
            nonlocal parsing
            collect()
            if batch:
                sent.extend(batch)
                batch.clear()
                sources = [(data, source.language) for source, _, data in sent]
                parsing = ahead.submit(parser.parse_many, sources)

        held = 0  # bytes of the batch's files
        total = len(files)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="graphmem-parse") as ahead:
            for done, source in enumerate(files, 1):
                before = stored.get(source.path)
                if before is not None and before.size == source.size and before.mtime_ns == source.mtime_ns:
                    report.unchanged += 1
                else:
                    content = self._files.read_source(root, source.path)
                    if isinstance(content, str):
                        skipped[source.path] = content
                        continue
                    state = FileState(source.path, content.content_hash, source.size, source.mtime_ns)
                    if before is not None and before.content_hash == content.content_hash:
                        touched.append(state)
                        report.unchanged += 1
                    else:
                        batch.append((source, state, content.data))
                        held += len(content.data)
                        if stored and parsing is None and not changed:  # a re-scan, before its first batch
                            parser.prepare(len(batch))
                        if scan.known:  # the stored parses the pass resolves its edges with
                            scan.earlier.start()
                        if len(batch) >= PARSE_BATCH or held >= PARSE_BATCH_BYTES:
                            hand_over(ahead)
                            held = 0
                if progress is not None and (done % 50 == 0 or done == total):
                    progress(done, total)
            hand_over(ahead)
            collect()
        return changed

    def _save_code(
        self,
        scan: _Pass,
        changed: dict[str, tuple[ParsedFile, FileState]],
        removed: list[str],
        head: str | None,
        report: BootstrapReport,
    ) -> int:
        """Store the pass's changed and removed files with the project's edges, built again
        from every file's parse, as of commit ``head``; the project's symbols after it."""
        root, project, known = scan.root, scan.project, scan.known
        previous = scan.earlier.take()
        code = ProjectCode(project, dict(previous))
        for path in removed:
            code.files.pop(path, None)
        code.files.update({path: parsed for path, (parsed, _) in changed.items()})
        moves = self._moves(root, project, previous, code.files, changed, {p: known[p] for p in removed})
        del previous
        # The edges are resolved on a thread while the store writes the symbols and files, which
        # need none (Python there, Kùzu's COPY and SQLite's writes here let go of the interpreter)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="graphmem-edges") as resolving:
            written = CodeScan(
                project, changed, removed, code, resolving.submit(code.edges), self._clock(), moves, head
            )
            carried = self._code.save(written)
        edges = written.resolved_edges()
        _record_moves(report, moves, carried, project)
        report.calls = confidence_counts(edges.calls)
        report.imports = len(edges.imports)
        return sum(len(p.definitions) for p in code.files.values())

    def _moves(
        self,
        root: Path,
        project: str,
        before: dict[str, ParsedFile],
        after: dict[str, ParsedFile],
        changed: dict[str, tuple[ParsedFile, FileState]],
        removed: dict[str, FileState],
    ) -> MovePlan:
        """The symbols and files this pass renamed or moved (``core.code_moves``): git's renames
        since the commit the last pass saw, and bodies that stayed alike."""
        if not removed and not any(path in before for path in changed):
            return MovePlan()  # only new files: nothing can have moved
        since = self._code.scanned_head(project)
        renamed = self._git.renames(root, since) if removed and since else {}
        added = {path: state.content_hash for path, (_, state) in changed.items() if path not in before}
        files = file_moves({p: s.content_hash for p, s in removed.items()}, added, renamed)
        return plan_moves(before, after, [*changed, *removed], files)

    # -- history ----------------------------------------------------------------------

    def _read_history(
        self, root: Path, project: str, walk: HistoryWalk, sources: Collection[str]
    ) -> _History:
        """The commit checked out; the commits ``walk`` asks for, which of them are new to the
        store, and what to tell of the history; the blames of the files (among ``sources``) that
        those to link touched, started (see the module doc)."""
        head = self._git.head(root)  # the commit the pass stores the code at (``CodeScan.head``)
        if walk.commits <= 0:
            return _History(head=head)
        notes = self._git.notes(root)
        commits = self._git.read_history(
            root, max_commits=walk.commits, before=walk.before, merges=walk.merges, revision=walk.revision
        )
        if not commits:
            return _History(head=head, asked=True, notes=notes)
        ids, known = self._commit_ids(commits, project)
        fresh = [c for c in commits if ids[c.sha] not in known]
        unfinished = self._store.get_meta(LINKING_KEY + project) == "1"
        linking = commits if unfinished else fresh  # a stopped pass's commits are linked now
        blames = Blames()
        if linking:
            paths = sorted({p for c in linking for p in c.files[:COMMIT_FILES_LINKED]} & set(sources))
            # A day's slack: git walks by committer date, which a rebase moves past the author's.
            since = min(c.authored_at for c in linking) - timedelta(days=1)
            blames = Blames(paths)
            blames.start(lambda: self._git.blame_files(root, paths, since))
        return _History(head, True, notes, commits, ids, fresh, linking, blames)

    def _commit_ids(self, commits: Sequence[Commit], project: str) -> tuple[dict[str, str], set[str]]:
        """Each commit's memory id in ``project``, and those the store holds. A commit's memory
        is its sha's (``memory_id(commit=...)``) unless another project holds that one: a second
        clone, a fork or a worktree of the same repository gets memories of its own (with the
        sha's id, the second clone found the first one's and stored no history at all)."""
        plain = {c.sha: memory_id(commit=c.sha) for c in commits}
        held = self._store.get_memories(list(plain.values()))
        ids = {
            sha: mid
            if (record := held.get(mid)) is None or record.project == project
            else memory_id(f"commit\0{project}\0{sha}")
            for sha, mid in plain.items()
        }
        own = [mid for sha, mid in ids.items() if mid != plain[sha]]
        known = {mid for mid in ids.values() if mid in held} | set(
            self._store.get_memories(own) if own else ()
        )
        return ids, known

    def _history(self, project: str, history: _History, report: BootstrapReport, live: set[str]) -> None:
        """Store the new commits as events linked to their author, the refs they name and those of
        their files that are ``live`` (the project's after the pass), then to the symbols they
        changed; the project's co-changes again."""
        if not history.asked:
            return
        report.notes += history.notes
        commits, ids, fresh = history.commits, history.ids, history.fresh
        if not commits:
            return
        if fresh:
            self._store.set_meta(LINKING_KEY + project, "1")
            now = self._clock()
            records = [
                MemoryRecord(
                    id=ids[c.sha],
                    text=commit_memory_text(c),
                    category=Category.EVENT,
                    scope=Scope.PROJECT,
                    project=project,
                    created_at=c.authored_at,
                    updated_at=now,
                    valid_from=c.authored_at,
                    source=GIT_SOURCE + c.sha,
                    content_hash=memory_hash(Scope.PROJECT, project, GIT_SOURCE + c.sha),
                )
                for c in fresh
            ]
            entities: dict[str, Entity] = {}
            links: list[tuple[str, Entity]] = []
            for commit in fresh:
                person = Entity(
                    person_key(email=commit.author_email, name=commit.author_name),
                    EntityKind.PERSON,
                    commit.author_name,
                    None,
                )
                entities[person.key] = person
                links.append((ids[commit.sha], person))
                for entity in self._refs_in(f"{commit.subject}\n{commit.body}", project):
                    entities[entity.key] = entity  # `fixes #12`: the commit is about issue #12
                    links.append((ids[commit.sha], entity))
                for path in commit.files[:COMMIT_FILES_LINKED]:
                    if path in live:
                        entity = Entity(file_key(project, path), EntityKind.FILE, path, project)
                        entities[entity.key] = entity
                        links.append((ids[commit.sha], entity))
            self._writer.add(records, about=links)
            report.commits = len(fresh)
        if history.linking:
            self._link_symbols(project, history)
            self._store.set_meta(LINKING_KEY + project, "0")
        self._code.replace_co_changes(project, co_changes(commits))

    def _link_symbols(self, project: str, history: _History) -> None:
        """Link each commit to the innermost function, method or class around every line
        of the files it touched that it last changed (``git blame -w`` at HEAD, walking back
        only to the oldest of the commits to link: an older change has no memory to link)."""
        definitions = history.definitions
        unread = [path for path in history.blames.paths if path not in definitions]
        definitions |= {
            path: blamed_definitions(parsed)
            for path, parsed in self._code.load_parsed(project, unread).items()
        }
        links: dict[tuple[str, str], tuple[str, Entity]] = {}
        # In path order: the same links whatever git finishes first
        for path, shas in history.blames.answers():
            if not definitions.get(path):
                continue
            owners = innermost(definitions[path], len(shas))
            for line, sha in enumerate(shas, 1):
                owner, memory_id = owners[line], history.ids.get(sha)
                if owner is None or memory_id is None:
                    continue
                key = symbol_key(project, path, owner.qualified_name)
                entity = Entity(key, EntityKind.SYMBOL, owner.qualified_name, project, owner.signature[:200])
                links.setdefault((memory_id, key), (memory_id, entity))
        # The symbols are the code graph's: linked, not stored again.
        self._writer.attach(list(links.values()), store_entities=False)


class StoredParses:
    """A project's parses as a pass found them stored (``CodeGraph.load_parsed``), read on a thread
    of their own once ``start`` is called: a re-scan starts it at its first changed file, so they are
    read beside its parse rather than after it (the generated repository's 3,030 parses: 0.51 s
    of CPU, most of it their validation, which holds the interpreter, taken from the tail of a
    re-scan after every file changed)."""

    def __init__(self, code: CodeGraph, project: str, thread: ThreadPoolExecutor) -> None:
        self._code = code
        self._project = project
        self._thread = thread
        self._reading: Future[dict[str, ParsedFile]] | None = None

    def start(self) -> None:
        if self._reading is None:
            self._reading = self._thread.submit(self._code.load_parsed, self._project)

    def take(self) -> dict[str, ParsedFile]:
        """The parses (read now unless started), handed over: not kept here, so the pass frees
        them once it has built the project's code from them."""
        self.start()
        assert self._reading is not None
        reading, self._reading = self._reading, None
        return reading.result()


@dataclass(frozen=True)
class _Pass:
    """What a pass knows before its parse: the repository, its listing, the files stored
    (``stored``: those a re-scan may skip; none after an interrupted scan), its parser, the
    thread its parser is closed on (``leaving``: the pass does not wait for its processes to go),
    and the parses stored before it (``earlier``: read beside the parse)."""

    root: Path
    project: str
    listing: SourceListing
    known: dict[str, FileState]
    stored: dict[str, FileState]
    parser: CodeParser
    leaving: ThreadPoolExecutor
    earlier: StoredParses


@dataclass
class _History:
    """What a pass read of git beside its parse (``Bootstrapper._read_history``)."""

    head: str | None = None  # the commit checked out
    asked: bool = False  # the walk asked for commits
    notes: list[str] = field(default_factory=list)  # what to tell of the history (``GitHistory.notes``)
    commits: list[Commit] = field(default_factory=list)
    ids: dict[str, str] = field(default_factory=dict)  # sha -> its memory's id
    fresh: list[Commit] = field(default_factory=list)  # those not stored yet
    linking: list[Commit] = field(default_factory=list)  # those to link to the symbols they changed
    blames: Blames = field(default_factory=Blames)
    # The blamed files' definitions this pass parsed (the others are read back from the store)
    definitions: dict[str, list[Definition]] = field(default_factory=dict)


def _record_moves(report: BootstrapReport, plan: MovePlan, carried: dict[str, int], project: str) -> None:
    """Say in the report what moved and whose memories followed (``graphmem bootstrap`` prints it)."""
    report.moved_symbols, report.moved_files = len(plan.symbols), len(plan.files)
    report.memories_moved = sum(carried.values())
    lines = []
    for move in plan.symbols:
        n = carried.get(symbol_key(project, move.old_path, move.old_name), 0)
        lines.append((n, f"{move.describe()}: {n} memor{'y' if n == 1 else 'ies'} moved"))
    for old, new in sorted(plan.files.items()):
        n = carried.get(file_key(project, old), 0)
        lines.append((n, f"{old} → {new} (file renamed): {n} memor{'y' if n == 1 else 'ies'} moved"))
    lines.sort(key=lambda pair: -pair[0])  # the moves that carried memories first
    report.moves = [line for _, line in lines[:MOVES_SHOWN]]
    report.ambiguous_moves = plan.ambiguous_count
    report.moves += plan.ambiguous[: max(MOVES_SHOWN - len(report.moves), 0)]
    if plan.symbols or plan.files:
        log.info(
            "bootstrap: %d symbols and %d files moved, %d memory links followed; %d ambiguous",
            len(plan.symbols), len(plan.files), report.memories_moved, plan.ambiguous_count,
        )  # fmt: skip
