"""The plain-socket client reads the daemon's answers, and says so when one is not HTTP it reads."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from graphmem.server.loopback import LoopbackError, post


@pytest.fixture
def answer_with() -> Iterator[object]:
    """A server on 127.0.0.1 that reads one request and answers it with the given bytes."""
    servers: list[socket.socket] = []
    seen: list[bytes] = []

    def start(raw: bytes) -> int:
        server = socket.create_server(("127.0.0.1", 0))
        servers.append(server)

        def serve() -> None:
            connection, _ = server.accept()
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

        threading.Thread(target=serve, daemon=True).start()
        return int(server.getsockname()[1])

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
    assert request.endswith(b'\r\n\r\n{"a": "\xc3\xb9"}')


def test_an_answer_without_length_ends_with_the_connection(answer_with: Any) -> None:
    port = answer_with(b"HTTP/1.1 401 Unauthorized\r\n\r\n" + b"x" * 200_000)
    assert post("127.0.0.1", port, "/rpc", b"{}", {}, 5) == (401, b"x" * 200_000)


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"SSH-2.0-OpenSSH\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort",
        b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
    ],
    ids=["closed", "not-http", "chunked", "cut-short", "bad-length"],
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
