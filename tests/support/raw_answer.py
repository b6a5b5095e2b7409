"""A program on 127.0.0.1 that reads each HTTP request whole and sends fixed bytes back, whatever
they are, then closes the connection: what a client meets when the port it asks holds no HTTP
server (an ssh banner) or an endpoint that broke off in the middle of its answer. The request is
read to its end first, so that closing sends no reset in place of the answer."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager

from .accepting import Accepting


def _read_request(connection: socket.socket) -> None:
    with connection.makefile("rb") as asked:
        length = 0
        while (line := asked.readline()) not in (b"\r\n", b""):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        asked.read(length)


@contextmanager
def answering(data: bytes) -> Iterator[int]:
    """The port of a listener that answers every request with ``data``, until the block ends."""

    def serve(connection: socket.socket, _number: int) -> None:
        with connection:
            _read_request(connection)
            connection.sendall(data)

    listener = Accepting(serve)
    try:
        yield listener.port
    finally:
        listener.close()
