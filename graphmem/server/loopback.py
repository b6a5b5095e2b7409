"""HTTP/1.1 POSTs to the daemon on this machine, on a plain socket.

The CLI's calls through a daemon use it instead of ``http.client``, whose imports (the
``email`` parser, ``ssl``) cost a short call a good part of its time. It reads an answer with
a ``Content-Length`` (what the daemon sends for a plain JSON answer), a chunked one (a
streamed answer: ``/rpc``'s progress lines), or one that ends with the connection; anything
else is a ``LoopbackError``.

``post`` and ``open_post`` send one request on a connection of its own (``Connection:
close``): right for a hook or a command that makes one call. ``post`` reads the whole answer;
``open_post`` hands it over as it arrives (``Answer.lines``). ``KeptAlive`` is one connection
kept open between the requests of a client that makes many, proven once each time it connects;
``ThreadConnections``, one per thread (``RemoteMemory``, the MCP proxy's workers).
"""

from __future__ import annotations

import os
import select
import socket
import threading
import weakref
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
        self.received = 0  # bytes that arrived
        self.ended = False  # the other end closed the connection

    def _fill(self) -> bool:
        chunk = self._connection.recv(CHUNK)
        self._buffer += chunk
        self.received += len(chunk)
        self.ended = not chunk
        return bool(chunk)

    @property
    def drained(self) -> bool:
        """Nothing read past what was asked for."""
        return not self._buffer

    def unanswered(self, failure: OSError) -> bool:
        """Whether ``failure`` came with no byte of an answer: the connection closed or was reset
        before any arrived (a timeout is not that: the daemon may still be at work)."""
        return self.received == 0 and (self.ended or isinstance(failure, ConnectionError))

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

    def __init__(self, source: _Buffered) -> None:
        self._input = source
        self._complete = False
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
        self._keeps_connection = (
            parts[0] == "HTTP/1.1" and "close" not in self.headers.get("connection", "").lower()
        )

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
            return  # its end is the connection's
        self._complete = True

    @property
    def reusable(self) -> bool:
        """Whether the connection may carry another request: this answer was read exactly to its
        end (its ``Content-Length``, or its last chunk), and the daemon did not say it closes it."""
        return self._complete and self._keeps_connection and self._input.drained

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
    request = _request(host, port, path, body, headers, "close")
    with socket.create_connection((host, port), timeout=timeout) as connection:
        if expected is not None:
            _prove(connection, host, port, expected)
        connection.sendall(request)
        yield Answer(_Buffered(connection))


def _request(host: str, port: int, path: str, body: bytes, headers: dict[str, str], connection: str) -> bytes:
    lines = [
        f"POST {path} HTTP/1.1",
        f"Host: {host}:{port}",
        f"Content-Length: {len(body)}",
        f"Connection: {connection}",
    ]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def _prove(connection: socket.socket, host: str, port: int, expected: Expected) -> None:
    identity.verify(
        connection, host=host, port=port, secret=expected.secret, pid=expected.pid, url=expected.url
    )


class KeptAlive:
    """One connection to the daemon at ``host:port`` kept open between requests, for one thread
    at a time (``RemoteMemory`` keeps one per thread).

    Each time it connects, the other end proves it is the daemon a request expects
    (``identity.verify``), never once per request; a request that expects another daemon (its pid,
    its secret) gets a new connection, proven for it. It is reused only when the answer before
    was read exactly to its end: an answer that ends with the connection, or one left unread
    before its end (a streamed answer read to its result line), closes it. Before reuse, one the
    daemon closed while idle (uvicorn closes one after 5 s) is noticed and replaced, and one
    opened in another process (this one forked since) is never used: its socket is the parent's.
    """

    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self._socket: socket.socket | None = None
        self._proven: Expected | None = None  # what the open connection was proven for
        self._pid = 0  # the process that opened it

    @contextmanager
    def post(self, path: str, body: bytes, headers: dict[str, str], expected: Expected) -> Iterator[Answer]:
        """POST ``body`` to ``path``; the answer, to read before the block ends (as ``open_post``).
        A connection the daemon closed as the request went out (no byte of an answer came) is
        replaced and the request sent once more on a new one: the daemon closes an idle
        connection only while it waits for a request, before reading a byte of it, so the call
        was not made. Never after any byte of the answer arrived."""
        request = _request(self.host, self.port, path, body, headers, "keep-alive")
        reused = self._ready(expected)
        while True:
            assert self._socket is not None  # connected by _ready or _connect
            source = _Buffered(self._socket)
            try:
                self._socket.sendall(request)
                answer = Answer(source)
                break
            except OSError as exc:
                self.close()
                if not (reused and source.unanswered(exc)):
                    raise
            reused = False  # once more, on a new connection: its failure is the daemon's
            self._connect(expected)
        try:
            yield answer
        except BaseException:
            self.close()
            raise
        if not answer.reusable:
            self.close()

    def _ready(self, expected: Expected) -> bool:
        """Whether the open connection serves this request as it is; if not, a new one is opened
        and proven (False)."""
        if self._socket is not None and (
            self._pid != os.getpid() or self._proven != expected or self.closed_by_daemon()
        ):
            self.close()
        if self._socket is not None:
            return True
        self._connect(expected)
        return False

    def _connect(self, expected: Expected) -> None:
        connection = socket.create_connection((self.host, self.port), timeout=self.timeout)
        try:
            _prove(connection, self.host, self.port, expected)
        except BaseException:
            connection.close()
            raise
        self._socket, self._proven, self._pid = connection, expected, os.getpid()

    def closed_by_daemon(self) -> bool:
        """Whether the daemon has closed this idle connection: between answers it sends nothing,
        so a socket that is readable then holds its end of file (or a reset)."""
        if self._socket is None:
            return False
        poller = select.poll()
        poller.register(self._socket, select.POLLIN)
        return bool(poller.poll(0))

    def close(self) -> None:
        """Close the connection (in a forked child, only this process's copy of it); the next
        request opens a new one."""
        if self._socket is not None:
            self._socket.close()
        self._socket, self._proven = None, None


class ThreadConnections:
    """Kept-alive connections to the daemon, one per thread (``RemoteMemory``'s, the MCP proxy's
    workers'): a client may call from several threads at once, and no two calls share a socket.
    A thread's connection to another address (a daemon started again elsewhere) is replaced by
    a new one; a process forked since they opened makes its own (the sockets it inherited are its
    parent's); those of threads that ended are closed as new ones open, and all of them by
    ``close`` or when the holder is collected, so a script that never closes leaves no socket."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._by_thread: dict[int, KeptAlive] = {}
        self._finalizer = weakref.finalize(self, _close_all, self._by_thread)

    def own(self, host: str, port: int) -> KeptAlive:
        """The calling thread's connection to ``host:port``."""
        if self._pid != os.getpid():
            self._forget_parents()
        thread = threading.get_ident()
        with self._lock:
            connection = self._by_thread.get(thread)
            if connection is not None and (connection.host, connection.port) != (host, port):
                connection.close()  # the thread's own: no call of its is in flight
                connection = None
            if connection is None:
                self._close_ended_threads()
                connection = self._by_thread[thread] = KeptAlive(host, port, self.timeout)
        return connection

    def _forget_parents(self) -> None:
        """In a forked child: close this process's copies of the parent's sockets (the parent's
        stay open) and start afresh, with a lock no parent thread may have held at the fork."""
        inherited = self._by_thread
        self._pid, self._lock, self._by_thread = os.getpid(), threading.Lock(), {}
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, _close_all, self._by_thread)
        _close_all(inherited)

    def _close_ended_threads(self) -> None:
        """Close the connections of threads that have ended (with the lock held)."""
        alive = {thread.ident for thread in threading.enumerate()}
        for thread in [t for t in self._by_thread if t not in alive]:
            self._by_thread.pop(thread).close()

    def close(self) -> None:
        """Close every connection (once no call is in flight); a later call opens a new one."""
        with self._lock:
            connections = dict(self._by_thread)
            self._by_thread.clear()
        _close_all(connections)


def _close_all(connections: dict[int, KeptAlive]) -> None:
    for connection in list(connections.values()):
        connection.close()
    connections.clear()


def _read_whole(opened: Callable[P, AbstractContextManager[Answer]]) -> Callable[P, tuple[int, bytes]]:
    """``opened``'s request (the same parameters), with its answer read whole."""

    def post(*args: P.args, **kwargs: P.kwargs) -> tuple[int, bytes]:
        """POST ``body`` to ``http://host:port/path``: the status and the body of the answer."""
        with opened(*args, **kwargs) as answer:
            return answer.status, answer.read()

    return post


post = _read_whole(open_post)
