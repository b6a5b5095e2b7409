"""Where the daemon's log goes, and what keeps it small.

A daemon started in the background (``graphmem serve --detach``, which every client uses)
logs to ``<data dir>/daemon.log``: mode 0600, rotated at ``[server] log_max_bytes`` with
``LOG_BACKUPS`` older files beside it (``daemon.log.1`` ...), so it never holds more than
their sum. Its stdout and stderr follow the current file, so a stray write (a crash's
traceback) lands there too. ``graphmem serve`` in the foreground logs to stderr.

FastMCP's records go there as everyone else's do: its warnings and up, in the log's format
(not through the handlers FastMCP gives itself at import, which write around both).

What a client can make happen over and over is logged once a minute: a flood of
connections made asyncio log a traceback per failed ``accept()`` (176 MB in 70 s), and
uvicorn logs a line per malformed request. Records of the ``asyncio``, ``uvicorn`` and
``fastmcp`` loggers of one kind pass ``RepeatFilter`` once per ``REPEAT_INTERVAL_S``, as one
line (an ``OSError``'s traceback never; another error's only the first time), and the next
one says how many were left out. A record's kind is its logger and first line and, when it
carries an exception, that exception's type and the line it was raised at: each different
failure behind uvicorn's "Exception in ASGI application" is logged with its traceback.
graphmem's own records always pass.
"""

from __future__ import annotations

import io
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import cast

from graphmem.server.daemon_process import LOG_FILENAME, PRIVATE_FILE_MODE

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LOG_BACKUPS = 3  # daemon.log.1 .. daemon.log.3 beside daemon.log
REPEAT_INTERVAL_S = 60.0
# The loggers of what a client can trigger at will; graphmem's own are not throttled.
THROTTLED = ("asyncio", "uvicorn", "fastmcp")
MAX_KINDS = 256  # kinds of repeated record remembered at once; the oldest goes first
KIND_CHARS = 60  # a record's kind: its logger, the start of its first line (and its exception: `_cause`)


class RepeatFilter(logging.Filter):
    """One record of a kind per interval, on one line; the next says how many were left out."""

    def __init__(
        self, interval_s: float = REPEAT_INTERVAL_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self._interval_s = interval_s
        self._clock = clock
        self._until: dict[tuple[str, str], float] = {}  # kind -> when its next record may pass
        self._left_out: dict[tuple[str, str], int] = {}
        self._traced: set[tuple[str, str]] = set()  # kinds whose traceback was logged once
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith(THROTTLED):
            return True
        first_line = record.getMessage().split("\n", 1)[0]
        kind = (record.name, first_line[:KIND_CHARS] + _cause(record))
        now = self._clock()
        with self._lock:
            if now < self._until.get(kind, now):
                self._left_out[kind] = self._left_out.get(kind, 0) + 1
                return False
            left_out = self._left_out.pop(kind, 0)
            self._until.pop(kind, None)
            self._until[kind] = now + self._interval_s
            while len(self._until) > MAX_KINDS:
                oldest = next(iter(self._until))
                del self._until[oldest]
                self._left_out.pop(oldest, None)
            traced = kind in self._traced
            self._traced.add(kind)
            if len(self._traced) > MAX_KINDS:
                self._traced.clear()
        _one_line(record, first_line, left_out, keep_traceback=not traced, interval_s=self._interval_s)
        return True


def _cause(record: logging.LogRecord) -> str:
    """What failed, for a record that carries an exception: its type and the innermost frame it
    was raised from (``KeyError@/…/graphmem/x.py:12``). uvicorn logs every failed request as
    "Exception in ASGI application": keyed by its first line alone, one failure's traceback
    would stand for all others' in that minute."""
    error = record.exc_info[1] if record.exc_info else None
    while isinstance(error, BaseExceptionGroup) and error.exceptions:  # anyio's task groups wrap it
        error = error.exceptions[0]
    if error is None:
        return ""
    where = error.__traceback__
    while where is not None and where.tb_next is not None:
        where = where.tb_next
    at = f"@{where.tb_frame.f_code.co_filename}:{where.tb_lineno}" if where is not None else ""
    return f" {type(error).__qualname__}{at}"


def _one_line(
    record: logging.LogRecord, first_line: str, left_out: int, *, keep_traceback: bool, interval_s: float
) -> None:
    """Rewrite ``record`` as one line (its exception named, the count of those left out)."""
    error = record.exc_info[1] if record.exc_info else None
    text = first_line
    if isinstance(error, OSError):
        text += f": {error.strerror or error}"
        if "accept" in first_line:
            text += " (too many connections are open: it accepts again as they close; `ulimit -n` is the cap)"
    elif error is not None and not keep_traceback:
        text += f": {type(error).__name__}: {error}"
    if left_out:
        text += f" [and {left_out} more like it in the last {interval_s:.0f} s, not logged]"
    record.msg, record.args = text, None
    if isinstance(error, OSError) or not keep_traceback:
        record.exc_info, record.exc_text = None, None
    record.stack_info = None


class DaemonLogFile(RotatingFileHandler):
    """``daemon.log``: created 0600, rotated and bounded; ``follow_std``: the process's stdout and
    stderr are the current file (after each rotation too)."""

    def __init__(self, path: Path, max_bytes: int, *, follow_std: bool = False) -> None:
        self._follow_std = follow_std
        super().__init__(path, maxBytes=max_bytes, backupCount=LOG_BACKUPS, encoding="utf-8")
        self._follow()

    def _open(self) -> io.TextIOWrapper:
        stream = open(  # noqa: SIM115 - the handler owns the stream
            self.baseFilename,
            self.mode,
            encoding=self.encoding,
            errors=self.errors,
            opener=lambda path, flags: os.open(path, flags, PRIVATE_FILE_MODE),
        )
        return cast(io.TextIOWrapper, stream)

    def doRollover(self) -> None:
        super().doRollover()
        self._follow()

    def _follow(self) -> None:
        if not self._follow_std or self.stream is None:
            return
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        for fd in (1, 2):
            os.dup2(self.stream.fileno(), fd)


def log_to_file(data_dir: Path, max_bytes: int, *, follow_std: bool = True) -> logging.Handler:
    """The background daemon's log: ``<data_dir>/daemon.log``, rotated (see the module doc)."""
    return _install(DaemonLogFile(data_dir / LOG_FILENAME, max_bytes, follow_std=follow_std))


def log_to_stderr() -> logging.Handler:
    """The foreground daemon's log: stderr."""
    return _install(logging.StreamHandler(sys.stderr))


def _install(handler: logging.Handler) -> logging.Handler:
    """graphmem's records at INFO (never memory text), everyone else's warnings (FastMCP's
    too: ``_through_root``), through ``RepeatFilter``, to ``handler``."""
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    handler.addFilter(RepeatFilter())
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    _through_root("fastmcp")
    own = logging.getLogger("graphmem")
    if own.handlers:  # -v logs graphmem's records to stderr already
        own.propagate = False
    elif own.level == logging.NOTSET or own.level > logging.INFO:
        own.setLevel(logging.INFO)
    return handler


def _through_root(name: str) -> None:
    """The logger ``name`` (FastMCP's) logs through the root's handler, at its level: the
    library gives it handlers of its own when it is first imported (rich's, to stderr, which
    pass neither ``RepeatFilter`` nor the level: at ``FASTMCP_LOG_LEVEL=DEBUG`` it logs every
    call's arguments, memory text), so it is imported first."""
    import fastmcp  # noqa: F401 - its import sets up its logger

    logger = logging.getLogger(name)
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
    logger.setLevel(logging.NOTSET)
    logger.propagate = True
