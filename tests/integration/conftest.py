"""What every integration test shares: its temporary files where the run's temporary folders are.

The benchmarks' stores (``graphmem bench …`` writes them under ``tempfile``'s folder), the
blames' scratch folders of a bootstrap, the Chromium profiles of the browser tests: a test, and
every CLI, daemon and client it starts, makes them in ``tempfile``'s folder, ``/tmp`` on this
machine's disk, where Kùzu's syncs wait for the disk (and for whatever else writes to it). When
the run's folders are in memory (``support/temp_root.py``), ``_temporary_files_in_memory``
points ``TMPDIR`` (read by the children) and ``tempfile.tempdir`` (this process) at a folder of
the worker's there, removed when the worker ends. A run that chose its folders' place
(``--basetemp``) keeps ``/tmp``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest
from support.temp_root import ROOT_VARIABLE


@pytest.fixture(scope="session", autouse=True)
def _temporary_files_in_memory() -> Iterator[None]:
    root = os.environ.get(ROOT_VARIABLE)
    if not root:
        yield
        return
    folder = tempfile.mkdtemp(prefix="graphmem-tests-tmp-", dir=root)
    try:
        with pytest.MonkeyPatch.context() as monkeypatch:
            monkeypatch.setenv("TMPDIR", folder)
            monkeypatch.setattr(tempfile, "tempdir", folder)
            yield
    finally:
        shutil.rmtree(folder, ignore_errors=True)
