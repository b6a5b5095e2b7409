"""Parsing a pass's files in worker processes gives what parsing each here gives, in order; a
worker that dies or hangs costs only the file that killed it; nothing is parsed in graphmem's
own process unless no process can start (``adapters/parse_pool.py``)."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import graphmem
from graphmem.adapters import parse_pool
from graphmem.adapters.code_parser import TreeSitterParser
from graphmem.adapters.parse_pool import AUTO_WORKERS_MAX, CHUNK_FILES, ParserPool, worker_count
from graphmem.core.code import ParsedFile

OTHERS = [
    (b"function add(a, b) { return a + b }\nclass Cart { total() { return add(1, 2) } }\n", "javascript"),
    (b"package main\n\nfunc Sum(xs []int) int { return len(xs) }\n", "go"),
    (b"def broken(:\n    return (\n", "python"),  # syntax errors are counted, not raised
    (b"", "python"),
]


# graphmem's own modules in a batch: 56 files with OTHERS, seven chunks (CHUNK_FILES), so two
# workers share it and a lost chunk can be the fourth. The smallest modules of some code (their
# size is not what these tests check: a pass's files are parsed several times a test).
PYTHON_FILES = 52
SMALLEST_MODULE_BYTES = 1_000


@functools.cache
def _batch() -> tuple[tuple[bytes, str], ...]:
    package = Path(graphmem.__file__).parent
    modules = [path.read_bytes() for path in sorted(package.rglob("*.py"))]
    smallest = sorted((source for source in modules if len(source) >= SMALLEST_MODULE_BYTES), key=len)
    python = [(source, "python") for source in smallest[:PYTHON_FILES]]
    return tuple(python[:40] + OTHERS + python[40:])


def _sources() -> list[tuple[bytes, str]]:
    """graphmem's own modules and a few other languages: more than a small batch (a new list)."""
    return list(_batch())


@functools.cache
def _parsed_here(sources: tuple[tuple[bytes, str], ...]) -> list[ParsedFile]:
    """What parsing each of ``sources`` in this process gives (once per module: tests compare)."""
    here = TreeSitterParser()
    return [here.parse(source, language) for source, language in sources]


@pytest.fixture
def pool() -> Iterator[ParserPool]:
    opened = ParserPool(2)
    yield opened
    opened.close()


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of two files: every file of a chunk a worker failed on is parsed again in a worker
    of its own, one start each (about 0.3 s of CPU), so a failed chunk costs two starts, not eight."""
    monkeypatch.setattr(parse_pool, "CHUNK_FILES", 2)


def _worker_pids(pool: ParserPool) -> list[int]:
    return [process.pid for process in pool._processes]


def test_a_batch_parsed_on_processes_equals_each_file_parsed_here(pool: ParserPool) -> None:
    sources = _sources()

    parsed = pool.parse_many(sources)

    assert parsed == _parsed_here(_batch())
    assert len(_worker_pids(pool)) == 2
    assert parsed[40].definitions and parsed[42].error_count > 0


def test_a_few_files_start_one_worker_and_none_start_none(pool: ParserPool) -> None:
    assert pool.parse_many([]) == [] and pool._processes == []
    parsed = pool.parse_many(OTHERS)
    assert [p.language for p in parsed] == ["javascript", "go", "python", "python"]
    assert len(OTHERS) <= CHUNK_FILES and len(_worker_pids(pool)) == 1


def test_one_worker_parses_everything_in_one_process(pool: ParserPool) -> None:
    alone = ParserPool(1)
    try:
        assert alone.parse_many(_sources()) == pool.parse_many(_sources()) == _parsed_here(_batch())
        assert len(_worker_pids(alone)) == 1
    finally:
        alone.close()


@pytest.mark.parametrize(
    "command",
    [
        ["/nonexistent/python", "-m", "graphmem.adapters.parse_worker"],
        [sys.executable, "-c", "print('not a parser')"],  # starts, but is no worker (a frozen build)
    ],
    ids=["cannot start", "not a worker"],
)
def test_where_no_worker_can_start_the_files_are_parsed_here(
    caplog: pytest.LogCaptureFixture, command: list[str]
) -> None:
    pool = ParserPool(2, command=command)
    assert pool.parse_many(_sources()) == _parsed_here(_batch())
    assert "no parser process could start" in caplog.text


@pytest.mark.usefixtures("small_chunks")
def test_a_worker_that_dies_is_replaced_and_its_files_parsed_again(pool: ParserPool) -> None:
    sources = _sources()
    first = pool.parse_many(sources)
    killed = _worker_pids(pool)[0]
    os.kill(killed, signal.SIGKILL)

    again = pool.parse_many(sources)

    assert again == first
    assert len(_worker_pids(pool)) == 2 and killed not in _worker_pids(pool)


@pytest.mark.parametrize("bug", [b"CRASH", b"HANG", b"LIE"])
@pytest.mark.usefixtures("small_chunks")
def test_a_file_that_crashes_hangs_or_subverts_the_parser_costs_only_itself_and_never_runs_here(
    monkeypatch: pytest.MonkeyPatch, bug: bytes
) -> None:
    crashing = Path(__file__).parents[2] / "support" / "crashing_parse_worker.py"
    pool = ParserPool(2, command=[sys.executable, str(crashing)])
    here: list[object] = []
    monkeypatch.setattr(pool, "_parse_here", here.append)
    if bug == b"HANG":
        # Only the hang needs the chunk timeout to fire (twice: its chunk, then the file alone):
        # 10 s, not the default's 20. A crash or a lie keeps the default, so a loaded machine's
        # slow (re)start of a worker never passes for one.
        monkeypatch.setattr(parse_pool, "CHUNK_TIMEOUT_S", 10.0)
    sources = _sources()
    sources[17] = (bug + b" = 'a grammar bug'\n", "python")
    try:
        parsed = pool.parse_many(sources)
    finally:
        pool.close()

    expected = _parsed_here(_batch())
    assert parsed[17] == ParsedFile("python", (), (), (), (), 1)  # stored without symbols
    assert [p for i, p in enumerate(parsed) if i != 17] == [
        p for i, p in enumerate(expected) if i != 17
    ]  # its chunk's other files parsed again, each alone
    assert here == []  # nothing was parsed in this process


def test_a_file_whose_parse_no_frame_holds_is_stored_without_symbols_and_costs_no_worker(
    caplog: pytest.LogCaptureFixture,
) -> None:
    crashing = Path(__file__).parents[2] / "support" / "crashing_parse_worker.py"
    pool = ParserPool(1, command=[sys.executable, str(crashing)])
    sources = [OTHERS[0], (b"BIG = 1\n", "python"), OTHERS[1]]
    try:
        parsed = pool.parse_many(sources)
        workers = _worker_pids(pool)
        pool.parse_many(sources[:1])
        kept = _worker_pids(pool)
    finally:
        pool.close()

    assert parsed[1] == ParsedFile("python", (), (), (), (), 1)  # stored without symbols
    assert [parsed[0], parsed[2]] == [
        TreeSitterParser().parse(source, language) for source, language in OTHERS[:2]
    ]
    assert kept == workers  # not taken for a crash
    assert "a python file parses to more than 64 MB; stored without its symbols" in caplog.text
    assert "crashed" not in caplog.text


def test_a_pass_that_lost_enough_files_stops_retrying_them_one_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    crashing = Path(__file__).parents[2] / "support" / "crashing_parse_worker.py"
    pool = ParserPool(2, command=[sys.executable, str(crashing)])
    monkeypatch.setattr(parse_pool, "GIVE_UP_AFTER", 1)
    sources = _sources()
    for bad in (3, 30):  # in the first chunk and the fourth
        sources[bad] = (b"CRASH = 1\n", "python")
    try:
        parsed = pool.parse_many(sources)
    finally:
        pool.close()

    unread = ParsedFile("python", (), (), (), (), 1)
    expected = _parsed_here(_batch())
    assert parsed[:3] == expected[:3]  # retried alone
    assert parsed[3:8] == [unread] * 5  # the lost file, then the budget was spent
    assert parsed[24:32] == [unread] * 8  # the fourth chunk: not retried
    good = [i for i in range(len(sources)) if not (3 <= i < 8 or 24 <= i < 32)]
    assert [parsed[i] for i in good] == [expected[i] for i in good]


def test_close_stops_the_workers(pool: ParserPool) -> None:
    pool.parse_many(_sources())
    pids = _worker_pids(pool)

    pool.close()

    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_close_tells_every_worker_to_leave_before_it_waits_for_one(
    pool: ParserPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool.parse_many(_sources())
    workers = list(pool._processes)
    hung_up_at_first_wait: list[bool] = []
    wait = subprocess.Popen.wait

    def waiting(process: subprocess.Popen[bytes], timeout: float | None = None) -> int:
        if not hung_up_at_first_wait:
            hung_up_at_first_wait.extend(w.stdin is None or w.stdin.closed for w in workers)
        return wait(process, timeout)

    monkeypatch.setattr(subprocess.Popen, "wait", waiting)
    pool.close()

    assert len(workers) == 2 and hung_up_at_first_wait == [True, True]  # they leave side by side
    assert all(worker.returncode is not None for worker in workers)


def test_workers_prepared_for_files_are_stopped_by_close_before_they_parse_any(pool: ParserPool) -> None:
    pool.prepare(10 * CHUNK_FILES)
    starting = list(pool._starting)

    pool.close()

    assert len(starting) == 2
    for worker in starting:
        with pytest.raises(ProcessLookupError):
            os.kill(worker.pid, 0)


def test_a_graphmem_package_in_the_current_directory_is_never_imported_by_a_worker(
    pool: ParserPool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bootstrap often runs inside the repository it reads: its files are not code to run."""
    planted = tmp_path / "graphmem" / "adapters"
    planted.mkdir(parents=True)
    for folder in (tmp_path / "graphmem", planted):
        (folder / "__init__.py").write_text(f"open({str(tmp_path / 'ran')!r}, 'w').close()\n")
    (planted / "parse_worker.py").write_text("raise SystemExit(3)\n")
    monkeypatch.chdir(tmp_path)

    # A planted parse_worker would have exited: every file would come back unparsed.
    assert pool.parse_many(_sources()) == _parsed_here(_batch())
    assert not (tmp_path / "ran").exists()


def test_the_default_is_one_worker_per_core_at_most_four() -> None:
    assert 1 <= worker_count() <= AUTO_WORKERS_MAX
    assert ParserPool(0).workers == worker_count() and ParserPool(3).workers == worker_count(3) == 3


def test_a_worker_that_fails_to_start_is_quoted_once_with_what_it_wrote_to_stderr(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A broken install (a grammar or its queries missing) fails every worker with the same
    message: the pass's warning quotes it once, where "no parser process could start" alone
    would not say why."""
    broken = [
        sys.executable,
        "-c",
        "import sys; sys.stderr.write('No such file: queries/python.scm'); sys.exit(3)",
    ]
    pool = ParserPool(2, command=broken)
    try:
        assert pool.parse_many(_sources()) == _parsed_here(_batch())
    finally:
        pool.close()
    quoted = [r.getMessage() for r in caplog.records if "it said" in r.getMessage()]
    assert quoted == [
        "bootstrap: a parser process failed (exit 3); it said: No such file: queries/python.scm"
    ]
    assert pool._stderr == {}  # every worker's stderr file is closed
