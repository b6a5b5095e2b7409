"""The transfer verbs: export, import, and their file forms.

The verbs that take text or a stream (``export``, ``export_repository``, ``import_text``)
touch no file. The verbs that take a path (``export_file``, ``export_dir``,
``import_file``) are what agents reach (MCP tools, ``/rpc``): every path passes
:class:`~graphmem.service.file_access.FileAccess`, the one file-access policy. The
work is ``Transfer``'s (``service/transfer.py``); this holds the writer's lock around
what writes (an import, a file or folder written). ``Transfer`` is built on the first export or
import: its modules (the export format's pydantic models, an import's reading, checks and plan)
take tens of milliseconds to import, which every one-shot command that builds the service but
never exports or imports would pay.

After an import it runs ``settle`` with the records it read: the daemon's hands the memory
a large import freed back to the system (``adapters/process_memory.py``, wired by
``graphmem/app.py``), which the process would otherwise keep for its life.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from graphmem.core.events import USER
from graphmem.errors import InvalidInputError
from graphmem.service.file_access import (
    DEFAULT_FOLDER,
    MAX_IMPORT_BYTES,
    REPOSITORY_FILE,
    FileAccess,
    atomic_write,
    read_export,
    write_folder,
)
from graphmem.service.inputs import parse_project
from graphmem.service.project_names import ProjectNames
from graphmem.service.results import ExportSummary, ImportSummary, RepositoryExport, RepositoryFiles

if TYPE_CHECKING:
    from graphmem.service.transfer import Transfer

Progress = Callable[[int], None]  # an import's records stored so far


@dataclass(frozen=True, slots=True)
class ExportedFile:
    """Where ``export_file`` wrote, and what."""

    path: str
    memories: int
    entities: int
    links: int


def _nothing(records: int) -> None:
    return None


class TransferFiles:
    """Moving memories in and out of the store, as text or through files. Its verbs the Memory
    service offers as they are (``PartVerb``) are documented where ``graphmem.api.Memory``
    declares them."""

    def __init__(
        self,
        transfer: Callable[[], Transfer],
        data_dir: Path,
        write_lock: threading.RLock,
        names: ProjectNames | None = None,
        *,
        agent_files: bool = False,
        settle: Callable[[int], None] = _nothing,
    ) -> None:
        self._new_transfer = transfer  # called on the first export or import
        self._settle = settle  # run after an import, with the records it read
        self._names = names
        # Files are read and written in the project's checkout; its memories are under its name.
        self._name: Callable[[str | None], str | None] = names.of if names is not None else lambda p: p
        self.data_dir = data_dir
        self._write_lock = write_lock
        self._agent_files = agent_files

    @cached_property
    def _transfer(self) -> Transfer:
        """The export and import work, built on first use (see the module's docstring)."""
        return self._new_transfer()

    @property
    def file_access(self) -> FileAccess:
        """Where the path verbs may read and write (see ``service/file_access.py``)."""
        return FileAccess(self.data_dir, agent=self._agent_files)

    @property
    def agent_files(self) -> bool:
        """Whether the path verbs are held to what an agent may touch (see ``confined``)."""
        return self._agent_files

    def confined(self) -> TransferFiles:
        """These verbs with their paths held to what an agent may touch (the daemon's service):
        the project's ``.graphmem/`` and ``<data_dir>/exports/``; see ``service/file_access.py``."""

        def transfer() -> Transfer:  # one Transfer for both, built on first use
            return self._transfer

        files = transfer, self.data_dir, self._write_lock, self._names
        return TransferFiles(*files, agent_files=True, settle=self._settle)

    # -- text and streams -----------------------------------------------------------

    def export(
        self, out: TextIO, *, project: str | None = None, fmt: str = "jsonl", repository: bool = False
    ) -> ExportSummary:
        project = self._name(parse_project(project))
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
        return self._transfer.repository_files(
            project=self._name(parse_project(project)),
            fmt=fmt,
            force=force,
            current=current,
            current_name=REPOSITORY_FILE,
            folder=folder,
        )

    def import_text(
        self,
        text: str | bytes,
        *,
        name: str = "The export",
        project: str | None = None,
        dry_run: bool = False,
        progress: Progress | None = None,
        actor: str = USER,  # who imports: the code path's (the tool's ``agent``), never /rpc's caller's
    ) -> ImportSummary:
        if len(text) > MAX_IMPORT_BYTES:
            raise InvalidInputError(
                f"The export is over the {MAX_IMPORT_BYTES // (1024 * 1024)} MiB limit of an import: "
                "split it."
            )
        project = self._name(parse_project(project))  # in a write: its other names' memories moved
        with self._write_lock:
            summary = self._transfer.import_text(
                text, name=name[:4096], project=project, dry_run=dry_run, progress=progress, actor=actor
            )
        self._settle(summary.records)
        return summary

    # -- paths: confined to the project's .graphmem/ and <data_dir>/exports/ -------------

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
        project = parse_project(project)
        buffer = io.StringIO()
        summary = self._transfer.export(buffer, project=self._name(project), fmt=fmt, repository=repository)
        with self._write_lock:
            target = self.file_access.writable_file(path, project, overwrite=overwrite)
            atomic_write(target, buffer.getvalue().encode("utf-8"))
        return ExportedFile(str(target), summary.memories, summary.entities, summary.links)

    def export_dir(
        self, directory: Path, *, project: str | None, fmt: str = "jsonl", force: bool = False
    ) -> RepositoryExport:
        from graphmem.service.repository_export import folder_label  # loaded by ``Transfer``
        from graphmem.service.transfer_overwrite import CLI_TERMS, TOOL_TERMS

        project = parse_project(project)
        with self._write_lock:  # one writer of the folder at a time
            folder = self.file_access.writable_folder(directory, project)
            merging = fmt == "jsonl" and not force
            current = self.file_access.current_export(folder, project) if merging else None
            shared = self._transfer.repository_files(
                project=self._name(project),
                fmt=fmt,
                force=force,
                current=current,
                current_name=str(folder / REPOSITORY_FILE),
                folder=folder_label(folder, project or ""),
                terms=TOOL_TERMS if self._agent_files else CLI_TERMS,  # the tool's arguments, for an agent
            )
            if not force:  # never over a file graphmem did not write
                for name in shared.files:
                    self.file_access.writable_file(folder / name, project, overwrite=True)
            written, unchanged = write_folder(folder, shared.files)
        return RepositoryExport(
            shared.memories, shared.entities, shared.links, tuple(written), tuple(unchanged), str(folder)
        )

    def import_file(
        self,
        path: Path,
        *,
        name: str | None = None,
        project: str | None = None,
        dry_run: bool = False,
        progress: Progress | None = None,
        actor: str = USER,  # as ``import_text``'s
    ) -> ImportSummary:
        project = parse_project(project)
        file = self.file_access.readable(path, project)
        data = read_export(file)  # bytes: its lines are decoded one at a time
        named = str(file) if name is None else name  # the CLI's copy of a large file names the user's
        return self.import_text(
            data, name=named, project=project, dry_run=dry_run, progress=progress, actor=actor
        )
