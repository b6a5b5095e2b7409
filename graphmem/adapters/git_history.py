"""A repository's commit history, read with one ``git log``.

``read_history`` never raises: outside a repository, in an empty one, without git,
or when git fails or times out, there is no history to learn from and it returns
what it has (usually nothing), logging why when that is unexpected.

The output is parsed from NUL-separated tokens (``-z``), so file names with spaces,
newlines or any other byte stay intact: each commit is a header token starting with
``\\x1e`` (its fields separated by ``\\x1f``), then ``status`` / ``path`` tokens. It is read
where it lies, as bytes: only what a commit keeps is copied and decoded (its fields' first
characters, its first ``MAX_COMMIT_FILES`` paths), and the rest of a commit of millions of files
is passed over by one regular expression, so a read costs what it keeps, not what git printed.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Generator, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from graphmem.adapters.git import run_bounded
from graphmem.adapters.git_diff_lines import lines_from_diffs
from graphmem.core.commits import MAX_COMMIT_FILES, Commit

log = logging.getLogger(__name__)

# A bounded read of a few thousand commits takes well under a second; a minute means
# something is wrong (a network filesystem, a huge repository): give up on history.
HISTORY_TIMEOUT_S = 60.0
BLAME_TIMEOUT_S = 30.0  # one file's blame
# Writing the commit-graph blame reads costs about a second per 10,000 commits; past this the
# blames go without it.
GRAPH_TIMEOUT_S = 30.0
BLAME_PROCESSES = max(2, min(4, os.cpu_count() or 1))  # git blames running at once
# ``blame_graph``'s temporary object directory: the prefix, then the pid of the process.
BLAME_SCRATCH_PREFIX = "graphmem-blame-"
MAX_RENAMES = 20_000  # file renames read between two scans; more is a rewrite, not a move
# The most of ``git log``'s output read: this repository's history is about 550 bytes a commit,
# so 100,000 commits fit; a history of huge messages is read up to here, its newest commits first.
MAX_LOG_BYTES = 64 * 1024 * 1024
# The most of a commit's subject and body kept (its memory holds 300 characters of the body;
# its refs are looked for in all it keeps, at about 1 µs a character), and of its author's name
# and e-mail.
MAX_MESSAGE_CHARS = 10_000
MAX_NAME_CHARS = 200
# The most of one file's ``git blame`` read: it prints each line of the file after its sha and
# number (about 50 bytes more a line), so a source file at the code graph's 1 MB limit of 300,000
# lines fits; a megabyte of empty lines (a million, 50 MB of blame) goes unlinked instead.
MAX_BLAME_BYTES = 16 * 1024 * 1024
# The most of ``git diff``'s list of renamed files read: ``MAX_RENAMES`` pairs of 400-byte paths.
MAX_RENAME_BYTES = MAX_RENAMES * 800
MAX_REV_BYTES = 4096  # of what git says of one commit (``rev-parse``)
# The most file names a history keeps, all its commits together (each keeps MAX_COMMIT_FILES):
# 100,000 commits of ten files; past it, older commits count their files without naming them.
MAX_HISTORY_FILES = 1_000_000
# A longer path cannot be checked out (Linux's PATH_MAX): no file of the code graph has it.
MAX_PATH_BYTES = 4096
MAX_PARENTS = 64  # of a merge's parents kept (an octopus merge of the Linux kernel has 66)

_RECORD = "\x1e"
_FIELD = "\x1f"
_RECORD_BYTE, _FIELD_BYTE = _RECORD.encode(), _FIELD.encode()
# sha, parents, author (mailmap applied), email, author time (unix seconds), decorations
# ("grafted" marks a shallow clone's boundary), subject, body.
_FORMAT = _RECORD + _FIELD.join(["%H", "%P", "%aN", "%aE", "%at", "%D", "%s", "%b"])
# The most characters read of each field but the body: a sha; MAX_PARENTS shas and their spaces;
# the author's name and e-mail; a time; the decorations (at most "grafted"); the subject.
_FIELD_CHARS = (64, 65 * MAX_PARENTS, MAX_NAME_CHARS, MAX_NAME_CHARS, 20, 1000, MAX_MESSAGE_CHARS)
# An abbreviated or full SHA-1 / SHA-256 object name; anything else is not looked up.
_SHA_RE = re.compile(r"[0-9a-fA-F]{4,64}")
# A line of ``git blame -s -l``: ``[^]<sha> <line>) <text>``; ``^`` marks the ``--since`` boundary.
_BLAME_LINE_RE = re.compile(rb"^(\^?)([0-9a-fA-F]{4,64})(?= |$)", re.MULTILINE)
# "M", "A", "D", "T", "R100", "C075": a --name-status status (the first after a newline); R and C
# are followed by two paths.
_STATUS_RE = re.compile(rb"\n*+([ACDMRTUXB])[0-9]{0,3}")
# File records of one path each, "M\0path\0" (R and C, of two, stop it): those a commit does not
# keep, passed over at once; possessive (``*+``), it keeps no state to backtrack to.
_ONE_PATH_RECORDS_RE = re.compile(rb"(?:\n*+[ADMTUXB][0-9]{0,3}\0[^\0]+\0)*+")
_LEADING_SPACE_RE = re.compile(rb"\s*")
# Decorations of no ref at all: only the "grafted" mark remains.
_NO_REFS = "refs/graphmem-decorates-no-ref"
_EXPECTED_FAILURES = ("not a git repository", "bad revision 'HEAD'")  # outside git; no commits yet


def read_history(
    root: Path,
    *,
    max_commits: int,
    since_sha: str | None = None,
    before: datetime | None = None,
    merges: bool = True,
    revision: str = "HEAD",
) -> list[Commit]:
    """The newest ``max_commits`` commits reachable from HEAD in ``root``, newest first.

    With ``before``, only commits whose committer time is earlier (a benchmark's cut:
    the history as it stood then); with ``merges=False``, no merge commits; with
    ``revision`` (a commit sha), the history reachable from it instead of HEAD.

    With ``since_sha``, only the commits after it (``since_sha..HEAD``), still bounded;
    when git does not know that commit (history rewritten, a shallow clone, a typo),
    the bounded full read instead. File paths are relative to ``root`` (``--relative``):
    bootstrapping a subdirectory of a repository sees only its own files (a commit that
    changed only other folders lists none). Renames are a deletion and an addition
    (``--no-renames``); merge commits list no files.
    """
    if max_commits < 1:
        return []
    filters = _filters(before, merges)
    if since_sha is not None:
        if _SHA_RE.fullmatch(since_sha):
            commits = _git_log(root, max_commits, f"{since_sha}..HEAD", quiet=True, filters=filters)
            if commits is not None:
                return commits
            log.info("git history: %s is not a known commit in %s; reading the full history", since_sha, root)
        else:
            log.info("git history: %r is not a commit sha; reading the full history", since_sha)
    if revision != "HEAD" and not _SHA_RE.fullmatch(revision):
        log.info("git history: %r is not a commit sha; reading HEAD's history", revision)
        revision = "HEAD"
    return _git_log(root, max_commits, revision, quiet=False, filters=filters) or []


def line_commits(
    root: Path, path: str, since: datetime | None = None, *, graph: Path | None = None
) -> list[str]:
    """The commit that last changed each line of ``path`` at HEAD (``git blame -w``), in
    line order: ``result[0]`` is line 1's sha. Empty when git cannot say (not committed,
    binary, outside a repository, a timeout) or says too much (over ``MAX_BLAME_BYTES``).

    With ``since``, git walks back only to the commits of that time (``--since``): a line
    last changed before it is ``""`` (unknown) instead of its old commit, which costs git
    the rest of the file's history. Lines changed since are attributed as by a full blame.
    ``graph`` is an object directory holding a commit-graph of the history (``blame_graph``).
    """
    args = ["git", "blame", "-w", "-s", "-l", "--root"]
    if since is not None:
        args.append("--since=" + since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    args += ["HEAD", "--", path]
    env = {} if graph is None else {"GIT_ALTERNATE_OBJECT_DIRECTORIES": str(graph)}
    try:
        status, output, _ = run_bounded(
            args, root, timeout_s=BLAME_TIMEOUT_S, max_bytes=MAX_BLAME_BYTES, env=env
        )
    except (subprocess.TimeoutExpired, OSError) as exc:
        log.info("git history: cannot blame %s in %s (%s)", path, root, exc)
        return []
    if len(output) > MAX_BLAME_BYTES:
        log.info("git history: the blame of %r in %s is over %d MiB; its lines are not linked",
                 path, root, MAX_BLAME_BYTES >> 20)  # fmt: skip
        return []
    if status != 0:
        return []
    shas: list[str] = []
    names: dict[bytes, str] = {}  # one str a commit, not one a line
    for line in _BLAME_LINE_RE.finditer(output):
        sha = line.group(2)
        name = names.get(sha)
        if name is None:
            name = names[sha] = sha.decode("ascii")
        shas.append("" if line.group(1) else name)  # the boundary (``^sha``): last changed before ``since``
    return shas


@contextmanager
def blame_graph(root: Path) -> Iterator[Path | None]:
    """A commit-graph of HEAD's history with its changed-path filters, in a temporary object
    directory that ``line_commits(graph=...)`` names to git as an alternate: with it, blame
    passes over a commit that did not touch the file without reading its trees (five times
    less work where most commits touch other files). Nothing is written into the repository.
    None when git cannot write one in time: blame then reads the trees, as before."""
    head = head_commit(root)
    sweep_blame_scratch()
    with tempfile.TemporaryDirectory(prefix=f"{BLAME_SCRATCH_PREFIX}{os.getpid()}-") as scratch:
        objects = Path(scratch)
        (objects / "info").mkdir()
        args = ["git", "commit-graph", "write", "--stdin-commits", "--changed-paths", "--object-dir", scratch]
        try:
            status = None if head is None else run_bounded(
                args, root, timeout_s=GRAPH_TIMEOUT_S, max_bytes=MAX_REV_BYTES,
                stdin=head.encode("ascii") + b"\n", env={"GIT_ALTERNATE_OBJECT_DIRECTORIES": str(objects)},
            )[0]  # fmt: skip
        except (subprocess.TimeoutExpired, OSError) as exc:
            log.info("git history: no commit-graph for blame in %s (%s)", root, exc)
            status = None
        written = status == 0 and (objects / "info" / "commit-graph").is_file()
        yield objects if written else None


def sweep_blame_scratch() -> None:
    """Remove the scratch folders ``blame_graph`` left behind in a process that is gone (killed
    with SIGKILL mid-bootstrap, its commit-graph file with them): the folder's name holds the
    pid of the process that made it. Only this user's folders; a live process's stay."""
    for folder in Path(tempfile.gettempdir()).glob(f"{BLAME_SCRATCH_PREFIX}*-*"):
        pid = folder.name.removeprefix(BLAME_SCRATCH_PREFIX).split("-", 1)[0]
        try:
            if not pid.isdigit() or folder.stat().st_uid != os.getuid() or _alive(int(pid)):
                continue
        except OSError:
            continue
        shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process (EPERM): alive
        return True
    return True


def head_commit(root: Path) -> str | None:
    """The sha of HEAD in ``root``; None outside a repository or before its first commit."""
    done = _run_git(root, ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])
    sha = done.decode("ascii", "replace").strip() if done is not None else ""
    return sha if _SHA_RE.fullmatch(sha) else None


def renames(root: Path, since: str) -> dict[str, str]:
    """Old path -> new path of the files renamed between commit ``since`` and the working
    tree (``git diff -M``, git's own similarity rule; committed, staged or only edited), paths
    relative to ``root``. Empty when git cannot say (an unknown commit, no repository, a
    timeout); at most ``MAX_RENAMES`` pairs."""
    if not _SHA_RE.fullmatch(since):
        return {}
    args = ["diff", "-M", "--diff-filter=R", "--name-status", "--relative", "--no-color", "-z", since, "--"]
    output = _run_git(root, args, max_bytes=MAX_RENAME_BYTES)
    if output is None:
        return {}
    # The tokens of MAX_RENAMES pairs at most, less the last: what follows them, the empty one
    # after the last NUL, or the path git was stopped in
    tokens = [t.decode("utf-8", "surrogateescape") for t in output.split(b"\0", 3 * MAX_RENAMES)[:-1]]
    found: dict[str, str] = {}
    i = 0
    while i + 2 < len(tokens) and len(found) < MAX_RENAMES:
        status, old, new = tokens[i : i + 3]
        if status.startswith("R") and old and new:
            found[old] = new
            i += 3
        else:
            i += 1  # not a rename record: resynchronise on the next token
    return found


def _run_git(root: Path, args: list[str], *, max_bytes: int = MAX_REV_BYTES) -> bytes | None:
    """What ``git args`` prints when it succeeds, or when it printed over ``max_bytes`` (one byte
    more: there it was stopped); None when it fails."""
    try:
        status, output, _ = run_bounded(
            ["git", *args], root, timeout_s=HISTORY_TIMEOUT_S, max_bytes=max_bytes
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.info("git history: git %s in %s failed (%s)", args[0], root, exc)
        return None
    return output if status == 0 or len(output) > max_bytes else None


def _filters(before: datetime | None, merges: bool) -> list[str]:
    filters = [] if merges else ["--no-merges"]
    if before is not None:
        # --before keeps committer times <= the date: one second earlier is "strictly before".
        filters.append(f"--before={int(before.timestamp()) - 1}")
    return filters


def _git_log(
    root: Path, max_commits: int, revisions: str, *, quiet: bool, filters: list[str]
) -> list[Commit] | None:
    """The commits ``git log`` prints, up to ``MAX_LOG_BYTES`` of them; None when git fails."""
    args = [
        "git",
        "-c",
        "log.showSignature=false",
        "log",
        f"--max-count={max_commits}",
        f"--format={_FORMAT}",
        f"--decorate-refs={_NO_REFS}",
        "--encoding=UTF-8",
        "--name-status",
        "--no-renames",
        "--relative",
        "--no-color",
        "-z",
        *filters,
        revisions,
        "--",
    ]
    try:
        status, output, errors = run_bounded(args, root, timeout_s=HISTORY_TIMEOUT_S, max_bytes=MAX_LOG_BYTES)
    except subprocess.TimeoutExpired:
        log.warning("git history: git log in %s took over %.0f s; history skipped", root, HISTORY_TIMEOUT_S)
        return None
    except OSError as exc:  # git is not installed, or root is not a directory
        log.info("git history: cannot run git in %s (%s); history skipped", root, exc)
        return None
    if len(output) > MAX_LOG_BYTES:  # git was stopped there: its last commit may be cut
        commits = _parse(output, MAX_LOG_BYTES)[:-1]
        log.warning(
            "git history: git log in %s printed over %d MiB; its newest %d commits read",
            root, MAX_LOG_BYTES >> 20, len(commits),
        )  # fmt: skip
        return commits
    if status != 0:
        error = errors.decode("utf-8", "replace").strip().splitlines()
        first = error[0] if error else f"exit status {status}"
        expected = quiet or any(text in first for text in _EXPECTED_FAILURES)
        log.log(logging.DEBUG if expected else logging.WARNING, "git history: %s in %s", first, root)
        return None
    return _parse(output)


def _parse(output: bytes, end: int | None = None) -> list[Commit]:
    """The commits of ``git log``'s ``output`` (up to ``end``), each naming its first
    ``MAX_COMMIT_FILES`` files, and all of them ``MAX_HISTORY_FILES``."""
    tokens = _Tokens(output, len(output) if end is None else end)
    commits: list[Commit] = []
    header: tuple[int, int] | None = None
    files: dict[str, None] = {}
    named = more = 0  # the paths of this commit read (``files`` without repeats), and left out
    room = MAX_HISTORY_FILES
    while (token := tokens.next()) is not None:
        if output.startswith(_RECORD_BYTE, *token):
            if header is not None:
                commits.append(_commit(output, header, files, more))
                room -= len(commits[-1].files)
            header, files, named, more = token, {}, 0, 0
            continue
        status = _STATUS_RE.fullmatch(output, *token)
        if header is None or status is None:
            continue  # the empty token after the last NUL
        kept = min(MAX_COMMIT_FILES, room)
        for _ in range(2 if status[1] in (b"R", b"C") else 1):
            path = tokens.next()
            if path is None or path[0] == path[1]:
                continue
            if named < kept and path[1] - path[0] <= MAX_PATH_BYTES:
                files.setdefault(output[path[0] : path[1]].decode("utf-8", "replace"))
                named += 1
            else:
                more += 1
        if named >= kept:
            more += tokens.skip_one_path_records()
    if header is not None:
        commits.append(_commit(output, header, files, more))
    return commits


class _Tokens:
    """The NUL-ended tokens of ``data`` up to ``end``, as spans (``str.split`` would copy them all),
    the last the one after the last NUL."""

    def __init__(self, data: bytes, end: int) -> None:
        self.data, self.end, self.at = data, end, 0

    def next(self) -> tuple[int, int] | None:
        if self.at > self.end:
            return None
        start = self.at
        stop = self.data.find(b"\0", start, self.end)
        stop = self.end if stop < 0 else stop
        self.at = stop + 1
        return start, stop

    def skip_one_path_records(self) -> int:
        """Pass over the one-path file records that follow; how many there were."""
        found = _ONE_PATH_RECORDS_RE.match(self.data, self.at, self.end)
        stop = self.at if found is None else found.end()
        count = self.data.count(b"\0", self.at, stop) // 2  # a status and a path each
        self.at = stop
        return count


def _commit(data: bytes, header: tuple[int, int], files: dict[str, None], more: int) -> Commit:
    """The commit of the header token at ``header`` in ``data`` (``\\x1e`` then its fields)."""
    stop = header[1]
    cuts = [header[0]]  # the record mark, then each field separator: a field is between two cuts
    while len(cuts) < 8 and (cut := data.find(_FIELD_BYTE, cuts[-1] + 1, stop)) >= 0:
        cuts.append(cut)
    cuts += [stop] * (9 - len(cuts))
    sha, parents, name, email, seconds, decorations, subject = (
        _text(data, cuts[i] + 1, cuts[i + 1], chars) for i, chars in enumerate(_FIELD_CHARS)
    )
    leading = _LEADING_SPACE_RE.match(data, cuts[7] + 1, stop)
    body = _text(data, leading.end() if leading else stop, stop, MAX_MESSAGE_CHARS).strip()
    grafted = "grafted" in (d.strip() for d in decorations.split(","))
    return Commit(
        sha=sha,
        author_name=name,
        author_email=email,
        authored_at=_utc(seconds),
        subject=subject,
        body=body,
        # A shallow clone's boundary commit "adds" the whole tree: that is no change.
        files=() if grafted else tuple(files),
        parents=tuple(parents.split()[:MAX_PARENTS]),  # each of at most 65 characters, a space after
        more_files=0 if grafted else more,
    )


def _text(data: bytes, start: int, stop: int, chars: int) -> str:
    """The first ``chars`` characters of ``data[start:stop]``, copying no more than their bytes:
    at most 4 bytes a character, they are whole in the first ``4 * chars``."""
    end = stop if stop - start <= 4 * chars else start + 4 * chars
    return data[start:end].decode("utf-8", "replace")[:chars]


def _utc(seconds: str) -> datetime:
    try:
        return datetime.fromtimestamp(int(seconds), UTC)
    except (ValueError, OverflowError, OSError):
        return datetime.fromtimestamp(0, UTC)


def history_notes(root: Path) -> list[str]:
    """What a person should know about ``root``'s history before trusting a bootstrap of it:
    not a repository, no commits yet, or a shallow clone. Empty when the history is whole."""

    def ask(*args: str) -> str | None:
        answer = _run_git(root, list(args))
        return answer.decode("utf-8", "replace").strip() if answer is not None else None

    if ask("rev-parse", "--is-inside-work-tree") != "true":
        return [
            f"{root} is not inside a git repository: its code is indexed, but there is no history to read."
        ]
    if ask("rev-parse", "--verify", "--quiet", "HEAD^{commit}") is None:
        return [
            f"{root} has no commits yet: its code is indexed; commit, then bootstrap again for its history."
        ]
    if ask("rev-parse", "--is-shallow-repository") == "true":
        return [
            f"{root} is a shallow clone: only the commits it holds are read, and blame stops at its "
            "oldest one. Run `git fetch --unshallow`, then bootstrap again, for the whole history."
        ]
    return []


class GitLog:
    """The ``GitHistory`` port: ``read_history``, ``line_commits`` (as ``blame_files``),
    ``notes``, ``head`` and ``renames`` above."""

    def notes(self, root: Path) -> list[str]:
        return history_notes(root)

    def read_history(
        self, root: Path, *, max_commits: int, before: datetime | None, merges: bool, revision: str
    ) -> list[Commit]:
        return read_history(root, max_commits=max_commits, before=before, merges=merges, revision=revision)

    def blame_files(
        self, root: Path, paths: Sequence[str], since: datetime | None = None
    ) -> Generator[tuple[str, list[str]], None, None]:
        """``line_commits`` of each of ``paths``, in their order, ``BLAME_PROCESSES`` git
        processes at a time over one ``blame_graph``; the files whose commits since ``since`` the
        diffs vouch for, from those diffs instead (``git_diff_lines``). Closing the iterator early
        cancels the blames not yet started and waits for the running ones."""
        known = lines_from_diffs(root, paths, since)  # the diffs say it: no blame needed
        if all(path in known for path in paths):  # no commit-graph to write either
            yield from ((path, known[path]) for path in paths)
            return
        with blame_graph(root) as graph, ThreadPoolExecutor(BLAME_PROCESSES, "graphmem-blame") as pool:
            pending = [
                (path, None if path in known else pool.submit(self.line_commits, root, path, since, graph))
                for path in paths
            ]
            try:
                for path, future in pending:
                    yield path, known[path] if future is None else future.result()
            finally:
                for _, future in pending:
                    if future is not None:
                        future.cancel()

    def line_commits(
        self, root: Path, path: str, since: datetime | None = None, graph: Path | None = None
    ) -> list[str]:
        return line_commits(root, path, since, graph=graph)

    def head(self, root: Path) -> str | None:
        return head_commit(root)

    def renames(self, root: Path, since: str) -> dict[str, str]:
        return renames(root, since)
