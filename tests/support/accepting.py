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
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listening.accept()
            except OSError:
                return  # closed
            self.connections += 1
            self.open.append(connection)
            threading.Thread(target=self._serve, args=(connection, self.connections), daemon=True).start()

    def end(self, how: int = socket.SHUT_RDWR) -> None:
        """End every connection (``SHUT_WR``: send its end, still reading what comes)."""
        for connection in self.open:
            with contextlib.suppress(OSError):
                connection.shutdown(how)

    def close(self) -> None:
        self.listening.close()
