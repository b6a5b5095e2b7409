"""``MemoryService``'s transfer verbs: export, export into a repository, import.

The work is ``Transfer``'s (``service/transfer.py``); this holds the service's write
lock around what writes.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TextIO

from graphmem.service.repository import RepositoryExport
from graphmem.service.transfer import ExportSummary, ImportSummary, Progress, Transfer


class TransferVerbs:
    """Moving memories in and out of the store (mixed into ``MemoryService``)."""

    _transfer: Transfer
    _write_lock: threading.RLock
    project: str | None

    def export(
        self, out: TextIO, *, project: str | None = None, fmt: str = "jsonl", repository: bool = False
    ) -> ExportSummary:
        """Write memories as JSONL (lossless, importable) or Markdown (for reading).

        ``repository``: only the memories ``project`` shares with a team, project-relative.
        """
        return self._transfer.export(out, project=project, fmt=fmt, repository=repository)

    def export_dir(
        self, directory: Path, *, project: str | None, fmt: str = "jsonl", force: bool = False
    ) -> RepositoryExport:
        """Write the project's shared memories into a folder of its repository (``.graphmem/``)."""
        with self._write_lock:  # one writer of the folder at a time
            return self._transfer.export_dir(directory, project=project, fmt=fmt, force=force)

    def import_file(
        self,
        path: Path,
        *,
        project: str | None = None,
        dry_run: bool = False,
        progress: Progress | None = None,
    ) -> ImportSummary:
        """Import a JSONL export (or a ``.graphmem/`` folder): validates everything first,
        imports all or nothing."""
        with self._write_lock:
            own = self.project if project is None else project
            return self._transfer.import_file(path, project=own, dry_run=dry_run, progress=progress)
