"""The daemon's log stays small: a flood of accept errors is one line a minute, never a
traceback per retry; FastMCP's records pass through it like everyone else's; daemon.log is
0600 and rotated."""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphmem.server.daemon_log import LOG_BACKUPS, DaemonLogFile, RepeatFilter, log_to_file


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


def asgi_failure(error: Exception) -> None:
    """What uvicorn logs when a request's exception escapes the app."""
    try:
        raise error
    except Exception:
        logging.getLogger("uvicorn.error").error("Exception in ASGI application\n", exc_info=True)


def raise_key_error() -> None:
    raise KeyError("one failure")


def test_each_different_failure_of_a_request_is_logged_once_with_its_traceback() -> None:
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep()
    handler.addFilter(RepeatFilter(clock=Clock()))
    logger = logging.getLogger("uvicorn.error")
    logger.addHandler(handler)
    try:
        for _ in range(3):  # the same failure, three times in the minute: once
            try:
                raise_key_error()
            except KeyError:
                logger.error("Exception in ASGI application\n", exc_info=True)
        asgi_failure(OSError(36, "File name too long"))
        asgi_failure(ValueError("another failure"))
    finally:
        logger.removeHandler(handler)

    causes = [type(r.exc_info[1]).__name__ if r.exc_info else r.getMessage() for r in records]
    assert len(records) == 3, [r.getMessage() for r in records]
    assert causes[0] == "KeyError" and causes[2] == "ValueError"  # their tracebacks kept
    assert "File name too long" in records[1].getMessage()  # an OSError: one line, no traceback


def test_graphmem_records_are_never_throttled(tmp_path: Path) -> None:
    assert all(
        RepeatFilter().filter(
            logging.LogRecord("graphmem.server", logging.INFO, "", 0, "tool call", None, None)
        )
        for _ in range(10)
    )


def test_fastmcps_repeated_records_are_throttled() -> None:
    repeat = RepeatFilter(clock=Clock())
    passed = [
        repeat.filter(
            logging.LogRecord(
                "fastmcp.server.server", logging.WARNING, "", 0, "Invalid arguments", None, None
            )
        )
        for _ in range(10)
    ]
    assert passed == [True] + [False] * 9


@contextlib.contextmanager
def logging_restored() -> Iterator[None]:
    """The loggers the daemon's log sets up, as they were before (entered inside the test:
    pytest's own handlers differ from one phase of a test to the next); FastMCP's as its
    import sets it up, which the daemon's log undoes."""
    import fastmcp  # noqa: F401

    loggers = [logging.getLogger(name) for name in ("", "fastmcp", "graphmem")]
    kept = [(logger, list(logger.handlers), logger.level, logger.propagate) for logger in loggers]
    try:
        yield
    finally:
        for logger, handlers, level, propagate in kept:
            for handler in [h for h in logger.handlers if h not in handlers]:
                logger.removeHandler(handler)
                handler.close()
            for handler in [h for h in handlers if h not in logger.handlers]:
                logger.addHandler(handler)
            logger.setLevel(level)
            logger.propagate = propagate


def test_fastmcps_records_go_to_the_daemon_log_in_its_format_warnings_and_up(tmp_path: Path) -> None:
    with logging_restored():
        logging.getLogger("fastmcp").setLevel(logging.DEBUG)  # as FASTMCP_LOG_LEVEL=DEBUG sets it
        log_to_file(tmp_path, max_bytes=1 << 20, follow_std=False)
        fastmcp = logging.getLogger("fastmcp.server.server")

        fastmcp.debug("Handler called: call_tool remember with {'text': 'a memory'}")
        fastmcp.warning("Invalid arguments for tool 'recall'")

        assert logging.getLogger("fastmcp").handlers == []  # none of its own, to stderr

    text = (tmp_path / "daemon.log").read_text()
    assert " WARNING fastmcp.server.server: Invalid arguments for tool 'recall'" in text
    assert "a memory" not in text


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
