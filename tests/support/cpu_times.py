"""CPU seconds per test, for finding what makes the suite slow on a loaded machine.

Wall time (``--durations``) says more about the load than about a test when other work shares
the cores; CPU time hardly changes with it. Opt in with ``-p support.cpu_times
--cpu-times=FILE``: each test's CPU seconds (its setup, call and teardown; the pytest process's
own and that of the children it waited for: the CLIs, daemons and parse workers a test starts)
are appended to FILE as tab-separated lines ``seconds<TAB>node id``, one file for all
pytest-xdist workers, and the terminal summary lists the costliest (docs/testing.md).
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["cpu_seconds"]

SHOWN = 30


def cpu_seconds() -> float:
    """CPU seconds this process and its waited-for children used so far."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--cpu-times",
        metavar="FILE",
        default=None,
        help="append each test's CPU seconds (own and waited-for children's) to FILE",
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    path = item.config.getoption("--cpu-times")
    start = cpu_seconds()
    yield
    if path:
        line = f"{cpu_seconds() - start:.3f}\t{item.nodeid}\n"
        # One short append per test: lines of several workers never interleave.
        with Path(path).open("a", encoding="utf-8") as file:
            file.write(line)


@pytest.hookimpl(hookwrapper=True)
def pytest_collection(session: pytest.Session) -> Iterator[None]:
    path = session.config.getoption("--cpu-times")
    start = cpu_seconds()
    yield
    if path:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        with Path(path).open("a", encoding="utf-8") as file:
            file.write(f"{cpu_seconds() - start:.3f}\t<collection {worker}>\n")


def pytest_unconfigure(config: pytest.Config) -> None:
    """The process's whole CPU time, children included: what no test's line counts (starting
    pytest, the servers of session fixtures stopped at the end) is the rest."""
    path = config.getoption("--cpu-times")
    if path:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        with Path(path).open("a", encoding="utf-8") as file:
            file.write(f"{cpu_seconds():.3f}\t<process {worker}>\n")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    path = config.getoption("--cpu-times")
    if not path or os.environ.get("PYTEST_XDIST_WORKER") or not Path(path).exists():
        return
    rows = [line.split("\t", 1) for line in Path(path).read_text("utf-8").splitlines() if "\t" in line]
    costs = [(float(seconds), name) for seconds, name in rows]
    tests = sorted((cost for cost in costs if not cost[1].startswith("<")), reverse=True)
    others = [cost for cost in costs if cost[1].startswith("<")]
    terminalreporter.section("CPU seconds")
    terminalreporter.write_line(f"{sum(c for c, _ in tests):.1f} s in {len(tests)} tests ({path})")
    for seconds, name in others:
        terminalreporter.write_line(f"{seconds:8.2f}  {name}")
    for seconds, name in tests[:SHOWN]:
        terminalreporter.write_line(f"{seconds:8.2f}  {name}")
