"""One HTTP/1.1 POST to the daemon on this machine, on a plain socket.

The CLI's calls through a daemon use it instead of ``http.client``, whose imports (the
``email`` parser, ``ssl``) cost a short call a good part of its time. It sends one request
per connection (``Connection: close``) and reads an answer with a ``Content-Length`` (what
the daemon sends for a plain JSON answer), a chunked one (a streamed answer: ``/rpc``'s
progress lines), or one that ends with the connection; anything else is a ``LoopbackError``.
``post`` reads the whole answer; ``open_post`` hands it over as it arrives (``Answer.lines``).
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import ParamSpec

from graphmem.server import identity

MAX_HEAD = 65_536  # bytes of status line and headers, and of a chunk's size line
CHUNK = 65_536
P = ParamSpec("P")


class LoopbackError(OSError):
    """The daemon could not be reached, or its answer is not HTTP this client reads."""


class _Buffered:
    """The connection's bytes, read as they are needed."""

    def __init__(self, connection: socket.socket) -> None:
        self._connection = connection
        self._buffer = bytearray()

    def _fill(self) -> bool:
        chunk = self._connection.recv(CHUNK)
        self._buffer += chunk
        return bool(chunk)

    def until(self, mark: bytes, limit: int, what: str) -> bytes:
        """The bytes before ``mark`` (which is consumed too)."""
        while (end := self._buffer.find(mark)) < 0:
            if len(self._buffer) > limit:
                raise LoopbackError(f"{what} is too long")
            if not self._fill():
                raise LoopbackError(f"the connection closed inside {what}")
        found = bytes(self._buffer[:end])
        del self._buffer[: end + len(mark)]
        return found

    def exactly(self, size: int, what: str) -> Iterator[bytes]:
        """``size`` bytes, in the pieces they arrive in."""
        left = size
        while left:
            if not self._buffer and not self._fill():
                raise LoopbackError(f"the answer ended after {size - left} of {size} bytes of {what}")
            piece = bytes(self._buffer[:left])
            del self._buffer[: len(piece)]
            left -= len(piece)
            yield piece

    def to_the_end(self) -> Iterator[bytes]:
        while self._buffer or self._fill():
            piece = bytes(self._buffer)
            self._buffer.clear()
            yield piece


class Answer:
    """An answer being read: its status and headers, then its body as it arrives."""

    def __init__(self, connection: socket.socket) -> None:
        self._input = _Buffered(connection)
        head = self._input.until(b"\r\n\r\n", MAX_HEAD, "the answer's headers")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        parts = status_line.split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
            raise LoopbackError(f"not an HTTP answer: {status_line[:80]!r}")
        self.status = int(parts[1])
        self.headers: dict[str, str] = {}
        for line in header_lines:
            name, _, value = line.partition(":")
            self.headers[name.strip().lower()] = value.strip()
        self._chunked = "chunked" in self.headers.get("transfer-encoding", "").lower()
        length = self.headers.get("content-length")
        if not self._chunked and length is not None and not length.isdigit():
            raise LoopbackError(f"a bad Content-Length: {length[:40]!r}")
        self._length = None if self._chunked or length is None else int(length)

    @property
    def media_type(self) -> str:
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()

    def pieces(self) -> Iterator[bytes]:
        """The body, in the pieces it arrives in (a chunked body decoded)."""
        if self._length is not None:
            yield from self._input.exactly(self._length, "the body")
        elif self._chunked:
            yield from self._chunks()
        else:
            yield from self._input.to_the_end()

    def _chunks(self) -> Iterator[bytes]:
        while True:
            size_line = self._input.until(b"\r\n", MAX_HEAD, "a chunk's size")
            digits = size_line.split(b";", 1)[0].strip()
            try:
                size = int(digits, 16)
            except ValueError:
                raise LoopbackError(f"a bad chunk size: {digits[:40]!r}") from None
            if size < 0:
                raise LoopbackError(f"a bad chunk size: {digits[:40]!r}")
            if size == 0:
                while self._input.until(b"\r\n", MAX_HEAD, "the trailers"):
                    pass  # trailers carry nothing this client reads
                return
            yield from self._input.exactly(size, "a chunk")
            if self._input.until(b"\r\n", 2, "a chunk's end"):
                raise LoopbackError("a chunk longer than its size")

    def read(self) -> bytes:
        return b"".join(self.pieces())

    def lines(self, limit: int) -> Iterator[bytes]:
        """The body's lines (without the newline) as each completes; a last line without a
        newline too. A line longer than ``limit`` bytes is a ``LoopbackError``."""
        pending = bytearray()
        for piece in self.pieces():
            pending += piece
            while (end := pending.find(b"\n")) >= 0:
                line = bytes(pending[:end])
                del pending[: end + 1]
                yield line
            if len(pending) > limit:
                raise LoopbackError(f"a line of the answer is over {limit:,} bytes")
        if pending:
            yield bytes(pending)


@dataclass(frozen=True, slots=True)
class Expected:
    """The daemon a request with a secret is for: before sending it, the process at the other
    end must prove it holds ``secret`` and is ``pid`` (``identity.verify``)."""

    secret: str
    pid: int
    url: str


@contextmanager
def open_post(
    host: str,
    port: int,
    path: str,
    body: bytes,
    headers: dict[str, str],
    timeout: float,
    *,
    expected: Expected | None = None,
) -> Iterator[Answer]:
    """POST ``body`` to ``http://host:port/path``; the answer, to read before the block ends.
    With ``expected``, only once the other end has proved it is that daemon (else
    ``identity.NotTheDaemon``, and nothing of the request was sent)."""
    lines = [
        f"POST {path} HTTP/1.1",
        f"Host: {host}:{port}",
        f"Content-Length: {len(body)}",
        "Connection: close",
    ]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
    with socket.create_connection((host, port), timeout=timeout) as connection:
        if expected is not None:
            identity.verify(
                connection, host=host, port=port, secret=expected.secret, pid=expected.pid, url=expected.url
            )
        connection.sendall(request)
        yield Answer(connection)


def _read_whole(opened: Callable[P, AbstractContextManager[Answer]]) -> Callable[P, tuple[int, bytes]]:
    """``opened``'s request (the same parameters), with its answer read whole."""

    def post(*args: P.args, **kwargs: P.kwargs) -> tuple[int, bytes]:
        """POST ``body`` to ``http://host:port/path``: the status and the body of the answer."""
        with opened(*args, **kwargs) as answer:
            return answer.status, answer.read()

    return post


post = _read_whole(open_post)
