"""Confinement of a file an agent client wrote that graphmem is asked to read.

A hook (or the daemon's ``/plugin/ingest``) names a session's file: Claude Code's transcript,
Codex's session file. The name comes from input graphmem does not control, so the file is read
only when the path is absolute, has no NUL, is a regular file and not a symlink, and resolves
inside one of the client's own folders. Each client's adapter checks what its file is named.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence
from pathlib import Path

from graphmem.errors import SessionStoreError

SHOWN_CHARS = 300  # of a refused path, in an error


def confined_file(
    path: str, roots: Sequence[Path], *, what: str, outside: str, check_name: Callable[[Path], None]
) -> Path:
    """``path`` resolved, when graphmem may read it; else ``SessionStoreError`` saying why.

    ``what`` names the file in errors ("The transcript"); ``outside`` ends the error for a file
    outside ``roots`` (which folders those are and how to change them); ``check_name`` raises
    ``SessionStoreError`` for a file not named as the client names its session's file.
    """
    shown = path[:SHOWN_CHARS]
    given = Path(path)
    if "\x00" in path or not given.is_absolute():
        raise SessionStoreError(f"{what} {shown!r} is not absolute: send the client's own path.")
    check_name(given)
    try:
        info = os.lstat(given)
        resolved = given.resolve(strict=True)
        inside = any(resolved.is_relative_to(root.expanduser().resolve()) for root in roots)
    except OSError as exc:
        raise SessionStoreError(f"Cannot read {what.lower()} {shown}: {exc.strerror or exc}.") from None
    if stat.S_ISLNK(info.st_mode):
        raise SessionStoreError(f"{what} {shown} is a symlink: graphmem reads only the client's own files.")
    if not stat.S_ISREG(info.st_mode):
        raise SessionStoreError(f"{what} {shown} is not a regular file.")
    if not inside:
        raise SessionStoreError(f"{what} {shown} is outside {outside}")
    return resolved
