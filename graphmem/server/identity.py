"""The daemon proves it is the one ``daemon.json`` names before a client sends it a secret.

``daemon.json`` outlives a daemon that crashed, and any program may then take its port:
a client that sent its token (or a prompt) there would hand them over. So before the
first request on a connection, every client (the CLI's ``RemoteMemory``, ``graphmem mcp``,
the OpenCode plugin) posts a fresh random nonce to ``/identity``, which needs no token, and
the daemon answers its pid and ``HMAC-SHA256(token, "graphmem-identity-1\\n" nonce "\\n"
pid "\\n" port)``, where ``port`` is the port the connection reached. Only a process that
holds the token can answer; the client checks the pid against ``daemon.json`` and the
proof against the port it dialled (so a squatter relaying the nonce to the real daemon on
another port fails too), and sends nothing secret when either is wrong. A daemon with an
API key answers a second proof with the key, for a client that holds only the key.

Standard library only: ``graphmem mcp`` and the CLI's way to a daemon import it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import socket
from typing import Any

from graphmem.errors import StoreError

PATH = "/identity"
LABEL = "graphmem-identity-1"
NONCE_BYTES = 16
NONCE = re.compile(r"[0-9A-Za-z_-]{16,128}")
MAX_ANSWER = 8192  # bytes of the answer's head, and of its body


def new_nonce() -> str:
    return os.urandom(NONCE_BYTES).hex()


def proof(secret: str, nonce: str, pid: int, port: int) -> str:
    """What only a holder of ``secret`` can compute for this nonce, process and port."""
    message = f"{LABEL}\n{nonce}\n{pid}\n{port}".encode()
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def answer(token: str, api_key: str | None, nonce: Any, port: int) -> dict[str, Any] | None:
    """The daemon's answer to ``nonce``; None when the nonce is no nonce (16-128 URL-safe chars)."""
    if not isinstance(nonce, str) or not NONCE.fullmatch(nonce):
        return None
    pid = os.getpid()
    return {
        "pid": pid,
        "proof": proof(token, nonce, pid, port),
        "key_proof": proof(api_key, nonce, pid, port) if api_key else None,
    }


class NotTheDaemon(StoreError):
    """The process at the daemon's address did not prove it is the daemon: nothing was sent."""


def refusal(url: str, pid: int, why: str) -> NotTheDaemon:
    return NotTheDaemon(
        f"Sent nothing to {url}: the program listening there is not the graphmem daemon (pid {pid}) "
        f"that daemon.json names ({why}). If the daemon crashed, another program may hold its port: "
        "run `graphmem stop`, then try again."
    )


class Silent(NotTheDaemon):
    """No answer to ``/identity`` at all (refused, reset, timed out): the daemon may be starting or
    busy, or, after a crash, another program holds its port. Nothing was sent."""


def check(reply: Any, *, secret: str, nonce: str, pid: int, port: int, url: str) -> None:
    """Raise ``NotTheDaemon`` unless ``reply`` (the parsed ``/identity`` answer) proves it."""
    if not isinstance(reply, dict):
        raise refusal(url, pid, "its answer to /identity is not a JSON object")
    if reply.get("pid") != pid:
        raise refusal(url, pid, f"it says it is pid {str(reply.get('pid'))[:20]}")
    expected = proof(secret, nonce, pid, port)
    given = [p for p in (reply.get("proof"), reply.get("key_proof")) if isinstance(p, str)]
    if not any(hmac.compare_digest(p.encode(), expected.encode()) for p in given):
        raise refusal(url, pid, "it cannot prove it holds the daemon's token")


def verify(connection: socket.socket, *, host: str, port: int, secret: str, pid: int, url: str) -> None:
    """Ask the daemon at the other end of ``connection`` to prove itself, on that connection
    (kept open for the request that follows); raise ``NotTheDaemon`` unless it does."""
    nonce = new_nonce()
    body = json.dumps({"nonce": nonce}).encode()
    request = (
        f"POST {PATH} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode("latin-1") + body
    try:
        connection.sendall(request)
        status, raw = _read_answer(connection)
    except OSError as exc:
        raise Silent(
            f"Sent nothing to {url}: no answer to /identity from the graphmem daemon (pid {pid}) that "
            f"daemon.json names ({exc}). It may be starting or busy; if it crashed, another program "
            "may hold its port: run `graphmem stop`, then try again."
        ) from None
    if status != 200:
        raise refusal(url, pid, f"/identity answered HTTP {status}")
    try:
        reply = json.loads(raw)
    except ValueError:
        reply = None
    check(reply, secret=secret, nonce=nonce, pid=pid, port=port, url=url)


def _read_answer(connection: socket.socket) -> tuple[int, bytes]:
    """One answer with a ``Content-Length``, read to its last byte and not one byte further."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(1)  # one byte at a time: what follows belongs to the next answer
        if not chunk:
            raise OSError("the connection closed")
        data += chunk
        if len(data) > MAX_ANSWER:
            raise OSError("an answer head over 8 kB")
    status_line, *lines = data.decode("latin-1").split("\r\n")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise OSError(f"not an HTTP answer: {status_line[:60]!r}")
    length = 0
    for line in lines:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length" and value.strip().isdigit():
            length = int(value.strip())
    if length > MAX_ANSWER:
        raise OSError("an answer over 8 kB")
    body = b""
    while len(body) < length:
        chunk = connection.recv(length - len(body))
        if not chunk:
            raise OSError("the connection closed")
        body += chunk
    return int(parts[1]), body
