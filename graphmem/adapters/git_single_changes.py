"""Who last changed each line of a file only one commit changed lately, read from that commit's
diff instead of ``git blame``.

Bootstrap links each new commit to the symbols whose lines it last changed at HEAD: ``git blame
-w --since`` of every file the commits touched (``git_history.GitLog.blame_files``), one git
process a file (about 3.5 ms of CPU each; the generated 3,030-file repository's first scan with
300 commits blames 984 files). Most files a history touches, one commit alone changed since the
blames' ``since``. Where the commits since then are one line (no merge: a merge's side of a file is
blame's to work out), HEAD's version of such a file is that commit's, so blame would say: the
lines of that commit's hunks (``git log -p -w -U0``, the same whitespace rule) are its own, every
other line was last changed before ``since`` (``""``). :func:`single_change_lines` reads that for
all the files at once, with three git processes whatever their number: the commits and the
files they touched, their diffs, and the files' lengths at HEAD (``git cat-file --batch``).

A file it cannot vouch for is left to blame: one added by its commit (blame follows a file
renamed into it to older commits), a binary or oddly named one, one touched by several commits,
and every file when git fails, the history since ``since`` has a merge, or no ``since`` is given.
``tests/unit/adapters/test_git_single_changes.py`` holds it to ``git blame``'s answers.
"""

from __future__ import annotations

import logging
import re
import subprocess
from collections.abc import Collection
from datetime import UTC, datetime
from pathlib import Path

from graphmem.adapters.git import git_env

log = logging.getLogger(__name__)

GIT_TIMEOUT_S = 60.0
_RECORD, _FIELD = "\x1e", "\x1f"
_HUNK_RE = re.compile(rb"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
_SHA_RE = re.compile(r"[0-9a-f]{40,64}")


def single_change_lines(root: Path, paths: Collection[str], since: datetime | None) -> dict[str, list[str]]:
    """For each of ``paths`` (relative to ``root``) that one commit since ``since`` changed and
    could be read without blame (see the module doc): the sha that last changed each of its lines
    at HEAD, ``""`` for a line last changed before ``since``, as ``git blame -w --since`` says it."""
    if since is None or not paths:
        return {}
    after = "--since=" + since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    names = _git(root, "log", after, f"--format={_RECORD}%H{_FIELD}%P", "--name-status", "--no-renames",
                 "--relative", "-z", "HEAD", "--")  # fmt: skip
    if names is None:
        return {}
    head = _git(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    if head is None:
        return {}
    single = _single_changes(names.decode("utf-8", "surrogateescape"), set(paths), head.decode().strip())
    if not single:
        return {}
    changers = {path: changer for path, (changer, _) in single.items() if changer}
    hunks: dict[str, list[tuple[int, int]]] = {path: [] for path in single if path not in changers}
    if changers:
        patches = _git(root, "-c", "core.quotePath=false", "log", after, f"--format={_RECORD}%H",
                       "-p", "-w", "-U0", "--no-renames", "--relative", "--no-color", "--no-ext-diff",
                       "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/", "HEAD", "--")  # fmt: skip
        if patches is not None:
            hunks |= _hunks(patches, changers)
    found: dict[str, list[str]] = {}
    for path, lines in _lengths(root, sorted(hunks)).items():
        changer, base = single[path]
        shas = [base] * lines
        for start, count in hunks[path]:
            end = min(start - 1 + count, lines)
            shas[start - 1 : end] = [changer] * max(end - start + 1, 0)
        found[path] = shas
    return found


def _single_changes(output: str, wanted: set[str], head: str) -> dict[str, tuple[str, str]]:
    """Path -> (the one commit that modified it, or ``""``; the commit its other lines are from,
    ``""`` for before ``since``), of ``wanted`` modified (``M``) by one commit at most and added
    (``A``) at most by one older commit that deleted no file (a rename, whose lines blame follows
    to the old name, deletes one). Empty unless the commits are one line from ``head`` (a merge,
    or a commit dated before ``since`` between two after it, which blame would stop at)."""
    touches: dict[str, list[tuple[str, str]]] = {}  # newest first
    deleting: set[str] = set()
    parent_of: dict[str, str] = {}
    tokens = output.split("\0")
    sha = ""
    i = 0
    while i < len(tokens):
        token = tokens[i].lstrip("\n")
        i += 1
        if token.startswith(_RECORD):
            sha, _, parents = token[1:].partition(_FIELD)
            if len(parents.split()) > 1 or not _SHA_RE.fullmatch(sha):
                return {}  # a merge: blame works out which side each line came from
            parent_of[sha] = parents.strip()
            continue
        if not token or not sha or i >= len(tokens):
            continue
        path = tokens[i]
        i += 1
        touches.setdefault(path, []).append((sha, token))
        if token == "D":
            deleting.add(sha)
    at, chain = head, 0
    while at in parent_of:
        at, chain = parent_of[at], chain + 1
    if chain != len(parent_of):
        return {}
    found: dict[str, tuple[str, str]] = {}
    for path in wanted & touches.keys():
        changes = touches[path]
        added = changes[-1][1] == "A" and changes[-1][0] not in deleting
        base = changes.pop()[0] if added else ""  # its lines, unless a later commit changed them
        if not changes:
            found[path] = ("", base)
        elif len(changes) == 1 and changes[0][1] == "M":
            found[path] = (changes[0][0], base)
    return found


def _hunks(output: bytes, single: dict[str, str]) -> dict[str, list[tuple[int, int]]]:
    """Path -> the (first line, line count) at HEAD of each hunk of its one commit's diff, for the
    paths of ``single`` whose diff could be read (a whitespace-only change has none)."""
    hunks: dict[str, list[tuple[int, int]]] = {path: [] for path in single}
    doubtful: set[str] = set()
    sha, path = "", None
    for line in output.split(b"\n"):
        if line.startswith(_RECORD.encode()):
            sha, path = line[1:].decode("ascii", "replace").strip(), None
        elif line.startswith(b"diff --git "):
            path = _diff_path(line)
            if path is None:  # a name git quoted: which of the commit's files it is, blame says
                doubtful |= {p for p, s in single.items() if s == sha}
            elif single.get(path) != sha:
                path = None
        elif path is not None and line.startswith(b"Binary files "):
            doubtful.add(path)
        elif path is not None and (match := _HUNK_RE.match(line)):
            count = 1 if match.group(2) is None else int(match.group(2))
            if count:
                hunks[path].append((int(match.group(1)), count))
    return {path: found for path, found in hunks.items() if path not in doubtful}


def _diff_path(line: bytes) -> str | None:
    """The path of a ``diff --git a/P b/P`` line (no renames: both sides are one path); None
    when git quoted it."""
    rest = line[len(b"diff --git ") :].decode("utf-8", "surrogateescape")
    if not rest.startswith("a/") or (len(rest) - 5) % 2:
        return None
    half = (len(rest) - 5) // 2
    path = rest[2 : 2 + half]
    return path if rest[2 + half :] == f" b/{path}" else None


def _lengths(root: Path, paths: list[str]) -> dict[str, int]:
    """Lines of each of ``paths`` at HEAD, counted as blame counts them (a last line without its
    newline is one); a path git cannot read is left out."""
    if not paths:
        return {}
    request = "".join(f"HEAD:./{path}\n" for path in paths).encode("utf-8", "surrogateescape")
    output = _git(root, "cat-file", "--batch", stdin=request)
    if output is None or any("\n" in path for path in paths):
        return {}
    lengths: dict[str, int] = {}
    at = 0
    for path in paths:
        end = output.index(b"\n", at)
        header = output[at:end].split()
        at = end + 1
        if len(header) != 3 or header[1] != b"blob":
            continue  # "missing": not at HEAD
        size = int(header[2])
        data = output[at : at + size]
        at += size + 1
        lengths[path] = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    return lengths


def _git(root: Path, *args: str, stdin: bytes | None = None) -> bytes | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=root, env=git_env(), input=stdin, capture_output=True,
            timeout=GIT_TIMEOUT_S, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.info("git history: git %s in %s failed (%s); blame instead", args[0], root, exc)
        return None
    return done.stdout if done.returncode == 0 else None
