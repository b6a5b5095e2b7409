"""Where the tests' temporary folders go: in memory (``/dev/shm``) when the machine has room.

Most tests write a store in ``tmp_path``: Kùzu, the lexical index and SQLite sync their files
tens of times for each store they create, and on a disk every sync waits for it (on the
loaded two-core machine, the Kùzu store contract took 40 s instead of 64 s in memory, and
less CPU). So unless the run says where its folders go (``--basetemp``, or pytest's own
``PYTEST_DEBUG_TEMPROOT``), pytest's numbered folders (``pytest-of-USER/pytest-N``, the
last three runs kept, one folder per pytest-xdist worker) are made under ``/dev/shm`` when
it is a writable tmpfs that runs programs and has :data:`MIN_FREE_BYTES` free; otherwise in
the usual temporary folder. ``tmp_path_retention_policy = "failed"`` (pyproject.toml) removes
a test's folder as soon as it passed, so the memory holds the running tests' folders, the
session's and those of the tests that failed (docs/testing.md).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

__all__ = ["MEMORY_ROOT", "MIN_FREE_BYTES", "ROOT_VARIABLE", "memory_temp_root", "put_temp_folders_in_memory"]

MEMORY_ROOT = Path("/dev/shm")
# Free space the memory folder must have: a whole run's folders at their largest (the OpenCode
# tests' are 150 MB each) with room to spare for everything else the machine runs.
MIN_FREE_BYTES = 8 * 1024**3
ROOT_VARIABLE = "PYTEST_DEBUG_TEMPROOT"


def memory_temp_root(root: Path = MEMORY_ROOT) -> Path | None:
    """``root`` when it is a writable file system that runs programs (tests start scripts they
    write) with :data:`MIN_FREE_BYTES` free; None otherwise."""
    try:
        stats = os.statvfs(root)
    except OSError:
        return None
    if stats.f_flag & (os.ST_RDONLY | os.ST_NOEXEC) or not os.access(root, os.W_OK | os.X_OK):
        return None
    return root if stats.f_bavail * stats.f_frsize >= MIN_FREE_BYTES else None


def put_temp_folders_in_memory(config: pytest.Config) -> None:
    """Make the run's temporary folders under :func:`memory_temp_root`, unless the run chose
    their place (``--basetemp``, which pytest-xdist also gives its workers, or
    ``PYTEST_DEBUG_TEMPROOT``). Called before pytest makes its first temporary folder."""
    if config.option.basetemp or os.environ.get(ROOT_VARIABLE):
        return
    root = memory_temp_root()
    if root is not None:
        os.environ[ROOT_VARIABLE] = str(root)
