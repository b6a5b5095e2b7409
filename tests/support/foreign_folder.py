"""A person's folder given as graphmem's data dir, and what it holds, to tell that graphmem
wrote nothing into it and changed no mode in it (``adapters/data_dir.refuse_foreign``)."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def foreign_folder(tmp_path: Path) -> Path:
    """A person's folder: one file of theirs, readable by others (0644)."""
    folder = tmp_path / "project"
    folder.mkdir(mode=0o755)
    notes = folder / "notes.txt"
    notes.write_bytes(b"my own notes\n")
    notes.chmod(0o644)
    return folder


def snapshot(folder: Path) -> tuple[int, list[tuple[str, int, bytes | None]]]:
    """The folder's mode and each entry's name, mode and bytes (None: not a file)."""
    entries = sorted(
        (entry.name, stat.S_IMODE(os.lstat(entry).st_mode), entry.read_bytes() if entry.is_file() else None)
        for entry in folder.iterdir()
    )
    return stat.S_IMODE(os.lstat(folder).st_mode), entries
