"""A dropped connection to GitLab is retried; what is retried and what it becomes when it is not
(``GitLabTransport._retry`` and ``_error``) are decided apart from the request loop. Answers no
GitLab sends (not HTTP, cut short, trickled, pages without end) come from a socket of the test's."""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import requests
import urllib3.exceptions
from requests.adapters import HTTPAdapter
from support import raw_answer
from support.accepting import Accepting
from support.fake_gitlab import PROJECT, TOKEN, FakeGitLab

from graphmem.adapters import gitlab_answer_bounds
from graphmem.adapters.gitlab_transport import PER_PAGE, GitLabTransport
from graphmem.errors import GitLabUnavailableError

ISSUE = f"/projects/{PROJECT.replace('/', '%2F')}/issues/34"


@pytest.fixture
def gitlab() -> Iterator[FakeGitLab]:
    with FakeGitLab() as server:
        yield server


def drop_connections(monkeypatch: pytest.MonkeyPatch, times: int) -> None:
    """The next ``times`` requests lose their connection mid-answer (the server hung up)."""
    send = HTTPAdapter.send
    left = [times]

    def dropping(self: HTTPAdapter, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        if left[0] > 0:
            left[0] -= 1
            cause = urllib3.exceptions.ProtocolError(
                "Connection aborted.", ConnectionResetError(104, "reset")
            )
            raise requests.ConnectionError(cause, request=request)
        return send(self, request, **kwargs)

    monkeypatch.setattr(HTTPAdapter, "send", dropping)


def test_a_dropped_connection_is_retried_with_backoff(
    gitlab: FakeGitLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    sleeps: list[float] = []
    transport = GitLabTransport(gitlab.url, TOKEN, max_retries=2, sleep=sleeps.append)
    drop_connections(monkeypatch, times=1)
    issue = transport.get(ISSUE, "issue 34")
    assert issue["iid"] == 34
    assert sleeps == [0.5]


def test_a_connection_dropped_every_time_is_unavailable_after_the_retries(
    gitlab: FakeGitLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    sleeps: list[float] = []
    transport = GitLabTransport(gitlab.url, TOKEN, max_retries=2, sleep=sleeps.append)
    drop_connections(monkeypatch, times=10)
    with pytest.raises(GitLabUnavailableError, match=r"Cannot connect to GitLab .* for issue 34"):
        transport.get(ISSUE, "issue 34")
    assert sleeps == [0.5, 1.0]


# -- answers that are no GitLab's, from a socket ------------------------------------------------


def reply(body: bytes, *, length: int | None = None, head: bytes = b"") -> bytes:
    """An HTTP/1.1 200 JSON answer of ``body`` that states ``length`` (the body's own by default)."""
    stated = len(body) if length is None else length
    return (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
        + f"Content-Length: {stated}\r\n".encode()
        + head
        + b"\r\n"
        + body
    )


def read_request(connection: socket.socket) -> None:
    """Read a request's head (a GET has no body)."""
    asked = b""
    while b"\r\n\r\n" not in asked and (chunk := connection.recv(65_536)):
        asked += chunk


@contextmanager
def serving(serve: Callable[[socket.socket, int], None]) -> Iterator[Accepting]:
    """A listener whose every connection ``serve`` answers after its request, until the block ends."""

    def answer(connection: socket.socket, number: int) -> None:
        with connection, contextlib.suppress(OSError):  # the client may hang up first
            read_request(connection)
            serve(connection, number)

    listener = Accepting(answer)
    try:
        yield listener
    finally:
        listener.close()


@pytest.mark.parametrize(
    "answer",
    [
        b"SSH-2.0-OpenSSH_9.6\r\n",
        b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * 70_000 + b"\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n" + b"X-Many: a\r\n" * 101 + b"\r\n",
    ],
    ids=["ssh-banner", "header-line-too-long", "too-many-headers"],
)
def test_an_answer_that_is_not_http_is_unavailable_at_once_and_says_so(answer: bytes) -> None:
    sleeps: list[float] = []
    with raw_answer.answering(answer) as port:
        transport = GitLabTransport(f"http://127.0.0.1:{port}", TOKEN, sleep=sleeps.append)
        with pytest.raises(GitLabUnavailableError, match=r"not HTTP.*not its SSH port") as caught:
            transport.get(ISSUE, "issue 34")
    assert "Cannot connect" not in str(caught.value)
    assert sleeps == []


def test_a_body_cut_short_of_its_length_is_retried_then_unavailable() -> None:
    sleeps: list[float] = []
    with raw_answer.answering(reply(b'{"iid": 34, "title": "Ref', length=5_000)) as port:
        transport = GitLabTransport(f"http://127.0.0.1:{port}", TOKEN, max_retries=2, sleep=sleeps.append)
        with pytest.raises(GitLabUnavailableError, match=r"cut short .* \(3 attempts\)") as caught:
            transport.get(ISSUE, "issue 34")
    assert "Error" not in str(caught.value)  # no library's exception named
    assert sleeps == [0.5, 1.0]


def test_an_answer_whose_head_trickles_in_is_cut_off_at_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gitlab_answer_bounds, "MAX_ANSWER_S", 0.3)

    def drip(connection: socket.socket, _number: int) -> None:
        for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 1_000:  # each byte well within the timeout
            connection.sendall(bytes([byte]))
            time.sleep(0.02)

    with serving(drip) as listener:
        transport = GitLabTransport(f"http://127.0.0.1:{listener.port}", TOKEN, timeout_s=2.0)
        with pytest.raises(GitLabUnavailableError, match=r"took over 0\.3 s to send one answer"):
            transport.get(ISSUE, "issue 34")
    assert listener.connections == 1  # not tried again: the next answer would trickle as slowly


# On a loaded machine the deadline may pass before the handshake begins; Python's ssl then drops
# the socket it made unclosed when the peer has reset the connection (``SSLSocket._create``
# re-raises recv's ECONNRESET without closing it), which the collector closes and warns about.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_tls_handshake_that_trickles_in_is_cut_off_at_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """A per-read timeout never ends a handshake answered a byte at a time (the head's deadline
    did not cover the connection's set-up): it is held to the same deadline."""
    monkeypatch.setattr(gitlab_answer_bounds, "MAX_ANSWER_S", 0.3)

    def handshake(connection: socket.socket, _number: int) -> None:
        with connection, contextlib.suppress(OSError):  # the client hangs up at the deadline
            connection.recv(65536)  # its ClientHello
            for byte in (
                b"\x16\x03\x03\x40\x00" + b"\x02" * 1_000
            ):  # a ServerHello, each byte within the timeout
                connection.sendall(bytes([byte]))
                time.sleep(0.02)

    listener = Accepting(handshake)
    try:
        transport = GitLabTransport(f"https://127.0.0.1:{listener.port}", TOKEN, timeout_s=2.0)
        with pytest.raises(GitLabUnavailableError, match=r"took over 0\.3 s to send one answer"):
            transport.get(ISSUE, "issue 34")
    finally:
        listener.close()
    assert listener.connections == 1


def test_pages_that_come_empty_but_link_on_are_not_followed_past_the_list() -> None:
    def empty(connection: socket.socket, number: int) -> None:
        link = f'<http://127.0.0.1:{listener.port}/api/v4/projects/1/issues?page={number + 1}>; rel="next"'
        connection.sendall(reply(b"[]", head=f"Link: {link}\r\n".encode()))

    with serving(empty) as listener:
        transport = GitLabTransport(f"http://127.0.0.1:{listener.port}", TOKEN, sleep=lambda s: None)
        with pytest.raises(GitLabUnavailableError, match=r"more pages than") as caught:
            transport.get_list("/projects/1/issues", "the issues of project 1", PER_PAGE)
    assert "malformed" not in str(caught.value)
    assert listener.connections <= 3  # one page holds the list, one more says it ended
