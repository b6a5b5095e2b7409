"""One HTTP/1.1 POST to the daemon on this machine, on a plain socket.

The CLI's calls through a daemon use it instead of ``http.client``, whose imports (the
``email`` parser, ``ssl``) cost a short call a good part of its time. It sends one request
per connection (``Connection: close``) and reads an answer with a ``Content-Length`` (what
the daemon sends) or one that ends with the connection; anything else is a ``LoopbackError``.
"""

from __future__ import annotations

import socket

MAX_HEAD = 65_536  # bytes of status line and headers
CHUNK = 65_536


class LoopbackError(OSError):
    """The daemon could not be reached, or its answer is not HTTP this client reads."""


def post(
    host: str, port: int, path: str, body: bytes, headers: dict[str, str], timeout: float
) -> tuple[int, bytes]:
    """POST ``body`` to ``http://host:port/path``: the status and the body of the answer."""
    lines = [
        f"POST {path} HTTP/1.1",
        f"Host: {host}:{port}",
        f"Content-Length: {len(body)}",
        "Connection: close",
    ]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
    with socket.create_connection((host, port), timeout=timeout) as connection:
        connection.sendall(request)
        return _read_answer(connection)


def _read_answer(connection: socket.socket) -> tuple[int, bytes]:
    received = b""
    while b"\r\n\r\n" not in received:
        if len(received) > MAX_HEAD:
            raise LoopbackError("the answer's headers are too long")
        chunk = connection.recv(CHUNK)
        if not chunk:
            raise LoopbackError("the connection closed before an answer")
        received += chunk
    head, _, rest = received.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise LoopbackError(f"not an HTTP answer: {status_line[:80]!r}")
    fields = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    if "chunked" in fields.get("transfer-encoding", "").lower():
        raise LoopbackError("a chunked answer, which this client does not read")
    length = fields.get("content-length")
    if length is not None and not length.isdigit():
        raise LoopbackError(f"a bad Content-Length: {length[:40]!r}")
    body = bytearray(rest)
    while length is None or len(body) < int(length):
        chunk = connection.recv(CHUNK)
        if not chunk:
            if length is not None:
                raise LoopbackError(f"the answer ended after {len(body)} of {length} bytes")
            break
        body += chunk
    return int(parts[1]), bytes(body if length is None else body[: int(length)])
