"""``graphmem`` whose daemon gets to a ``/plugin/ingest`` request only ``INGEST_DELAY_S`` after it
arrived, as a daemon on a busy machine may: nothing of the daemon's has read the request by then,
not even its Guard. What happens next is the daemon's own: a client still connected is read and
answered, and the session learned; a client that has gone (an ``opencode run`` that exited once it
sent the request) leaves a disconnect where the body was, and the session is never learned
(uvicorn reports a connection lost before the app read the body as ``http.disconnect``, not as the
bytes it holds; the Guard then reads no body and the route answers no one). So a session is
learned only if the client waited for the answer: waiting for the send is not enough.

The delay sits in front of the whole app, not in a route: the Guard reads every body whole
before any route runs (``graphmem/server/guard.py``), so a route that waits reads a body taken
while the client was still there, and learns the session though the client left (this stand-in
slept in the route's parse, and then passed with a plugin that did not wait). For the test that a
finished ``opencode run`` waits for its plugin's ingest (``tests/integration/opencode/test_plugin.py``).
Run as ``python slow_ingest.py serve ...`` (``support.daemons.start_daemon(..., program=SLOW_INGEST)``);
a request whose client had gone is one line in the daemon's log."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio

INGEST_DELAY_S = 2.0
INGEST_PATH = "/plugin/ingest"

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[MutableMapping[str, Any], Receive, Send], Awaitable[None]]


def late_to_ingest(app: App) -> App:
    """``app``, which gets to each ``/plugin/ingest`` request ``INGEST_DELAY_S`` after it arrived."""

    async def late(scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") != INGEST_PATH:
            await app(scope, receive, send)
            return
        await anyio.sleep(INGEST_DELAY_S)
        first = await receive()  # handed on as it came: the daemon does with it what it does
        if first["type"] == "http.disconnect":
            print(
                f"slow_ingest: the client of a {INGEST_PATH} request left before the daemon read it "
                f"({INGEST_DELAY_S} s after it arrived): the session is not learned",
                file=sys.stderr,
                flush=True,
            )
        pending = [first]

        async def replayed() -> Message:
            return pending.pop() if pending else await receive()

        await app(scope, replayed, send)

    return late


if __name__ == "__main__":
    from graphmem.server import http

    build = http.build_app

    def build_app(*args: Any, **kwargs: Any) -> Any:
        return late_to_ingest(build(*args, **kwargs))

    http.build_app = build_app  # graphmem.server.daemon imports it when it serves
    from graphmem.cli.main import main

    main()
