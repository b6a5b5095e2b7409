"""The parse alone, beside which ``graphmem bench bootstrap`` puts a scan (``bench/bootstrap.py``).

A bootstrap pass lists a repository's files, reads them, parses them, resolves the project's
edges and stores it all. :func:`parse_alone` does only the first three, as a pass does them:
the same listing and reading (``adapters/repo_files.py``), the same batches
(``service/bootstrap.PARSE_BATCH``) through the same parser processes (``ParserPool``, as many
as ``[bootstrap] parse_workers`` says), and nothing resolved or stored. A scan's time over this
one is what the rest of the pass costs.

:func:`measured` times a call both ways: its wall time, and the CPU time it spent in this
process (all its threads) and in the child processes that ended during it (the parser
processes end with their pass): on a machine other work shares, the CPU time says what a
phase costs and the wall time how long it waited besides.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from graphmem.adapters.parse_pool import ParserPool
from graphmem.adapters.repo_files import list_sources, read_source
from graphmem.service.bootstrap import PARSE_BATCH, PARSE_BATCH_BYTES

__all__ = ["Measured", "measured", "parse_alone"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Measured:
    wall_s: float
    cpu_s: float  # this process's and its finished children's, user and system


def _cpu_now() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def measured(call: Callable[[], T]) -> tuple[T, Measured]:
    """What ``call`` returned, and its wall and CPU time (see the module doc)."""
    wall, cpu = time.perf_counter(), _cpu_now()
    result = call()
    return result, Measured(round(time.perf_counter() - wall, 3), round(_cpu_now() - cpu, 3))


def parse_alone(path: Path, workers: int) -> tuple[int, Measured]:
    """The files of ``path`` listed, read and parsed as a bootstrap pass does it, in ``workers``
    parser processes (0: one per core), nothing resolved or stored; how many were parsed, and
    how long it took."""

    def parse() -> int:
        pool = ParserPool(workers)
        parsed = 0
        batch: list[tuple[bytes, str]] = []
        held = 0
        try:
            for source in list_sources(path).files:
                content = read_source(path, source.path)
                if isinstance(content, str):
                    continue  # skipped by a pass too
                batch.append((content.data, source.language))
                held += len(content.data)
                if len(batch) >= PARSE_BATCH or held >= PARSE_BATCH_BYTES:
                    parsed += len(pool.parse_many(batch))
                    batch, held = [], 0
            parsed += len(pool.parse_many(batch))
        finally:
            pool.close()
        return parsed

    return measured(parse)
