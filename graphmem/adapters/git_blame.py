"""What the code-memory benchmark asks git: commits, their changed lines, blame, file logs.

Every call runs ``git`` in the repository it is given, with the locale fixed and the
variables that would point git elsewhere removed. Nothing here writes to that
repository: ``shared_checkout`` makes a separate clone that borrows its objects.

No more of git's output is read than ``MAX_OUTPUT_BYTES`` (of a file, the code graph's
``MAX_SOURCE_BYTES``): a repository of kilobytes can make git print gigabytes.

Failures the caller can fix (not a repository, a shallow clone, no commits) raise
``InvalidInputError`` with what to do; a git command that fails later raises
``GraphmemError`` naming the command.
"""

from __future__ import annotations

import logging
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from graphmem.adapters.git import run_bounded
from graphmem.core.skipped_files import MAX_SOURCE_BYTES
from graphmem.errors import GraphmemError, InvalidInputError

log = logging.getLogger(__name__)

GIT_TIMEOUT_S = 300.0
# The most of one git command's output read: a history's commit list or messages (a million
# commits: about 100 MB), a commit's diff. A repository of kilobytes can make git print gigabytes.
MAX_OUTPUT_BYTES = 256 * 1024 * 1024
_HUNK_RE = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")
# The lines of a diff read: a file's header lines, a hunk's; the changed lines (each after its "+"
# or "-") are passed over where they are, never split into a list.
_DIFF_LINE_RE = re.compile(rb"^(?:diff --git |--- |\+\+\+ |@@ ).*", re.MULTILINE)
# A line of ``git blame -s -l``: ``[^]<sha> <line>) <text>``.
_BLAME_LINE_RE = re.compile(rb"^\^?([0-9a-fA-F]{40,64})(?= |$)", re.MULTILINE)
_C_ESCAPES = {
    "n": "\n",
    "t": "\t",
    '"': '"',
    "\\": "\\",
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "r": "\r",
    "v": "\v",
}


@dataclass(frozen=True, slots=True)
class CommitInfo:
    sha: str
    committed_at: int  # committer time, unix seconds
    parents: tuple[str, ...]


@dataclass(slots=True)
class FileChange:
    """One file's side of ``git diff -U0 C^ C``: old line ranges that were modified or
    deleted, and old lines after which lines were only inserted."""

    path: str  # the old path (the new one for an added file)
    added: bool = False
    changed: list[tuple[int, int]] = field(default_factory=list)  # (first, last), 1-based, inclusive
    inserted_after: list[int] = field(default_factory=list)

    @property
    def old_lines(self) -> set[int]:
        return {line for first, last in self.changed for line in range(first, last + 1)}


def git(repo: Path, *args: str, check: bool = True, stdin: bytes = b"") -> bytes:
    """``git args`` in ``repo``, given ``stdin``; its standard output, or ``GraphmemError`` when it
    fails (with ``check``) or prints over ``MAX_OUTPUT_BYTES``."""
    done = _bounded(repo, args, stdin=stdin)
    if done is None:
        raise GraphmemError(
            f"git {args[0]} in {repo} printed over {MAX_OUTPUT_BYTES >> 20} MiB: "
            "the benchmark reads no repository whose history is that large."
        )
    return _checked(repo, args, done) if check else done[1]


def _bounded(
    repo: Path, args: tuple[str, ...], *, stdin: bytes = b"", max_bytes: int | None = None
) -> tuple[int, bytes, bytes] | None:
    """``git args``: its exit status, output and errors; None when it printed over ``max_bytes``
    (``MAX_OUTPUT_BYTES`` unless given; it is stopped there). ``GraphmemError`` when it cannot
    run, or runs over ``GIT_TIMEOUT_S``."""
    max_bytes = MAX_OUTPUT_BYTES if max_bytes is None else max_bytes
    command = ["git", "-c", "core.quotePath=false", "-c", "log.showSignature=false", *args]
    try:
        done = run_bounded(command, repo, timeout_s=GIT_TIMEOUT_S, max_bytes=max_bytes, stdin=stdin)
    except subprocess.TimeoutExpired:
        raise GraphmemError(f"git {args[0]} in {repo} took over {GIT_TIMEOUT_S:.0f} s.") from None
    except OSError as exc:
        raise GraphmemError(f"Cannot run git in {repo} ({exc}): is git installed?") from None
    return None if len(done[1]) > max_bytes else done


def _checked(repo: Path, args: tuple[str, ...], done: tuple[int, bytes, bytes]) -> bytes:
    """The output of a git that succeeded; ``GraphmemError`` naming the command when it failed."""
    status, output, errors = done
    if status != 0:
        first = (errors.decode("utf-8", "replace").strip().splitlines() or [f"exit {status}"])[0]
        raise GraphmemError(f"git {args[0]} failed in {repo}: {first}")
    return output


def check_repository(path: Path) -> Path:
    """The repository's top folder (or git dir when bare); a clear error when ``path``
    is no repository with history of its own."""
    if not path.is_dir():
        raise InvalidInputError(f"{path} is not a directory: give the path of a git repository.")
    try:
        inside = git(path, "rev-parse", "--is-inside-work-tree", "--is-bare-repository", check=False)
    except GraphmemError as exc:
        raise InvalidInputError(str(exc)) from None
    flags = inside.decode().split()
    if len(flags) != 2:
        raise InvalidInputError(
            f"{path} is not a git repository: give a clone with its history (git clone URL, not a download)."
        )
    root = path.resolve()
    if flags[0] == "true":
        root = Path(git(path, "rev-parse", "--show-toplevel").decode().strip()).resolve()
    if git(root, "rev-parse", "--is-shallow-repository").decode().strip() == "true":
        raise InvalidInputError(
            f"{root} is a shallow clone: blame needs the whole history. "
            "Run `git fetch --unshallow` in it first."
        )
    if not git(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False).strip():
        raise InvalidInputError(f"{root} has no commits yet: there is no history to measure.")
    return root


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD^{commit}").decode().strip()


def non_merge_commits(repo: Path) -> list[CommitInfo]:
    """``git rev-list --no-merges HEAD``, newest first, with committer times and parents."""
    out = git(repo, "log", "--no-merges", "--format=%H %ct %P", "HEAD", "--")
    commits = []
    for line in out.decode().splitlines():
        sha, seconds, *parents = line.split()
        commits.append(CommitInfo(sha, int(seconds), tuple(parents)))
    return commits


def messages(repo: Path, shas: set[str]) -> dict[str, str]:
    """Subject and body of each commit in ``shas`` (reachable from HEAD), read of those alone."""
    if not shas:
        return {}
    request = "".join(f"{sha}\n" for sha in sorted(shas)).encode("ascii")
    out = git(repo, "log", "--no-walk", "--stdin", "--no-merges", "--encoding=UTF-8",
              "--format=%H%x1f%B%x1e", "--", stdin=request)  # fmt: skip
    found: dict[str, str] = {}
    for record in out.decode("utf-8", "replace").split("\x1e"):
        sha, _, text = record.strip("\n").partition("\x1f")
        if sha in shas:
            found[sha] = text.strip()
    return found


def diff_changes(repo: Path, parent: str, sha: str) -> list[FileChange]:
    """The old side of ``git diff -U0 --no-renames parent sha``, file by file; none when the diff
    is over ``MAX_OUTPUT_BYTES`` (the commit is not evaluated)."""
    args = ("diff", "-U0", "--no-renames", "--no-color", "--no-ext-diff", "--src-prefix=a/",
            "--dst-prefix=b/", parent, sha, "--")  # fmt: skip
    done = _bounded(repo, args)
    if done is None:
        log.info(
            "bench: the diff of %s in %s is over %d MiB; not evaluated", sha, repo, MAX_OUTPUT_BYTES >> 20
        )
        return []
    out = _checked(repo, args, done)
    changes: list[FileChange] = []
    current: FileChange | None = None
    in_header = False  # between a file's ``diff --git`` and its first hunk
    for found in _DIFF_LINE_RE.finditer(out):
        line = found.group()
        if line.startswith(b"diff --git "):
            current, in_header = None, True
        elif line.startswith(b"@@ "):
            in_header = False
            match = _HUNK_RE.match(line)
            if current is None or match is None:
                continue
            start, count = int(match.group(1)), int(match.group(2) or b"1")
            if count:
                current.changed.append((start, start + count - 1))
            else:
                current.inserted_after.append(start)
        elif not in_header:
            continue  # a changed line that reads as a header: "-- a/x" removed is "--- a/x"
        elif line.startswith(b"--- "):
            old = _path(line[4:], b"a/")
            current = FileChange(old) if old is not None else None
            if current is not None:
                changes.append(current)
        elif current is None and line.startswith(b"+++ "):
            new = _path(line[4:], b"b/")
            if new is not None:
                changes.append(FileChange(new, added=True))
    return changes


def blame_commits(repo: Path, rev: str, path: str, ranges: list[tuple[int, int]]) -> set[str]:
    """The commits ``git blame -w -s -l --root rev -- path`` gives for the lines in ``ranges``;
    none when its blame is over ``MAX_OUTPUT_BYTES``."""
    if not ranges:
        return set()
    spans = [arg for first, last in ranges for arg in ("-L", f"{first},{last}")]
    done = _bounded(repo, ("blame", "-w", "-s", "-l", "--root", *spans, rev, "--", path))
    if done is None:
        return set()
    return {found.group(1).decode("ascii") for found in _BLAME_LINE_RE.finditer(done[1])}


def file_at(repo: Path, rev: str, path: str) -> bytes | None:
    """The file ``path`` at ``rev``; None when it is not there, or is over the code graph's
    ``MAX_SOURCE_BYTES`` (the graph would not parse it either)."""
    done = _bounded(repo, ("cat-file", "blob", f"{rev}:{path}"), max_bytes=MAX_SOURCE_BYTES)
    return done[1] if done is not None and done[0] == 0 else None


def file_log(repo: Path, paths: list[str]) -> list[str]:
    """``git log --no-merges --format=%H HEAD -- paths``: the commits that touched them, newest first."""
    out = git(repo, "log", "--no-merges", "--format=%H", "HEAD", "--", *(f":(literal){p}" for p in paths))
    return out.decode().split()


def tree_at(repo: Path, before: int) -> str:
    """``git rev-list -1 --first-parent --before=<before> HEAD``."""
    out = git(repo, "rev-list", "-1", "--first-parent", f"--before={before}", "HEAD", "--").decode().strip()
    if not out:
        raise InvalidInputError(f"{repo} has no commit before the cut: too little history to measure.")
    return out


def shared_checkout(repo: Path, tree: str, dest: Path) -> None:
    """A clone of ``repo`` in ``dest`` that borrows its objects (every commit of ``repo``
    can be read in it), with ``tree`` checked out as a detached HEAD."""
    git(repo, "clone", "--quiet", "--shared", "--no-checkout", "--no-hardlinks", str(repo), str(dest))
    git(dest, "checkout", "--quiet", "--detach", tree)


def _path(raw: bytes, prefix: bytes) -> str | None:
    raw = raw.rstrip(b"\r")
    if raw == b"/dev/null":
        return None
    text = raw.decode("utf-8", "surrogateescape")
    if text.startswith('"') and text.endswith('"'):
        text = _unquote(text[1:-1])
    return text.removeprefix(prefix.decode())


def _unquote(text: str) -> str:
    out = bytearray()
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            nxt = text[index + 1]
            octal = text[index + 1 : index + 4]
            if len(octal) == 3 and all(digit in "01234567" for digit in octal) and octal <= "377":
                out.append(int(octal, 8))
                index += 4
                continue
            out += _C_ESCAPES.get(nxt, nxt).encode()
            index += 2
            continue
        out += char.encode("utf-8", "surrogateescape")
        index += 1
    return out.decode("utf-8", "surrogateescape")
