"""``/rpc`` with progress: a long verb's answer streamed as NDJSON lines.

A request that adds ``"progress": true`` beside its method and arguments gets a ``200``
answer of type ``application/x-ndjson`` whose lines are the verb's progress,
``{"progress": {"done": 120, "total": 412}}`` (``total`` null when the verb does not know
it), then one last line that is the plain answer (``{"result": ...}`` or ``{"error": ...}``).
A request that does not ask gets the plain JSON answer, as before.

Bounded whatever the verb does: the verb's calls to its callback only update one
``(done, total)`` (``ProgressRelay``), and the stream sends what changed at most every
``INTERVAL_S``, so a fast verb costs a few lines and holds no queue. The verb runs in a
worker thread shielded from the request: a client that hangs up (or a daemon asked to stop)
does not cut it short; it completes, its writes are kept and the embedder is woken, and
only the lines no one reads are dropped.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread
from starlette.responses import Response

from graphmem.errors import GraphmemError, InvalidInputError
from graphmem.server.guard import Receive, Scope, Send
from graphmem.server.rpc_types import DONE, DONE_OF, NDJSON, PROGRESS_SHAPES, STEPS

log = logging.getLogger(__name__)

INTERVAL_S = 0.25  # at most about four progress lines a second


def wants_progress(request: Any) -> bool:
    """Whether the request asks for a streamed answer (``"progress": true``)."""
    if not isinstance(request, dict):
        return False
    asked = request.get("progress", False)
    if not isinstance(asked, bool):
        raise InvalidInputError(
            f'"progress" must be true (stream the progress, then the answer) or false, '
            f"not {json.dumps(asked)[:40]}."
        )
    return asked


class ProgressRelay:
    """The latest progress of one verb, updated from its thread and read by the stream."""

    def __init__(self, shape: str | None) -> None:
        if shape is not None and shape not in PROGRESS_SHAPES:
            raise ValueError(f"unknown progress shape {shape!r}")
        self.shape = shape
        self._lock = threading.Lock()
        self._done = 0
        self._total: int | None = None
        self._changed = False

    def callback(self) -> Callable[..., None] | None:
        """What the verb gets as its ``progress`` argument (None for a verb without one)."""
        if self.shape == STEPS:
            return self._steps
        if self.shape == DONE:
            return self._done_only
        if self.shape == DONE_OF:
            return self._done_of
        return None

    def _steps(self, count: int) -> None:
        self._set(self._done + max(int(count), 0), None)

    def _done_only(self, done: int) -> None:
        self._set(int(done), None)

    def _done_of(self, done: int, total: int) -> None:
        self._set(int(done), int(total))

    def _set(self, done: int, total: int | None) -> None:
        with self._lock:
            self._done, self._total, self._changed = done, total, True

    def take(self) -> dict[str, Any] | None:
        """``{"done", "total"}`` when it changed since the last take, else None."""
        with self._lock:
            if not self._changed:
                return None
            self._changed = False
            return {"done": self._done, "total": self._total}


def line(value: dict[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode() + b"\n"


class ProgressStream(Response):
    """The answer of a ``/rpc`` call that asked for progress (a route returns it).

    ``job`` runs the verb with ``relay``'s callback and returns the plain answer; it runs in
    a worker thread, once, to its end, whatever happens to the connection.
    """

    def __init__(self, job: Callable[[], dict[str, Any]], relay: ProgressRelay, *, log_hint: str) -> None:
        # Like Starlette's StreamingResponse, no Response.__init__: it would add a Content-Length.
        self.status_code = 200
        self.media_type = NDJSON
        self.background = None
        self.raw_headers = [(b"content-type", NDJSON.encode()), (b"cache-control", b"no-store")]
        self.job = job
        self.relay = relay
        self.log_hint = log_hint

    def _run(self) -> dict[str, Any]:
        try:
            return self.job()
        except GraphmemError as exc:  # the job answers its own; this is a safety net
            return {"error": {"type": type(exc).__name__, "message": str(exc)}}
        except Exception:  # the answer is under way: report it as a line, never a broken stream
            log.exception("a streamed /rpc call failed")
            return {
                "error": {
                    "type": "GraphmemError",
                    "message": f"The daemon failed on this call; its log ({self.log_hint}) has details.",
                }
            }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        finished = anyio.Event()
        answer: dict[str, Any] = {}

        async def work() -> None:
            with anyio.CancelScope(shield=True):  # a cancelled request still lets the verb finish
                answer.update(await anyio.to_thread.run_sync(self._run))
                finished.set()

        async with anyio.create_task_group() as group:
            group.start_soon(work)
            await self._stream(send, finished, answer)

    async def _stream(self, send: Send, finished: anyio.Event, answer: dict[str, Any]) -> None:
        start = {"type": "http.response.start", "status": 200, "headers": self.raw_headers}
        reading = await _send(send, start)
        while not finished.is_set():
            with anyio.move_on_after(INTERVAL_S):
                await finished.wait()
            reading = await self._send_progress(send, reading)
        reading = await self._send_progress(send, reading)  # what the verb reported last
        if reading:
            await _send(send, {"type": "http.response.body", "body": line(answer), "more_body": False})

    async def _send_progress(self, send: Send, reading: bool) -> bool:
        progress = self.relay.take()
        if progress is None or not reading:
            return reading
        body = line({"progress": progress})
        return await _send(send, {"type": "http.response.body", "body": body, "more_body": True})


async def _send(send: Send, message: dict[str, Any]) -> bool:
    """Send ``message``; False when the client has gone (nothing more is sent to it)."""
    try:
        await send(message)
    except Exception as exc:  # whatever the server raises for a closed connection
        log.info("a /rpc client left before its answer (%s); the call goes on", type(exc).__name__)
        return False
    return True
