"""Handing the memory a large job freed back to the system.

An import of a million memories, or the build of their HNSW graph, allocates and frees
gigabytes in the process. CPython's cycle collector and the C allocator (glibc's
``malloc``, which Kùzu, tantivy, usearch and numpy use) keep much of what was freed:
objects in reference cycles until the next full collection, and free pages inside the
allocator's arenas, which it returns only from their top. A daemon that imported 100,000
memories kept 643 MB of it resident after the import's store was closed; a full
collection and ``malloc_trim`` gave 386 MB of that back (163 and 223), in about 15 ms at
a million memories (measured 2026-12-02). The benchmark's peaks at 200,000 memories went
from 1,143 / 1,400 MB (index / measure) to 1,086 / 1,172 MB.

Only after a large job (``LARGE_JOB_ROWS``): a full collection takes time in proportion
to the objects the process holds (15 ms in a serving process at a million memories, about
370 ms in a test worker that has run a thousand tests), and a small job frees little.
``malloc_trim`` is glibc's; elsewhere (macOS, musl) only the collection runs.

**While** a large job builds what it keeps to its end (a bootstrap's parses, symbols and
edges: millions of objects), the cycle collector's passes over them find nothing to free.
At CPython's default thresholds, which the daemon serves with, they took 0.3-0.5 s of a 4.8 s
bootstrap of 3,030 files (``collecting_rarely`` raises the thresholds for the job's length,
as a one-shot command runs with: ``cli.main.COMMAND_GC_THRESHOLD``). **After** it, what it
freed goes back when it says it was large (``JobRows``): a daemon that bootstrapped twenty
real packages (2,891 files, 48,079 symbols) kept 876-882 MB resident after it, 720-730 MB
since, and the release takes about 30 ms.
"""

from __future__ import annotations

import ctypes
import gc
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


def _malloc_trim() -> Callable[[int], Any] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim: Callable[[int], Any] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    return trim


_TRIM = _malloc_trim()
# Rows (memories imported, vectors built into a graph) from which a job is large.
LARGE_JOB_ROWS = 10_000


def release_after(rows: int) -> None:
    """``release_freed_memory`` after a job of ``rows`` rows, when it was a large one."""
    if rows >= LARGE_JOB_ROWS:
        release_freed_memory()


def release_freed_memory() -> None:
    """Collect reference cycles, then return the allocator's free pages to the system."""
    gc.collect()
    if _TRIM is not None:
        _TRIM(0)


# The collector's thresholds while a large job runs (a one-shot command's:
# ``cli.main.COMMAND_GC_THRESHOLD``): a young collection every 50,000 new objects.
JOB_GC_THRESHOLDS = (50_000, 50, 50)


class _RareCollection:
    """The thresholds of the jobs running now: raised by the first, put back by the last."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs = 0
        self._before = gc.get_threshold()

    def enter(self) -> None:
        with self._lock:
            if self._jobs == 0:
                self._before = gc.get_threshold()
                gc.set_threshold(
                    *(max(now, job) for now, job in zip(self._before, JOB_GC_THRESHOLDS, strict=True))
                )
            self._jobs += 1

    def leave(self) -> None:
        with self._lock:
            self._jobs -= 1
            if self._jobs == 0:
                gc.set_threshold(*self._before)


_RARE = _RareCollection()


class JobRows:
    """What a job run ``collecting_rarely`` says of its size before it ends: the rows it
    handled (a bootstrap's: the project's symbols, when it changed any file). From
    ``LARGE_JOB_ROWS``, what it freed is handed back when it ends (``release_after``)."""

    __slots__ = ("rows",)

    def __init__(self) -> None:
        self.rows = 0


@contextmanager
def collecting_rarely() -> Iterator[JobRows]:
    """The cycle collector runs rarely until the block ends (see the module doc); several
    jobs at once share it, and the process's own thresholds are back after the last. Then
    the memory the job freed goes back to the system if it says it was large."""
    job = JobRows()
    _RARE.enter()
    try:
        yield job
    finally:
        _RARE.leave()
        release_after(job.rows)
