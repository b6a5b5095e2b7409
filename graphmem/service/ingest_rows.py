"""Which sessions the ingester can store, what of a session's own values it keeps, and how it
names a value it refuses.

A session's id, directory and title, and the paths its tools name, come from another program's
store (OpenCode's database, a transcript file): hostile input, which the store would refuse
(an id over the limits a memory's ``session`` and ``origin`` keep, a NUL, which PostgreSQL holds
none of) or could not place. The ingester checks a session's row before it reads the session
(``row_problem``): a row it cannot store is skipped and counted, its reason logged once per
process (``Refusals``) -- never the end of the run, never half-stored, and never learned as
every project's memory for want of a directory. What it shows of a refused value is bounded
and escaped (``shown``): a 5,000-character id neither floods a log nor steers a terminal.
"""

from __future__ import annotations

import logging
import re
import threading

from graphmem.core.sessions import SessionRow
from graphmem.core.text import (
    MAX_ORIGIN_CHARS,
    MAX_SESSION_CHARS,
    escape_undecodable,
    validate_label,
    well_formed,
)
from graphmem.errors import InvalidInputError
from graphmem.service.inputs import parse_path

log = logging.getLogger(__name__)

# A session's id is kept as the memories' ``session`` and as its summary's ``origin``: both limits hold.
MAX_ID_CHARS = min(MAX_SESSION_CHARS, MAX_ORIGIN_CHARS)
SHOWN_CHARS = 80  # of a refused id or path, in a log line or the report's errors
MAX_TITLE_CHARS = 200  # a session's title, as its entity and its summary keep it
# Refused rows remembered as told, per process (the daemon ingests every 30 s): then forgotten.
MAX_TOLD = 1_024
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")


def shown(value: str) -> str:
    """``value`` as a log line or the report shows it: at most ``SHOWN_CHARS`` characters (the
    cut marked "…"), its control characters and what UTF-8 cannot hold escaped."""
    bounded = escape_undecodable(value, SHOWN_CHARS)
    return _CONTROL_RE.sub(lambda found: f"\\x{ord(found.group()):02x}", bounded)


def id_problem(session_id: str) -> str | None:
    """Why ``session_id`` cannot be stored (nor be the cursor's position), or None."""
    if not session_id.strip():
        return "its id is empty"
    try:
        validate_label(session_id, what="session id", most=MAX_ID_CHARS)
    except InvalidInputError as exc:
        return str(exc)
    return None


def row_problem(row: SessionRow) -> str | None:
    """Why the ingester cannot store the session of ``row``, or None: its id (``id_problem``), or
    a directory that is no absolute path the system can look up. A session is learned in the
    project of its directory; one without (empty, relative: OpenCode always writes the absolute
    one it ran in) has none, and what it teaches would be every project's."""
    problem = id_problem(row.id)
    if problem is not None:
        return problem
    if not row.directory.strip():
        return "it has no directory, so no project to learn in"
    try:
        path = parse_path(row.directory, what="session's directory")
        absolute = path.expanduser().is_absolute()
    except (InvalidInputError, RuntimeError) as exc:  # RuntimeError: a ~user that names no user
        return str(exc) if isinstance(exc, InvalidInputError) else "its directory names no user's home"
    if not absolute:
        return f'its directory "{shown(row.directory)}" is not absolute, so no project to learn in'
    return None


def usable_path(path: str) -> bool:
    """Whether ``path``, a file a session's tool named, is one the system can look up (no NUL, not
    over a path's length): any other is left out of the session's files and links."""
    try:
        parse_path(path)
    except InvalidInputError:
        return False
    return True


def title_of(title: str) -> str:
    """A session's title as it is stored: one line, no control character, ``MAX_TITLE_CHARS`` at most."""
    flat = " ".join(_CONTROL_RE.sub(" ", well_formed(title)).split())
    return flat[:MAX_TITLE_CHARS]


class Refusals:
    """The refused rows this process has logged: each is logged once at INFO (the daemon's level
    for graphmem; the command line shows the report's line instead, not both), then at DEBUG: a
    row re-read by every run -- the cursor cannot sit on an id the store refuses -- would fill the
    daemon's log."""

    def __init__(self) -> None:
        self._told: set[tuple[int, int]] = set()
        self._lock = threading.Lock()

    def tell(self, row: SessionRow, problem: str) -> None:
        seen = (row.time_updated_ms, hash(row.id))
        with self._lock:
            first = seen not in self._told
            if first:
                if len(self._told) >= MAX_TOLD:
                    self._told.clear()
                self._told.add(seen)
        log.log(
            logging.INFO if first else logging.DEBUG,
            'session "%s" skipped: %s',
            shown(row.id),
            problem,
        )
