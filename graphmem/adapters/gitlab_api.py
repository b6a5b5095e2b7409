"""One GitLab instance's merge requests, issues and epics, read into ``core.gitlab`` types.

``PythonGitLabClient`` implements ``core.gitlab_ports.GitLabClient``. It knows which REST v4 routes say
what (an MR's ``/diffs`` or ``/changes`` and ``/closes_issues``, an issue's epic and related MRs,
an epic's parent and children) and reads their JSON into the frozen types of ``core.gitlab``; an
answer of an unexpected shape becomes ``GitLabUnavailableError``. The requests themselves —
retries, ``Retry-After``, the translation of every python-gitlab and requests error into the
``GitLabError`` tree, the cache — are ``GitLabTransport``'s (``gitlab_transport.py``).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TypedDict, Unpack
from urllib.parse import urlsplit

from gitlab.utils import EncodedId

from graphmem.adapters.gitlab_transport import (
    MAX_STATED_TOTAL,
    GitLabTransport,
    JSONObject,
    ListRead,
    TransportOptions,
)
from graphmem.core.gitlab import (
    MAX_CHANGED_FILES,
    ChangedFile,
    EpicData,
    GitLabProbe,
    IssueData,
    IssueRefData,
    MergeRequestData,
    Person,
    cut_description,
    hunk_ranges,
)
from graphmem.errors import (
    GitLabAuthError,
    GitLabForbiddenError,
    GitLabNotFoundError,
    GitLabUnavailableError,
)

logger = logging.getLogger(__name__)

MAX_CLOSING_ISSUES = 200
MAX_RELATED_MERGE_REQUESTS = 200
MAX_EPIC_CHILDREN = 500

# What follows the first "/groups/" of ".../api/v4/groups/7/epics/2" (an epic's _links.parent) or
# "/groups/acme/shop/-/epics/5" (an issue's epic.url). Each pattern has one open-ended part, so a
# long hostile link is read in linear time (a search from every "/groups/" took quadratic time).
_EPIC_LINK_RE = re.compile(r"(?P<group>[^?#]+?)(?:/-)?/epics/(?P<iid>\d+)/?")
_MR_URL_RE = re.compile(r"https?://[^/?#]+(?P<path>/[^?#]*?)/-/merge_requests/(?P<iid>\d+)")


class PythonGitLabClient:
    """GitLab's REST v4 API (gitlab.com or self-managed, any path prefix or port) via python-gitlab.

    ``url`` is the instance (``https://gitlab.com``, ``https://example.com/gitlab``); ``token`` a
    personal, project or group access token with the ``read_api`` scope (None: anonymous, public
    data only). ``options`` are the transport's (timeouts, retries, cache TTL, TLS
    verification; see ``GitLabTransport``). Thread-safe.
    """

    def __init__(self, url: str, token: str | None, **options: Unpack[TransportOptions]) -> None:
        self._http = GitLabTransport(url, token, **options)
        self._url = self._http.url
        self._prefix = urlsplit(self._url).path  # "/gitlab" for an instance under a path, else ""
        self._group_paths: dict[int, str] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"PythonGitLabClient(url={self._url!r})"

    @property
    def url(self) -> str:
        """The instance URL, without a trailing slash."""
        return self._url

    def clear_cache(self) -> None:
        """Forget every cached answer (``graphmem enrich --refresh``)."""
        self._http.clear_cache()

    # -- the port -------------------------------------------------------------------------------

    def probe(self) -> GitLabProbe:
        """Check the instance and the token: ``GET /version``, and ``GET /user`` when a token is set.

        Never cached. A 401 with a token raises ``GitLabAuthError``; without a token the
        instance is reachable and both fields are None.
        """
        username: str | None = None
        if self._http.has_token:
            user = self._http.fetch("/user", "the token's user")
            username = _str(user.get("username")) or None
        try:
            version = _str(self._http.fetch("/version", "the GitLab version").get("version")) or None
        except (GitLabAuthError, GitLabForbiddenError, GitLabNotFoundError):
            version = None  # reachable; this token (or none) may not read the version
        return GitLabProbe(url=self._url, version=version, username=username)

    def merge_request(self, project: str, iid: int) -> MergeRequestData:
        """The merge request ``project!iid`` with its changed files (bounded) and closing issues."""
        what = f"merge request {_check_path(project, 'project')}!{_check_iid(iid)}"
        base = f"/projects/{EncodedId(project)}/merge_requests/{iid}"
        raw = self._http.get(base, what)
        files, total, exact = self._changed_files(base, raw, what)
        closes = self._http.optional_list(
            f"{base}/closes_issues", f"the issues {what} closes", MAX_CLOSING_ISSUES
        )
        with _shape(self._url, what):
            return MergeRequestData(
                project=project,
                iid=int(raw["iid"]),
                **_item(raw),
                draft=bool(raw.get("draft", raw.get("work_in_progress", False))),
                assignees=_people(raw.get("assignees")),
                reviewers=_people(raw.get("reviewers")),
                milestone=_milestone(raw.get("milestone")),
                source_branch=_str(raw.get("source_branch")),
                target_branch=_str(raw.get("target_branch")),
                merged_at=_time(raw.get("merged_at")),
                changed_files=files,
                changed_files_total=total,
                closes=tuple(r for r in (_issue_ref(i, project) for i in closes.items) if r is not None),
                changed_files_total_exact=exact,
            )

    def issue(self, project: str, iid: int) -> IssueData:
        """The issue ``project#iid`` with its epic (group path, iid) and related merge requests."""
        what = f"issue {_check_path(project, 'project')}#{_check_iid(iid)}"
        base = f"/projects/{EncodedId(project)}/issues/{iid}"
        raw = self._http.get(base, what)
        related = self._http.optional_list(
            f"{base}/related_merge_requests",
            f"the merge requests related to {what}",
            MAX_RELATED_MERGE_REQUESTS,
        )
        with _shape(self._url, what):
            epic = self._issue_epic(raw, project)
            return IssueData(
                project=project,
                iid=int(raw["iid"]),
                **_item(raw),
                assignees=_people(raw.get("assignees")),
                milestone=_milestone(raw.get("milestone")),
                closed_at=_time(raw.get("closed_at")),
                epic=epic,
                related_merge_requests=tuple(
                    dict.fromkeys(
                        r for r in (_mr_ref(m, project, self._prefix) for m in related.items) if r is not None
                    )
                ),
            )

    def epic(self, group: str, iid: int) -> EpicData:
        """The epic ``group&iid`` with its parent, child issues and child epics (each bounded)."""
        what = f"epic {_check_path(group, 'group')}&{_check_iid(iid)}"
        base = f"/groups/{EncodedId(group)}/epics/{iid}"
        raw = self._http.get(base, what)
        issues = self._http.optional_list(f"{base}/issues", f"the issues of {what}", MAX_EPIC_CHILDREN)
        # 403 here when the instance lacks multi-level epics (Ultimate): no child epics then.
        epics = self._http.optional_list(f"{base}/epics", f"the child epics of {what}", MAX_EPIC_CHILDREN)
        with _shape(self._url, what):
            return EpicData(
                group=group,
                iid=int(raw["iid"]),
                **_item(raw),
                parent=self._epic_parent(raw, group),
                child_issues=tuple(r for r in (_issue_ref(i, None) for i in issues.items) if r is not None),
                child_epics=tuple(r for r in (_epic_ref(e) for e in epics.items) if r is not None),
            )

    # -- merge request files --------------------------------------------------------------------

    def _changed_files(
        self, base: str, raw: JSONObject, what: str
    ) -> tuple[tuple[ChangedFile, ...], int, bool]:
        """The first ``MAX_CHANGED_FILES`` changed files, how many there are, and whether that is exact.

        ``/diffs`` (GitLab ≥ 15.7, paginated) first; ``/changes`` when it is 404. A total GitLab
        does not state (no ``X-Total`` above 10,000 rows; ``changes_count`` "1000+"; ``/changes``
        with ``overflow``) is the larger of what was read and ``changes_count``, marked inexact.
        """
        stated = _changes_count(raw.get("changes_count"))
        try:
            read = self._http.get_list(f"{base}/diffs", f"the diffs of {what}", MAX_CHANGED_FILES)
        except GitLabNotFoundError:
            logger.info("GitLab at %s has no /diffs route (older than 15.7): reading /changes", self._url)
            changes = self._http.get(f"{base}/changes", f"the changes of {what}")
            with _shape(self._url, f"the changes of {what}"):
                items = [c for c in changes.get("changes") or [] if isinstance(c, dict)]
                overflow = bool(changes.get("overflow"))
            exact = not overflow and (stated is None or stated[1])
            total = len(items) if exact else max(len(items), stated[0] if stated else 0)
            read = ListRead(tuple(items[:MAX_CHANGED_FILES]), total, exact)
        if not read.exact and stated is not None:
            total, exact = (stated[0], True) if stated[1] else (max(read.total, stated[0]), False)
            read = ListRead(read.items, max(total, len(read.items)), exact)
        with _shape(self._url, f"the diffs of {what}"):
            files = tuple(_changed_file(d) for d in read.items)
        return files, read.total, read.exact

    # -- issue and epic links -------------------------------------------------------------------

    def _issue_epic(self, raw: JSONObject, project: str) -> tuple[str, int] | None:
        """(group path, iid) of the issue's epic: ``epic.url``, else ``epic.group_id``, else ``epic_iid``."""
        epic = raw.get("epic")
        if isinstance(epic, dict) and epic.get("iid") is not None:
            iid = int(epic["iid"])
            match = _epic_link(_str(epic.get("url")))
            if match and not match.group("group").isdigit():
                return match.group("group"), iid
            if epic.get("group_id") is not None:
                group = self._group_path(int(epic["group_id"]))
                return (group, iid) if group else None
        if raw.get("epic_iid") is not None:
            # Only the iid (older GitLab): the epic is taken to be in the project's own group.
            group = project.rsplit("/", 1)[0] if "/" in project else None
            return (group, int(raw["epic_iid"])) if group else None
        return None

    def _epic_parent(self, raw: JSONObject, group: str) -> tuple[str, int] | None:
        """(group path, iid) of the parent epic: from ``_links.parent``, else ``parent_iid`` in ``group``."""
        links = raw.get("_links")
        link = links.get("parent") if isinstance(links, dict) else None
        match = _epic_link(urlsplit(link).path) if isinstance(link, str) else None
        if match:
            ident, iid = match.group("group"), int(match.group("iid"))
            if not ident.isdigit():
                return ident, iid
            if raw.get("group_id") is not None and int(ident) == int(raw["group_id"]):
                return group, iid
            parent_group = self._group_path(int(ident))
            return (parent_group, iid) if parent_group else None
        if raw.get("parent_iid") is not None:
            return group, int(raw["parent_iid"])
        return None

    def _group_path(self, group_id: int) -> str | None:
        """A group's full path from its id (``GET /groups/:id``), remembered for the client's life."""
        with self._lock:
            known = self._group_paths.get(group_id)
        if known is not None:
            return known
        try:
            raw = self._http.get(f"/groups/{group_id}", f"group {group_id}", query={"with_projects": "false"})
        except (GitLabForbiddenError, GitLabNotFoundError):
            return None
        path = _str(raw.get("full_path")) or None
        if path is not None:
            with self._lock:
                self._group_paths[group_id] = path
        return path


# -- JSON → core types ---------------------------------------------------------------------------


class _ItemFields(TypedDict):
    """``GitLabItem``'s fields (``core.gitlab``): what GitLab says alike of an MR, an issue, an epic."""

    title: str
    state: str
    author: Person | None
    labels: tuple[str, ...]
    created_at: datetime | None
    updated_at: datetime | None
    description: str
    web_url: str


def _item(raw: JSONObject) -> _ItemFields:
    """The fields a merge request's, an issue's and an epic's JSON name alike, read alike."""
    return _ItemFields(
        title=_str(raw.get("title")),
        state=_str(raw.get("state")),
        author=_person(raw.get("author")),
        labels=_labels(raw.get("labels")),
        created_at=_time(raw.get("created_at")),
        updated_at=_time(raw.get("updated_at")),
        description=cut_description(_str(raw.get("description"))),
        web_url=_str(raw.get("web_url")),
    )


@contextmanager
def _shape(url: str, what: str) -> Iterator[None]:
    """Turns a missing field or a wrong type while reading an answer into ``GitLabUnavailableError``."""
    try:
        yield
    # OverflowError: Infinity where a number belongs, a time before or after what UTC can hold
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise GitLabUnavailableError(
            f"GitLab at {url} answered {what} in an unexpected shape ({type(exc).__name__}: {exc}). "
            "Is [gitlab] url a GitLab instance (REST API v4)?"
        ) from None


def _check_path(path: str, kind: str) -> str:
    if not isinstance(path, str) or not path.strip("/ ") or any(c.isspace() for c in path):
        raise GitLabNotFoundError(
            f"{path!r} is not a GitLab {kind} path: use its full path, e.g. group/sub/{kind}."
        )
    return path


def _check_iid(iid: int) -> int:
    if isinstance(iid, bool) or not isinstance(iid, int) or iid < 1:
        raise GitLabNotFoundError(f"{iid!r} is not a GitLab iid: use the number after !, # or & (1 or more).")
    return iid


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _time(value: object) -> datetime | None:
    """An ISO 8601 timestamp (``2024-05-16T15:02:43.907Z``) as an aware UTC datetime."""
    if not isinstance(value, str) or not value:
        return None
    parsed = datetime.fromisoformat(value)
    return parsed.astimezone(UTC) if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _person(value: object) -> Person | None:
    if not isinstance(value, dict) or not _str(value.get("username")):
        return None
    return Person(
        username=value["username"], name=_str(value.get("name")), web_url=_str(value.get("web_url"))
    )


def _people(value: object) -> tuple[Person, ...]:
    people = (_person(v) for v in value) if isinstance(value, list) else ()
    return tuple(dict.fromkeys(p for p in people if p is not None))


def _labels(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    # with_labels_details=true sends objects; the default is names
    return tuple(v if isinstance(v, str) else _str(v.get("name")) for v in value if isinstance(v, str | dict))


def _milestone(value: object) -> str | None:
    return _str(value.get("title")) or None if isinstance(value, dict) else None


def _changes_count(value: object) -> tuple[int, bool] | None:
    """GitLab's ``changes_count`` ("6", "1000+") as (count, exact); None when it is no count of
    files (``"²"``, negative, past ``MAX_STATED_TOTAL``): then the files read are counted."""
    if isinstance(value, int) and not isinstance(value, bool):
        count, exact = value, True
    # 11 characters at most: "2147483647+"; int() refuses thousands of digits with a ValueError
    elif isinstance(value, str) and value.removesuffix("+").isdecimal() and len(value) <= 11:
        count, exact = int(value.removesuffix("+")), not value.endswith("+")
    else:
        return None
    return (count, exact) if 0 <= count <= MAX_STATED_TOTAL else None


def _changed_file(raw: JSONObject) -> ChangedFile:
    deleted = bool(raw.get("deleted_file"))
    new_path = raw["new_path"]
    if not isinstance(new_path, str) or not new_path:
        raise TypeError(f"a changed file's new_path is {new_path!r:.40}, not a path")
    return ChangedFile(
        new_path=new_path,
        old_path=_str(raw.get("old_path")) or new_path,
        new_file=bool(raw.get("new_file")),
        deleted_file=deleted,
        renamed_file=bool(raw.get("renamed_file")),
        ranges=() if deleted else hunk_ranges(_str(raw.get("diff"))),
    )


def _full_reference(raw: JSONObject, sigil: str) -> tuple[str, int] | None:
    """(path, iid) from ``references.full`` (``acme/shop/backend#34``, ``acme/shop&5``)."""
    refs = raw.get("references")
    full = _str(refs.get("full")) if isinstance(refs, dict) else ""
    path, _, number = full.rpartition(sigil)
    return (path, int(number)) if path and number.isdigit() else None


def _issue_ref(raw: JSONObject, project: str | None) -> IssueRefData | None:
    ref = _full_reference(raw, "#")
    if ref is None and project is not None and isinstance(raw.get("iid"), int):
        ref = (project, raw["iid"])  # no references (older GitLab): the MR's own project
    if ref is None:
        return None
    return IssueRefData(
        project=ref[0], iid=ref[1], title=_str(raw.get("title")), state=_str(raw.get("state"))
    )


def _mr_ref(raw: JSONObject, project: str, prefix: str) -> tuple[str, int] | None:
    """(project, iid) of a merge request: ``references.full``, else its ``web_url`` below the
    instance's path ``prefix``, else its iid in ``project``."""
    ref = _full_reference(raw, "!")
    if ref is not None:
        return ref
    match = _MR_URL_RE.match(_str(raw.get("web_url")))
    if match:
        path = match.group("path")
        named = path.removeprefix(prefix) if path.startswith(prefix + "/") else path
        if named.strip("/"):
            return named.strip("/"), int(match.group("iid"))
    return (project, raw["iid"]) if isinstance(raw.get("iid"), int) else None


def _epic_ref(raw: JSONObject) -> tuple[str, int] | None:
    return _full_reference(raw, "&")


def _epic_link(text: str) -> re.Match[str] | None:
    """The group and iid of an epic's link (``group``, ``iid``), read after its first "/groups/"."""
    _, found, rest = text.partition("/groups/")
    return _EPIC_LINK_RE.fullmatch(rest) if found else None
