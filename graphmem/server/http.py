"""The daemon's HTTP app: MCP at ``/mcp``, plus ``/health``, ``/identity`` (``identity``),
``/stats``, ``/metrics``, ``/rpc``, the plugin's routes and ``graphmem ui``'s (``ui_routes``).

MCP runs stateless with JSON responses: every request stands alone, so a client (or
the stdio proxy) survives a daemon restart without a session to re-establish. Every
request first passes the ``Guard`` (``graphmem.server.guard``): Host and Origin, body
size, JSON content type, the local token or API key, and the rate limit.

The app's lifespan runs what it serves with: FastMCP's (the MCP session manager), and inside it
the thread that ingests the sessions the plugin names (``plugin_routes.IngestQueue``). An app
shut down leaves no thread of its own, and nothing that keeps its runtime alive.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio.to_thread
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Lifespan, Receive, Scope, Send

from graphmem.app import plugin_injector
from graphmem.errors import InvalidInputError
from graphmem.server import body_json, identity, mcp_shape, plugin_routes, rpc, rpc_stream, ui_routes
from graphmem.server.guard import PRINCIPAL, CatchTooLarge, Guard, Policy, read_body
from graphmem.server.rpc_types import VERBS
from graphmem.server.runtime import Runtime
from graphmem.server.tools import build_mcp
from graphmem.server.ui_sessions import UiSessions
from graphmem.service.injection import Injector


def build_app(runtime: Runtime, policy: Policy, injector: Injector | None = None) -> Any:
    """The Starlette app the daemon serves; ``injector``: the plugin's routes' (``graphmem.app``
    builds it: ``plugin_injector``; default: within the default budgets)."""
    mcp = build_mcp(runtime)
    sessions = UiSessions()

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

    @mcp.custom_route(identity.PATH, methods=["POST"])
    async def prove_identity(request: Request) -> Response:
        """Public: proves to a client that this process holds the token (``server/identity.py``)."""
        try:
            sent = await body_json.read(request)
        except InvalidInputError:
            sent = None
        nonce = sent.get("nonce") if isinstance(sent, dict) else None
        server = request.scope.get("server") or ("", 0)
        answer = identity.answer(policy.token, policy.api_key, nonce, int(server[1] or 0))
        if answer is None:
            message = 'Send {"nonce": "<16 to 128 letters, digits, - or _>"} as JSON.'
            return JSONResponse({"error": message}, 400)
        return JSONResponse(answer)

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
            body = await body_json.read(request)
        except InvalidInputError as exc:
            return JSONResponse(rpc.error_answer(exc), 400)
        if request.scope.get(PRINCIPAL) == "ui" and not ui_routes.may_call(body):
            return JSONResponse(rpc.error_answer(ui_routes.not_for_the_view(body)), 403)
        try:
            method, arguments = rpc.parse(body)
            streamed = rpc_stream.wants_progress(body)
        except InvalidInputError as exc:  # a call that cannot run at all
            return JSONResponse(rpc.error_answer(exc), 400)
        if streamed:
            return _streamed_call(runtime, method, arguments)
        answer = await anyio.to_thread.run_sync(runtime.served, rpc.run, runtime.memory, method, arguments)
        if VERBS[method].writes:
            runtime.written()
        return JSONResponse(answer)

    # plugin_routes.ROUTES; the thread of their ingests runs with the app's lifespan (_with_ingests)
    ingests = plugin_routes.register(mcp, runtime, injector or plugin_injector(runtime))
    ui_routes.register(mcp, runtime, sessions)  # /ui/ and its files, /ui/login, /ui/session, /ui/graph...

    app = mcp.http_app(
        path="/mcp",
        stateless_http=True,
        json_response=True,
        middleware=[
            Middleware(CatchTooLarge, max_bytes=policy.max_bytes),
            Middleware(Guard, policy=policy, metrics=runtime.metrics, sessions=sessions),
            Middleware(CheckedMcp),
        ],
    )
    app.router.lifespan_context = _with_ingests(app.router.lifespan_context, ingests)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(ClientDisconnect, _client_gone)
    return app


class CheckedMcp:
    """A POST to ``/mcp`` whose JSON is no request graphmem serves (a batch, arguments that are no
    object, ...) is answered here, in ``mcp_shape``'s words as the stdio proxy answers it, instead
    of FastMCP's dump of pydantic's errors; every other request goes on with its body replayed."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST" or scope.get("path") != "/mcp":
            await self.app(scope, receive, send)
            return
        body, receive = await read_body(receive)  # the Guard read it whole: this is its replay
        try:
            message = json.loads(body or b"")
        except (ValueError, RecursionError):  # not JSON: FastMCP's parse error says so
            await self.app(scope, receive, send)
            return
        refused = mcp_shape.problem(message)
        if refused is None:
            await self.app(scope, receive, send)
            return
        code, text = refused
        answer_id = mcp_shape.request_id(message)
        error = {"jsonrpc": "2.0", "id": answer_id, "error": {"code": code, "message": text}}
        # 200 for a request the reply can name (as FastMCP answers its own errors), else 400
        await JSONResponse(error, status_code=400 if answer_id is None else 200)(scope, receive, send)


def _with_ingests(lifespan: Lifespan[Any], ingests: plugin_routes.IngestQueue) -> Lifespan[Any]:
    """``lifespan`` (FastMCP's) with the plugin's ingest thread inside it: started once the app
    serves, ended before it stops, so the app owns the thread's whole life."""

    @asynccontextmanager
    async def serving(app: Any) -> AsyncIterator[Any]:  # FastMCP's state, if any
        async with lifespan(app) as state:
            ingests.start()
            try:
                yield state
            finally:
                await anyio.to_thread.run_sync(ingests.stop)

    return serving


def _streamed_call(runtime: Runtime, method: str, arguments: dict[str, Any]) -> Response:
    """``/rpc`` with ``"progress": true``: progress lines, then the answer (``rpc_stream``)."""
    relay = rpc_stream.ProgressRelay(VERBS[method].progress)
    callback = relay.callback()
    if callback is not None:
        arguments = {**arguments, "progress": callback}

    def job() -> dict[str, Any]:
        try:
            return rpc.run(runtime.memory, method, arguments)
        finally:
            if VERBS[method].writes:
                runtime.written()

    return rpc_stream.ProgressStream(job, relay, log_hint=runtime.log_hint)


ROUTES = "/mcp, /rpc, /identity, /plugin/* and /ui/* (POST), /health, /stats, /metrics and /ui/ (GET)"


async def _http_error(request: Request, exc: Exception) -> Response:
    """A wrong path or method answers JSON that says what the daemon serves, like every other error."""
    status = exc.status_code if isinstance(exc, HTTPException) else 400
    path = request.url.path[:200]
    if status == 404:
        message = f"No route {path}: the daemon serves {ROUTES}."
    elif status == 405:
        message = f"{request.method} is not allowed on {path}: the daemon serves {ROUTES}."
    else:
        message = str(getattr(exc, "detail", "Bad request"))
    headers = getattr(exc, "headers", None)
    return JSONResponse({"error": message}, status_code=status, headers=headers)


async def _client_gone(request: Request, exc: Exception) -> Response:
    """The client hung up before sending its whole body: nothing ran, and no one is left to tell."""
    return JSONResponse({"error": "The request ended before its body did: send the whole body."}, 400)
