"""One GitLab instance's REST v4 API through python-gitlab: merge requests, issues, epics, a probe.

``PythonGitLabClient`` implements ``core.ports.GitLabClient``. It reads with the library's
``http_get`` and paginated ``http_list(iterator=True)``, turns the JSON into the frozen types of
``core.gitlab``, and translates every failure at this boundary into graphmem's ``GitLabError``
tree; no python-gitlab or requests exception leaves this module:

- 401 → ``GitLabAuthError`` at once (a wrong token does not improve with retries);
- 403 → ``GitLabForbiddenError``; 404 → ``GitLabNotFoundError``;
- 429 → waits ``Retry-After`` inside the call when it is at most ``MAX_INLINE_WAIT_S`` (within
  ``max_retries``), else ``GitLabRateLimitedError(retry_after_s)`` so the caller's queue waits;
- 5xx and timeouts → up to ``max_retries`` retries with exponential backoff, then
  ``GitLabUnavailableError``; a refused connection or unknown host → ``GitLabUnavailableError`` at once;
- an answer that is not JSON, or JSON of an unexpected shape → ``GitLabUnavailableError``.

python-gitlab's own retrying is switched off (it would sleep for any ``Retry-After``, minutes
included); this module's loop is the only one. Answers are cached in memory for
``cache_ttl_s``, keyed by route. The token is sent as ``PRIVATE-TOKEN`` and appears in no log
line, message, repr or result.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar
from urllib.parse import urlsplit

import gitlab
import gitlab.exceptions
import requests
from gitlab.utils import EncodedId

from graphmem import __version__
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
    ConfigError,
    GitLabAuthError,
    GitLabError,
    GitLabForbiddenError,
    GitLabNotFoundError,
    GitLabRateLimitedError,
    GitLabUnavailableError,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")
JSONObject = dict[str, Any]

DEFAULT_TIMEOUT_S = 10.0
# Retries per request after a 5xx, a timeout or a short 429; 3 attempts in all by default.
DEFAULT_MAX_RETRIES = 2
DEFAULT_CACHE_TTL_S = 300.0
BACKOFF_BASE_S = 0.5  # first wait after a 5xx or timeout; doubles each retry
BACKOFF_MAX_S = 4.0
# A Retry-After up to this is waited inside the call; a longer one is raised for the queue to wait.
MAX_INLINE_WAIT_S = 5.0
# GitLab sends Retry-After with every 429; if a proxy does not, wait this long before trying again.
DEFAULT_RETRY_AFTER_S = 60.0
PER_PAGE = 100  # GitLab's largest page: fewest requests
MAX_CLOSING_ISSUES = 200
MAX_RELATED_MERGE_REQUESTS = 200
MAX_EPIC_CHILDREN = 500
CACHE_MAX_ENTRIES = 2_048
USER_AGENT = f"graphmem/{__version__} (+https://pypi.org/project/graphmem) python-gitlab/{gitlab.__version__}"

# ".../api/v4/groups/7/epics/2" (an epic's _links.parent), "/groups/acme/shop/-/epics/5" (issue epic.url)
_EPIC_LINK_RE = re.compile(r"/groups/(?P<group>[^?#]+?)(?:/-)?/epics/(?P<iid>\d+)/?$")
_MR_URL_RE = re.compile(r"^https?://[^/]+(?:/.*?)?/(?P<project>[^/].*?)/-/merge_requests/(?P<iid>\d+)")
_LIST_OPTIONS: dict[str, Any] = {"obey_rate_limit": False, "retry_transient_errors": False, "max_retries": 0}


@dataclass(frozen=True, slots=True)
class _ListRead:
    """The first items of a paginated list and how many it holds."""

    items: tuple[JSONObject, ...]
    total: int  # every item, or a lower bound when not ``exact``
    exact: bool


class PythonGitLabClient:
    """GitLab's REST v4 API (gitlab.com or self-managed, any path prefix or port) via python-gitlab.

    ``url`` is the instance (``https://gitlab.com``, ``https://example.com/gitlab``); ``token`` a
    personal, project or group access token with the ``read_api`` scope (None: anonymous, public
    data only). ``clock`` and ``sleep`` are for tests. Thread-safe.
    """

    def __init__(
        self,
        url: str,
        token: str | None,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_retries: int = DEFAULT_MAX_RETRIES,
        cache_ttl_s: float = DEFAULT_CACHE_TTL_S,
        ssl_verify: bool | str = True,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        parts = urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(
                f"GitLab url {url.strip()!r} is not an http(s) URL: set [gitlab] url to the instance's "
                "address, e.g. https://gitlab.com or https://example.com/gitlab."
            )
        if timeout_s <= 0 or max_retries < 0 or cache_ttl_s < 0:
            raise ConfigError(
                "GitLab client limits must be positive: timeout_s > 0, max_retries >= 0, cache_ttl_s >= 0."
            )
        self._url = f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"
        self._token = token or None
        self._timeout_s = timeout_s
        self._max_retries = max_retries
        self._cache_ttl_s = cache_ttl_s
        self._clock = clock
        self._sleep = sleep
        self._cache: dict[str, tuple[float, Any]] = {}
        self._group_paths: dict[int, str] = {}
        self._lock = threading.Lock()
        self._last_headers = threading.local()
        session = requests.Session()
        session.hooks["response"].append(self._remember_headers)
        self._gl = gitlab.Gitlab(
            self._url,
            private_token=self._token,
            timeout=timeout_s,
            ssl_verify=ssl_verify,
            user_agent=USER_AGENT,
            retry_transient_errors=False,
            keep_base_url=True,  # pagination links follow the URL configured, not the server's external_url
            session=session,
        )

    def __repr__(self) -> str:
        return f"PythonGitLabClient(url={self._url!r})"

    @property
    def url(self) -> str:
        """The instance URL, without a trailing slash."""
        return self._url

    # -- the port -------------------------------------------------------------------------------

    def probe(self) -> GitLabProbe:
        """Check the instance and the token: ``GET /version``, and ``GET /user`` when a token is set.

        Never cached. A 401 with a token raises ``GitLabAuthError``; without a token the
        instance is reachable and both fields are None.
        """
        username: str | None = None
        if self._token is not None:
            user = self._fetch("/user", "the token's user")
            username = _str(user.get("username")) or None
        try:
            version = _str(self._fetch("/version", "the GitLab version").get("version")) or None
        except (GitLabAuthError, GitLabForbiddenError, GitLabNotFoundError):
            version = None  # reachable; this token (or none) may not read the version
        return GitLabProbe(url=self._url, version=version, username=username)

    def merge_request(self, project: str, iid: int) -> MergeRequestData:
        """The merge request ``project!iid`` with its changed files (bounded) and closing issues."""
        what = f"merge request {_check_path(project, 'project')}!{_check_iid(iid)}"
        base = f"/projects/{EncodedId(project)}/merge_requests/{iid}"
        raw = self._get(base, what)
        files, total, exact = self._changed_files(base, raw, what)
        closes = self._optional_list(f"{base}/closes_issues", f"the issues {what} closes", MAX_CLOSING_ISSUES)
        with _shape(self._url, what):
            return MergeRequestData(
                project=project,
                iid=int(raw["iid"]),
                title=_str(raw.get("title")),
                state=_str(raw.get("state")),
                draft=bool(raw.get("draft", raw.get("work_in_progress", False))),
                author=_person(raw.get("author")),
                assignees=_people(raw.get("assignees")),
                reviewers=_people(raw.get("reviewers")),
                labels=_labels(raw.get("labels")),
                milestone=_milestone(raw.get("milestone")),
                source_branch=_str(raw.get("source_branch")),
                target_branch=_str(raw.get("target_branch")),
                merged_at=_time(raw.get("merged_at")),
                created_at=_time(raw.get("created_at")),
                updated_at=_time(raw.get("updated_at")),
                description=cut_description(raw.get("description")),
                web_url=_str(raw.get("web_url")),
                changed_files=files,
                changed_files_total=total,
                closes=tuple(r for r in (_issue_ref(i, project) for i in closes.items) if r is not None),
                changed_files_total_exact=exact,
            )

    def issue(self, project: str, iid: int) -> IssueData:
        """The issue ``project#iid`` with its epic (group path, iid) and related merge requests."""
        what = f"issue {_check_path(project, 'project')}#{_check_iid(iid)}"
        base = f"/projects/{EncodedId(project)}/issues/{iid}"
        raw = self._get(base, what)
        related = self._optional_list(
            f"{base}/related_merge_requests",
            f"the merge requests related to {what}",
            MAX_RELATED_MERGE_REQUESTS,
        )
        with _shape(self._url, what):
            epic = self._issue_epic(raw, project)
            return IssueData(
                project=project,
                iid=int(raw["iid"]),
                title=_str(raw.get("title")),
                state=_str(raw.get("state")),
                author=_person(raw.get("author")),
                assignees=_people(raw.get("assignees")),
                labels=_labels(raw.get("labels")),
                milestone=_milestone(raw.get("milestone")),
                created_at=_time(raw.get("created_at")),
                updated_at=_time(raw.get("updated_at")),
                closed_at=_time(raw.get("closed_at")),
                description=cut_description(raw.get("description")),
                web_url=_str(raw.get("web_url")),
                epic=epic,
                related_merge_requests=tuple(
                    dict.fromkeys(r for r in (_mr_ref(m, project) for m in related.items) if r is not None)
                ),
            )

    def epic(self, group: str, iid: int) -> EpicData:
        """The epic ``group&iid`` with its parent, child issues and child epics (each bounded)."""
        what = f"epic {_check_path(group, 'group')}&{_check_iid(iid)}"
        base = f"/groups/{EncodedId(group)}/epics/{iid}"
        raw = self._get(base, what)
        issues = self._optional_list(f"{base}/issues", f"the issues of {what}", MAX_EPIC_CHILDREN)
        # 403 here when the instance lacks multi-level epics (Ultimate): no child epics then.
        epics = self._optional_list(f"{base}/epics", f"the child epics of {what}", MAX_EPIC_CHILDREN)
        with _shape(self._url, what):
            return EpicData(
                group=group,
                iid=int(raw["iid"]),
                title=_str(raw.get("title")),
                state=_str(raw.get("state")),
                author=_person(raw.get("author")),
                labels=_labels(raw.get("labels")),
                created_at=_time(raw.get("created_at")),
                updated_at=_time(raw.get("updated_at")),
                description=cut_description(raw.get("description")),
                web_url=_str(raw.get("web_url")),
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
            read = self._list(f"{base}/diffs", f"the diffs of {what}", MAX_CHANGED_FILES)
        except GitLabNotFoundError:
            logger.info("GitLab at %s has no /diffs route (older than 15.7): reading /changes", self._url)
            changes = self._get(f"{base}/changes", f"the changes of {what}")
            with _shape(self._url, f"the changes of {what}"):
                items = [c for c in changes.get("changes") or [] if isinstance(c, dict)]
                overflow = bool(changes.get("overflow"))
            exact = not overflow and (stated is None or stated[1])
            total = len(items) if exact else max(len(items), stated[0] if stated else 0)
            read = _ListRead(tuple(items[:MAX_CHANGED_FILES]), total, exact)
        if not read.exact and stated is not None:
            total, exact = (stated[0], True) if stated[1] else (max(read.total, stated[0]), False)
            read = _ListRead(read.items, max(total, len(read.items)), exact)
        with _shape(self._url, f"the diffs of {what}"):
            files = tuple(_changed_file(d) for d in read.items)
        return files, read.total, read.exact

    # -- issue and epic links -------------------------------------------------------------------

    def _issue_epic(self, raw: JSONObject, project: str) -> tuple[str, int] | None:
        """(group path, iid) of the issue's epic: ``epic.url``, else ``epic.group_id``, else ``epic_iid``."""
        epic = raw.get("epic")
        if isinstance(epic, dict) and epic.get("iid") is not None:
            iid = int(epic["iid"])
            match = _EPIC_LINK_RE.search(_str(epic.get("url")))
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
        match = _EPIC_LINK_RE.search(urlsplit(link).path) if isinstance(link, str) else None
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
            raw = self._get(f"/groups/{group_id}", f"group {group_id}", query={"with_projects": "false"})
        except (GitLabForbiddenError, GitLabNotFoundError):
            return None
        path = _str(raw.get("full_path")) or None
        if path is not None:
            with self._lock:
                self._group_paths[group_id] = path
        return path

    # -- requests: cache, retries, errors -------------------------------------------------------

    def _get(self, path: str, what: str, *, query: Mapping[str, str] | None = None) -> JSONObject:
        """``GET path`` as a JSON object, from the cache when fresh."""
        key = f"GET {path}?{sorted((query or {}).items())}"
        return self._cached(key, lambda: self._fetch(path, what, query))

    def _fetch(self, path: str, what: str, query: Mapping[str, str] | None = None) -> JSONObject:
        def get() -> JSONObject:
            result = self._gl.http_get(path, query_data=dict(query or {}), **_LIST_OPTIONS)
            if isinstance(result, dict):
                return result
            if isinstance(result, requests.Response):
                kind = result.headers.get("Content-Type", "no content type")
                raise GitLabUnavailableError(
                    f"GitLab at {self._url} answered {what} with {kind}, not JSON. Check that [gitlab] url "
                    "is the GitLab instance's address (not a proxy or a sign-in page)."
                )
            raise GitLabUnavailableError(
                f"GitLab at {self._url} answered {what} with a JSON {type(result).__name__}, not an "
                "object. Check that [gitlab] url is the GitLab instance's address."
            )

        return self._call(get, what)

    def _list(self, path: str, what: str, limit: int) -> _ListRead:
        """The first ``limit`` items of a paginated list, read page by page; the total from ``X-Total``."""
        key = f"LIST {path} {limit}"
        return self._cached(key, lambda: self._read_list(path, what, limit))

    def _optional_list(self, path: str, what: str, limit: int) -> _ListRead:
        """Like ``_list``, but a list the token may not see (403, 404) is empty: the entity stands."""
        try:
            return self._list(path, what, limit)
        except (GitLabForbiddenError, GitLabNotFoundError) as exc:
            logger.info("%s", exc)
            return _ListRead((), 0, False)

    def _read_list(self, path: str, what: str, limit: int) -> _ListRead:
        pages = self._call(
            lambda: self._gl.http_list(path, iterator=True, per_page=PER_PAGE, **_LIST_OPTIONS), what
        )
        if not isinstance(pages, gitlab.GitlabList):
            raise GitLabUnavailableError(f"GitLab at {self._url} did not page {what}.")  # pragma: no cover
        items: list[JSONObject] = []
        done = False
        while len(items) < limit:
            item = self._call(lambda: next(pages, None), what)
            if item is None:
                done = True
                break
            if not isinstance(item, dict):
                raise GitLabUnavailableError(
                    f"GitLab at {self._url} answered {what} with {type(item).__name__} items, not objects."
                )
            items.append(item)
        if pages.total is not None:
            return _ListRead(tuple(items), max(pages.total, len(items)), True)
        if not done and self._call(lambda: next(pages, None), what) is None:
            done = True  # exactly ``limit`` items
        return _ListRead(tuple(items), len(items), done)

    def _cached(self, key: str, load: Callable[[], T]) -> T:
        now = self._clock()
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None and now - hit[0] < self._cache_ttl_s:
                return hit[1]  # type: ignore[no-any-return]
        value = load()
        if self._cache_ttl_s > 0:
            with self._lock:
                if len(self._cache) >= CACHE_MAX_ENTRIES:
                    self._cache.clear()  # crude but bounded: entries are cheap to fetch again
                self._cache[key] = (self._clock(), value)
        return value

    def clear_cache(self) -> None:
        """Forget every cached answer (``graphmem enrich --refresh``)."""
        with self._lock:
            self._cache.clear()

    def _remember_headers(self, response: requests.Response, *args: object, **kwargs: object) -> None:
        """Session hook: keep the rate-limit headers of the last answer (python-gitlab drops them)."""
        headers = response.headers
        self._last_headers.value = {
            name: headers[name] for name in ("Retry-After", "RateLimit-Reset") if name in headers
        }

    def _retry_after_s(self) -> float:
        headers: dict[str, str] = getattr(self._last_headers, "value", {})
        return _retry_after(headers.get("Retry-After"), headers.get("RateLimit-Reset"))

    def _call(self, request: Callable[[], T], what: str) -> T:
        """Run one request, retrying transient faults within bounds; translate every error."""
        attempt = 0
        while True:
            self._last_headers.value = {}
            try:
                return request()
            except GitLabError:
                raise
            except gitlab.exceptions.GitlabAuthenticationError:
                raise self._auth_error(what) from None
            except gitlab.exceptions.GitlabHttpError as exc:
                status = exc.response_code or 0
                if status == 401:
                    raise self._auth_error(what) from None
                if status == 403:
                    raise GitLabForbiddenError(
                        f"GitLab at {self._url} does not let this token see {what} (403 Forbidden). Ask for "
                        "access to the project or group, or use a token with the read_api scope."
                    ) from None
                if status == 404:
                    raise GitLabNotFoundError(
                        f"GitLab at {self._url} has no {what} (404 Not Found), or hides it from this token. "
                        "Check the reference and its project or group path ([gitlab] default_project)."
                    ) from None
                if status == 429:
                    wait_s = self._retry_after_s()
                    if wait_s <= MAX_INLINE_WAIT_S and attempt < self._max_retries:
                        attempt += 1
                        self._wait(wait_s, what, "429 Too Many Requests", attempt)
                        continue
                    raise GitLabRateLimitedError(
                        f"GitLab at {self._url} rate-limits requests (429 Too Many Requests) for {what}: "
                        f"try again in {wait_s:g} s.",
                        retry_after_s=wait_s,
                    ) from None
                if status >= 500:
                    if attempt < self._max_retries:
                        attempt += 1
                        self._wait(_backoff_s(attempt), what, f"{status} {exc.error_message}", attempt)
                        continue
                    raise GitLabUnavailableError(
                        f"GitLab at {self._url} failed {attempt + 1} times answering {what} "
                        f"(last: {status}): it may be down or overloaded. Try again later."
                    ) from None
                raise GitLabError(
                    f"GitLab at {self._url} refused the request for {what} ({status}): "
                    f"{self._scrub(str(exc.error_message))}."
                ) from None
            except gitlab.exceptions.GitlabParsingError:
                raise GitLabUnavailableError(
                    f"GitLab at {self._url} answered {what} with malformed JSON. Check that [gitlab] url is "
                    "the GitLab instance's address (not a proxy), then try again."
                ) from None
            except gitlab.exceptions.GitlabError as exc:
                raise GitLabError(
                    f"GitLab at {self._url} could not answer {what}: {self._scrub(str(exc))}."
                ) from None
            except requests.Timeout:
                if attempt < self._max_retries:
                    attempt += 1
                    self._wait(_backoff_s(attempt), what, f"no answer within {self._timeout_s:g} s", attempt)
                    continue
                raise GitLabUnavailableError(
                    f"GitLab at {self._url} did not answer {what} within {self._timeout_s:g} s "
                    f"({attempt + 1} attempts). Check the instance and your network, or raise "
                    "[gitlab] timeout_seconds."
                ) from None
            except requests.ConnectionError as exc:
                if not _cannot_connect(exc) and attempt < self._max_retries:
                    attempt += 1  # a dropped connection may be transient; a refused one is not
                    self._wait(_backoff_s(attempt), what, "connection dropped", attempt)
                    continue
                raise GitLabUnavailableError(
                    f"Cannot connect to GitLab at {self._url} for {what} (refused, unknown host or offline). "
                    "Check [gitlab] url and your network; enrichment waits and tries again later."
                ) from None
            except (requests.RequestException, ValueError) as exc:
                raise GitLabUnavailableError(
                    f"GitLab at {self._url} could not answer {what}: {type(exc).__name__}. Try again later."
                ) from None

    def _auth_error(self, what: str) -> GitLabAuthError:
        if self._token is None:
            return GitLabAuthError(
                f"GitLab at {self._url} needs a token to read {what} (401 Unauthorized). Set GITLAB_TOKEN "
                "or GRAPHMEM_GITLAB_TOKEN (or [gitlab] token_file) to a token with the read_api scope."
            )
        return GitLabAuthError(
            f"GitLab at {self._url} refused the token (401 Unauthorized) reading {what}: it is wrong, "
            "revoked or expired. Check GITLAB_TOKEN / GRAPHMEM_GITLAB_TOKEN ([gitlab] token_file): "
            "it needs the read_api scope."
        )

    def _wait(self, seconds: float, what: str, reason: str, attempt: int) -> None:
        logger.warning(
            "GitLab at %s: %s for %s; retry %d of %d in %.1f s",
            self._url,
            reason,
            what,
            attempt,
            self._max_retries,
            seconds,
        )
        self._sleep(seconds)

    def _scrub(self, text: str) -> str:
        """``text`` without the token, should a server or library ever echo it."""
        return text.replace(self._token, "[token]") if self._token else text


# -- JSON → core types ---------------------------------------------------------------------------


@contextmanager
def _shape(url: str, what: str) -> Iterator[None]:
    """Turns a missing field or a wrong type while reading an answer into ``GitLabUnavailableError``."""
    try:
        yield
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
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
    """GitLab's ``changes_count`` ("6", "1000+") as (count, exact)."""
    if isinstance(value, int):
        return value, True
    if isinstance(value, str) and value.rstrip("+").isdigit():
        return int(value.rstrip("+")), not value.endswith("+")
    return None


def _changed_file(raw: JSONObject) -> ChangedFile:
    deleted = bool(raw.get("deleted_file"))
    return ChangedFile(
        new_path=raw["new_path"],
        old_path=_str(raw.get("old_path")) or raw["new_path"],
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


def _mr_ref(raw: JSONObject, project: str) -> tuple[str, int] | None:
    ref = _full_reference(raw, "!")
    if ref is not None:
        return ref
    match = _MR_URL_RE.match(_str(raw.get("web_url")))
    if match:
        return match.group("project"), int(match.group("iid"))
    return (project, raw["iid"]) if isinstance(raw.get("iid"), int) else None


def _epic_ref(raw: JSONObject) -> tuple[str, int] | None:
    return _full_reference(raw, "&")


def _backoff_s(attempt: int) -> float:
    return float(min(BACKOFF_BASE_S * 2 ** (attempt - 1), BACKOFF_MAX_S))


def _retry_after(retry_after: str | None, reset: str | None) -> float:
    """Seconds to wait from ``Retry-After`` (seconds or an HTTP date), else ``RateLimit-Reset`` (epoch)."""
    if retry_after:
        try:
            return max(float(retry_after), 0.0)
        except ValueError:
            pass
        try:
            return max((parsedate_to_datetime(retry_after) - datetime.now(UTC)).total_seconds(), 0.0)
        except (TypeError, ValueError):
            pass
    if reset and reset.isdigit():
        return max(float(reset) - time.time(), 0.0)
    return DEFAULT_RETRY_AFTER_S


def _cannot_connect(exc: BaseException) -> bool:
    """Whether a connection error means "nobody there" (refused, unknown host) rather than a drop."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [exc]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError) or type(current).__name__ in (
            "NewConnectionError",
            "NameResolutionError",
        ):
            return True
        pending.extend([current.__cause__, current.__context__, getattr(current, "reason", None)])
        pending.extend(a for a in current.args if isinstance(a, BaseException))
    return False
