"""Parsing a repository on several cores: the ``CodeParser`` that bootstrap uses.

Extracting a file's definitions, calls and imports from its tree (``code_parser.py``) is
Python code, so threads would share one core; the files of a pass are parsed by worker
processes instead (``parse_worker.py``), each with its own ``TreeSitterParser``. Workers start
at the first batch large enough to pay for them (:data:`PARALLEL_MIN` files: a worker imports
tree-sitter and its grammars, about 0.3 s) and stop with the pass (``close``); a small pass (a
few changed files, the usual re-scan) is parsed in this process and starts none. Results come
back in the order asked, the same as parsing each file here
(``tests/unit/adapters/test_parse_pool.py``).

A worker is ``python -m graphmem.adapters.parse_worker``, not a ``multiprocessing`` child: those
import the caller's main module again, which re-runs a script without a ``__main__`` guard and
fails from a notebook or standard input. A worker that dies (killed, or a grammar crashing on a
file) does not fail the pass: its files, and the rest of the pass, are parsed in this process,
as before workers existed.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Sequence

from graphmem.adapters.code_parser import TreeSitterParser
from graphmem.adapters.parse_worker import read_frame, write_frame
from graphmem.core.code import ParsedFile

log = logging.getLogger(__name__)

# Fewer files than this in a batch are parsed in this process (starting workers costs more).
PARALLEL_MIN = 64
# Workers by default (``[bootstrap] parse_workers = 0``): the cores, at most this many (each
# holds its own grammars).
AUTO_WORKERS_MAX = 4
# Files sent to a worker at a time: fewer round trips, and small enough to spread the work.
CHUNK_FILES = 8
# How long a worker may take to leave once its input is closed.
STOP_TIMEOUT_S = 5.0


def auto_workers() -> int:
    """The workers ``parse_workers = 0`` means: the cores this process may use, at most
    :data:`AUTO_WORKERS_MAX`."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, AUTO_WORKERS_MAX))


Chunk = tuple[int, Sequence[tuple[bytes, str]]]  # the index of its first source, and its sources


class ParserPool:
    """A ``CodeParser`` that parses large batches on ``workers`` processes (see the module doc);
    one per bootstrap pass, closed at its end."""

    def __init__(self, workers: int = 0) -> None:
        self.workers = workers if workers > 0 else auto_workers()
        self._here = TreeSitterParser()
        self._processes: list[subprocess.Popen[bytes]] = []

    def parse(self, source: bytes, language: str) -> ParsedFile:
        return self._here.parse(source, language)

    def parse_many(self, sources: Sequence[tuple[bytes, str]]) -> list[ParsedFile]:
        if self.workers <= 1 or len(sources) < PARALLEL_MIN:
            return [self._here.parse(source, language) for source, language in sources]
        if not self._processes:
            self._processes = [self._start() for _ in range(self.workers)]
        results: list[ParsedFile | None] = [None] * len(sources)
        waiting: deque[Chunk] = deque(
            (i, sources[i : i + CHUNK_FILES]) for i in range(0, len(sources), CHUNK_FILES)
        )
        failed: list[Chunk] = []
        lock = threading.Lock()

        def drive(process: subprocess.Popen[bytes]) -> None:
            assert process.stdin is not None and process.stdout is not None
            while True:
                with lock:
                    if not waiting:
                        return
                    start, chunk = waiting.popleft()
                try:
                    write_frame(process.stdin, list(chunk))
                    parsed = read_frame(process.stdout)
                except Exception:  # the worker died or answered garbage: its files are parsed here
                    with lock:
                        failed.append((start, chunk))
                    return
                results[start : start + len(chunk)] = parsed

        threads = [threading.Thread(target=drive, args=(p,), daemon=True) for p in self._processes]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if failed:
            log.warning("bootstrap: a parser process died; parsing the rest of the pass in this process")
            self.close()
            self.workers = 1
        for start, chunk in [*failed, *waiting]:  # waiting: every worker died before taking them
            results[start : start + len(chunk)] = [self._here.parse(s, language) for s, language in chunk]
        return [parsed for parsed in results if parsed is not None]

    def _start(self) -> subprocess.Popen[bytes]:
        # -P: the current directory (often the repository being read) is not put on the import
        # path, so a `graphmem/` or `tree_sitter.py` there is never imported in its place.
        return subprocess.Popen(
            [sys.executable, "-P", "-m", "graphmem.adapters.parse_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )

    def close(self) -> None:
        processes, self._processes = self._processes, []
        for process in processes:
            try:
                assert process.stdin is not None
                process.stdin.close()  # the worker leaves at the end of its input
            except OSError:
                pass
        for process in processes:
            try:
                process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.stdout is not None:
                process.stdout.close()
