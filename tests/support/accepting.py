"""The listening side of a test's fake daemon on 127.0.0.1: it accepts every connection and has
the fake's ``serve(connection, number)`` answer it on a thread of its own (numbered from 1, in
the order accepted), keeping each (``open``) so that a test can end them as a daemon ends an
idle one."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable


class Accepting:
    def __init__(self, serve: Callable[[socket.socket, int], None]) -> None:
        self.listening = socket.create_server(("127.0.0.1", 0))
        # Read once: a connection still answered once the test closed the listener (a slow
        # machine's) asks it too, and a closed socket has no address.
        self.port = int(self.listening.getsockname()[1])
        self.connections = 0  # accepted so far
        self.open: list[socket.socket] = []
        self._serve = serve
        self._closing = False
        self._accepter = threading.Thread(target=self._accept, daemon=True)
        self._accepter.start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listening.accept()
            except OSError:
                return  # closed
            if self._closing:  # close's own connection, which woke it
                connection.close()
                return
            self.connections += 1
            self.open.append(connection)
            threading.Thread(target=self._serve, args=(connection, self.connections), daemon=True).start()

    def end(self, how: int = socket.SHUT_RDWR) -> None:
        """End every connection (``SHUT_WR``: send its end, still reading what comes)."""
        for connection in self.open:
            with contextlib.suppress(OSError):
                connection.shutdown(how)

    def close(self) -> None:
        """Stop accepting: the accepting thread is woken and waited for before the listener's
        descriptor is closed. Closed under a thread still in ``accept``, the number went to the
        next socket the process opened, and an ``accept`` the kernel restarted (after a tracer
        stopped the thread: py-spy, a debugger) took the next test's connections to this fake."""
        self._closing = True
        with contextlib.suppress(OSError):  # a connection wakes the accept, on any system
            socket.create_connection(("127.0.0.1", self.port), timeout=5).close()
        self._accepter.join()
        self.listening.close()
