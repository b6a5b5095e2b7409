"""How long one answer of GitLab's may take to arrive, how large it may be, and how many pages
one list may take.

The transport's session (``gitlab_transport.py``) reads every answer through here. Its head (the
status line and headers) must arrive within ``MAX_ANSWER_S`` however it trickles: a per-read
timeout never ends a head sent a byte at a time, so a watchdog shuts the connection's socket at
the deadline and ``HeadTooSlow`` is raised. A connection's TLS handshake is held to the same
deadline. Its body is read as it arrives, up to ``MAX_ANSWER_BYTES`` and within ``MAX_ANSWER_S``
more. A list is read in at most the pages its
reader's ``PageBudget`` allows. Past any bound it is ``GitLabUnavailableError``; urllib3's own
faults (a timeout, a cut) are the caller's to translate.
"""

from __future__ import annotations

import contextlib
import functools
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

from urllib3.response import BaseHTTPResponse

from graphmem.errors import GitLabUnavailableError

# The longest answer read: a page of 100 diffs at GitLab's 200 KB a file's patch, and room.
MAX_ANSWER_BYTES = 32 * 2**20
READ_CHUNK_BYTES = 64 * 1024
# The longest the head, then the body, of one answer may take to arrive however it trickles
# (each read also has the timeout).
MAX_ANSWER_S = 60.0


class HeadTooSlow(Exception):
    """A connection's set-up (its TLS handshake) or an answer's head did not arrive within
    ``MAX_ANSWER_S``; the connection was shut."""


class _HeadDeadline:
    """Mixed into a urllib3 connection class: ``connect`` (its TLS handshake included) and
    ``getresponse``, which reads the head, each end by the deadline. The socket is shut rather
    than timed out: a blocked read then returns at once."""

    sock: socket.socket | None
    _connecting: socket.socket | None = None

    def _new_conn(self) -> socket.socket:
        sock: socket.socket = super()._new_conn()  # type: ignore[misc]
        # The TLS handshake's socket takes the descriptor from ``sock``, which can no longer be
        # shut: the watchdog shuts a duplicate (shutting one shuts the connection), closed once
        # ``connect`` ends.
        self._connecting = sock.dup()
        return sock

    def connect(self) -> None:
        try:
            with _deadline(self):
                super().connect()  # type: ignore[misc]
        finally:
            connecting, self._connecting = self._connecting, None
            if connecting is not None:
                connecting.close()

    def getresponse(self) -> Any:
        with _deadline(self):
            return super().getresponse()  # type: ignore[misc]


@contextlib.contextmanager
def _deadline(connection: _HeadDeadline) -> Iterator[None]:
    """``HeadTooSlow`` when the block has not ended within ``MAX_ANSWER_S``, by when the
    connection's socket (the one it has then: urllib3 sets it before the TLS handshake) is shut."""
    fired = threading.Event()
    watchdog = threading.Timer(MAX_ANSWER_S, _shut, (connection, fired))
    watchdog.daemon = True
    watchdog.start()
    try:
        yield
    except Exception:
        if fired.is_set():
            raise HeadTooSlow from None
        raise
    finally:
        watchdog.cancel()
    if fired.is_set():  # it "ended" as the socket was shut: cut, not whole
        raise HeadTooSlow


def _shut(connection: _HeadDeadline, fired: threading.Event) -> None:
    fired.set()
    sock = connection._connecting or connection.sock
    if sock is not None:
        with contextlib.suppress(OSError):  # closed meanwhile
            sock.shutdown(socket.SHUT_RDWR)


@functools.cache
def with_head_deadline(connection_class: type[Any]) -> type[Any]:
    """``connection_class`` (urllib3's, for http, https or a proxy) whose answers' heads arrive
    within ``MAX_ANSWER_S`` or raise ``HeadTooSlow``."""
    if issubclass(connection_class, _HeadDeadline):
        return connection_class
    return type(f"HeadDeadline{connection_class.__name__}", (_HeadDeadline, connection_class), {})


def read_body(raw: BaseHTTPResponse, url: str) -> bytes:
    """The body of ``raw`` (decoded), or ``GitLabUnavailableError`` past ``MAX_ANSWER_BYTES`` or
    ``MAX_ANSWER_S``: an answer without end (a proxy's stream, a forge's garbage) never fills the
    memory, and one that trickles in ends. ``url`` is the instance's, for the message."""
    body = bytearray()
    deadline = time.monotonic() + MAX_ANSWER_S
    # What has arrived, a read at a time (``read1``): a body trickled a byte at a time meets the
    # deadline, where a read of a whole chunk would wait for all of it.
    while chunk := raw.read1(READ_CHUNK_BYTES, decode_content=True):
        body += chunk
        if len(body) > MAX_ANSWER_BYTES:
            raise too_long(url)
        if time.monotonic() > deadline:
            raise too_slow(url)
    return bytes(body)


def too_long(url: str) -> GitLabUnavailableError:
    return GitLabUnavailableError(
        f"GitLab at {url} answered with more than {MAX_ANSWER_BYTES / 2**20:.3g} MiB: no answer "
        "graphmem asks for is that long. Check that [gitlab] url is the GitLab instance's address "
        "(not a proxy or a download)."
    )


def too_slow(url: str) -> GitLabUnavailableError:
    return GitLabUnavailableError(
        f"GitLab at {url} took over {MAX_ANSWER_S:g} s to send one answer. Check the instance and "
        "your network, then try again."
    )


class PageBudget:
    """How many more pages of a list each thread may read. python-gitlab follows a page's ``next``
    link for as long as pages come empty (recursing, until the stack gives out): a list without
    end is cut where its reader's read of it must have ended."""

    def __init__(self) -> None:
        self._left = threading.local()

    @contextlib.contextmanager
    def at_most(self, pages: int) -> Iterator[None]:
        """Within, this thread reads at most ``pages`` pages (each one ``spend``)."""
        self._left.pages = pages
        try:
            yield
        finally:
            self._left.pages = None

    def spend(self, url: str) -> None:
        """One page read (by this thread), or ``GitLabUnavailableError`` when it is one too many."""
        left: int | None = getattr(self._left, "pages", None)
        if left is None:
            return
        if left <= 0:
            raise GitLabUnavailableError(
                f"GitLab at {url} sent more pages than the list graphmem reads can have (pages that "
                "link on without end). Check that [gitlab] url is the GitLab instance's address (not "
                "a proxy), then try again."
            )
        self._left.pages = left - 1
