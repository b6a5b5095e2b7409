"""The routes the OpenCode plugin and the Claude Code and Codex hooks call, declared in
``ROUTES``: ``/plugin/boot``, ``/plugin/turn``, ``/plugin/compaction``, ``/plugin/ingest`` (and
``/plugin/inject``, the single block of plugins installed before the split). Each names its body,
what it runs on the injector ``graphmem.app.plugin_injector`` built for the daemon, and how it
answers; ``register`` serves them all the same way.

They sit behind the same Guard as ``/mcp`` (body limit, API key, rate limit). Every
body is validated here; a bad one is a 400 with ``{"error": "<what is wrong and how to
fix it>"}``. Ingest is queued and answered at once (202): ``opencode run`` exits right
after the session goes idle, and waits for the plugin's pending ingest only as it closes
(the plugin's ``dispose``, bounded by its timeout), so the answer must not wait for the work.
What the queued ingest would refuse of a session file (Claude Code's, Codex's) without reading
it -- a file outside the client's sessions folder, a symlink, another session's file -- or of
OpenCode's database (a path the system cannot look up, no regular file) is a 400 before it is
queued, never a 202 and a line in the daemon's log; the ingest checks it again.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Generic, Literal, TypeVar

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from graphmem.core.keys import MAX_SHOWN_KEYS, SHOWN_KEY
from graphmem.errors import GraphmemError, InvalidInputError, SessionStoreError
from graphmem.server import body_json
from graphmem.server.runtime import Runtime
from graphmem.service.injection import (
    MAX_FILES,
    Injection,
    Injector,
    InjectRequest,
    Message,
    Turn,
    TurnRequest,
)
from graphmem.service.inputs import parse_path

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
# How long an app's shutdown waits for the session being ingested, as long as for the runtime's
# workers (``Runtime.stop_worker``); past it the thread ends on its own once that ingest has.
INGEST_STOP_TIMEOUT_S = 10.0
# One ingest the plugin asked for: the client, the session's id, its database or file.
_Ingest = tuple[str, str | None, str | None]


class _Body(BaseModel):
    # strict: a field takes its own JSON type only (``"bare": "yes"`` or ``1`` is no boolean)
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=False, strict=True)


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
# A memory as an answer's ``shown`` names it: its id and the start of its text's hash.
ShownKey = Annotated[str, StringConstraints(pattern=f"^{SHOWN_KEY.pattern}$")]


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
    # What the client's record says the session showed (the ``shown`` of earlier answers): the
    # daemon leaves them out of the newest block though it restarted since and forgot them. The
    # OpenCode plugin's and the Claude Code and Codex hooks' records alike, checked here alone.
    shown: Annotated[list[ShownKey], Field(max_length=MAX_SHOWN_KEYS)] = []


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
    """A route whose rejections are answered with their status, an input the service refuses with
    a 400, and graphmem's other errors with a 500."""

    @functools.wraps(handler)
    async def answer(request: Request) -> Response:
        try:
            return await handler(request)
        except _Rejected as exc:
            return _error(exc.status, str(exc))
        except InvalidInputError as exc:  # the call is to fix, not the daemon
            return _error(400, str(exc))
        except GraphmemError as exc:
            return _error(500, f"{type(exc).__name__}: {exc}")

    return answer


def _problem(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"])[:200] or "body"  # an unknown key may be 10,000 characters
    return f"Invalid request: {where}: {first['msg']}."


async def _parse(request: Request, model: type[B]) -> B:
    try:
        raw = await body_json.read(request)
    except InvalidInputError as exc:
        raise _Rejected(400, str(exc)) from None
    if not isinstance(raw, dict):
        raise _Rejected(400, "The body must be a JSON object.")
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise _Rejected(400, _problem(exc)) from None


def _absolute(value: str, name: str, needs: str) -> Path:
    """``value`` as an absolute path the system can look up, else a 400: a NUL or a part over 255
    bytes is refused as the MCP tools and /ui refuse it (``inputs.parse_path``), never left to
    raise ``OSError`` (ENAMETOOLONG) in the route."""
    try:
        path = parse_path(value, what=name)
    except InvalidInputError as exc:
        raise _Rejected(400, str(exc)) from None
    if not path.is_absolute():
        raise _Rejected(400, f"{name} {value[:200]!r} is relative: send {needs}.")
    return path


def _found(check: Callable[[], bool]) -> bool:
    """``Path.is_dir`` or ``Path.is_file``, False for a path the daemon may not look up (they
    raise EACCES where they return False for a missing one)."""
    try:
        return check()
    except OSError:
        return False


def _directory(value: str | None) -> str | None:
    if value is None:
        return None
    path = _absolute(value, "directory", "OpenCode's absolute project directory")
    return value if _found(path.is_dir) else None  # a directory since removed: no project, no error


class IngestQueue:
    """The sessions the plugin names, ingested one at a time on a thread of their own. The thread
    runs while the app serves: its lifespan starts and stops it (``http.build_app``), so an app
    shut down leaves no thread behind, nor the runtime (its store, its model) that thread holds.
    Sessions queued while it does not run wait for the next start."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        self._waiting: deque[_Ingest] = deque()
        self._pending: set[_Ingest] = set()
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None  # the one that works; one stopped ends

    def put(self, session_id: str | None, path: str | None, client: str = "opencode") -> bool:
        """Queue one ingest of ``client``'s session (from OpenCode's database, or the session's
        file): the same one twice is one; False when the queue is full."""
        key = (client, session_id, path)
        with self._changed:
            if key in self._pending:
                return True
            if len(self._waiting) >= MAX_QUEUED_INGESTS:
                return False
            self._waiting.append(key)
            self._pending.add(key)
            self._changed.notify()
            return True

    def start(self) -> None:
        """Start the thread that ingests the queued sessions (the app's lifespan begins)."""
        with self._changed:
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="graphmem-plugin-ingest", daemon=True)
                self._thread.start()

    def stop(self, timeout_s: float = INGEST_STOP_TIMEOUT_S) -> None:
        """End the thread once the ingest under way has (the app's lifespan ends): waits up to
        ``timeout_s`` for it; the sessions still queued wait for the next start."""
        with self._changed:
            thread, self._thread = self._thread, None
            self._changed.notify_all()
        if thread is None:
            return
        thread.join(timeout_s)
        if thread.is_alive():
            log.warning("a plugin ingest still runs after %.0f s: stopping without it", timeout_s)

    def _work(self) -> None:
        me = threading.current_thread()
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._thread is not me or bool(self._waiting))
                if self._thread is not me:
                    return
                key = self._waiting.popleft()
                self._pending.discard(key)
            self._ingest(*key)

    def _ingest(self, client: str, session_id: str | None, path: str | None) -> None:
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


@dataclass(frozen=True, slots=True)
class Doors:
    """What the plugin's routes call: the daemon, the injector ``graphmem.app`` built on its
    service (``plugin_injector``), and the queue of sessions to ingest."""

    runtime: Runtime
    injector: Injector
    ingests: IngestQueue


@dataclass(frozen=True, slots=True)
class PluginRoute(Generic[B]):
    """One of the plugin's routes: the body it takes, what it does with it (``run``, in a worker
    thread, with the body and the project directory it names) and how that is answered."""

    path: str
    body: type[B]
    run: Callable[[Doors, B, str | None], Any]
    answers: tuple[str, ...] = ()  # the fields of ``run``'s result answered (none: its dict as is)
    served: bool = False  # counted as a client's call: the daemon's background worker steps aside
    placed: bool = True  # the body's ``directory`` is the project's: absolute, or a 400
    skipped: Mapping[str, Any] | None = None  # the answer to OpenCode's hidden agents (SKIPPED_AGENTS)
    status: int = 200


def _boot(doors: Doors, body: BootBody, directory: str | None) -> Injection:
    return doors.injector.boot_block(body.session_id, directory, body.system)


def _turn(doors: Doors, body: TurnBody, directory: str | None) -> Turn:
    messages = tuple(Message(m.id, m.hash, m.bare) for m in body.messages)
    call = TurnRequest(
        body.session_id, directory, messages, body.text, body.system, tuple(body.files), frozenset(body.shown)
    )
    return doors.injector.turn(call)


def _inject(doors: Doors, body: InjectBody, directory: str | None) -> Injection:
    call = InjectRequest(
        body.session_id, body.message_id, directory, body.text, body.system, tuple(body.files), body.agent
    )
    return doors.injector.inject(call)


def _compaction(doors: Doors, body: CompactionBody, directory: str | None) -> dict[str, Any]:
    text = doors.injector.compaction(body.session_id, directory)
    return {"context": [text] if text else []}


def _ingest(doors: Doors, body: IngestBody, directory: str | None) -> dict[str, Any]:
    if body.client == "opencode":
        path = body.db_path
        if path is not None:
            _database(doors, path)
    else:
        path, session_id = body.transcript_path, body.session_id
        if path is None or session_id is None:
            raise _Rejected(400, f"A {body.client} ingest names its session_id and transcript_path.")
        transcript = _absolute(path, "transcript_path", "an absolute path")
        if not _found(transcript.is_file):  # a FIFO or a device is there, but is no transcript
            there = "is not a regular file" if _found(transcript.exists) else "is not an existing file"
            raise _Rejected(
                400,
                f"transcript_path {path[:200]!r} {there}: send the absolute path of the session's "
                "transcript.",
            )
        _session_file(doors, body.client, path, session_id)
    if not doors.ingests.put(body.session_id, path, body.client):
        raise _Rejected(503, "Too many sessions wait for ingest: retry later.")
    return {"queued": True, "session_id": body.session_id}


def _database(doors: Doors, path: str) -> None:
    """A 400 unless ``path`` is absolute (OpenCode's database as the plugin's OpenCode sees it, not
    a path from the daemon's folder) and the database the queued ingest would read, checked as that
    ingest checks it (``Ingester.locate``: a path the system can look up, an existing regular
    file): answered now, where the caller sees it, by the one check ``/rpc`` and the command line
    get too, instead of a 202 and a refusal in the daemon's log."""
    if not Path(path).is_absolute():
        raise _Rejected(400, f"db_path {path[:200]!r} is relative: send an absolute path.")
    ingester = doors.runtime.memory.parts.ingester
    if ingester is None:  # a service without sources: the queued ingest says so in the log
        return
    try:
        ingester.locate(path)
    except (InvalidInputError, SessionStoreError) as exc:
        raise _Rejected(400, str(exc)) from None


def _session_file(doors: Doors, client: str, path: str, session_id: str) -> None:
    """A 400 unless ``path`` is a file of ``client``'s that graphmem may read and ``session_id``'s
    own (``SessionFiles.check_session``): answered now, where the caller sees it, instead of a 202
    and a refusal in the daemon's log once the queued ingest runs (which checks it again)."""
    try:
        doors.runtime.memory.parts.session_files.check_session(client, path, session_id)
    except (InvalidInputError, SessionStoreError) as exc:
        raise _Rejected(400, str(exc)) from None


NO_BLOCK = {"block": "", "memory_ids": [], "shown": []}
# The plugin's routes (the Claude Code and Codex hooks call the same ones), declared once.
ROUTES: tuple[PluginRoute[Any], ...] = (
    PluginRoute("/plugin/boot", BootBody, _boot, ("block", "memory_ids", "shown", "took_ms"),
                skipped=NO_BLOCK),
    PluginRoute("/plugin/turn", TurnBody, _turn, ("blocks", "memory_ids", "shown", "new", "took_ms"),
                served=True, skipped={"blocks": {}, "memory_ids": [], "shown": []}),
    PluginRoute("/plugin/inject", InjectBody, _inject, ("block", "memory_ids", "boot", "related", "took_ms"),
                served=True, skipped=NO_BLOCK),  # the single block of plugins installed before the split
    PluginRoute("/plugin/compaction", CompactionBody, _compaction),
    # queued, answered at once: the queue wakes the daemon's workers once the session is read
    PluginRoute("/plugin/ingest", IngestBody, _ingest, placed=False, status=202),
)  # fmt: skip


def register(mcp: FastMCP, runtime: Runtime, injector: Injector) -> IngestQueue:
    """Add the plugin's routes (``ROUTES``) to the daemon's app, calling ``injector``; the queue
    of ingests they fill, whose thread the app's lifespan runs."""
    doors = Doors(runtime, injector, IngestQueue(runtime))
    for route in ROUTES:
        mcp.custom_route(route.path, methods=["POST"])(_handler(route, doors))
    return doors.ingests


def _handler(route: PluginRoute[Any], doors: Doors) -> Handler:
    """The route's handler: the body validated, then ``route.run`` in a worker thread."""

    @_answered
    async def answer(request: Request) -> Response:
        body = await _parse(request, route.body)
        directory = _directory(body.directory) if route.placed else None
        if route.skipped is not None and body.agent in SKIPPED_AGENTS:
            return JSONResponse({**route.skipped, "skipped": body.agent})
        run = partial(route.run, doors, body, directory)
        done = await anyio.to_thread.run_sync(partial(doors.runtime.served, run) if route.served else run)
        result = {name: getattr(done, name) for name in route.answers} if route.answers else done
        return JSONResponse(result, status_code=route.status)

    return answer
