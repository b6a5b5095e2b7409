"""The facade's export and import verbs (``MemoryService`` inherits them): each hands the call
to ``TransferFiles`` (``transfer_files.py``); nothing but delegation happens here."""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from graphmem.service.file_access import FileAccess
from graphmem.service.repository_export import DEFAULT_FOLDER
from graphmem.service.results import ExportSummary, ImportSummary, RepositoryExport, RepositoryFiles
from graphmem.service.transfer import ExportedFile, Progress
from graphmem.service.transfer_files import TransferFiles


class TransferVerbs:
    """Export and import, as text or through files."""

    _transfer: TransferFiles

    @property
    def file_access(self) -> FileAccess:
        """Where the path verbs may read and write (see ``service/file_access.py``)."""
        return self._transfer.file_access

    def confine_files(self) -> None:
        """Hold the path verbs to what an agent may touch, from now on (the daemon's service):
        the project's ``.graphmem/`` and ``<data_dir>/exports/``; see ``service/file_access.py``."""
        self._transfer.confine_files()

    def export(
        self, out: TextIO, *, project: str | None = None, fmt: str = "jsonl", repository: bool = False
    ) -> ExportSummary:
        """Write memories as JSONL (lossless, importable) or Markdown (for reading).

        ``repository``: only the memories ``project`` shares with a team, project-relative.
        """
        return self._transfer.export(out, project=project, fmt=fmt, repository=repository)

    def export_repository(
        self,
        *,
        project: str | None,
        fmt: str = "jsonl",
        force: bool = False,
        current: str | None = None,
        folder: str = DEFAULT_FOLDER,
    ) -> RepositoryFiles:
        """The files of a repository export (``memories.jsonl``, ``MEMORY.md``) as text, for
        the caller to write; ``current`` is the folder's ``memories.jsonl`` now, checked for
        memories this store lacks unless ``force``."""
        return self._transfer.export_repository(
            project=project, fmt=fmt, force=force, current=current, folder=folder
        )

    def import_text(
        self,
        text: str,
        *,
        name: str = "The export",
        project: str | None = None,
        dry_run: bool = False,
        progress: Progress | None = None,
    ) -> ImportSummary:
        """Import JSONL export text: validates everything first, imports all or nothing."""
        return self._transfer.import_text(
            text, name=name, project=project, dry_run=dry_run, progress=progress
        )

    def export_file(
        self,
        path: Path,
        *,
        project: str | None = None,
        fmt: str = "jsonl",
        repository: bool = False,
        overwrite: bool = False,
    ) -> ExportedFile:
        """Write an export to ``path`` inside the project's ``.graphmem/`` or ``<data_dir>/exports/``
        (a bare file name goes to the latter); an existing file only with ``overwrite`` and
        only when graphmem wrote it."""
        return self._transfer.export_file(
            path, project=project, fmt=fmt, repository=repository, overwrite=overwrite
        )

    def export_dir(
        self, directory: Path, *, project: str | None, fmt: str = "jsonl", force: bool = False
    ) -> RepositoryExport:
        """Write the project's shared memories into its ``.graphmem/`` folder (or a folder in
        ``<data_dir>/exports/``): ``memories.jsonl`` and ``MEMORY.md``, each only when changed."""
        return self._transfer.export_dir(directory, project=project, fmt=fmt, force=force)

    def import_file(
        self,
        path: Path,
        *,
        project: str | None = None,
        dry_run: bool = False,
        progress: Progress | None = None,
    ) -> ImportSummary:
        """Import a JSONL export file (or a folder's ``memories.jsonl``) inside the project's
        checkout or ``<data_dir>/exports/``: validates everything first, imports all or nothing."""
        return self._transfer.import_file(path, project=project, dry_run=dry_run, progress=progress)
