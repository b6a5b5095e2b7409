"""A stdlib HTTP server on 127.0.0.1 (a free port) served from a daemon thread: what every
stand-in of the test suite (a model API, a forge) starts and stops the same way."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# How often a serving thread looks whether it was asked to stop (``serve_forever``'s
# ``poll_interval``): a ``stop`` waits up to this long, once per test that starts a server.
POLL_S = 0.005


class LocalServer:
    """``start()`` serves ``handler`` on a free loopback port; ``stop()`` shuts it down."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], name: str = "stand-in") -> None:
        self._handler = handler
        self._name = name
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError(f"{self._name} is not started")
        return int(self._server.server_address[1])

    def start(self) -> None:
        if self._server is not None:
            return
        server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler)
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": POLL_S}, name=self._name, daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join(timeout=5)
