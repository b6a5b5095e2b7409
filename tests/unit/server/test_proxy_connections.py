"""``graphmem mcp``'s kept-alive connection to the daemon: one the daemon closed as a call went out
is replaced without a word, the call sent once more on a new one; a new connection that fails is
the daemon's failure, never retried there. (``tests/integration/test_proxy_session.py`` has the
real daemon dropping an idle connection.)"""

from __future__ import annotations

import json
import logging
import os
import socket
from pathlib import Path
from typing import BinaryIO

import pytest
from support.accepting import Accepting

from graphmem.server import identity
from graphmem.server.daemon_process import DaemonInfo
from graphmem.server.proxy import Proxy

TOKEN = "t" * 43


def _call(message_id: int) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": message_id, "method": "tools/call", "params": {"name": "memory_status"}}


class StandInDaemon:
    """Proves itself as the daemon does and answers calls on kept-alive connections, except that
    on its first connection it closes, unanswered, the call after ``answered_first`` ones: what a
    client sees when the daemon's keep-alive ends just as the client sends on it."""

    def __init__(self, answered_first: int) -> None:
        self.answered_first = answered_first
        self.accepting = Accepting(self._serve)

    @property
    def port(self) -> int:
        return self.accepting.port

    @property
    def connections(self) -> int:
        return self.accepting.connections

    def _serve(self, connection: socket.socket, number: int) -> None:
        limit = self.answered_first if number == 1 else None
        with connection, connection.makefile("rb") as requests:
            answered = 0
            while (request := _read_request(requests)) is not None:
                path, body = request
                if path == identity.PATH:
                    answer = identity.answer(TOKEN, None, json.loads(body)["nonce"], self.port)
                elif limit is not None and answered == limit:
                    return  # closed with the call unanswered
                else:
                    answer = {"jsonrpc": "2.0", "id": json.loads(body)["id"], "result": {"content": []}}
                    answered += 1
                raw = json.dumps(answer).encode()
                connection.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(raw), raw))

    def close(self) -> None:
        self.accepting.close()


def _read_request(requests: BinaryIO) -> tuple[str, bytes] | None:
    """The path and body of the next request on a connection (None when it ends)."""
    line = requests.readline()
    if not line:
        return None
    length = 0
    while (header := requests.readline().strip()) != b"":
        name, _, value = header.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return line.split()[1].decode(), requests.read(length)


@pytest.fixture
def token_dir(tmp_path: Path) -> Path:
    (tmp_path / "daemon.token").write_text(TOKEN + "\n", "ascii")
    return tmp_path


def _proxy(data_dir: Path, daemon: StandInDaemon) -> tuple[Proxy, list[Path]]:
    """A proxy to ``daemon``, and the data dirs it looked for (or started) a daemon for."""
    info = DaemonInfo(os.getpid(), f"http://127.0.0.1:{daemon.port}", str(data_dir), 0.0, "t")
    looked: list[Path] = []

    def start(data_dir: Path, timeout: float) -> DaemonInfo:
        looked.append(data_dir)
        return info

    return Proxy(data_dir, None, "t", 1.0, start=start), looked


def test_a_call_on_a_connection_closed_as_it_went_out_is_sent_again_without_a_word(
    token_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    daemon = StandInDaemon(answered_first=1)
    proxy, looked = _proxy(token_dir, daemon)
    try:
        with caplog.at_level(logging.WARNING, logger="graphmem"):
            replies = [proxy.handle(_call(1)), proxy.handle(_call(2))]
    finally:
        proxy.close()
        daemon.close()

    assert [(reply or {}).get("result") for reply in replies] == [{"content": []}] * 2
    assert daemon.connections == 2  # the second call went again, on a new connection
    assert looked == [token_dir]  # the daemon was found once, never looked for again
    assert caplog.records == []


def test_a_new_connection_closed_unanswered_is_the_daemons_failure(token_dir: Path) -> None:
    daemon = StandInDaemon(answered_first=0)  # closes the first call of its first connection
    proxy, looked = _proxy(token_dir, daemon)
    try:
        reply = proxy.handle(_call(1))
    finally:
        proxy.close()
        daemon.close()

    assert (reply or {}).get("result") == {"content": []}
    assert looked == [token_dir, token_dir]  # looked for again before the call went again, as ever
