"""Commits read from git history, and what bootstrap learns from them.

Pure: ``adapters.git_history`` reads the commits; these functions turn one into a
memory text, find the issues its message closes, and count the files changed together.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from itertools import combinations

from graphmem.core.models import EntityKind
from graphmem.core.refs import find_refs
from graphmem.core.text import clip, sentence

MAX_SUBJECT_CHARS = 200
MAX_BODY_CHARS = 300  # the first paragraph of the body: usually the "why"
MAX_CLOSING_REFS = 20  # refs in one "Fixes #1, #2 and #3" list
# Above this many files a commit is a reformat, a vendoring or a rename sweep: its
# pairs say nothing about which files belong together (50 files already make 1,225 pairs).
MAX_CO_CHANGE_FILES = 50

# GitLab's default closing pattern (and GitHub's keywords): "Fixes #12", "closes: #1, #2 and #3",
# "Resolves group/proj#4", "Implements issue #5", "Closes https://gitlab.example.com/g/p/-/issues/6".
_CLOSING_KEYWORD_RE = re.compile(
    r"\b(?:clos(?:e[sd]?|ing)|fix(?:e[sd]|ing)?|resolv(?:e[sd]?|ing)|implement(?:s|ed|ing)?)\b:?[ \t]+",
    re.IGNORECASE,
)
_FIRST_GAP_RE = re.compile(r"(?:issues?[ \t]+)?", re.IGNORECASE)
_NEXT_GAP_RE = re.compile(r"[ \t]*,?[ \t]*(?:and[ \t]+)?(?:issues?[ \t]+)?", re.IGNORECASE)
# One word of a ref list with what may come before it: a comma or spaces, "and", "issue".
_LIST_WORD_RE = re.compile(
    r"(?:[ \t]*,[ \t]*|[ \t]+)?(?:and[ \t]+)?(?:issues?[ \t]+)?([^\s,]+)", re.IGNORECASE
)
_REF_LIKE_RE = re.compile(r"[#!&][0-9]|://")
# "Signed-off-by: Ana <ana@example.com>", "Change-Id: I8f…": trailers, not prose ("Fixes: #12" stays).
_TRAILER_RE = re.compile(r"^[A-Za-z]+(?:-[A-Za-z]+)+: \S")


@dataclass(frozen=True, slots=True)
class Commit:
    """One commit of a repository's history.

    ``files`` are the paths the commit changed, relative to the project root, POSIX;
    empty for merge commits (their changes are in the merged commits) and for the
    boundary commit of a shallow clone (its "changes" would be the whole tree).
    ``parents`` are the parent shas: two or more for a merge.
    """

    sha: str
    author_name: str
    author_email: str
    authored_at: datetime  # timezone-aware, UTC
    subject: str
    body: str
    files: tuple[str, ...]
    parents: tuple[str, ...] = ()

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
    if commit.files:
        parts.append(f"Changed {_files_phrase(commit.files)}.")
    return " ".join(parts)


def closing_refs(message: str) -> list[str]:
    """The issues a commit message closes, as written: ``["#12", "group/proj#4", "https://…/issues/7"]``.

    A ref counts when it follows a closing keyword (close, closes, closed, closing, fix,
    fixes, fixed, fixing, resolve…, implement…), optionally after ``:`` or ``issue``,
    or continues such a list (``Fixes #1, #2 and #3``). Only issues: an MR or an epic is
    not closed by a commit. Refs in code and refs after other words (``see #4``) do
    not count. Each text is returned once, in order; ``parse_ref`` reads it back.
    """
    found: list[str] = []
    for keyword in _CLOSING_KEYWORD_RE.finditer(message):
        segment = _ref_list(message, keyword.end())
        position, gap = 0, _FIRST_GAP_RE
        for ref in find_refs(segment) if segment else []:
            if gap.fullmatch(segment, position, ref.start) is None or ref.kind is not EntityKind.ISSUE:
                break
            if ref.raw not in found:
                found.append(ref.raw)
            position, gap = ref.end, _NEXT_GAP_RE
    return found


def _ref_list(message: str, start: int) -> str:
    """The run of ref-like words from ``start`` (``"#1, #2 and g/p#3"``); ``find_refs`` then checks them.

    Cutting the run first keeps a long message with many keywords linear: ``find_refs``
    only ever reads the few words after each keyword.
    """
    end = start
    for _ in range(MAX_CLOSING_REFS):
        word = _LIST_WORD_RE.match(message, end)
        if word is None or _REF_LIKE_RE.search(word.group(1)) is None:
            break
        end = word.end()
    return message[start:end]


def co_changes(
    commits: Iterable[Commit], max_files_per_commit: int = MAX_CO_CHANGE_FILES
) -> dict[tuple[str, str], int]:
    """How often each pair of files changed in the same commit: ``{("a.py", "b.py"): 3}``.

    Pairs are sorted (``a < b``). Commits with more than ``max_files_per_commit``
    files are ignored (sweeping changes pair everything with everything).
    """
    counts: Counter[tuple[str, str]] = Counter()
    for commit in commits:
        files = sorted(set(commit.files))
        if 2 <= len(files) <= max_files_per_commit:
            counts.update(combinations(files, 2))
    return dict(counts)


def _files_phrase(files: tuple[str, ...]) -> str:
    if len(files) == 1:
        return files[0]
    if len(files) == 2:
        return f"{files[0]} and {files[1]}"
    return f"{files[0]} and {len(files) - 1:,} more files"


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
