"""What each pytest-xdist worker would otherwise make for itself on a clean clone, made once and
shared out among the workers before they collect.

Every worker imports every test module to collect it. On a clean clone nothing is cached yet, so
each worker rewrote the asserts of all 270 test modules (``tests/**/__pycache__/*-pytest-*.pyc``),
compiled the graphmem modules they import, and, at its first ``st.text()``, had Hypothesis
compute which characters UTF-8 encodes by trying all 1.1 million of them
(``.hypothesis/unicode_data``): 3.3, 1 and 1.8 s of CPU, in every worker, side by side on the
same modules, since the workers collect in the same order. Each of these is written once where
the next process finds it, so :func:`share_the_warm_up` has worker ``k`` of ``n`` make its share
(:func:`plan`, balanced by an estimate of each job's cost) before it collects: the other shares are
made meanwhile by the other workers, and a worker's collection then finds them made. A job a
worker finds done already (a run after the first, or another worker was quicker) costs a look.

Only the caches are written, each as pytest, Python and Hypothesis write their own (atomically:
another process reading meanwhile sees the old file or the new one); what runs is the same.
"""

from __future__ import annotations

import compileall
import fnmatch
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

__all__ = ["Job", "jobs", "plan", "share_the_warm_up"]

# Seconds of CPU a job takes, estimated (measured on a clean clone, one process, load 3): the
# assert rewriting of a test module and the compiling of another module per byte of source, and
# Hypothesis's table of what UTF-8 encodes.
REWRITE_S_PER_BYTE = 3.3 / 1_880_000
COMPILE_S_PER_BYTE = 1.0 / 2_700_000
CODEC_S = 1.8
# The modules imported as they are (not rewritten): graphmem and the tests' helpers.
PLAIN_FOLDERS = ("graphmem", "tests/support")


@dataclass(frozen=True)
class Job:
    """One cache entry to make: ``kind`` is "rewrite" (a test module's asserts, as pytest imports
    it), "compile" (another module's bytecode, as Python imports it) or "codec" (Hypothesis's
    UTF-8 table); ``path`` the module (none for "codec"); ``cost`` its estimated seconds."""

    kind: str
    path: Path | None
    cost: float


def jobs(root: Path, test_paths: Iterable[Path], test_files: Sequence[str]) -> list[Job]:
    """Every job of a run of ``test_paths`` (folders or files) under ``root``: the test modules
    and conftest files pytest rewrites (named as ``test_files``, pytest's ``python_files``), the
    modules of :data:`PLAIN_FOLDERS`, and the UTF-8 table. Sorted, the same in every worker."""
    rewritten: set[Path] = set()
    for path in test_paths:
        candidates = path.rglob("*.py") if path.is_dir() else [path]
        rewritten.update(
            file
            for file in candidates
            if file.name == "conftest.py"
            or any(fnmatch.fnmatch(file.name, pattern) for pattern in test_files)
        )
    # the conftest files above a folder or file of the run are rewritten too
    for path in test_paths:
        for folder in path.resolve().parents:
            if not folder.is_relative_to(root):
                break
            if (folder / "conftest.py").is_file():
                rewritten.add(folder / "conftest.py")
    plain = {file for folder in PLAIN_FOLDERS for file in (root / folder).rglob("*.py")} - rewritten
    found = [Job("rewrite", file, file.stat().st_size * REWRITE_S_PER_BYTE) for file in sorted(rewritten)]
    found += [Job("compile", file, file.stat().st_size * COMPILE_S_PER_BYTE) for file in sorted(plain)]
    return [*found, Job("codec", None, CODEC_S)]


def plan(all_jobs: Sequence[Job], workers: int) -> list[list[Job]]:
    """``all_jobs`` shared out among ``workers``: the costliest first, each to the worker with the
    least so far (the same plan in every worker, since they all list the same jobs)."""
    shares: list[list[Job]] = [[] for _ in range(workers)]
    loads = [0.0] * workers
    for job in sorted(all_jobs, key=lambda job: (-job.cost, job.kind, str(job.path))):
        least = loads.index(min(loads))
        shares[least].append(job)
        loads[least] += job.cost
    return shares


def share_the_warm_up(config: pytest.Config) -> None:
    """On a pytest-xdist worker, make this worker's share of the run's caches (the module's
    docstring); nothing in a run of one process, nor when bytecode is not written. An error
    leaves a job to be done as before, by whichever process needs it first."""
    worker = getattr(config, "workerinput", None)
    if worker is None or sys.dont_write_bytecode:
        return
    count = int(worker["workercount"])
    if count < 2:
        return
    root = config.rootpath
    test_paths = [root / arg.split("::")[0] for arg in config.args]
    test_paths = [path for path in test_paths if path.exists()]
    share = plan(jobs(root, test_paths, config.getini("python_files")), count)[int(worker["workerid"][2:])]
    try:
        run = _runner(config)
    except Exception:  # pytest's rewriting moved (its private helpers): each worker makes its own
        return
    for job in share:
        try:
            run(job)
        except Exception:  # a cache left unmade is made later, as before
            continue


def _runner(config: pytest.Config) -> Callable[[Job], None]:
    """What makes one job: pytest's own assert rewriting and its cache file, Python's
    ``compileall`` (skips a module whose bytecode is current), Hypothesis's own table."""
    from _pytest.assertion import rewrite

    state = config.stash[rewrite.assertstate_key]

    def run(job: Job) -> None:
        if job.kind == "codec":
            from hypothesis.internal.charmap import intervals_from_codec

            intervals_from_codec("utf-8")  # read from the cache when there, else made and written
            return
        assert job.path is not None
        if job.kind == "compile":
            compileall.compile_file(job.path, quiet=2)
            return
        cache_dir = rewrite.get_cache_dir(job.path)
        pyc = cache_dir / (job.path.name[:-3] + rewrite.PYC_TAIL)
        if rewrite._read_pyc(job.path, pyc, state.trace) is not None:  # made already
            return
        source_stat, code = rewrite._rewrite_test(job.path, config)
        if rewrite.try_makedirs(cache_dir):
            rewrite._write_pyc(state, code, source_stat, pyc)

    return run
