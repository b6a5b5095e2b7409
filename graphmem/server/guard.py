"""Who may talk to the daemon, checked on every request before any route runs.

A web page in the user's browser can send requests to ``127.0.0.1``; DNS rebinding
can even make its own name point there. So, in order:

1. each header the guard judges (``JUDGED_HEADERS``: Host, Origin, Authorization,
   Content-Type, Content-Length) comes at most once (400): with two, which one counts
   would be a guess, and the guard never judges by the first alone;
2. ``Host`` must name this machine's loopback (``127.0.0.1``, ``localhost``, ``::1``,
   any port) or a configured ``[server] allowed_hosts`` entry (403);
3. an ``Origin``, when sent, must be a loopback origin or in ``[server] allowed_origins``
   (403); clients that are not browsers send none;
4. the declared body size must fit (413; a streamed body is cut at the same size);
5. a body (POST, PUT, PATCH) must be JSON (415): a page's "simple" cross-site request
   (``text/plain``, forms) never reaches a route;
6. every path but ``/health`` and the view's files (``GET /ui/…``, no data in them) needs
   ``Authorization: Bearer <secret>`` (401): the per-user token of ``daemon.token`` (mode
   0600, which no page can read), or the configured API key; or, for ``graphmem ui``'s
   page, a session of ``ui_sessions.UiSessions``, good only on the view's routes
   (``UI_SESSION_PATHS``) and only from the view's own origin (the ``Origin`` a browser
   sets must be ``http://`` + ``Host``: a page of another port or site is refused even
   with a stolen session); ``POST /ui/session``, which trades a one-time code for a
   session, needs that same origin;
7. a rate limit per principal (429 with ``Retry-After``): the local token, the API key and
   the view's sessions each have a budget, whatever address a request comes from; requests
   with a missing or wrong secret share one more budget of their own (``ANONYMOUS``), so
   they can neither starve a client that holds the secret nor be sent without limit;
8. a body (POST, PUT, PATCH) is read whole (it is at most ``max_bytes``) and must be UTF-8
   text with no lone surrogate, raw or escaped (400, ``body_text.problem``), before any
   route parses it.
"""

from __future__ import annotations

import hmac
import json
import math
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from graphmem.server import body_text
from graphmem.server.metrics import Metrics
from graphmem.server.ui_sessions import UiSessions

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
ANY = "*"
PUBLIC_PATHS = frozenset({"/health", "/identity"})  # /identity: the daemon proves it holds the token
ANONYMOUS = "anonymous"  # the rate-limit bucket of every request with a missing or wrong secret
UI_PREFIX = "/ui"  # the view's files: GET, public (they hold no data)
UI_SIGN_IN = "/ui/session"  # a one-time code for a session: public, same origin only
# What a view session may call; /rpc's verbs are narrowed further by the route (ui_routes.may_call).
UI_SESSION_PATHS = frozenset({"/rpc", "/ui/home", "/ui/graph", "/ui/context", "/ui/status", "/ui/signout"})
PRINCIPAL = "graphmem.principal"  # the scope key the Guard leaves for routes: "local", "api-key", "ui"
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
JSON_TYPE = "application/json"
# The headers the guard judges a request by, with the names its errors show: each must come once.
JUDGED_HEADERS = {
    b"host": "Host",
    b"origin": "Origin",
    b"authorization": "Authorization",
    b"content-type": "Content-Type",
    b"content-length": "Content-Length",
}
WINDOW_S = 60.0
HOW_TO_ALLOW = "set [server] {setting} in graphmem's config (see docs/daemon.md#security-model)"


def host_name(value: str) -> str:
    """The name part of a ``Host`` value or an origin's netloc: no port, no brackets, lowercase."""
    value = value.strip().lower()
    if value.startswith("["):
        name = value[1 : value.find("]")] if "]" in value else value[1:]
    elif value.count(":") == 1:
        name = value.split(":", 1)[0]
    else:
        name = value  # a bare name, or a bare IPv6 address
    return name.rstrip(".")


def same_origin(origin: bytes | None, host: str) -> bool:
    """Whether a browser's ``Origin`` is the daemon's own (``http://`` + the ``Host`` it asked)."""
    return (
        origin is not None and normalise_origin(origin.decode("latin-1")) == f"http://{host.strip().lower()}"
    )


def normalise_origin(origin: str) -> str:
    """``scheme://host[:port]`` in lowercase, without a trailing slash."""
    return origin.strip().lower().rstrip("/")


@dataclass(frozen=True, slots=True)
class Policy:
    """What the Guard lets through; built by the daemon from its settings."""

    token: str
    api_key: str | None = None
    max_bytes: int = 2_000_000
    rate_limit: int = 1200
    allowed_hosts: frozenset[str] = frozenset()
    allowed_origins: frozenset[str] = frozenset()

    @classmethod
    def build(
        cls,
        *,
        token: str,
        api_key: str | None,
        max_bytes: int,
        rate_limit: int,
        allowed_hosts: Iterable[str] = (),
        allowed_origins: Iterable[str] = (),
    ) -> Policy:
        return cls(
            token=token,
            api_key=api_key.strip() or None if api_key else None,
            max_bytes=max_bytes,
            rate_limit=rate_limit,
            allowed_hosts=frozenset(host_name(h) if h != ANY else ANY for h in allowed_hosts),
            allowed_origins=frozenset(normalise_origin(o) for o in allowed_origins),
        )

    def host_allowed(self, host: str) -> bool:
        name = host_name(host)
        return name in LOOPBACK_HOSTS or ANY in self.allowed_hosts or name in self.allowed_hosts

    def origin_allowed(self, origin: str) -> bool:
        origin = normalise_origin(origin)
        if ANY in self.allowed_origins or origin in self.allowed_origins:
            return True
        try:
            parts = urlsplit(origin)
        except ValueError:
            return False
        return parts.scheme in ("http", "https") and host_name(parts.netloc) in LOOPBACK_HOSTS

    def principal(self, authorization: bytes) -> str | None:
        """Who the credentials name ("local" for the token, "api-key"), or None."""
        scheme, _, secret = authorization.partition(b" ")
        if scheme.lower() != b"bearer" or not secret:
            return None
        secret = secret.strip()
        # Both comparisons always run, in constant time, so timing tells nothing.
        local = hmac.compare_digest(secret, self.token.encode())
        remote = self.api_key is not None and hmac.compare_digest(secret, self.api_key.encode())
        return "local" if local else "api-key" if remote else None


async def reject(send: Send, status: int, message: str, headers: dict[str, str] | None = None) -> None:
    body = json.dumps({"error": message}).encode()
    raw_headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw_headers += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": body})


def internal_error(exc: BaseException) -> str:
    """The answer to a request that failed inside graphmem: what failed, never its text (which may
    quote a request), and where its traceback is."""
    return (
        f"graphmem failed on this request ({type(exc).__name__}), a bug in graphmem: its traceback "
        "is in the daemon's log (daemon.log in graphmem's data dir, or the terminal of "
        "`graphmem serve`); please report it with that traceback."
    )


class TooLarge(Exception):
    """A streamed body grew past the limit."""


class Refused(Exception):
    def __init__(self, status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.kind, self.message, self.headers = status, kind, message, headers


class Guard:
    """ASGI middleware applying a ``Policy`` to every HTTP request (see the module docstring)."""

    def __init__(
        self, app: ASGIApp, *, policy: Policy, metrics: Metrics, sessions: UiSessions | None = None
    ) -> None:
        self.app = app
        self.policy = policy
        self.metrics = metrics
        self.sessions = sessions
        self._hits: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":  # the daemon serves none: refuse the handshake
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        started = False

        async def counted_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                self.metrics.http.labels(str(message["status"])).inc()
            await send(message)

        try:
            self.check(scope)
        except Refused as refused:
            self.metrics.errors.labels(refused.kind).inc()
            await reject(counted_send, refused.status, refused.message, refused.headers)
            return
        try:
            receive = self._limited(receive)
            if scope.get("method") in BODY_METHODS:
                body, receive = await read_body(receive)
                problem = None if body is None else body_text.problem(body)
                if problem is not None:
                    self.metrics.errors.labels("invalid_utf8").inc()
                    await reject(counted_send, 400, problem)
                    return
            await self.app(scope, receive, counted_send)
        except TooLarge:
            raise  # CatchTooLarge, around the Guard, answers it with a 413
        except Exception as exc:
            # Starlette's error middleware, outside the Guard, would answer a bare 500 that
            # /metrics never sees: answer it here, counted, and let the exception go on to
            # uvicorn, which logs its traceback (``daemon_log.RepeatFilter`` keys it by cause).
            if not started:
                self.metrics.errors.labels("internal").inc()
                await reject(counted_send, 500, internal_error(exc))
            raise

    def check(self, scope: Scope) -> None:
        """Raise ``Refused`` unless the request may reach a route."""
        headers: dict[bytes, bytes] = {}
        sent: dict[bytes, int] = {}
        for key, value in scope.get("headers") or []:
            key = key.lower()
            headers.setdefault(key, value)
            sent[key] = sent.get(key, 0) + 1
        repeated = [name for key, name in JUDGED_HEADERS.items() if sent.get(key, 0) > 1]
        if repeated:
            names = " and ".join(repeated)
            raise Refused(
                400,
                "repeated_header",
                f"The request carries {names} more than once: graphmem checks "
                f"{'these headers' if repeated[1:] else 'this header'} and will not guess which copy "
                "counts. Send each header once.",
            )
        policy = self.policy
        host = headers.get(b"host", b"").decode("latin-1")
        if not policy.host_allowed(host):
            shown = host[:100] or "(none)"
            raise Refused(
                403,
                "forbidden_host",
                f"Host {shown!r} is not this machine's loopback: graphmem answers only requests "
                f"addressed to 127.0.0.1, localhost or ::1. To reach it under another name, "
                + HOW_TO_ALLOW.format(setting="allowed_hosts")
                + ".",
            )
        origin = headers.get(b"origin")
        if origin is not None and not policy.origin_allowed(origin.decode("latin-1")):
            raise Refused(
                403,
                "forbidden_origin",
                f"Origin {origin.decode('latin-1')[:100]!r} may not call graphmem: web pages are "
                "refused so that a site cannot read or write your memory. To allow a web client, "
                + HOW_TO_ALLOW.format(setting="allowed_origins")
                + ".",
            )
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > policy.max_bytes:
            raise Refused(
                413, "payload_too_large", f"Request body over {policy.max_bytes:,} bytes: send less."
            )
        path = scope.get("path")
        if scope.get("method") in BODY_METHODS:
            media = headers.get(b"content-type", b"").split(b";", 1)[0].strip().lower()
            if media != JSON_TYPE.encode():
                shown = media.decode("latin-1")[:100] or "none"
                raise Refused(
                    415,
                    "unsupported_media_type",
                    f"Content-Type {shown!r} is refused: send the body as JSON with "
                    f"'Content-Type: {JSON_TYPE}'.",
                )
        if path in PUBLIC_PATHS:
            return
        view_file = path == UI_PREFIX or str(path).startswith(UI_PREFIX + "/")
        if view_file and scope.get("method") in ("GET", "HEAD"):
            return
        if path == UI_SIGN_IN:
            self._same_origin(origin, host)
            return
        principal = policy.principal(headers.get(b"authorization", b""))
        if principal is None and self._ui_session(headers.get(b"authorization", b"")):
            if path not in UI_SESSION_PATHS:
                raise Refused(
                    403,
                    "forbidden_path",
                    f"A graphmem ui session may not call {str(path)[:100]}: it reaches "
                    f"{', '.join(sorted(UI_SESSION_PATHS))} only.",
                )
            self._same_origin(origin, host)
            principal = "ui"
        if principal is None:
            self._limit(ANONYMOUS)
            also = " or the API key (GRAPHMEM_API_KEY)" if policy.api_key else ""
            raise Refused(
                401,
                "unauthorized",
                "Missing or wrong credentials: send 'Authorization: Bearer <token>' with the token "
                f"from the file daemon.token in graphmem's data dir{also}. graphmem mcp, the CLI and "
                "the OpenCode plugin do this by themselves.",
            )
        self._limit(principal)
        scope[PRINCIPAL] = principal

    def _limit(self, bucket: str) -> None:
        """Raise a 429 when ``bucket`` (a principal, or ``ANONYMOUS``) used up its minute."""
        if not self.policy.rate_limit:
            return
        wait = self._admit(bucket)
        if wait > 0:
            raise Refused(
                429,
                "rate_limited",
                f"Rate limit of {self.policy.rate_limit} requests per minute reached: "
                f"retry in {math.ceil(wait)} s.",
                {"retry-after": str(math.ceil(wait))},
            )

    def _ui_session(self, authorization: bytes) -> bool:
        scheme, _, secret = authorization.partition(b" ")
        return (
            self.sessions is not None
            and scheme.lower() == b"bearer"
            and bool(secret.strip())
            and self.sessions.valid(secret.strip())
        )

    @staticmethod
    def _same_origin(origin: bytes | None, host: str) -> None:
        if not same_origin(origin, host):
            raise Refused(
                403,
                "forbidden_origin",
                "Only graphmem ui's own page may use a view session or sign in: the request's Origin "
                f"must be http://{host[:100]}. Open the view with `graphmem ui`.",
            )

    def _admit(self, client: str) -> float:
        """0 when ``client`` may go on; else seconds until it may."""
        now = time.monotonic()
        with self._lock:
            hits = self._hits.setdefault(client, deque())
            while hits and hits[0] <= now - WINDOW_S:
                hits.popleft()
            if len(hits) >= self.policy.rate_limit:
                return hits[0] + WINDOW_S - now
            hits.append(now)
            return 0.0

    def _limited(self, receive: Receive) -> Receive:
        """Counts streamed body bytes (no Content-Length) against the limit."""
        seen = 0

        async def wrapped() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.policy.max_bytes:
                    raise TooLarge
            return message

        return wrapped


async def read_body(receive: Receive) -> tuple[bytes | None, Receive]:
    """The whole body (None when the client left before it ended) and a ``receive`` that hands
    it to the route as if it were read for the first time, then goes on with ``receive``."""
    messages: list[Message] = []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request" or not message.get("more_body", False):
            break
    body = None
    if messages[-1]["type"] == "http.request":
        body = b"".join(message.get("body", b"") for message in messages)
        messages = [{"type": "http.request", "body": body, "more_body": False}]

    async def replayed() -> Message:
        return messages.pop(0) if messages else await receive()

    return body, replayed


class CatchTooLarge:
    """Turns a body that grew past the limit mid-stream into a 413."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except TooLarge:
            if not started:
                await reject(send, 413, f"Request body over {self.max_bytes:,} bytes: send less.")
