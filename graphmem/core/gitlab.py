"""What graphmem knows about GitLab merge requests, issues, epics and people.

The GitLab adapter (``adapters/gitlab_api.py``) fills these from the REST v4 API;
the enrichment service stores them as nodes and edges. Pure data; no I/O.
Projects are full paths (``group/sub/project``), groups likewise (``group/sub``).
"""

from __future__ import annotations

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


@dataclass(frozen=True, slots=True)
class MergeRequestData:
    project: str
    iid: int
    title: str
    state: str  # opened, closed, merged, locked
    draft: bool
    author: Person | None
    assignees: tuple[Person, ...]
    reviewers: tuple[Person, ...]
    labels: tuple[str, ...]
    milestone: str | None
    source_branch: str
    target_branch: str
    merged_at: datetime | None
    created_at: datetime | None
    updated_at: datetime | None
    description: str  # at most MAX_DESCRIPTION_CHARS
    web_url: str
    changed_files: tuple[ChangedFile, ...]  # at most MAX_CHANGED_FILES
    changed_files_total: int  # every changed file, counted (GitLab's changes_count may say "1000+")
    closes: tuple[IssueRefData, ...]


@dataclass(frozen=True, slots=True)
class IssueData:
    project: str
    iid: int
    title: str
    state: str  # opened, closed
    author: Person | None
    assignees: tuple[Person, ...]
    labels: tuple[str, ...]
    milestone: str | None
    created_at: datetime | None
    updated_at: datetime | None
    closed_at: datetime | None
    description: str
    web_url: str
    epic: tuple[str, int] | None  # (group path, epic iid)
    related_merge_requests: tuple[tuple[str, int], ...]  # (project path, MR iid)


@dataclass(frozen=True, slots=True)
class EpicData:
    group: str
    iid: int
    title: str
    state: str  # opened, closed
    author: Person | None
    labels: tuple[str, ...]
    created_at: datetime | None
    updated_at: datetime | None
    description: str
    web_url: str
    parent: tuple[str, int] | None  # (group path, epic iid)
    child_issues: tuple[IssueRefData, ...]
    child_epics: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class GitLabProbe:
    """What a check of the configured instance found."""

    url: str
    version: str | None  # GitLab's version, when the token may read it
    username: str | None  # whose token it is
