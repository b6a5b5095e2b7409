"""The daemon's HTTP app: MCP at ``/mcp``, plus ``/health``, ``/stats`` and ``/metrics``.

MCP runs stateless with JSON responses: every request stands alone, so a client (or
the stdio proxy) survives a daemon restart without a session to re-establish.
Requests pass, in order: a body-size limit (413), the API key when one is set (401),
and a per-client rate limit (429 with ``Retry-After``).
"""

from __future__ import annotations

import hmac
import json
import math
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio.to_thread
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from graphmem.server import plugin_routes, rpc
from graphmem.server.runtime import Runtime
from graphmem.server.tools import build_mcp

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# Clients name themselves with this header (the stdio proxy does); else their address counts.
CLIENT_HEADER = b"x-graphmem-client"
PUBLIC_PATHS = frozenset({"/health"})
WINDOW_S = 60.0


async def _reject(send: Send, status: int, message: str, headers: dict[str, str] | None = None) -> None:
    body = json.dumps({"error": message}).encode()
    raw_headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw_headers += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": body})


class _TooLarge(Exception):
    pass


class Guard:
    """Body limit, API key and rate limit, before anything else runs."""

    def __init__(
        self, app: ASGIApp, *, runtime: Runtime, max_bytes: int, api_key: str | None, rate_limit: int
    ) -> None:
        self.app = app
        self.runtime = runtime
        self.max_bytes = max_bytes
        self.api_key = api_key.encode() if api_key else None
        self.rate_limit = rate_limit
        self._hits: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        metrics = self.runtime.metrics

        async def counted_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                metrics.http.labels(str(message["status"])).inc()
            await send(message)

        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_bytes:
            metrics.errors.labels("payload_too_large").inc()
            await _reject(counted_send, 413, f"Request body over {self.max_bytes:,} bytes: send less.")
            return
        if self.api_key is not None and scope.get("path") not in PUBLIC_PATHS:
            sent = headers.get(b"authorization", b"")
            if not hmac.compare_digest(sent, b"Bearer " + self.api_key):
                metrics.errors.labels("unauthorized").inc()
                await _reject(
                    counted_send,
                    401,
                    "Missing or wrong API key: send 'Authorization: Bearer <GRAPHMEM_API_KEY>'.",
                )
                return
        if self.rate_limit and scope.get("path") not in PUBLIC_PATHS:
            client = headers.get(CLIENT_HEADER, b"").decode("latin-1")[:100]
            if not client:
                peer = scope.get("client")
                client = peer[0] if peer else "unknown"
            wait = self._admit(client)
            if wait > 0:
                metrics.errors.labels("rate_limited").inc()
                await _reject(
                    counted_send,
                    429,
                    f"Rate limit of {self.rate_limit} requests per minute reached: "
                    f"retry in {math.ceil(wait)} s.",
                    {"retry-after": str(math.ceil(wait))},
                )
                return
        await self.app(scope, self._limited(receive), counted_send)

    def _admit(self, client: str) -> float:
        """0 when ``client`` may go on; else seconds until it may."""
        now = time.monotonic()
        with self._lock:
            hits = self._hits.setdefault(client, deque())
            while hits and hits[0] <= now - WINDOW_S:
                hits.popleft()
            if len(hits) >= self.rate_limit:
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
                if seen > self.max_bytes:
                    raise _TooLarge
            return message

        return wrapped


class _CatchTooLarge:
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
        except _TooLarge:
            if not started:
                await _reject(send, 413, f"Request body over {self.max_bytes:,} bytes: send less.")


def build_app(runtime: Runtime, *, max_bytes: int, api_key: str | None, rate_limit: int) -> Any:
    """The Starlette app the daemon serves."""
    mcp = build_mcp(runtime)

    @mcp.custom_route("/health", methods=["GET"])
    async def health(request: Request) -> Response:
        healthy, reasons = await anyio.to_thread.run_sync(runtime.health)
        body = {
            "status": "healthy" if healthy else "degraded",
            "reasons": reasons,
            "model_loaded": runtime.model_loaded,
            "uptime_s": runtime.uptime(),
            "version": runtime.version,
        }
        return JSONResponse(body, status_code=200 if healthy else 503)

    @mcp.custom_route("/stats", methods=["GET"])
    async def stats(request: Request) -> Response:
        return JSONResponse(await anyio.to_thread.run_sync(runtime.status))

    @mcp.custom_route("/metrics", methods=["GET"])
    async def metrics(request: Request) -> Response:
        body = await anyio.to_thread.run_sync(runtime.metrics.render)
        return Response(body, media_type="text/plain; version=0.0.4; charset=utf-8")

    @mcp.custom_route("/rpc", methods=["POST"])
    async def remote_call(request: Request) -> Response:
        try:
            body = json.loads(await request.body())
        except ValueError:
            return JSONResponse({"error": {"type": "InvalidInputError", "message": "Body is not JSON."}}, 400)
        answer = await anyio.to_thread.run_sync(rpc.call, runtime.memory, body)
        if isinstance(body, dict) and body.get("method") in rpc.WRITES:
            runtime.written()
        return JSONResponse(answer)

    plugin_routes.register(mcp, runtime)  # /plugin/inject, /plugin/compaction, /plugin/ingest

    return mcp.http_app(
        path="/mcp",
        stateless_http=True,
        json_response=True,
        middleware=[
            Middleware(_CatchTooLarge, max_bytes=max_bytes),
            Middleware(Guard, runtime=runtime, max_bytes=max_bytes, api_key=api_key, rate_limit=rate_limit),
        ],
    )
