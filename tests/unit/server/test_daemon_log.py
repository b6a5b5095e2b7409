"""The daemon's log stays small: a flood of accept errors is one line a minute, never a
traceback per retry; daemon.log is 0600 and rotated."""

from __future__ import annotations

import errno
import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphmem.server.daemon_log import LOG_BACKUPS, DaemonLogFile, RepeatFilter


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def captured() -> Iterator[tuple[list[logging.LogRecord], Clock]]:
    """asyncio's logger, as the daemon sets it up, into a list; and the filter's clock."""
    clock = Clock()
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep()
    handler.addFilter(RepeatFilter(clock=clock))
    logger = logging.getLogger("asyncio")
    logger.addHandler(handler)
    try:
        yield records, clock
    finally:
        logger.removeHandler(handler)


def accept_error() -> None:
    """What asyncio's default exception handler logs when accept() fails (EMFILE)."""
    try:
        raise OSError(errno.EMFILE, "Too many open files")
    except OSError:
        logging.getLogger("asyncio").error(
            "socket.accept() out of system resource\nsocket: <asyncio.TransportSocket fd=7>", exc_info=True
        )


def test_a_flood_of_accept_errors_is_one_line_a_minute_without_traceback(
    captured: tuple[list[logging.LogRecord], Clock],
) -> None:
    records, clock = captured
    for _ in range(1000):
        accept_error()
        clock.now += 0.01
    assert len(records) == 1
    assert records[0].exc_info is None and "\n" not in records[0].getMessage()
    assert "Too many open files" in records[0].getMessage()
    clock.now += 60
    accept_error()
    assert len(records) == 2 and "999 more" in records[1].getMessage()


def test_graphmem_records_are_never_throttled(tmp_path: Path) -> None:
    assert all(
        RepeatFilter().filter(
            logging.LogRecord("graphmem.server", logging.INFO, "", 0, "tool call", None, None)
        )
        for _ in range(10)
    )


def test_daemon_log_is_0600_and_bounded(tmp_path: Path) -> None:
    path = tmp_path / "daemon.log"
    handler = DaemonLogFile(path, max_bytes=16 * 1024)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("graphmem.test_daemon_log")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        for number in range(5_000):  # 240 KB: the four files' 64 KB almost four times over
            logger.warning("line %d of a log that would grow without end", number)
    finally:
        logger.removeHandler(handler)
        handler.close()
    files = sorted(tmp_path.glob("daemon.log*"))
    assert len(files) == LOG_BACKUPS + 1
    assert sum(f.stat().st_size for f in files) <= (LOG_BACKUPS + 1) * 16 * 1024
    assert {stat.S_IMODE(os.stat(f).st_mode) for f in files} == {0o600}
