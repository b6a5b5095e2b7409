"""The routes the OpenCode plugin and the Claude Code and Codex hooks call: ``/plugin/boot``,
``/plugin/turn``, ``/plugin/compaction``, ``/plugin/ingest`` (and ``/plugin/inject``, the single
block of plugins installed before the split).

They sit behind the same Guard as ``/mcp`` (body limit, API key, rate limit). Every
body is validated here; a bad one is a 400 with ``{"error": "<what is wrong and how to
fix it>"}``. Ingest is queued and answered at once (202): ``opencode run`` exits right
after the session goes idle, so the plugin can only fire the request, not wait for it.
"""

from __future__ import annotations

import functools
import json
import logging
import queue
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal, TypeVar

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from graphmem.errors import GraphmemError
from graphmem.server.runtime import Runtime
from graphmem.service.injection import MAX_FILES, Injector, InjectRequest, Message, TurnRequest
from graphmem.settings import PluginSettings

if TYPE_CHECKING:
    from fastmcp import FastMCP

log = logging.getLogger(__name__)

# OpenCode's ids: "ses_…", "msg_…" (letters, digits, _ and -).
Id = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,128}$")]
PathText = Annotated[str, StringConstraints(min_length=1, max_length=4096)]
# The user's message; longer ones are cut before recall anyway.
MAX_TEXT_CHARS = 100_000
# What the system prompt holds (OpenCode's own is ~10-40 kB with AGENTS.md).
MAX_SYSTEM_CHARS = 400_000
# Agents whose calls get no block: OpenCode's hidden ones (title names the session; compaction
# gets what must survive through /plugin/compaction; summary describes the changes).
SKIPPED_AGENTS = frozenset({"title", "compaction", "summary"})
# User messages one call may name (the plugin sends the newest ones).
MAX_MESSAGES = 500
# Sessions waiting for ingest; more are dropped (the daemon's continuous ingest catches up).
MAX_QUEUED_INGESTS = 1000


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=False)


class InjectBody(_Body):
    session_id: Id
    message_id: Id
    directory: PathText | None = None
    agent: Annotated[str, StringConstraints(max_length=100)] = ""
    text: Annotated[str, StringConstraints(max_length=MAX_TEXT_CHARS)] = ""
    system: Annotated[str, StringConstraints(max_length=MAX_SYSTEM_CHARS)] = ""
    files: Annotated[list[PathText], Field(max_length=MAX_FILES)] = []


Agent = Annotated[str, StringConstraints(max_length=100)]
TextHash = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,128}$")]


class BootBody(_Body):
    session_id: Id
    directory: PathText | None = None
    agent: Agent = ""
    system: Annotated[str, StringConstraints(max_length=MAX_SYSTEM_CHARS)] = ""


class MessageBody(_Body):
    id: Id
    hash: TextHash
    bare: bool = False


class TurnBody(_Body):
    session_id: Id
    directory: PathText | None = None
    agent: Agent = ""
    messages: Annotated[list[MessageBody], Field(min_length=1, max_length=MAX_MESSAGES)]
    text: Annotated[str, StringConstraints(max_length=MAX_TEXT_CHARS)] = ""
    system: Annotated[str, StringConstraints(max_length=MAX_SYSTEM_CHARS)] = ""
    files: Annotated[list[PathText], Field(max_length=MAX_FILES)] = []


class CompactionBody(_Body):
    session_id: Id
    directory: PathText | None = None


class IngestBody(_Body):
    # Whose session: OpenCode's (in its database), or a Claude Code or Codex one (in a file).
    client: Literal["opencode", "claude-code", "codex"] = "opencode"
    session_id: Id | None = None
    directory: PathText | None = None
    db_path: PathText | None = None  # OpenCode's database, as the plugin's OpenCode sees it
    transcript_path: PathText | None = None  # the session's file (Claude Code, Codex), as the hook names it


B = TypeVar("B", bound=_Body)
Handler = Callable[[Request], Awaitable[Response]]


class _Rejected(Exception):
    """A request answered with an error before (or instead of) reaching the service."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _answered(handler: Handler) -> Handler:
    """A route whose rejections are answered with their status and graphmem's errors with a 500."""

    @functools.wraps(handler)
    async def answer(request: Request) -> Response:
        try:
            return await handler(request)
        except _Rejected as exc:
            return _error(exc.status, str(exc))
        except GraphmemError as exc:
            return _error(500, f"{type(exc).__name__}: {exc}")

    return answer


def _problem(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "body"
    return f"Invalid request: {where}: {first['msg']}."


async def _parse(request: Request, model: type[B]) -> B:
    try:
        raw = json.loads(await request.body())
    except (ValueError, RecursionError):  # RecursionError: nested too deep for the parser
        raise _Rejected(400, "The body is not JSON: send a JSON object.") from None
    if not isinstance(raw, dict):
        raise _Rejected(400, "The body must be a JSON object.")
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise _Rejected(400, _problem(exc)) from None


def _directory(value: str | None) -> str | None:
    if value is None:
        return None
    path = Path(value)
    if not path.is_absolute():
        raise _Rejected(400, f"directory {value!r} is relative: send OpenCode's absolute project directory.")
    return value if path.is_dir() else None  # a directory since removed: no project, no error


class IngestQueue:
    """One background thread that asks the service to ingest the sessions the plugin names."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        self._queue: queue.Queue[tuple[str, str | None, str | None]] = queue.Queue(MAX_QUEUED_INGESTS)
        self._pending: set[tuple[str, str | None, str | None]] = set()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._work, name="graphmem-plugin-ingest", daemon=True)
        self._thread.start()

    def put(self, session_id: str | None, path: str | None, client: str = "opencode") -> bool:
        """Queue one ingest of ``client``'s session (from OpenCode's database, or the session's
        file): the same one twice is one; False when the queue is full."""
        key = (client, session_id, path)
        with self._lock:
            if key in self._pending:
                return True
            try:
                self._queue.put_nowait(key)
            except queue.Full:
                return False
            self._pending.add(key)
            return True

    def _work(self) -> None:
        while True:
            key = self._queue.get()
            with self._lock:
                self._pending.discard(key)
            client, session_id, path = key
            try:
                if client == "opencode":
                    report = self._runtime.memory.ingest_opencode(db_path=path, session_id=session_id)
                else:
                    files = self._runtime.memory.parts.session_files  # Claude Code's transcripts
                    report = files.ingest_session(client, path or "", session_id or "")
                log.info("plugin ingest session=%s: %s", session_id or "(all new)", report)
            except GraphmemError as exc:
                log.warning("plugin ingest session=%s failed: %s", session_id, exc)
            except Exception:  # the thread must survive anything one session does
                log.exception("plugin ingest session=%s failed", session_id)
            self._runtime.written()


def register(
    mcp: FastMCP, runtime: Runtime, injector: Injector | None = None, *, plugin: PluginSettings | None = None
) -> Injector:
    """Add the plugin's routes to the daemon's app; the injector they use. ``plugin``: the
    ``[plugin]`` settings the daemon validated at start (never read again here, where an
    invalid file would silently become the defaults)."""
    if injector is None:
        budget = plugin or PluginSettings()
        injector = Injector(
            runtime.memory,
            runtime.resolve_project,
            boot_max_tokens=budget.boot_max_tokens,
            turn_max_tokens=budget.turn_max_tokens,
            resolve_branch=runtime.resolve_branch,
        )
    ingests = IngestQueue(runtime)

    @mcp.custom_route("/plugin/boot", methods=["POST"])
    @_answered
    async def boot(request: Request) -> Response:
        body = await _parse(request, BootBody)
        directory = _directory(body.directory)
        if body.agent in SKIPPED_AGENTS:
            return JSONResponse({"block": "", "memory_ids": [], "skipped": body.agent})
        done = await anyio.to_thread.run_sync(injector.boot_block, body.session_id, directory, body.system)
        return JSONResponse(
            {"block": done.block, "memory_ids": list(done.memory_ids), "took_ms": done.took_ms}
        )

    @mcp.custom_route("/plugin/turn", methods=["POST"])
    @_answered
    async def turn(request: Request) -> Response:
        body = await _parse(request, TurnBody)
        directory = _directory(body.directory)
        if body.agent in SKIPPED_AGENTS:
            return JSONResponse({"blocks": {}, "memory_ids": [], "skipped": body.agent})
        call = TurnRequest(
            session_id=body.session_id,
            directory=directory,
            messages=tuple(Message(m.id, m.hash, m.bare) for m in body.messages),
            text=body.text,
            system=body.system,
            files=tuple(body.files),
        )
        done = await anyio.to_thread.run_sync(runtime.served, injector.turn, call)
        return JSONResponse(
            {
                "blocks": done.blocks,
                "memory_ids": list(done.memory_ids),
                "new": done.new,
                "took_ms": done.took_ms,
            }
        )

    @mcp.custom_route("/plugin/inject", methods=["POST"])
    @_answered
    async def inject(request: Request) -> Response:
        body = await _parse(request, InjectBody)
        directory = _directory(body.directory)
        if body.agent in SKIPPED_AGENTS:
            return JSONResponse({"block": "", "memory_ids": [], "skipped": body.agent})
        call = InjectRequest(
            session_id=body.session_id,
            message_id=body.message_id,
            directory=directory,
            text=body.text,
            system=body.system,
            files=tuple(body.files),
            agent=body.agent,
        )
        done = await anyio.to_thread.run_sync(runtime.served, injector.inject, call)
        return JSONResponse(
            {
                "block": done.block,
                "memory_ids": list(done.memory_ids),
                "boot": done.boot,
                "related": done.related,
                "took_ms": done.took_ms,
            }
        )

    @mcp.custom_route("/plugin/compaction", methods=["POST"])
    @_answered
    async def compaction(request: Request) -> Response:
        body = await _parse(request, CompactionBody)
        directory = _directory(body.directory)
        text = await anyio.to_thread.run_sync(injector.compaction, body.session_id, directory)
        return JSONResponse({"context": [text] if text else []})

    @mcp.custom_route("/plugin/ingest", methods=["POST"])
    @_answered
    async def ingest(request: Request) -> Response:
        body = await _parse(request, IngestBody)
        path = body.db_path if body.client == "opencode" else body.transcript_path
        name = "db_path" if body.client == "opencode" else "transcript_path"
        if body.client != "opencode" and (path is None or body.session_id is None):
            raise _Rejected(400, f"A {body.client} ingest names its session_id and transcript_path.")
        if path is not None and (not Path(path).is_absolute() or not Path(path).is_file()):
            raise _Rejected(400, f"{name} {path!r} is not an existing file: send an absolute path.")
        if not ingests.put(body.session_id, path, body.client):
            raise _Rejected(503, "Too many sessions wait for ingest: retry later.")
        return JSONResponse({"queued": True, "session_id": body.session_id}, status_code=202)

    return injector
