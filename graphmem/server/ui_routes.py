"""``graphmem ui``'s routes: the view's files, signing in, the graph, the status.

The page (``graphmem/server/ui/``: HTML, CSS and ES modules, no build step) is served as
files under ``/ui/`` with a strict Content-Security-Policy: scripts and styles from the
daemon only, no inline script, no framing, no request to any other origin. Its data comes
from the same verbs as the CLI's: ``/rpc`` (narrowed for a view session to the verbs the
table, ``server/verbs.py``, opens to the view), plus ``/ui/home`` (what needs a person,
``service/home.py``: it only reads), ``/ui/graph`` (a node's neighbourhood,
``service/neighbourhood.py``), ``/ui/context`` (``get_context``'s bundle with its Markdown)
and ``/ui/status`` (``/health`` and ``/stats`` in one, with the project's counts). How a
session is opened and why is in ``ui_sessions.py``; the Guard (``guard.py``) checks every
request first.
"""

from __future__ import annotations

import dataclasses
import json
import re
from importlib import resources
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from graphmem.core.views import event_view, memory_view
from graphmem.errors import GraphmemError, InvalidInputError
from graphmem.server import body_json
from graphmem.server.guard import PRINCIPAL
from graphmem.server.rpc import error_answer
from graphmem.server.runtime import Runtime
from graphmem.server.ui_sessions import UiSessions
from graphmem.server.verbs import verb
from graphmem.service.home import Counts, Flagged, HomePage, Short
from graphmem.service.neighbourhood import EDGE_LIMIT

if TYPE_CHECKING:
    from fastmcp import FastMCP

UI_FILE = re.compile(r"[a-z][a-z0-9_-]{0,40}\.(html|js|css|svg)")
MEDIA_TYPES = {
    "html": "text/html; charset=utf-8",
    "js": "text/javascript; charset=utf-8",
    "css": "text/css; charset=utf-8",
    "svg": "image/svg+xml",
}
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
    "cache-control": "no-store",
}
MAX_FIELD_CHARS = 1000


def may_call(request: Any) -> bool:
    """Whether a view session may send this ``/rpc`` request (checked before it is parsed): the
    verbs the table (``server/verbs.py``) opens to the view (``ui=True``), reading and the CLI's
    steering verbs, so redaction, dedup and history hold. Not the verbs that read or write files,
    import, export, bootstrap, ingest or coordinate agents: a view session needs none of them."""
    found = verb(request.get("method")) if isinstance(request, dict) else None
    return found is not None and found.rpc and found.ui


def not_for_the_view(request: Any) -> InvalidInputError:
    method = str(request.get("method"))[:60] if isinstance(request, dict) else "that"
    return InvalidInputError(f"graphmem ui may not call {method}: use the CLI for it.")


def ui_file(name: str) -> bytes | None:
    """The bytes of one of the view's files, or None for a name that is not one."""
    if not UI_FILE.fullmatch(name):
        return None
    found = resources.files("graphmem.server").joinpath("ui", name)
    return found.read_bytes() if found.is_file() else None


def _refused(status: int, message: str) -> JSONResponse:
    error = {"type": "InvalidInputError", "message": message}
    return JSONResponse({"error": error}, status, SECURITY_HEADERS)


async def _json_object(
    request: Request, fields: dict[str, type], *, empty: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The body as a JSON object of the named fields only, each of its type or null
    (``InvalidInputError``); ``empty``: what an empty body stands for (none: refused)."""
    body = await body_json.read(request, empty=empty)
    if not isinstance(body, dict):
        raise InvalidInputError(f"Send a JSON object with: {', '.join(fields)}.")
    unknown = set(body) - set(fields)
    if unknown:
        named = ", ".join(sorted(unknown))[:200]
        raise InvalidInputError(f"Unknown field(s): {named}; send {', '.join(fields)}.")
    for name, value in body.items():
        kind = fields[name]
        if value is not None and type(value) is not kind:  # bool is an int, and 1.0 is no whole number
            what = "a whole number" if kind is int else "text"
            raise InvalidInputError(f'"{name}" must be {what} or null, not {json.dumps(value)[:40]}.')
        if isinstance(value, str) and len(value) > MAX_FIELD_CHARS:
            raise InvalidInputError(f'"{name}" is over {MAX_FIELD_CHARS} characters.')
    return body


def register(mcp: FastMCP, runtime: Runtime, sessions: UiSessions) -> None:
    """Add the view's routes to the daemon's app."""
    reader, home = runtime.memory.parts.neighbourhood, runtime.memory.parts.home  # built by graphmem.app

    @mcp.custom_route("/ui", methods=["GET"])
    async def ui_root(request: Request) -> Response:
        return RedirectResponse("/ui/", 308, headers=SECURITY_HEADERS)

    @mcp.custom_route("/ui/", methods=["GET"])
    async def ui_index(request: Request) -> Response:
        return _file("index.html")

    @mcp.custom_route("/ui/{name}", methods=["GET"])
    async def ui_asset(request: Request) -> Response:
        return _file(str(request.path_params.get("name", "")))

    @mcp.custom_route("/ui/login", methods=["POST"])
    async def ui_login(request: Request) -> Response:
        """A one-time sign-in code, for ``graphmem ui`` (with the local token or the API key)."""
        if request.scope.get(PRINCIPAL) == "ui":
            return _refused(403, "A view session cannot open another: run `graphmem ui`.")
        code = sessions.new_code()
        return JSONResponse({"code": code, "path": f"/ui/#code={code}"}, headers=SECURITY_HEADERS)

    @mcp.custom_route("/ui/session", methods=["POST"])
    async def ui_session(request: Request) -> Response:
        try:
            body = await _json_object(request, {"code": str})
        except InvalidInputError as exc:
            return _refused(400, str(exc))
        session = sessions.open(str(body.get("code") or ""))
        if session is None:
            return _refused(
                401, "This sign-in link was used already or is over two minutes old: run `graphmem ui` again."
            )
        return JSONResponse({"session": session}, headers=SECURITY_HEADERS)

    @mcp.custom_route("/ui/signout", methods=["POST"])
    async def ui_signout(request: Request) -> Response:
        _, _, secret = request.headers.get("authorization", "").partition(" ")
        return JSONResponse({"signed_out": sessions.close(secret.strip())}, headers=SECURITY_HEADERS)

    @mcp.custom_route("/ui/graph", methods=["POST"])
    async def ui_graph(request: Request) -> Response:
        try:
            body = await _json_object(request, {"key": str, "target": str, "project": str, "limit": int})
            key = await anyio.to_thread.run_sync(_node_key, runtime, body)
            limit = body.get("limit")  # 0 is refused as out of range, not taken for the default
            limit = EDGE_LIMIT if limit is None else limit
            found = await anyio.to_thread.run_sync(lambda: reader.around(key, limit=limit))
        except InvalidInputError as exc:
            return JSONResponse(error_answer(exc), 400, SECURITY_HEADERS)
        except GraphmemError as exc:
            return JSONResponse(error_answer(exc), 200, SECURITY_HEADERS)
        return JSONResponse({"result": dataclasses.asdict(found)}, headers=SECURITY_HEADERS)

    @mcp.custom_route("/ui/context", methods=["POST"])
    async def ui_context(request: Request) -> Response:
        """``get_context`` as the bundle's own JSON, with its Markdown (what an agent is handed)."""
        try:
            body = await _json_object(request, {"target": str, "project": str, "max_tokens": int})
            if not str(body.get("target") or "").strip():
                raise InvalidInputError('Send "target": a file, a symbol, !12, #4 or a topic.')
            project = await anyio.to_thread.run_sync(runtime.resolve_project, body.get("project") or None)
            bundle = await anyio.to_thread.run_sync(
                lambda: runtime.memory.get_context(
                    str(body["target"]), project=project, max_tokens=body.get("max_tokens")
                )
            )
        except InvalidInputError as exc:
            return JSONResponse(error_answer(exc), 400, SECURITY_HEADERS)
        except GraphmemError as exc:
            return JSONResponse(error_answer(exc), 200, SECURITY_HEADERS)
        return JSONResponse({"result": bundle.to_dict()}, headers=SECURITY_HEADERS)

    @mcp.custom_route("/ui/home", methods=["POST"])
    async def ui_home(request: Request) -> Response:
        """What needs a person in the project (``service/home.py``); reads only."""
        try:
            body = await _json_object(request, {"project": str})
            project = await anyio.to_thread.run_sync(runtime.resolve_project, body.get("project") or None)
            page = await anyio.to_thread.run_sync(home.page, project)
        except InvalidInputError as exc:
            return JSONResponse(error_answer(exc), 400, SECURITY_HEADERS)
        except GraphmemError as exc:
            return JSONResponse(error_answer(exc), 200, SECURITY_HEADERS)
        return JSONResponse({"result": home_view(page)}, headers=SECURITY_HEADERS)

    @mcp.custom_route("/ui/status", methods=["POST"])
    async def ui_status(request: Request) -> Response:
        try:
            body = await _json_object(request, {"project": str}, empty={})
            project = await anyio.to_thread.run_sync(runtime.resolve_project, body.get("project") or None)
            counts = await anyio.to_thread.run_sync(home.counts, project)
        except InvalidInputError as exc:
            return JSONResponse(error_answer(exc), 400, SECURITY_HEADERS)
        except GraphmemError as exc:  # the store failed (a team's server down): said, not a 500
            return JSONResponse(error_answer(exc), 200, SECURITY_HEADERS)
        healthy, reasons = await anyio.to_thread.run_sync(runtime.health)
        status = await anyio.to_thread.run_sync(runtime.status)
        health = {"status": "healthy" if healthy else "degraded", "reasons": reasons,
                  "model_loaded": runtime.model_loaded, "uptime_s": runtime.uptime(),
                  "version": runtime.version}  # fmt: skip
        result = {"health": health, "stats": status, "project": {"name": project, **_counts_view(counts)}}
        return JSONResponse({"result": result}, headers=SECURITY_HEADERS)


def home_view(page: HomePage) -> dict[str, Any]:
    """The home page as JSON: each memory as ``show`` gives it, each rule's change as ``history``."""

    def short(found: Short) -> dict[str, Any]:
        return {"items": [flagged(f) for f in found.items], "total": found.total}

    def flagged(found: Flagged) -> dict[str, Any]:
        return {"memory": memory_view(found.memory), "why": found.why}

    return {
        "project": page.project,
        "proposed": short(page.proposed),
        "stale": short(page.stale),
        "blockers": short(page.blockers),
        "forge": {
            "items": [{"event": event_view(c.event), "memory": memory_view(c.memory)} for c in page.forge],
            "total": page.forge_total,
        },
        "learned": [
            {"session": s.session, "memories": [memory_view(m) for m in s.memories], "total": s.total}
            for s in page.learned
        ],
        "counts": _counts_view(page.counts),
    }


def _counts_view(counts: Counts) -> dict[str, Any]:
    return dataclasses.asdict(counts)


def _node_key(runtime: Runtime, body: dict[str, Any]) -> str:
    """The node a graph request asks for: its ``key``, a memory id, or the entity its ``target``
    names in ``project``, read by ``get_context``'s own reader (``ContextBuilder.named``): a
    target names the same thing here as in ``/ui/context`` and ``graphmem context``."""
    key, target = body.get("key"), body.get("target")
    if key:
        return str(key)
    if not target or not str(target).strip():
        raise InvalidInputError(
            'Send "key" (a memory id or entity key) or "target" (!12, #4, a file path, a symbol).'
        )
    target = str(target).strip()
    if target.startswith("mem_"):
        return target
    # The project as get_context takes it: checked (a NUL, a relative path), its git toplevel,
    # and on a team's store the name the store keeps it under.
    project = runtime.memory.own_project(runtime.resolve_project(body.get("project") or None))
    entity, candidates = runtime.memory.parts.context.named(target, project)
    if entity is not None:
        return entity.key
    if candidates:
        raise InvalidInputError(
            f"{target[:200]!r} names several symbols: {'; '.join(candidates)}. Give the qualified "
            "name (Class.method) or path::symbol (src/app.py::Class.method)."
        )
    raise InvalidInputError(
        f"{target[:200]!r} names no MR, issue, epic, file or symbol graphmem knows: try !12, #4, a "
        "file path, a symbol (Class.method, src/app.py::Class), or a memory id."
    )


def _file(name: str) -> Response:
    body = ui_file(name)
    if body is None:
        return _refused(404, f"No file {name[:100]!r} in the view: open /ui/.")
    return Response(body, media_type=MEDIA_TYPES[name.rsplit(".", 1)[1]], headers=SECURITY_HEADERS)
