"""``loopback.KeptAlive``: one connection kept between requests, proven once each time it
connects, reused only after an answer read exactly to its end; a request is sent once more only
when the connection it went out on was reused and closed before any byte of an answer."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import pytest
from support.accepting import Accepting

from graphmem.server import identity
from graphmem.server.loopback import Expected, KeptAlive, LoopbackError, ThreadConnections

TOKEN = "t" * 43
PID = 4242
SILENT = b""  # read the request, answer nothing, keep the connection open
HANG_UP = b"-"  # read the request, close the connection unanswered


def plain(body: bytes, *headers: bytes) -> bytes:
    head = b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n" % len(body)
    return head + b"".join(header + b"\r\n" for header in headers) + b"\r\n" + body


class Server:
    """Proves itself on ``/identity`` as the daemon does and answers other requests, on any
    connection, with the next of ``answers``; an answer without a ``Content-Length`` or one
    that says ``Connection: close`` ends its connection. ``requests``: (connection, head)."""

    def __init__(self) -> None:
        self.answers: list[bytes] = []
        self.requests: list[tuple[int, bytes]] = []
        self.identities = 0
        self.accepting = Accepting(self._serve)

    @property
    def port(self) -> int:
        return self.accepting.port

    @property
    def connections(self) -> int:
        return self.accepting.connections

    def _serve(self, connection: socket.socket, number: int) -> None:
        with connection, connection.makefile("rb") as incoming:
            while True:
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    line = incoming.readline()
                    if not line:
                        return
                    head += line
                length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                body = incoming.read(length)
                if head.startswith(b"POST /identity "):
                    self.identities += 1
                    proof = identity.proof(TOKEN, json.loads(body)["nonce"], PID, self.port)
                    connection.sendall(plain(json.dumps({"pid": PID, "proof": proof}).encode()))
                    continue
                self.requests.append((number, head))
                answer = self.answers.pop(0)
                if answer == HANG_UP:
                    return
                if answer == SILENT:
                    continue
                connection.sendall(answer)
                if b"content-length" not in answer.lower() or b"connection: close" in answer.lower():
                    return

    def end_idle(self) -> None:
        """Send the end of every connection, as uvicorn ends one left idle; a request that still
        came on one would be read (and counted), never answered."""
        self.accepting.end(socket.SHUT_WR)

    def close(self) -> None:
        self.accepting.close()


@pytest.fixture
def server() -> Iterator[Server]:
    running = Server()
    yield running
    running.close()


@pytest.fixture
def kept(server: Server) -> Iterator[KeptAlive]:
    connection = KeptAlive("127.0.0.1", server.port, 5)
    yield connection
    connection.close()


def expected(server: Server) -> Expected:
    return Expected(TOKEN, PID, f"http://127.0.0.1:{server.port}")


def post(kept: KeptAlive, server: Server) -> tuple[int, bytes]:
    with kept.post("/rpc", b"{}", {}, expected(server)) as answer:
        return answer.status, answer.read()


def test_an_answer_read_to_its_length_leaves_the_connection_for_the_next_request(
    server: Server, kept: KeptAlive
) -> None:
    server.answers += [plain(b"one"), plain(b"two")]
    assert [post(kept, server), post(kept, server)] == [(200, b"one"), (200, b"two")]
    assert (server.connections, server.identities) == (1, 1)
    assert all(b"\r\nConnection: keep-alive\r\n" in head for _, head in server.requests)


@pytest.mark.parametrize(
    "ending",
    [
        b"HTTP/1.1 200 OK\r\n\r\none",
        plain(b"one", b"Connection: close"),
        plain(b"one").replace(b"1.1", b"1.0"),
    ],
    ids=["ends-with-the-connection", "says-it-closes", "http-1.0"],
)
def test_an_answer_that_ends_its_connection_sends_the_next_request_on_a_new_one(
    server: Server, kept: KeptAlive, ending: bytes
) -> None:
    server.answers += [ending, plain(b"two")]
    assert post(kept, server) == (200, b"one")
    assert post(kept, server) == (200, b"two")
    assert [number for number, _ in server.requests] == [1, 2]
    assert server.identities == 2  # each connection proven


def test_an_answer_left_before_its_end_closes_its_connection(server: Server, kept: KeptAlive) -> None:
    server.answers += [plain(b"a longer answer"), plain(b"two")]
    with kept.post("/rpc", b"{}", {}, expected(server)) as answer:
        assert next(answer.pieces())  # what arrived so far; the rest is left unread
    assert post(kept, server) == (200, b"two")
    assert [number for number, _ in server.requests] == [1, 2]


def test_a_new_connection_closed_unanswered_is_an_error_and_not_sent_again(
    server: Server, kept: KeptAlive
) -> None:
    server.answers += [HANG_UP, plain(b"never")]
    with pytest.raises(LoopbackError, match="closed"):
        post(kept, server)
    assert [number for number, _ in server.requests] == [1]


def test_a_reused_connection_that_times_out_is_not_sent_again(server: Server) -> None:
    kept = KeptAlive("127.0.0.1", server.port, 0.5)
    server.answers += [plain(b"one"), SILENT, plain(b"never")]
    try:
        post(kept, server)
        with pytest.raises(TimeoutError):
            post(kept, server)  # the daemon may be at work on it
    finally:
        kept.close()
    assert [number for number, _ in server.requests] == [1, 1]


def test_a_request_for_another_daemon_is_proven_on_a_new_connection(server: Server, kept: KeptAlive) -> None:
    server.answers += [plain(b"one")]
    post(kept, server)
    another = Expected(TOKEN, PID + 1, "http://127.0.0.1")
    with pytest.raises(identity.NotTheDaemon, match="pid 4243"), kept.post("/rpc", b"{}", {}, another):
        pass
    assert (server.connections, len(server.requests)) == (2, 1)  # the proof failed: nothing sent


def test_a_connection_the_daemon_ended_while_idle_is_replaced_before_the_request_goes_out(
    server: Server, kept: KeptAlive
) -> None:
    server.answers += [plain(b"one"), plain(b"two")]
    post(kept, server)
    server.end_idle()
    while not kept.closed_by_daemon():
        time.sleep(0.01)  # its end of file is on its way

    assert post(kept, server) == (200, b"two")
    assert [number for number, _ in server.requests] == [1, 2]  # nothing sent on the ended one


def test_a_threads_connection_to_another_address_is_replaced_and_the_old_one_closed(server: Server) -> None:
    """A daemon started again on another port: the thread's next call goes there, and the
    connection to the old address is not left open."""
    other = Server()
    connections = ThreadConnections(5)
    try:
        server.answers += [plain(b"one")]
        other.answers += [plain(b"two")]
        first = connections.own("127.0.0.1", server.port)
        post(first, server)
        second = connections.own("127.0.0.1", other.port)
        assert post(second, other) == (200, b"two")
        assert second is not first and first._socket is None  # closed, not left open
        assert connections.own("127.0.0.1", other.port) is second
    finally:
        connections.close()
        other.close()
