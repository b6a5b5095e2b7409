"""CPU and wall seconds per test, and which worker ran it when: what makes the suite slow.

Wall time (``--durations``) says more about the load than about a test when other work shares
the cores; CPU time hardly changes with it. Opt in with ``-p support.cpu_times
--cpu-times=FILE``: for each test (its setup, call and teardown) one tab-separated line is
appended to FILE, one file for all pytest-xdist workers::

    cpu seconds, node id, worker, start, stop (epoch seconds), xdist group

The CPU seconds are the pytest process's own and those of the children it waited for (the CLIs,
daemons and parse workers a test starts). The terminal summary lists the costliest tests, the
groups that held a worker longest and each worker's timeline: when it started its first test,
when it finished its last, and so how long one worker sat idle at the end while the other
finished (docs/testing.md, "How long").
"""

from __future__ import annotations

import os
import resource
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

__all__ = ["TestTime", "cpu_seconds", "read_times", "timeline"]

SHOWN = 30
GROUPS_SHOWN = 15


def cpu_seconds() -> float:
    """CPU seconds this process and its waited-for children used so far."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


@dataclass(frozen=True)
class TestTime:
    """One test's line of the file."""

    __test__ = False  # not a test class, whatever its name

    cpu: float
    name: str
    worker: str = ""
    start: float = 0.0
    stop: float = 0.0
    group: str = ""

    @property
    def wall(self) -> float:
        return self.stop - self.start


def read_times(path: Path) -> tuple[list[TestTime], list[tuple[float, str]]]:
    """The tests' lines of ``path`` and the others (``<collection gw0>``, ``<process gw0>``)."""
    tests: list[TestTime] = []
    others: list[tuple[float, str]] = []
    for line in path.read_text("utf-8").splitlines():
        fields = line.split("\t")
        if len(fields) < 2:
            continue
        if fields[1].startswith("<"):
            others.append((float(fields[0]), fields[1]))
        elif len(fields) >= 6:
            start, stop = float(fields[3]), float(fields[4])
            tests.append(TestTime(float(fields[0]), fields[1], fields[2], start, stop, fields[5]))
        else:  # a line of the older two-column format
            tests.append(TestTime(float(fields[0]), fields[1]))
    return tests, others


def timeline(tests: list[TestTime]) -> list[str]:
    """Each worker's first start, last stop, busy seconds and CPU, from the run's first start;
    then how long the first worker to finish sat idle before the last one finished."""
    workers: dict[str, list[TestTime]] = defaultdict(list)
    for test in tests:
        if test.worker:
            workers[test.worker].append(test)
    if not workers:
        return []
    begin = min(t.start for t in tests if t.worker)
    lines = []
    ends = []
    for worker, ran in sorted(workers.items()):
        first, last = min(t.start for t in ran), max(t.stop for t in ran)
        busy, cpu = sum(t.wall for t in ran), sum(t.cpu for t in ran)
        ends.append(last)
        lines.append(
            f"{worker}: tests from {first - begin:6.1f} s to {last - begin:6.1f} s, "
            f"{len(ran)} tests, {busy:6.1f} s in tests, {cpu:6.1f} s CPU"
        )
    lines.append(f"idle tail: {max(ends) - min(ends):.1f} s (first worker done to last worker done)")
    return lines


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--cpu-times",
        metavar="FILE",
        default=None,
        help="append each test's CPU seconds, worker, start, stop and group to FILE",
    )


def _worker() -> str:
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    path = item.config.getoption("--cpu-times")
    start, began = cpu_seconds(), time.time()
    yield
    stop = time.time()
    if path:
        marker = item.get_closest_marker("xdist_group")
        group = str(marker.args[0]) if marker is not None and marker.args else ""
        fields = (f"{cpu_seconds() - start:.3f}", item.nodeid, _worker(), f"{began:.3f}", f"{stop:.3f}")
        line = "\t".join((*fields, group)) + "\n"
        # One short append per test: lines of several workers never interleave.
        with Path(path).open("a", encoding="utf-8") as file:
            file.write(line)


@pytest.hookimpl(hookwrapper=True)
def pytest_collection(session: pytest.Session) -> Iterator[None]:
    path = session.config.getoption("--cpu-times")
    start = cpu_seconds()
    yield
    if path:
        with Path(path).open("a", encoding="utf-8") as file:
            file.write(f"{cpu_seconds() - start:.3f}\t<collection {_worker()}>\n")


def pytest_unconfigure(config: pytest.Config) -> None:
    """The process's whole CPU time, children included: what no test's line counts (starting
    pytest, the servers of session fixtures stopped at the end) is the rest. And its own
    without its children (the main process's children are the workers: its own is
    pytest-xdist's controller)."""
    path = config.getoption("--cpu-times")
    if path:
        with Path(path).open("a", encoding="utf-8") as file:
            file.write(f"{cpu_seconds():.3f}\t<process {_worker()}>\n")
            file.write(f"{time.process_time():.3f}\t<own {_worker()}>\n")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    path = config.getoption("--cpu-times")
    if not path or os.environ.get("PYTEST_XDIST_WORKER") or not Path(path).exists():
        return
    tests, others = read_times(Path(path))
    write = terminalreporter.write_line
    terminalreporter.section("CPU seconds")
    write(f"{sum(t.cpu for t in tests):.1f} s in {len(tests)} tests ({path})")
    for seconds, name in others:
        write(f"{seconds:8.2f}  {name}")
    for test in sorted(tests, key=lambda t: t.cpu, reverse=True)[:SHOWN]:
        write(f"{test.cpu:8.2f}  {test.name}")
    groups: dict[str, list[TestTime]] = defaultdict(list)
    for test in tests:
        if test.group:
            groups[test.group].append(test)
    if groups:
        terminalreporter.section("Groups: wall and CPU seconds")
        longest = sorted(groups.items(), key=lambda g: sum(t.wall for t in g[1]), reverse=True)
        for name, ran in longest[:GROUPS_SHOWN]:
            wall, cpu = sum(t.wall for t in ran), sum(t.cpu for t in ran)
            write(f"{wall:8.1f} {cpu:8.1f}  {name} ({len(ran)} tests)")
    if lines := timeline(tests):
        terminalreporter.section("Workers")
        for line in lines:
            write(line)
