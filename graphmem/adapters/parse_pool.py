"""Parsing a repository in worker processes: the ``CodeParser`` that bootstrap uses.

Tree-sitter's grammars are C, and a repository is input nobody vetted: a grammar's bug on a
hostile file must not take graphmem down, nor hang it. So no file is parsed in graphmem's
process: worker processes (``parse_worker.py``) each hold a ``TreeSitterParser`` and parse the
pass's files 8 at a time. Extracting definitions, calls and imports from a tree is Python
code, which threads would run on one core; processes run it on several: up to ``workers`` of
them, one per core and at most 4 by default, fewer when the pass has fewer chunks. They start
with the pass's first batch, or before it when the pass knows it will parse (``prepare``: a
first scan starts them while it lists the files and reads the history; about 0.3 s to import
tree-sitter and the grammars, side by side), and stop with the pass (``close``); a pass that
parses nothing starts none. Results come back
in the order asked, the same as parsing each file here (``tests/integration/adapters/test_parse_pool.py``).

A worker is ``python -P -m graphmem.adapters.parse_worker`` in ``/``, not a ``multiprocessing`` child:
those import the caller's main module again, which re-runs a script without a ``__main__``
guard and fails from a notebook or standard input. A worker that dies (a grammar crashing on a
file, or killed) or hangs on a chunk past :data:`CHUNK_TIMEOUT_S` does not fail the pass: it is
killed, another takes its place, and the files it held are parsed again one at a time, each in
a worker of its own, so that a file that crashes or hangs the parser costs only itself: it is
stored without symbols, as one syntax error (as is one whose parse no frame holds,
``parse_worker.TOO_BIG``, its worker kept). After :data:`GIVE_UP_AFTER` such files a pass
stops retrying: a repository of crafted files costs a timeout per chunk at most. Only where no
worker can start at all (a sandbox that forbids processes, or a build whose interpreter is not
Python: a worker first says it is ready, ``parse_worker.READY``) are the files parsed in
graphmem's process, with a warning, each within the time a worker would have had
(``TreeSitterParser.parse(timeout_s=...)``): a file that takes longer, or breaks the parser, is
stored without symbols as above, and the pass goes on.
"""

from __future__ import annotations

import logging
import os
import subprocess
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from contextlib import suppress
from typing import IO, TYPE_CHECKING, TypeVar

from graphmem.adapters.parse_worker import FRAME_MAX_BYTES, READY, TOO_BIG, answer, read_frame, write_batch
from graphmem.core.code import ParsedFile, parsed_from_json
from graphmem.errors import GraphmemError
from graphmem.python_child import CHILD_CWD, python_child

if TYPE_CHECKING:
    from graphmem.adapters.code_parser import TreeSitterParser

log = logging.getLogger(__name__)
T = TypeVar("T")

# What a worker runs (as a ``python_child``).
WORKER_MODULE = "graphmem.adapters.parse_worker"
# Workers by default (``[bootstrap] parse_workers = 0``): the cores, at most this many (each
# holds its own grammars).
AUTO_WORKERS_MAX = 4
# Files sent to a worker at a time: fewer round trips, and small enough to spread the work.
CHUNK_FILES = 8
# How long a worker may take to leave once its input is closed.
STOP_TIMEOUT_S = 5.0
# How long a worker may take over one chunk before it is taken for hung and killed (a chunk of
# 8 files takes milliseconds, a megabyte of generated code about a second; a grammar looping on
# a hostile file never ends): its files are then parsed again one at a time, as after a crash.
CHUNK_TIMEOUT_S = 20.0
# Files a pass gives up on (each cost a crash or a timeout alone) before it stops trying the
# files of a failed chunk one at a time: a repository of crafted files costs at most a timeout
# per chunk, not one per file besides.
GIVE_UP_AFTER = 8
# What a failed worker wrote last (its stderr) that the pass's warning quotes: a broken install
# (a grammar or its queries missing) says why there, where "crashed the parser" would not.
STDERR_TAIL_CHARS = 500


def worker_count(setting: int = 0) -> int:
    """The workers ``[bootstrap] parse_workers = setting`` means: that many, or for 0 the cores
    this process may use, at most :data:`AUTO_WORKERS_MAX`."""
    if setting > 0:
        return setting
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, AUTO_WORKERS_MAX))


Chunk = tuple[int, Sequence[tuple[bytes, str]]]  # the index of its first source, and its sources


class ParserPool:
    """A ``CodeParser`` that parses a pass's files on up to ``workers`` processes (see the module
    doc); one per bootstrap pass, closed at its end."""

    def __init__(self, workers: int = 0, *, command: Sequence[str] | None = None) -> None:
        self.workers = worker_count(workers)
        # A python_child (-P, in /): the repository being read, often the current directory, is
        # never on the import path, so a `graphmem/` or `tree_sitter.py` there is never imported.
        self._command = list(command or python_child(WORKER_MODULE).argv)
        self._here: TreeSitterParser | None = None  # the last resort: no process could start
        self._processes: list[subprocess.Popen[bytes]] = []  # ready
        self._starting: list[subprocess.Popen[bytes]] = []  # spawned by ``prepare``, not yet ready
        self._stderr: dict[int, IO[bytes]] = {}  # each live worker's stderr, a temporary file
        self._lost = 0  # files given up on in this pass
        self._said_why = False  # a failed worker's stderr is quoted once a pool

    def prepare(self, files: int) -> None:
        """Start the workers ``files`` files need (one a chunk, at most ``workers``) without
        waiting for them: they import the grammars side by side, while the caller reads."""
        wanted = min(self.workers, -(-files // CHUNK_FILES)) - len(self._processes) - len(self._starting)
        with suppress(OSError):
            for _ in range(max(wanted, 0)):
                self._starting.append(self._spawn())

    def parse_many(self, sources: Sequence[tuple[bytes, str]]) -> list[ParsedFile]:
        if not sources:
            return []
        self.prepare(len(sources))
        starting, self._starting = self._starting, []
        for process in starting:
            with suppress(OSError):
                self._processes.append(self._ready(process))
        if not self._processes:
            log.warning("bootstrap: no parser process could start; parsing in this process")
            return self._parse_here(sources)
        results: list[ParsedFile | None] = [None] * len(sources)
        waiting: deque[Chunk] = deque(
            (i, sources[i : i + CHUNK_FILES]) for i in range(0, len(sources), CHUNK_FILES)
        )
        failed: list[Chunk] = []
        lock = threading.Lock()

        def drive(slot: int) -> None:
            while True:
                with lock:
                    if not waiting:
                        return
                    start, chunk = waiting.popleft()
                parsed = self._ask(self._processes[slot], chunk)
                if parsed is None:  # the worker died: its chunk is parsed again, a file at a time
                    with lock:
                        failed.append((start, chunk))
                    try:
                        self._processes[slot] = self._start()
                    except OSError:
                        return
                    continue
                results[start : start + len(chunk)] = parsed

        threads = [
            threading.Thread(target=drive, args=(slot,), daemon=True) for slot in range(len(self._processes))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for start, chunk in sorted(failed, key=lambda failure: failure[0]):  # in the pass's order
            results[start : start + len(chunk)] = [
                self._alone(source, language) for source, language in chunk
            ]
        for start, chunk in waiting:  # no worker could be started again
            results[start : start + len(chunk)] = self._parse_here(chunk)
        return [parsed for parsed in results if parsed is not None]

    def _ask(
        self, process: subprocess.Popen[bytes], chunk: Sequence[tuple[bytes, str]]
    ) -> list[ParsedFile] | None:
        """The worker's parses of ``chunk``; None when it died, hung or answered something that
        is not a parse (it is then stopped)."""

        def exchange() -> list[ParsedFile]:
            assert process.stdin is not None and process.stdout is not None
            write_batch(process.stdin, chunk)
            frames = [read_frame(process.stdout) for _ in chunk]
            return [
                _too_big(language) if frame == TOO_BIG else parsed_from_json(frame)
                for frame, (_, language) in zip(frames, chunk, strict=True)
            ]

        return self._timed(process, exchange)

    def _alone(self, source: bytes, language: str) -> ParsedFile:
        """One file of a chunk a worker died on, in a worker of its own: a file that crashes or
        hangs the parser (a grammar's bug on hostile input) is stored without symbols, as
        unreadable, and never parsed in this process; so is every file of a failed chunk once
        :data:`GIVE_UP_AFTER` files were lost."""
        parsed = None
        if self._lost < GIVE_UP_AFTER:
            with suppress(OSError):
                process = self._start()
                parsed = self._ask(process, [(source, language)])
                self._stop(process)
        if parsed is None:
            return self._lose(language, "crashed or hung the parser")
        return parsed[0]

    def _lose(self, language: str, why: str) -> ParsedFile:
        """A file given up on: stored without symbols, as one syntax error."""
        self._lost += 1
        log.warning("bootstrap: a %s file %s; stored without its symbols", language, why)
        return ParsedFile(language, (), (), (), (), 1)

    def _parse_here(self, sources: Sequence[tuple[bytes, str]]) -> list[ParsedFile]:
        """``sources`` parsed in this process, the last resort: each file within
        :data:`CHUNK_TIMEOUT_S`, or once :data:`GIVE_UP_AFTER` files were lost each chunk's files
        within it together, as in a worker."""
        parsed: list[ParsedFile] = []
        for first in range(0, len(sources), CHUNK_FILES):
            chunk_deadline = time.monotonic() + CHUNK_TIMEOUT_S
            for source, language in sources[first : first + CHUNK_FILES]:
                alone = self._lost < GIVE_UP_AFTER
                deadline = time.monotonic() + CHUNK_TIMEOUT_S if alone else chunk_deadline
                parsed.append(self._parse_one_here(source, language, deadline - time.monotonic()))
        return parsed

    def _parse_one_here(self, source: bytes, language: str, timeout_s: float) -> ParsedFile:
        from graphmem.adapters.code_parser import ParseTimeoutError, TreeSitterParser

        if self._here is None:
            self._here = TreeSitterParser()
        try:
            parsed = self._here.parse(source, language, timeout_s=timeout_s)
            return _too_big(language) if answer(parsed) == TOO_BIG else parsed
        except ParseTimeoutError:
            return self._lose(language, f"took the parser more than {CHUNK_TIMEOUT_S:g} s")
        except GraphmemError:
            raise  # an unknown language or a broken install: no file's doing
        except Exception as exc:  # a grammar's bug on a hostile file, as a worker's crash is
            return self._lose(language, f"broke the parser ({type(exc).__name__})")

    def _start(self) -> subprocess.Popen[bytes]:
        """A worker, started and ready; ``OSError`` when none can be."""
        return self._ready(self._spawn())

    def _spawn(self) -> subprocess.Popen[bytes]:
        # A file, not a pipe (one nobody reads could fill and block the worker); closed by _stop.
        errors = tempfile.TemporaryFile()  # noqa: SIM115
        try:
            process = subprocess.Popen(
                self._command, cwd=CHILD_CWD, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors
            )
        except BaseException:
            errors.close()
            raise
        self._stderr[id(process)] = errors
        return process

    def _ready(self, process: subprocess.Popen[bytes]) -> subprocess.Popen[bytes]:
        """``process`` once it says it is a worker (:data:`READY`); ``OSError`` (it is stopped)
        when it does not within :data:`CHUNK_TIMEOUT_S`: it is not a worker, or cannot be one."""
        assert process.stdout is not None
        stdout = process.stdout
        if self._timed(process, lambda: read_frame(stdout) == READY or None):
            return process
        raise OSError(f"{' '.join(self._command[:3])} did not start as a parser process")

    def _timed(self, process: subprocess.Popen[bytes], talk: Callable[[], T | None]) -> T | None:
        """What ``talk`` got from ``process`` within :data:`CHUNK_TIMEOUT_S` (the process is
        killed then, which ends its answer); None, and the process stopped, when it failed."""
        hung = threading.Timer(CHUNK_TIMEOUT_S, process.kill)
        hung.start()
        try:
            with suppress(Exception):  # it died, hung or answered garbage: the caller decides
                answer = talk()
                if answer is not None:
                    return answer
        finally:
            hung.cancel()
        self._stop(process, kill=True)
        return None

    def _tell_why(self, process: subprocess.Popen[bytes], errors: IO[bytes]) -> None:
        """Quote what the first worker of this pool that failed wrote to stderr, if anything."""
        if self._said_why:
            return
        with suppress(OSError):
            errors.seek(0, os.SEEK_END)
            errors.seek(max(0, errors.tell() - 4 * STDERR_TAIL_CHARS))
            tail = errors.read().decode("utf-8", "replace").strip()[-STDERR_TAIL_CHARS:]
            if tail:
                self._said_why = True
                log.warning(
                    "bootstrap: a parser process failed (exit %s); it said: %s", process.returncode, tail
                )

    def close(self) -> None:
        processes, self._processes, self._starting = [*self._starting, *self._processes], [], []
        for process in processes:  # all told first: they leave side by side
            self._hang_up(process)
        for process in processes:
            self._stop(process)

    @staticmethod
    def _hang_up(process: subprocess.Popen[bytes]) -> None:
        """Close ``process``'s input and output: a worker leaves at the end of its input."""
        for stream in (process.stdin, process.stdout):
            with suppress(OSError):
                if stream is not None:
                    stream.close()

    def _stop(self, process: subprocess.Popen[bytes], *, kill: bool = False) -> None:
        """End ``process``: its input closed (a worker leaves at the end of it), killed if it
        does not go within :data:`STOP_TIMEOUT_S` (at once with ``kill``: it failed, and what it
        wrote to stderr is quoted), and reaped."""
        self._hang_up(process)
        if kill:
            process.kill()
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        errors = self._stderr.pop(id(process), None)
        if errors is not None:
            if kill:
                self._tell_why(process, errors)
            errors.close()


def _too_big(language: str) -> ParsedFile:
    """A file whose parse no frame holds (``parse_worker.TOO_BIG``): stored without symbols, as
    one syntax error."""
    log.warning(
        "bootstrap: a %s file parses to more than %d MB; stored without its symbols",
        language,
        FRAME_MAX_BYTES // (1024 * 1024),
    )
    return ParsedFile(language, (), (), (), (), 1)
