"""Who is signed in to ``graphmem ui``: one-time sign-in codes and the sessions they open.

``graphmem ui`` asks the daemon for a code (``POST /ui/login`` with the local token) and
opens ``/ui/#code=<code>``. The page reads the code from the URL's fragment (never sent to
the server, so in no log), removes it from the address bar, and trades it once for a
session secret (``POST /ui/session``), which it keeps in ``sessionStorage`` and sends as
``Authorization: Bearer <session>`` on each call.

Why not the daemon token in the URL: the address lands in the browser's history, and the
token is the long-lived secret of every local client. A code is good once, for
``CODE_TTL_S``; what the history keeps is dead. Why not a cookie: a browser sends cookies
with requests other pages make, and pages on any other port of 127.0.0.1 count as the
same site, so ``SameSite`` would not keep them out; a header only the view's own script
sets cannot be forged by another page. Sessions live in the daemon's memory: restarting
the daemon signs the view out (run ``graphmem ui`` again).
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections.abc import Callable

CODE_TTL_S = 120.0  # a sign-in code is traded at once by the page graphmem ui opened
SESSION_IDLE_S = 12 * 3600.0  # a session unused this long ends
MAX_CODES = 32  # codes waiting at once; the oldest goes first
MAX_SESSIONS = 64  # open sessions; the one used least recently goes first
SECRET_BYTES = 32


class UiSessions:
    """Sign-in codes (each good once) and the sessions they opened, in memory, thread-safe."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._codes: dict[str, float] = {}  # code -> when it expires
        self._sessions: dict[str, float] = {}  # session -> when it was last used
        self._lock = threading.Lock()

    def new_code(self) -> str:
        code = secrets.token_urlsafe(SECRET_BYTES)
        with self._lock:
            self._drop_expired()
            while len(self._codes) >= MAX_CODES:
                self._codes.pop(next(iter(self._codes)))
            self._codes[code] = self._clock() + CODE_TTL_S
        return code

    def open(self, code: str) -> str | None:
        """A new session for a good, unused code (which is then spent); None otherwise."""
        with self._lock:
            self._drop_expired()
            found = _find(self._codes, code)
            if found is None:
                return None
            del self._codes[found]
            session = secrets.token_urlsafe(SECRET_BYTES)
            while len(self._sessions) >= MAX_SESSIONS:
                oldest = min(self._sessions, key=self._sessions.__getitem__)
                del self._sessions[oldest]
            self._sessions[session] = self._clock()
            return session

    def valid(self, session: bytes | str) -> bool:
        """Whether ``session`` is open (using it keeps it open)."""
        text = session.decode("latin-1") if isinstance(session, bytes) else session
        with self._lock:
            self._drop_expired()
            found = _find(self._sessions, text)
            if found is None:
                return False
            self._sessions[found] = self._clock()
            return True

    def close(self, session: str) -> bool:
        """Sign a session out; whether it was open."""
        with self._lock:
            found = _find(self._sessions, session)
            if found is not None:
                del self._sessions[found]
            return found is not None

    def _drop_expired(self) -> None:
        now = self._clock()
        for code in [c for c, expires in self._codes.items() if expires <= now]:
            del self._codes[code]
        for session in [s for s, used in self._sessions.items() if used + SESSION_IDLE_S <= now]:
            del self._sessions[session]


def _find(table: dict[str, float], secret: str) -> str | None:
    """The entry of ``table`` equal to ``secret``, compared in constant time (timing tells nothing)."""
    given = secret.encode("utf-8", "replace")
    found = None
    for entry in table:
        if hmac.compare_digest(entry.encode(), given):
            found = entry
    return found
