"""Requests to one GitLab instance through python-gitlab: retries, ``Retry-After``, errors, a cache.

``GitLabTransport`` answers ``GET`` routes of the REST v4 API as JSON objects (``get``) and
paginated lists (``list``, read with ``http_list(iterator=True)``), and translates every failure at
this boundary into graphmem's ``GitLabError`` tree; no python-gitlab or requests exception leaves
this module:

- 401 → ``GitLabAuthError`` at once (a wrong token does not improve with retries);
- 403 → ``GitLabForbiddenError``; 404 → ``GitLabNotFoundError``;
- 429 → waits ``Retry-After`` inside the call when it is at most ``MAX_INLINE_WAIT_S`` (within
  ``max_retries``), else ``GitLabRateLimitedError(retry_after_s)`` so the caller's queue waits;
- 5xx, timeouts and a connection dropped (an answer cut short included) → up to ``max_retries``
  retries with exponential backoff, then ``GitLabUnavailableError``; a refused connection or unknown
  host → ``GitLabUnavailableError`` at once;
- an answer that is not HTTP (an ssh banner), not JSON, or not a JSON object, one too long or too
  slow (``gitlab_answer_bounds.py``), a list whose pages never end → ``GitLabUnavailableError``.

python-gitlab's own retrying is switched off (it would sleep for any ``Retry-After``, minutes
included); this module's loop is the only one. Answers are cached in memory for
``cache_ttl_s``, keyed by route. The token is sent as ``PRIVATE-TOKEN`` and appears in no log
line, message, repr or result. What the answers mean is ``gitlab_api.py``'s business.
"""

from __future__ import annotations

import http.client
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, TypedDict, TypeVar
from urllib.parse import urlsplit

import gitlab
import gitlab.exceptions
import requests
import urllib3.exceptions
from requests.adapters import HTTPAdapter
from urllib3.connectionpool import HTTPConnectionPool

from graphmem import __version__
from graphmem.adapters import gitlab_answer_bounds
from graphmem.adapters.gitlab_answer_bounds import (
    HeadTooSlow,
    PageBudget,
    read_body,
    too_long,
    too_slow,
    with_head_deadline,
)
from graphmem.core.json_escapes import mend_lone_surrogates
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
# A longer wait is no rate limit's: "1e300" or "inf" would hold enrichment for ever and overflow
# the date it waits until.
MAX_RETRY_AFTER_S = 86_400.0
# A stated total above this is no count of a forge's list (GitLab states none past 10,000 rows).
MAX_STATED_TOTAL = 2**31 - 1
PER_PAGE = 100  # GitLab's largest page: fewest requests
CACHE_MAX_ENTRIES = 2_048
USER_AGENT = f"graphmem/{__version__} (+https://pypi.org/project/graphmem) python-gitlab/{gitlab.__version__}"

_LIST_OPTIONS: dict[str, Any] = {"obey_rate_limit": False, "retry_transient_errors": False, "max_retries": 0}


class TransportOptions(TypedDict, total=False):
    """``GitLabTransport``'s keyword arguments, for whatever builds one (``PythonGitLabClient``)."""

    timeout_s: float
    max_retries: int
    cache_ttl_s: float
    ssl_verify: bool | str
    clock: Callable[[], float]
    sleep: Callable[[float], None]


@dataclass(frozen=True, slots=True)
class ListRead:
    """The first items of a paginated list and how many it holds."""

    items: tuple[JSONObject, ...]
    total: int  # every item, or a lower bound when not ``exact``
    exact: bool


class _OneInstance(requests.Session):
    """A session that sends nothing but to the configured instance. python-gitlab follows a
    page's ``next`` link as GitLab wrote it when it has no ``/api`` in it, and requests follows
    a redirect to another host with every header but ``Authorization``: either would hand the
    token (``PRIVATE-TOKEN``) to whatever address the answer named. Both go through ``send``."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self._url = url
        self._origin = _origin(url)
        self.pages = PageBudget()  # each answer of 2xx is one page of a list being read
        for scheme in ("https://", "http://"):
            self.mount(scheme, _HeadDeadlineAdapter())

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        where = _origin(request.url or "")
        if where != self._origin:
            raise GitLabUnavailableError(
                f"GitLab at {self._url} sent graphmem on to {where[0]}://{where[1]}, another address: "
                "the token goes to [gitlab] url only. If GitLab lives there, set [gitlab] url to it."
            )
        streamed = kwargs.get("stream", False)
        try:
            response = super().send(request, **{**kwargs, "stream": True})
        except HeadTooSlow:
            raise too_slow(self._url) from None
        if not streamed:  # read here, bounded, as requests would have read it whole
            # requests' own slot for a body read; half of an emoji's pair escaped alone is U+FFFD
            # (JSON would read it as a surrogate no stored text can hold: the entity never stored)
            response._content = mend_lone_surrogates(self._bounded(response))
        if 200 <= response.status_code < 300:
            self.pages.spend(self._url)
        return response

    def _bounded(self, response: requests.Response) -> bytes:
        """``response``'s body, or ``GitLabUnavailableError`` past ``MAX_ANSWER_BYTES``: an
        answer without end (a proxy's stream, a forge's garbage) never fills the memory."""
        if response._content is not False:  # read already (by an adapter that preloads)
            read = response.content or b""
            if len(read) > gitlab_answer_bounds.MAX_ANSWER_BYTES:
                raise too_long(self._url)
            return read
        try:
            body = read_body(response.raw, self._url)
        except urllib3.exceptions.HTTPError as exc:
            response.close()  # read part way: the connection is not reused
            raise _as_requests_error(exc) from exc
        except BaseException:
            response.close()
            raise
        response._content_consumed = True  # read to its end: the connection went back to the pool
        return body


class _HeadDeadlineAdapter(HTTPAdapter):
    """requests' adapter whose connections read an answer's head within ``MAX_ANSWER_S``
    (``gitlab_answer_bounds.with_head_deadline``), through a proxy too."""

    def get_connection_with_tls_context(self, *args: Any, **kwargs: Any) -> HTTPConnectionPool:
        pool: HTTPConnectionPool = super().get_connection_with_tls_context(*args, **kwargs)
        pool.ConnectionCls = with_head_deadline(pool.ConnectionCls)
        return pool


def _as_requests_error(exc: urllib3.exceptions.HTTPError) -> requests.RequestException:
    """A fault of urllib3's while a body is read, as requests names it when it reads one
    (``Response.iter_content``), for the retries and messages of ``GitLabTransport._call``."""
    if isinstance(exc, urllib3.exceptions.ReadTimeoutError):
        return requests.exceptions.ReadTimeout(exc)
    if isinstance(exc, (urllib3.exceptions.ProtocolError, urllib3.exceptions.DecodeError)):
        return requests.exceptions.ChunkedEncodingError(exc)
    return requests.exceptions.ConnectionError(exc)


def _origin(url: str) -> tuple[str, str]:
    """The scheme and the host with its port (the default one written out) of ``url``."""
    parts = urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:  # a port that is no number
        return parts.scheme.lower(), parts.netloc.lower()
    return parts.scheme.lower(), f"{(parts.hostname or '').lower()}:{port}"


class GitLabTransport:
    """``GET`` requests to one GitLab instance (any path prefix or port), retried, translated, cached.

    ``url`` is the instance (``https://gitlab.com``, ``https://example.com/gitlab``); ``token`` a
    personal, project or group access token (None: anonymous). ``what`` in every method names the
    thing asked for in error messages ("merge request acme/shop!12"). ``clock`` and ``sleep`` are
    for tests. Thread-safe.
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
        self._lock = threading.Lock()
        self._last_headers = threading.local()
        self._session = session = _OneInstance(self._url)
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
        return f"GitLabTransport(url={self._url!r})"

    @property
    def url(self) -> str:
        """The instance URL, without a trailing slash."""
        return self._url

    @property
    def has_token(self) -> bool:
        """Whether requests carry a token."""
        return self._token is not None

    def get(self, path: str, what: str, *, query: Mapping[str, str] | None = None) -> JSONObject:
        """``GET path`` as a JSON object, from the cache when fresh."""
        key = f"GET {path}?{sorted((query or {}).items())}"
        return self._cached(key, lambda: self.fetch(path, what, query))

    def fetch(self, path: str, what: str, query: Mapping[str, str] | None = None) -> JSONObject:
        """``GET path`` as a JSON object, never from the cache."""

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

    def get_list(self, path: str, what: str, limit: int) -> ListRead:
        """The first ``limit`` items of a paginated list, read page by page; the total from ``X-Total``."""
        key = f"LIST {path} {limit}"
        with self._session.pages.at_most(-(-limit // PER_PAGE) + 1):  # those ``limit`` fills, one more
            return self._cached(key, lambda: self._read_list(path, what, limit))

    def optional_list(self, path: str, what: str, limit: int) -> ListRead:
        """Like ``get_list``, but a list the token may not see (403, 404) is empty: the entity stands."""
        try:
            return self.get_list(path, what, limit)
        except (GitLabForbiddenError, GitLabNotFoundError) as exc:
            logger.info("%s", exc)
            return ListRead((), 0, False)

    def _read_list(self, path: str, what: str, limit: int) -> ListRead:
        pages = self._call(
            lambda: self._gl.http_list(path, iterator=True, per_page=PER_PAGE, **_LIST_OPTIONS), what
        )
        if not isinstance(pages, gitlab.GitlabList):
            raise GitLabUnavailableError(f"GitLab at {self._url} did not page {what}.")  # pragma: no cover
        items: list[JSONObject] = []
        done = False
        while len(items) < limit:
            item = self._call(lambda: self._next_item(pages, what), what)
            if item is None:
                done = True
                break
            if not isinstance(item, dict):
                raise GitLabUnavailableError(
                    f"GitLab at {self._url} answered {what} with {type(item).__name__} items, not objects."
                )
            items.append(item)
        stated = _stated_total(pages)
        if stated is not None:
            return ListRead(tuple(items), max(stated, len(items)), True)
        if not done and self._call(lambda: self._next_item(pages, what), what) is None:
            done = True  # exactly ``limit`` items
        return ListRead(tuple(items), len(items), done)

    def _next_item(self, pages: gitlab.GitlabList, what: str) -> object:
        """The next item of ``pages`` (None after the last), fetching the next page when due.

        python-gitlab indexes a page's JSON without looking at it: a page that is an object
        (``{"message": ...}`` from a proxy, or a forge's error with a 200), a number or null
        raises KeyError or TypeError from inside it, which would escape every caller.
        """
        try:
            return next(pages, None)
        except (KeyError, TypeError):
            raise GitLabUnavailableError(
                f"GitLab at {self._url} answered {what} with a page that is not a JSON list. Check that "
                "[gitlab] url is the GitLab instance's address (not a proxy), then try again."
            ) from None

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
            # RecursionError: python-gitlab reads an error answer's JSON catching only ValueError,
            # and JSON nested deeper than the parser recurses raises it.
            except (
                gitlab.exceptions.GitlabError,
                requests.RequestException,
                ValueError,
                RecursionError,
            ) as exc:
                retry = self._retry(exc, attempt)
                if retry is None:
                    raise self._error(exc, what, attempt) from None
                attempt += 1
                self._wait(retry[0], what, retry[1], attempt)

    def _retry(self, exc: Exception, attempt: int) -> tuple[float, str] | None:
        """How long to wait before trying again after ``exc`` and why (for the log), or None when
        it is not transient or ``attempt`` was the last: 429 within ``MAX_INLINE_WAIT_S``, 5xx,
        a timeout and a dropped connection are worth another try."""
        if attempt >= self._max_retries:
            return None
        backoff_s = _backoff_s(attempt + 1)
        if isinstance(exc, gitlab.exceptions.GitlabAuthenticationError):
            return None
        if isinstance(exc, gitlab.exceptions.GitlabHttpError):
            status = exc.response_code or 0
            if status == 429:
                wait_s = self._retry_after_s()
                return (wait_s, "429 Too Many Requests") if wait_s <= MAX_INLINE_WAIT_S else None
            return (backoff_s, f"{status} {exc.error_message}") if status >= 500 else None
        if isinstance(exc, requests.Timeout):
            return backoff_s, f"no answer within {self._timeout_s:g} s"
        if isinstance(exc, requests.exceptions.ChunkedEncodingError):
            return backoff_s, "answer cut short"  # the connection dropped mid-answer
        if isinstance(exc, requests.ConnectionError) and not _cannot_connect(exc) and not _not_http(exc):
            return backoff_s, "connection dropped"  # may be transient; a refused connection is not
        return None

    def _error(self, exc: Exception, what: str, attempt: int) -> GitLabError:
        """``exc``, the last fault of ``attempt + 1`` tries at ``what``, as graphmem's error."""
        if isinstance(exc, gitlab.exceptions.GitlabAuthenticationError):
            return self._auth_error(what)
        if isinstance(exc, gitlab.exceptions.GitlabHttpError):
            return self._http_error(exc, what, attempt)
        if isinstance(exc, (gitlab.exceptions.GitlabParsingError, RecursionError)):
            return GitLabUnavailableError(
                f"GitLab at {self._url} answered {what} with malformed JSON. Check that [gitlab] url is "
                "the GitLab instance's address (not a proxy), then try again."
            )
        if isinstance(exc, gitlab.exceptions.GitlabError):
            return GitLabError(f"GitLab at {self._url} could not answer {what}: {self._scrub(str(exc))}.")
        if isinstance(exc, requests.Timeout):
            return GitLabUnavailableError(
                f"GitLab at {self._url} did not answer {what} within {self._timeout_s:g} s "
                f"({attempt + 1} attempts). Check the instance and your network, or raise "
                "[gitlab] timeout_seconds."
            )
        if isinstance(exc, requests.exceptions.ChunkedEncodingError):
            return GitLabUnavailableError(
                f"GitLab at {self._url} cut short its answer to {what} ({attempt + 1} attempts): the "
                "connection closed mid-answer, or the answer was garbled. Check the instance and your "
                "network (a proxy between?), then try again."
            )
        if isinstance(exc, requests.ConnectionError) and _not_http(exc):
            return GitLabUnavailableError(
                f"GitLab at {self._url} answered {what} with something that is not HTTP (a garbled or "
                "overlong status or header line). Check that [gitlab] url is the GitLab instance's web "
                "address (https://...), not its SSH port or another service's."
            )
        if isinstance(exc, requests.ConnectionError):
            return GitLabUnavailableError(
                f"Cannot connect to GitLab at {self._url} for {what} (refused, unknown host or offline). "
                "Check [gitlab] url and your network; enrichment waits and tries again later."
            )
        return GitLabUnavailableError(
            f"GitLab at {self._url} could not answer {what}: {type(exc).__name__}. Try again later."
        )

    def _http_error(self, exc: gitlab.exceptions.GitlabHttpError, what: str, attempt: int) -> GitLabError:
        status = exc.response_code or 0
        if status == 401:
            return self._auth_error(what)
        if status == 403:
            return GitLabForbiddenError(
                f"GitLab at {self._url} does not let this token see {what} (403 Forbidden). Ask for "
                "access to the project or group, or use a token with the read_api scope."
            )
        if status == 404:
            return GitLabNotFoundError(
                f"GitLab at {self._url} has no {what} (404 Not Found), or hides it from this token. "
                "Check the reference and its project or group path ([gitlab] default_project)."
            )
        if status == 429:
            wait_s = self._retry_after_s()
            return GitLabRateLimitedError(
                f"GitLab at {self._url} rate-limits requests (429 Too Many Requests) for {what}: "
                f"try again in {wait_s:g} s.",
                retry_after_s=wait_s,
            )
        if status >= 500:
            return GitLabUnavailableError(
                f"GitLab at {self._url} failed {attempt + 1} times answering {what} "
                f"(last: {status}): it may be down or overloaded. Try again later."
            )
        return GitLabError(
            f"GitLab at {self._url} refused the request for {what} ({status}): "
            f"{self._scrub(str(exc.error_message))}."
        )

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


def _backoff_s(attempt: int) -> float:
    return float(min(BACKOFF_BASE_S * 2 ** (attempt - 1), BACKOFF_MAX_S))


def _stated_total(pages: gitlab.GitlabList) -> int | None:
    """The list's length as its ``X-Total`` states it; None when it states none, or no count (a
    proxy's garbled header, a negative or absurd number: then what is read is counted)."""
    try:
        total = pages.total
    except ValueError:
        return None
    return total if total is not None and 0 <= total <= MAX_STATED_TOTAL else None


def _retry_after(retry_after: str | None, reset: str | None) -> float:
    """Seconds to wait from ``Retry-After`` (seconds or an HTTP date), else ``RateLimit-Reset`` (epoch),
    at most ``MAX_RETRY_AFTER_S``; ``NaN`` is no answer."""
    asked_s = _asked_wait_s(retry_after, reset)
    return DEFAULT_RETRY_AFTER_S if math.isnan(asked_s) else min(asked_s, MAX_RETRY_AFTER_S)


def _asked_wait_s(retry_after: str | None, reset: str | None) -> float:
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
    return any(
        isinstance(e, ConnectionRefusedError)
        or type(e).__name__ in ("NewConnectionError", "NameResolutionError")
        for e in _causes(exc)
    )


def _not_http(exc: BaseException) -> bool:
    """Whether a connection error is an answer no HTTP client reads (an ssh banner, a header line
    over 64 KiB, over 100 headers), rather than a connection closed before any answer."""
    return any(
        isinstance(e, http.client.HTTPException) and not isinstance(e, http.client.RemoteDisconnected)
        for e in _causes(exc)
    )


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what it came from: causes, contexts, urllib3's ``reason``s and arguments."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [exc]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        pending.extend([current.__cause__, current.__context__, getattr(current, "reason", None)])
        pending.extend(a for a in current.args if isinstance(a, BaseException))
