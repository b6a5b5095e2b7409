"""Commits read from git history, and what bootstrap learns from them.

Pure: ``adapters.git_history`` reads the commits; these functions turn one into a
memory text and count the files changed together.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from itertools import combinations

from graphmem.core.text import clip, sentence

MAX_SUBJECT_CHARS = 200
MAX_BODY_CHARS = 300  # the first paragraph of the body: usually the "why"
MAX_PATH_CHARS = 200  # a changed file named in the text
# Above this many files a commit is a reformat, a vendoring or a rename sweep: its
# pairs say nothing about which files belong together (50 files already make 1,225 pairs).
MAX_CO_CHANGE_FILES = 50
# The most files a commit names (``Commit.files``); it counts the rest (``more_files``). Its files
# serve co-changes (up to ``MAX_CO_CHANGE_FILES``), links and blames (bootstrap's first 50) and
# its memory's text (two and a count): past this, names teach nothing and only cost memory.
MAX_COMMIT_FILES = 100

# "Signed-off-by: Ana <ana@example.com>", "Change-Id: I8f…": trailers, not prose ("Fixes: #12" stays).
_TRAILER_RE = re.compile(r"^[A-Za-z]+(?:-[A-Za-z]+)+: \S")


@dataclass(frozen=True, slots=True)
class Commit:
    """One commit of a repository's history.

    ``files`` are the paths the commit changed, relative to the project root, POSIX;
    empty for merge commits (their changes are in the merged commits) and for the
    boundary commit of a shallow clone (its "changes" would be the whole tree).
    ``parents`` are the parent shas: two or more for a merge. ``more_files`` counts the files it
    changed past those ``files`` names (a commit of thousands names ``MAX_COMMIT_FILES``).
    """

    sha: str
    author_name: str
    author_email: str
    authored_at: datetime  # timezone-aware, UTC
    subject: str
    body: str
    files: tuple[str, ...]
    parents: tuple[str, ...] = ()
    more_files: int = 0

    @property
    def is_merge(self) -> bool:
        return len(self.parents) > 1

    @property
    def message(self) -> str:
        """Subject and body as one text, as ``git log`` shows them."""
        return f"{self.subject}\n\n{self.body}".strip()


def commit_memory_text(commit: Commit) -> str:
    """One event memory for ``commit``: who, when, what and why, and the files it changed.

    ``"Commit 1a2b3c4 by Ana Lopez on 2026-03-02: Fix refund rounding (fixes #12).
    Changed src/payments/refund.py and 2 more files."`` The subject and the first
    paragraph of the body are cut at a word boundary, so the text stays under ~700
    characters whatever the commit holds.
    """
    author = clip(commit.author_name, 80) or commit.author_email or "an unknown author"
    subject = sentence(clip(commit.subject, MAX_SUBJECT_CHARS) or "(no message)")
    parts = [f"Commit {commit.sha[:7]} by {author} on {commit.authored_at:%Y-%m-%d}: {subject}"]
    why = _first_paragraph(commit.body)
    if why:
        parts.append(sentence(clip(why, MAX_BODY_CHARS)))
    if commit.files or commit.more_files:
        parts.append(f"Changed {_files_phrase(commit.files, commit.more_files)}.")
    return " ".join(parts)


def co_changes(
    commits: Iterable[Commit], max_files_per_commit: int = MAX_CO_CHANGE_FILES
) -> dict[tuple[str, str], int]:
    """How often each pair of files changed in the same commit: ``{("a.py", "b.py"): 3}``.

    Pairs are sorted (``a < b``). Commits with more than ``max_files_per_commit``
    files are ignored (sweeping changes pair everything with everything), and so are those
    that name only some of theirs (``more_files``).
    """
    counts: Counter[tuple[str, str]] = Counter()
    for commit in commits:
        files = sorted(set(commit.files))
        if not commit.more_files and 2 <= len(files) <= max_files_per_commit:
            counts.update(combinations(files, 2))
    return dict(counts)


def _files_phrase(files: tuple[str, ...], more: int) -> str:
    # A path is the repository's text: on one line (a name may hold newlines that would start
    # lines of their own wherever the memory is shown) and bounded.
    names = [clip(path, MAX_PATH_CHARS) for path in files[:2]]
    total = len(files) + more
    if not names:
        return f"{total:,} {'file' if total == 1 else 'files'}"
    if total == 1:
        return names[0]
    if total == 2 and len(names) == 2:
        return f"{names[0]} and {names[1]}"
    return f"{names[0]} and {total - 1:,} more {'file' if total == 2 else 'files'}"


def _first_paragraph(body: str) -> str:
    lines: list[str] = []
    for line in body.strip().splitlines():
        if not line.strip():
            if lines:
                break
            continue
        if _TRAILER_RE.match(line):
            break
        lines.append(line.strip())
    return " ".join(lines)
