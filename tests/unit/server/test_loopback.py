"""The plain-socket client reads the daemon's answers, and says so when one is not HTTP it reads."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from support.accepting import Accepting

from graphmem.server.loopback import LoopbackError, open_post, post


@pytest.fixture
def answer_with() -> Iterator[object]:
    """A server on 127.0.0.1 that reads one request and answers it with the given bytes."""
    servers: list[Accepting] = []
    seen: list[bytes] = []

    def start(raw: bytes) -> int:
        def serve(connection: socket.socket, _number: int) -> None:
            with connection:
                request = b""
                while b"\r\n\r\n" not in request:
                    request += connection.recv(65536)
                head, _, body = request.partition(b"\r\n\r\n")
                length = int(
                    next(line for line in head.split(b"\r\n") if line.startswith(b"Content-Length")).split(
                        b":"
                    )[1]
                )
                while len(body) < length:
                    body += connection.recv(65536)
                seen.append(head + b"\r\n\r\n" + body)
                if raw:
                    connection.sendall(raw)

        servers.append(Accepting(serve))
        return servers[-1].port

    start.seen = seen  # type: ignore[attr-defined]
    yield start
    for server in servers:
        server.close()


def test_a_content_length_answer_is_read_and_the_request_carries_the_body(answer_with: Any) -> None:
    port = answer_with(
        b'HTTP/1.1 200 OK\r\ncontent-length: 11\r\ncontent-type: application/json\r\n\r\n{"result":1}extra'
    )
    status, body = post("127.0.0.1", port, "/rpc", b'{"a": "\xc3\xb9"}', {"Authorization": "Bearer s"}, 5)
    assert (status, body) == (200, b'{"result":1')
    request = answer_with.seen[0]
    assert request.startswith(b"POST /rpc HTTP/1.1\r\n")
    assert b"Authorization: Bearer s\r\n" in request
    assert b"Connection: close\r\n" in request  # one request per connection: a hook's, a command's
    assert request.endswith(b'\r\n\r\n{"a": "\xc3\xb9"}')


def test_an_answer_without_length_ends_with_the_connection(answer_with: Any) -> None:
    port = answer_with(b"HTTP/1.1 401 Unauthorized\r\n\r\n" + b"x" * 200_000)
    assert post("127.0.0.1", port, "/rpc", b"{}", {}, 5) == (401, b"x" * 200_000)


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"SSH-2.0-OpenSSH\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort",
        b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhello\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"1" * 70_000,
    ],
    ids=[
        "closed",
        "not-http",
        "cut-short",
        "bad-length",
        "bad-chunk-size",
        "negative-chunk-size",
        "chunk-longer-than-its-size",
        "chunk-cut-short",
        "no-last-chunk",
        "endless-chunk-size",
    ],
)
def test_what_is_not_a_readable_answer_is_a_loopback_error(answer_with: Any, raw: bytes) -> None:
    port = answer_with(raw)
    with pytest.raises(LoopbackError):
        post("127.0.0.1", port, "/rpc", b"{}", {}, 5)


def test_nobody_listening_is_an_os_error() -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    with pytest.raises(OSError):
        post("127.0.0.1", port, "/rpc", b"{}", {}, 2)


def test_a_chunked_answer_is_read_whole(answer_with: Any) -> None:
    port = answer_with(
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
        b"5;name=value\r\nhello\r\n1\r\n \r\nA\r\n0123456789\r\n0\r\nx-trailer: 1\r\n\r\n"
    )
    assert post("127.0.0.1", port, "/rpc", b"{}", {}, 5) == (200, b"hello 0123456789")


@pytest.fixture
def streaming_server() -> Iterator[Any]:
    """A server that answers a chunked NDJSON stream: the first line, then the rest only once
    the test has read that first line (``release``): a client that waited for the whole
    answer would never see it."""
    release = threading.Event()

    def serve(connection: socket.socket, _number: int) -> None:
        with connection:
            request = b""
            while b"\r\n\r\n" not in request:
                request += connection.recv(65536)
            connection.sendall(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\ntransfer-encoding: chunked\r\n\r\n"
                b'8\r\n{"a":1}\n\r\n'
            )
            release.wait(10)
            connection.sendall(b'4\r\n{"b"\r\n6\r\n:2}\n{}\r\n0\r\n\r\n')

    server = Accepting(serve)
    yield SimpleNamespace(port=server.port, release=release)
    release.set()
    server.close()


def test_a_streamed_answer_hands_over_each_line_as_it_arrives(streaming_server: Any) -> None:
    with open_post("127.0.0.1", streaming_server.port, "/rpc", b"{}", {}, 5) as answer:
        assert (answer.status, answer.media_type) == (200, "application/x-ndjson")
        lines = answer.lines(1000)
        assert next(lines) == b'{"a":1}'
        streaming_server.release.set()
        assert list(lines) == [b'{"b":2}', b"{}"]  # a line split across chunks is joined


def test_a_line_over_the_limit_is_a_loopback_error(answer_with: Any) -> None:
    port = answer_with(b"HTTP/1.1 200 OK\r\ncontent-length: 5000\r\n\r\n" + b"x" * 5000)
    with open_post("127.0.0.1", port, "/rpc", b"{}", {}, 5) as answer, pytest.raises(LoopbackError):
        list(answer.lines(1000))
