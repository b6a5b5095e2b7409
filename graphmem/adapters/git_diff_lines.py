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
for all the files at once, with a few git processes whatever their number (one more for each
``MAX_DIFF_BYTES`` of files): the commits and the files they touched, their diffs, the files'
sizes at HEAD (``git cat-file --batch-check``) and their lengths (``git cat-file --batch``). The
diffs are only of the files each commit modified (``--diff-filter=M``), the only ones replayed: a
commit that added a tree of files (a repository's first, a vendored library) is neither diffed by
git nor read here (the generated 3,030-file repository's 300 commits and its first: 9.7 MB of
diffs before, 0.2 MB).

A file it cannot vouch for is left to blame: one added beside a deletion (blame follows a file
renamed into it to older commits), deleted and added again, a binary or oddly named one, one
whose hunks do not add up to its length, one over the code graph's ``MAX_SOURCE_BYTES`` at HEAD
(never read: a gigabyte of zeros is a megabyte in a repository), and every file when git fails,
the history since ``since`` has a merge, or no ``since`` is given.
``tests/unit/adapters/test_git_diff_lines.py`` holds it to ``git blame``'s answers.
"""

from __future__ import annotations

import logging
import re
import subprocess
from collections.abc import Collection, Iterator
from datetime import UTC, datetime
from pathlib import Path

from graphmem.adapters.git import run_bounded
from graphmem.core.skipped_files import MAX_SOURCE_BYTES

log = logging.getLogger(__name__)

GIT_TIMEOUT_S = 60.0
# The most of a ``git log`` read here (the generated repository's 300 commits: 0.2 MB of diffs).
# A file made huge and small again in turn gives gigabytes of diffs from a repository of
# kilobytes (held and parsed: 41 s and 2.6 GB for 20 commits): past this, blame answers.
MAX_DIFF_BYTES = 32 * 1024 * 1024
# What ``git cat-file --batch`` prints before each file's bytes ("<sha> blob <size>\n", and the
# newline after them), at most: the files one such git prints are read up to ``MAX_DIFF_BYTES``.
_BATCH_HEADER_BYTES = 96
# The most hunks of the diffs kept (about 150 bytes each: 36 MB), far more than the generated
# repository's 300 commits hold; 32 MiB of one-line hunks are 1.4 million of them (210 MB).
MAX_HUNKS = 250_000
_RECORD, _FIELD = "\x1e", "\x1f"
_TOKEN_RE = re.compile(rb"([^\0]*)(?:\0|\Z)")  # a token of git's ``-z`` output, up to its NUL
_HUNK_RE = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_SHA_RE = re.compile(r"[0-9a-f]{40,64}")
# The lines of ``git log -p`` read: a commit's, a file's diff header, a binary file's, a hunk's
# header. The changed lines between them (each after its "+" or "-") are passed over where they
# are: split into a list, the 30 MB diff of a 10-million-line file cut to five lines was 600 MB.
_PATCH_LINE_RE = re.compile(rb"^(?:\x1e|diff --git |Binary files |@@ -).*", re.MULTILINE)


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
    changes = _replayable(names, set(paths), head.decode("ascii", "replace").strip())
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
    does not fit the file as the newer ones left it, or makes an older version of it longer than
    ``MAX_SOURCE_BYTES`` lines, each an item of a list here (blame says then)."""
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
            if len(older) != old_first or old_first + old_count > MAX_SOURCE_BYTES:
                return None
            for line in at_head[new_first : new_first + new_count]:
                if line is not None and shas[line] is None:
                    shas[line] = sha
            older += [None] * old_count  # lines of the parent this commit replaced
            done = new_first + new_count
        at_head = older + at_head[done:]
        if len(at_head) > MAX_SOURCE_BYTES:
            return None
    return [base if sha is None else sha for sha in shas]


def _replayable(output: bytes, wanted: set[str], head: str) -> dict[str, tuple[list[str], str]]:
    """Path -> (the commits that modified it, newest first; the commit its other lines are from,
    ``""`` for before ``since``), of ``wanted`` modified (``M``) only, after being added (``A``)
    at most once, by the oldest of its commits, one that deleted no file (a rename, whose lines
    blame follows to the old name, deletes one). Empty unless the commits are one line from
    ``head`` (a merge, or a commit dated before ``since`` between two after it, which blame
    would stop at). Only the ``wanted`` paths' changes are kept, the others passed over where
    they are: split and kept, 32 MiB of a history's changed files were 720 MB."""
    names = {path.encode("utf-8", "surrogateescape"): path for path in wanted}
    touches: dict[str, list[tuple[str, str]]] = {}  # newest first
    deleting: set[str] = set()
    parent_of: dict[str, str] = {}
    sha = ""
    status: bytes | None = None  # a change's status, whose path is the next token
    for matched in _TOKEN_RE.finditer(output):
        token = matched.group(1)
        if status is not None:
            path = names.get(token)
            if path is not None:
                touches.setdefault(path, []).append((sha, status.decode("ascii", "replace")))
            if status == b"D":
                deleting.add(sha)
            status = None
            continue
        token = token.lstrip(b"\n")
        if token.startswith(_RECORD.encode()):
            header, _, parents = token[1:].decode("ascii", "replace").partition(_FIELD)
            if len(parents.split()) > 1 or not _SHA_RE.fullmatch(header):
                return {}  # a merge: blame works out which side each line came from
            sha = header
            parent_of[sha] = parents.strip()
        elif token and sha:
            status = token
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
    (each path's commits) whose diffs could be read (a whitespace-only change has none); none past
    ``MAX_HUNKS`` of them."""
    hunks: dict[str, dict[str, list[Hunk]]] = {path: {} for path in changers}
    doubtful: set[str] = set()
    quoted: set[str] = set()  # commits whose diff names a file git quoted
    read = 0
    sha, path = "", None
    for matched in _PATCH_LINE_RE.finditer(output):
        line = matched.group()
        if line.startswith(_RECORD.encode()):
            sha, path = line[1:].decode("ascii", "replace").strip(), None
        elif line.startswith(b"diff --git "):
            path = _diff_path(line)
            if path is None:  # a name git quoted: which of the commit's files it is, blame says
                quoted.add(sha)
            elif sha not in changers.get(path, ()):
                path = None
        elif path is not None and line.startswith(b"Binary files "):
            doubtful.add(path)
        elif path is not None and (match := _HUNK_RE.match(line)):
            read += 1
            if read > MAX_HUNKS:
                log.info("git history: over %d changes to read in the diffs; blame instead", MAX_HUNKS)
                return {}
            old_start, old_count, new_start, new_count = match.groups()
            hunks[path].setdefault(sha, []).append(
                (int(old_start), _count(old_count), int(new_start), _count(new_count))
            )
    doubtful |= {path for path, shas in changers.items() if quoted.intersection(shas)}
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
    newline is one); a path git cannot read, or whose file at HEAD is over the code graph's
    ``MAX_SOURCE_BYTES``, is left out (to blame)."""
    if not paths or any("\n" in path for path in paths):
        return {}
    blobs = _blobs(root, paths)
    if blobs is None:
        return {}
    lines: dict[str, int] = {}
    for batch in _batches(dict(blobs.values())):
        counted = _line_counts(root, batch)
        if counted is None:
            return {}
        lines |= counted
    return {path: lines[sha] for path, (sha, _) in blobs.items()}


def _batches(sizes: dict[str, int]) -> Iterator[dict[str, int]]:
    """``sizes`` (sha -> size) in parts whose files one ``git cat-file --batch`` prints in at most
    ``MAX_DIFF_BYTES``: each file is at most ``MAX_SOURCE_BYTES``, so one read holds a few dozen."""
    batch: dict[str, int] = {}
    total = 0
    for sha, size in sizes.items():
        if batch and total + size + _BATCH_HEADER_BYTES > MAX_DIFF_BYTES:
            yield batch
            batch, total = {}, 0
        batch[sha] = size
        total += size + _BATCH_HEADER_BYTES
    if batch:
        yield batch


def _blobs(root: Path, paths: list[str]) -> dict[str, tuple[str, int]] | None:
    """Path -> the sha and size of its file at HEAD (``git cat-file --batch-check``, which reads no
    file's bytes), of those ``paths`` that are files at HEAD of at most ``MAX_SOURCE_BYTES``;
    None when git fails."""
    request = "".join(f"HEAD:./{path}\n" for path in paths).encode("utf-8", "surrogateescape")
    output = _git(root, "cat-file", "--batch-check=%(objectname) %(objecttype) %(objectsize)", stdin=request)
    if output is None:
        return None
    answers = output.split(b"\n")
    if len(answers) != len(paths) + 1:
        return None
    blobs: dict[str, tuple[str, int]] = {}
    huge = 0
    for path, answer in zip(paths, answers, strict=False):
        fields = answer.split(b" ")
        # "<sha> blob <size>"; "<name> missing" for a path not at HEAD, which may hold spaces
        if len(fields) != 3 or fields[1] != b"blob" or not fields[2].isdigit():
            continue
        sha = fields[0].decode("ascii", "replace")
        if not _SHA_RE.fullmatch(sha):
            continue
        if int(fields[2]) > MAX_SOURCE_BYTES:
            huge += 1
            continue
        blobs[path] = (sha, int(fields[2]))
    if huge:
        log.info(
            "git history: %d file(s) in %s over %d bytes at HEAD; blame instead", huge, root, MAX_SOURCE_BYTES
        )
    return blobs


def _line_counts(root: Path, blobs: dict[str, int]) -> dict[str, int] | None:
    """Sha -> lines (as ``_lengths`` counts them) of the files ``blobs`` names (sha -> size), read
    with one ``git cat-file --batch``; None when git fails or says something else."""
    output = _git(root, "cat-file", "--batch", stdin="".join(f"{sha}\n" for sha in blobs).encode("ascii"))
    if output is None:
        return None
    counts: dict[str, int] = {}
    at = 0
    for sha, size in blobs.items():
        end = output.find(b"\n", at)
        if end < 0 or output[at:end] != f"{sha} blob {size}".encode("ascii"):
            return None
        start, stop = end + 1, end + 1 + size  # the file's bytes, counted where they are
        if stop > len(output):
            return None
        unended = size > 0 and output[stop - 1] != ord("\n")
        counts[sha] = output.count(b"\n", start, stop) + unended
        at = stop + 1
    return counts


def _git(root: Path, *args: str, stdin: bytes = b"") -> bytes | None:
    """What git prints, given ``stdin``, or None when it fails or prints over ``MAX_DIFF_BYTES``."""
    try:
        status, output, _ = run_bounded(
            ["git", *args], root, timeout_s=GIT_TIMEOUT_S, max_bytes=MAX_DIFF_BYTES, stdin=stdin
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.info("git history: git %s in %s failed (%s); blame instead", args[0], root, exc)
        return None
    if len(output) > MAX_DIFF_BYTES:
        log.info("git history: git printed over %d MiB in %s; blame instead", MAX_DIFF_BYTES >> 20, root)
        return None
    return output if status == 0 else None
