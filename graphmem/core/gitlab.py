"""What graphmem knows about GitLab merge requests, issues, epics and people.

The GitLab adapter (``adapters/gitlab_api.py``) fills these from the REST v4 API;
the enrichment service stores them as nodes and edges. Pure data; no I/O.
Projects are full paths (``group/sub/project``), groups likewise (``group/sub``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

# A description longer than this is cut (with a note): it is context, not an archive.
MAX_DESCRIPTION_CHARS = 4_000
# Changed files kept per merge request; the rest are counted, not linked.
MAX_CHANGED_FILES = 500


@dataclass(frozen=True, slots=True)
class Person:
    """A GitLab user."""

    username: str
    name: str = ""
    web_url: str = ""


@dataclass(frozen=True, slots=True)
class ChangedFile:
    """One file of a merge request's diff.

    ``ranges`` are the 1-based, inclusive line ranges of the *new* file that the diff
    touches (from its ``@@ -a,b +c,d @@`` hunk headers); empty when the diff was not
    sent (too large, binary) or the file was deleted.
    """

    new_path: str
    old_path: str
    new_file: bool = False
    deleted_file: bool = False
    renamed_file: bool = False
    ranges: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class IssueRefData:
    """An issue named by project path and iid (a closing issue, an epic's child)."""

    project: str
    iid: int
    title: str = ""
    state: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class GitLabItem:
    """What GitLab says of a merge request, an issue and an epic alike."""

    title: str
    state: str  # opened, closed; a merge request's also merged, locked
    author: Person | None
    labels: tuple[str, ...]
    created_at: datetime | None
    updated_at: datetime | None
    description: str  # at most MAX_DESCRIPTION_CHARS
    web_url: str


@dataclass(frozen=True, slots=True, kw_only=True)
class MergeRequestData(GitLabItem):
    project: str
    iid: int
    draft: bool
    assignees: tuple[Person, ...]
    reviewers: tuple[Person, ...]
    milestone: str | None
    source_branch: str
    target_branch: str
    merged_at: datetime | None
    changed_files: tuple[ChangedFile, ...]  # at most MAX_CHANGED_FILES
    changed_files_total: int  # every changed file, counted (GitLab's changes_count may say "1000+")
    closes: tuple[IssueRefData, ...]
    # False when GitLab did not say how many files changed and ``changed_files_total`` is a lower bound
    changed_files_total_exact: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class IssueData(GitLabItem):
    project: str
    iid: int
    assignees: tuple[Person, ...]
    milestone: str | None
    closed_at: datetime | None
    epic: tuple[str, int] | None  # (group path, epic iid)
    related_merge_requests: tuple[tuple[str, int], ...]  # (project path, MR iid)


@dataclass(frozen=True, slots=True, kw_only=True)
class EpicData(GitLabItem):
    group: str
    iid: int
    parent: tuple[str, int] | None  # (group path, epic iid)
    child_issues: tuple[IssueRefData, ...]
    child_epics: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class GitLabProbe:
    """What a check of the configured instance found."""

    url: str
    version: str | None  # GitLab's version, when the token may read it
    username: str | None  # whose token it is


# A hunk header of a unified diff: "@@ -a,b +c,d @@ optional section heading" (",b" and ",d" optional).
_HUNK_RE = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", re.MULTILINE)
DESCRIPTION_CUT_NOTE = "\n\n[… description cut by graphmem at {limit} of {total} characters]"


def hunk_ranges(diff: str) -> tuple[tuple[int, int], ...]:
    """The new-file line ranges (1-based, inclusive) of each hunk of a unified ``diff``.

    ``@@ -a,b +c,d @@`` gives ``(c, c + d - 1)``; a missing ``,d`` means one line. A hunk
    that only removes lines (``+c,0``) gives ``(c, c)``, the line after which lines went, so
    the symbol around a deletion counts as changed; ``+0,0`` (the file emptied or deleted)
    gives nothing. Overlapping or touching ranges are merged; the result is sorted.
    """
    found: list[tuple[int, int]] = []
    for match in _HUNK_RE.finditer(diff):
        start, count = int(match.group(1)), int(match.group(2) or 1)
        if count == 0:
            if start == 0:
                continue
            found.append((start, start))
        else:
            found.append((start, start + count - 1))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(found):
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return tuple(merged)


def cut_description(text: str | None, limit: int = MAX_DESCRIPTION_CHARS) -> str:
    """``text`` (None: "") cut to at most ``limit`` characters, ending with a note when cut."""
    text = text or ""
    if len(text) <= limit:
        return text
    note = DESCRIPTION_CUT_NOTE.format(limit=limit, total=len(text))
    return text[: max(limit - len(note), 0)].rstrip() + note
