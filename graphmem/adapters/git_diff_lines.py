"""Who last changed each line of a file the recent commits changed, read from their diffs instead
of ``git blame``.

Bootstrap links each new commit to the symbols whose lines it last changed at HEAD: ``git blame
-w --since`` of every file the commits touched (``git_history.GitLog.blame_files``), one git
process a file (about 3.5 ms of CPU each on a small file, more the more commits touched it; the
generated 3,030-file repository's first scan with 300 commits touches 984 files). Where the
commits since ``since`` are one line (no merge: a merge's side of a file is blame's to work out),
each commit's diff against its parent is what blame reads too: replaying the diffs
(``git log -p -w -U0``, the same whitespace rule) from HEAD back, newest first, a line at HEAD
is the newest commit's whose hunk added it, and a line no hunk added was last changed before
``since`` (``""``), or by the commit that added the file. :func:`lines_from_diffs` reads that
for all the files at once, with three git processes whatever their number: the commits and the
files they touched, their diffs, and the files' lengths at HEAD (``git cat-file --batch``). The
diffs are only of the files each commit modified (``--diff-filter=M``), the only ones replayed: a
commit that added a tree of files (a repository's first, a vendored library) is neither diffed by
git nor read here (the generated 3,030-file repository's 300 commits and its first: 9.7 MB of
diffs before, 0.2 MB).

A file it cannot vouch for is left to blame: one added beside a deletion (blame follows a file
renamed into it to older commits), deleted and added again, a binary or oddly named one, one
whose hunks do not add up to its length, and every file when git fails, the history since
``since`` has a merge, or no ``since`` is given. ``tests/unit/adapters/test_git_diff_lines.py``
holds it to ``git blame``'s answers.
"""

from __future__ import annotations

import logging
import re
import subprocess
from collections.abc import Collection
from datetime import UTC, datetime
from pathlib import Path

from graphmem.adapters.git import git_env, run_bounded

log = logging.getLogger(__name__)

GIT_TIMEOUT_S = 60.0
# The most of a ``git log`` read here (the generated repository's 300 commits: 0.2 MB of diffs).
# A file made huge and small again in turn gives gigabytes of diffs from a repository of
# kilobytes (held and parsed: 41 s and 2.6 GB for 20 commits): past this, blame answers.
MAX_DIFF_BYTES = 32 * 1024 * 1024
_RECORD, _FIELD = "\x1e", "\x1f"
_HUNK_RE = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_SHA_RE = re.compile(r"[0-9a-f]{40,64}")


def lines_from_diffs(root: Path, paths: Collection[str], since: datetime | None) -> dict[str, list[str]]:
    """For each of ``paths`` (relative to ``root``) whose changes since ``since`` could be read
    without blame (see the module doc): the sha that last changed each of its lines at HEAD,
    ``""`` for a line last changed before ``since``, as ``git blame -w --since`` says it."""
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
    changes = _replayable(names.decode("utf-8", "surrogateescape"), set(paths), head.decode().strip())
    if not changes:
        return {}
    hunks: dict[str, dict[str, list[Hunk]]] = {
        path: {} for path, (changers, _) in changes.items() if not changers
    }
    if len(hunks) < len(changes):
        patches = _git(root, "-c", "core.quotePath=false", "log", after, f"--format={_RECORD}%H",
                       "-p", "-w", "-U0", "--no-renames", "--relative", "--no-color", "--no-ext-diff",
                       "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/", "--diff-filter=M", "HEAD",
                       "--")  # fmt: skip
        if patches is not None:
            hunks |= _hunks(patches, {path: changers for path, (changers, _) in changes.items() if changers})
    found: dict[str, list[str]] = {}
    for path, lines in _lengths(root, sorted(hunks)).items():
        changers, base = changes[path]
        shas = _replay(lines, [(sha, hunks[path].get(sha, [])) for sha in changers], base)
        if shas is not None:
            found[path] = shas
    return found


Hunk = tuple[int, int, int, int]  # a -U0 hunk's old start and count, new start and count


def _replay(lines: int, diffs: list[tuple[str, list[Hunk]]], base: str) -> list[str] | None:
    """Each of a file's ``lines`` at HEAD credited to the newest of ``diffs`` (newest first: each
    commit's hunks against its parent) whose hunk added it, else to ``base``; None when a diff
    does not fit the file as the newer ones left it (blame says then)."""
    shas: list[str | None] = [None] * lines
    at_head: list[int | None] = list(range(lines))  # each line of this version: its line at HEAD
    for sha, hunks in diffs:
        older: list[int | None] = []
        done = 0  # lines of this version passed
        for old_start, old_count, new_start, new_count in hunks:
            new_first = new_start - 1 if new_count else new_start  # -U0: after line N when empty
            old_first = old_start - 1 if old_count else old_start
            if new_first < done or new_first + new_count > len(at_head):
                return None
            older += at_head[done:new_first]
            if len(older) != old_first:
                return None
            for line in at_head[new_first : new_first + new_count]:
                if line is not None and shas[line] is None:
                    shas[line] = sha
            older += [None] * old_count  # lines of the parent this commit replaced
            done = new_first + new_count
        at_head = older + at_head[done:]
    return [base if sha is None else sha for sha in shas]


def _replayable(output: str, wanted: set[str], head: str) -> dict[str, tuple[list[str], str]]:
    """Path -> (the commits that modified it, newest first; the commit its other lines are from,
    ``""`` for before ``since``), of ``wanted`` modified (``M``) only, after being added (``A``)
    at most once, by the oldest of its commits, one that deleted no file (a rename, whose lines
    blame follows to the old name, deletes one). Empty unless the commits are one line from
    ``head`` (a merge, or a commit dated before ``since`` between two after it, which blame
    would stop at)."""
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
    found: dict[str, tuple[list[str], str]] = {}
    for path in wanted & touches.keys():
        changes = touches[path]
        added = changes[-1][1] == "A" and changes[-1][0] not in deleting
        base = changes.pop()[0] if added else ""  # its lines, unless a later commit changed them
        if all(kind == "M" for _, kind in changes):
            found[path] = ([changer for changer, _ in changes], base)
    return found


def _hunks(output: bytes, changers: dict[str, list[str]]) -> dict[str, dict[str, list[Hunk]]]:
    """Path -> commit -> the hunks of that commit's diff of it, for the paths of ``changers``
    (each path's commits) whose diffs could be read (a whitespace-only change has none)."""
    hunks: dict[str, dict[str, list[Hunk]]] = {path: {} for path in changers}
    doubtful: set[str] = set()
    sha, path = "", None
    for line in output.split(b"\n"):
        if line.startswith(_RECORD.encode()):
            sha, path = line[1:].decode("ascii", "replace").strip(), None
        elif line.startswith(b"diff --git "):
            path = _diff_path(line)
            if path is None:  # a name git quoted: which of the commit's files it is, blame says
                doubtful |= {p for p, shas in changers.items() if sha in shas}
            elif sha not in changers.get(path, ()):
                path = None
        elif path is not None and line.startswith(b"Binary files "):
            doubtful.add(path)
        elif path is not None and (match := _HUNK_RE.match(line)):
            old_start, old_count, new_start, new_count = match.groups()
            hunks[path].setdefault(sha, []).append(
                (int(old_start), _count(old_count), int(new_start), _count(new_count))
            )
    return {path: found for path, found in hunks.items() if path not in doubtful}


def _count(group: bytes | None) -> int:
    return 1 if group is None else int(group)


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
    output = _cat_file(root, request)
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


def _git(root: Path, *args: str) -> bytes | None:
    """What git prints, or None when it fails or prints over ``MAX_DIFF_BYTES``."""
    try:
        status, output, _ = run_bounded(
            ["git", *args], root, timeout_s=GIT_TIMEOUT_S, max_bytes=MAX_DIFF_BYTES
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.info("git history: git %s in %s failed (%s); blame instead", args[0], root, exc)
        return None
    if len(output) > MAX_DIFF_BYTES:
        log.info("git history: git printed over %d MiB in %s; blame instead", MAX_DIFF_BYTES >> 20, root)
        return None
    return output if status == 0 else None


def _cat_file(root: Path, request: bytes) -> bytes | None:
    """``git cat-file --batch`` of ``request``: the files' own bytes, each a file of the listing."""
    try:
        done = subprocess.run(
            ["git", "cat-file", "--batch"], cwd=root, env=git_env(), input=request, capture_output=True,
            timeout=GIT_TIMEOUT_S, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.info("git history: git cat-file in %s failed (%s); blame instead", root, exc)
        return None
    return done.stdout if done.returncode == 0 else None
