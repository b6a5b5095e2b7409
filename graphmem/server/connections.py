"""The daemon's connections: how long a client may take to send a request, and how many
connections it holds at once.

uvicorn's own HTTP/1.1 protocol waits for a request head forever (its keep-alive timer
starts only after a first answer, and any byte stops it), so a few hundred connections
that never finish a request used to take every file descriptor: ``/health``, ``/rpc``
and the CLI then timed out. ``GuardedH11Protocol`` (the daemon's ``http=`` protocol) adds:

- a deadline for each request head (``HEAD_TIMEOUT_S`` from the connection, or from the
  last answer on a kept-alive one) and for each request body (``BODY_TIMEOUT_S`` from its
  head): a connection that misses it is closed;
- a cap of ``MAX_CONNECTIONS`` open connections. A new connection beyond it closes the
  one that has waited longest on its client (for a head or a body), so a flood of idle
  or half-sent requests never locks out a client that sends its request at once (the
  CLI's ``/health`` and ``/rpc``, the plugin, ``graphmem mcp``). Only when every connection
  is busy with an answer is the new one refused at once, with a 503.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Literal

from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)

# A client sends its request head at once: 10 s leaves room for a slow remote link.
HEAD_TIMEOUT_S = 10.0
# The largest body (2 MB by default) takes milliseconds on loopback; 30 s allows ~70 kB/s.
BODY_TIMEOUT_S = 30.0
# Far below the 1,024 file descriptors a process usually may open, far above what one
# user's clients use (each OpenCode window's `graphmem mcp` keeps at most 8).
MAX_CONNECTIONS = 256

State = Literal["head", "body", "busy"]
REFUSED = (
    b'{"error": "The graphmem daemon is busy answering %d connections: retry in a moment."}' % MAX_CONNECTIONS
)


class GuardedH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with deadlines for the client and a cap on connections."""

    head_timeout_s: float = HEAD_TIMEOUT_S
    body_timeout_s: float = BODY_TIMEOUT_S
    max_connections: int = MAX_CONNECTIONS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._watched: tuple[State, int] | None = None
        self._waiting_since = 0.0
        self._deadline: asyncio.TimerHandle | None = None

    # -- what the connection waits for ------------------------------------------------

    def _state(self) -> State:
        cycle = self.cycle
        if cycle is None or cycle.response_complete:
            return "head"
        return "body" if cycle.more_body else "busy"

    def _watch(self) -> None:
        """Arm the deadline of what the connection now waits for (none while it is answered)."""
        if self.transport is None or self.transport.is_closing():
            return
        state = self._state()
        key = (state, id(self.cycle))
        if key == self._watched:
            return
        self._watched = key
        self._waiting_since = self.loop.time()
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        if state != "busy":
            timeout = self.head_timeout_s if state == "head" else self.body_timeout_s
            self._deadline = self.loop.call_later(timeout, self._late, key)

    def _late(self, key: tuple[State, int]) -> None:
        self._deadline = None
        if self._watched == key and not self.transport.is_closing():
            what = "its request head" if key[0] == "head" else "its request body"
            log.debug("closing a connection that did not send %s in time", what)
            self.transport.close()

    @property
    def waits_on_client(self) -> bool:
        return self._state() != "busy" and not self.transport.is_closing()

    # -- uvicorn's protocol -----------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._watch()
        open_ones = [c for c in self.connections if not c.transport.is_closing()]
        if len(open_ones) <= self.max_connections:
            return
        waiting = [
            c for c in open_ones if c is not self and isinstance(c, GuardedH11Protocol) and c.waits_on_client
        ]
        if waiting:
            oldest = min(waiting, key=lambda c: c._waiting_since)
            log.debug("%d connections: closing the one that waited longest on its client", len(open_ones))
            oldest.transport.close()
            return
        head = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
        head += b"content-length: %d\r\nconnection: close\r\n\r\n" % len(REFUSED)
        transport.write(head + REFUSED)
        transport.close()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        super().connection_lost(exc)
