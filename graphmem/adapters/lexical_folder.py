"""The full-text index's folder (``lexical_index``): taken by one writer, and written by this
user, or refused with what to do.

The process that may write the index holds the folder's own lock from its open to its close
(``take_folder``); a second one is refused at its open. A folder this user may not write (one
a ``sudo graphmem`` left to root, say) is refused at open too, as the graph store's is
(``kuzu_store``), with the same fix: its first commit would fail after the store's write, and
graphmem could neither delete nor rebuild it. A folder that does not open otherwise (damaged,
a file in its place) is another matter: deleted, it is rebuilt from the store.
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

from graphmem.errors import StoreError, StoreLockedError

WRITER_LOCK = ".graphmem-writer.lock"  # held from an index's open to its close (``take_folder``)
TANTIVY_WRITER_LOCK = ".tantivy-writer.lock"  # tantivy's, held by its writer
KEPT = "The store keeps every memory: the index catches up with it at the next open."


def take_folder(directory: Path) -> int:
    """``directory`` made if missing, checked writable and locked: the descriptor holding its
    ``WRITER_LOCK`` (``hold_writer_lock``). ``StoreLockedError`` when another index holds it,
    ``StoreError`` when it cannot be made, written or locked."""
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not writable(directory):  # else its first commit fails, after the store's write
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(directory))
        return hold_writer_lock(directory)
    except BlockingIOError as exc:
        raise StoreLockedError(
            f"The full-text index at {directory} is open in another process (or store): "
            "one writes it at a time."
        ) from exc
    except OSError as exc:
        raise unreadable(directory, exc) from exc


def hold_writer_lock(directory: Path) -> int:
    """A descriptor holding ``directory``'s ``WRITER_LOCK`` until it is closed, taken only while
    no writer holds tantivy's lock either (a process of an older graphmem, which made its writer
    at open): the one process that may write the index holds it from its open, as tantivy's
    writer lock was held when the writer was made at open. ``BlockingIOError`` when either is
    held; ``flock``: released by the kernel when a process dies, never stale."""
    held = os.open(directory / WRITER_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        tantivys = os.open(directory / TANTIVY_WRITER_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(tantivys, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free: released as it closes
        finally:
            os.close(tantivys)
    except BaseException:
        os.close(held)
        raise
    return held


def writable(directory: Path) -> bool:
    """Whether this user may read ``directory``'s files and make new ones there: tantivy writes
    each commit to new files (one ``access`` call: an open's few microseconds)."""
    return os.access(directory, os.R_OK | os.W_OK | os.X_OK)


def unreadable(directory: Path, exc: Exception) -> StoreError:
    """The error of an index folder that does not open, with its fix."""
    if _denied(exc):
        return StoreError(_not_permitted("open", directory))
    return StoreError(
        f"Cannot open the full-text index at {directory}: {exc}. Delete the folder; "
        "graphmem rebuilds it from the store when it opens."
    )


def unwritten(directory: Path, exc: Exception) -> StoreError:
    """The error of a commit that failed (tantivy's ``ValueError``, the journal's ``OSError``),
    with its fix; nothing the store holds is lost (``KEPT``)."""
    if _denied(exc):
        return StoreError(f"{_not_permitted('write', directory)} {KEPT}")
    return StoreError(f"Cannot write the full-text index at {directory}: {exc}. {KEPT}")


def _denied(exc: Exception) -> bool:
    """Whether ``exc`` is a permission refused: an ``OSError``'s, or tantivy's ``ValueError``
    naming its ``IoError`` (``kind: PermissionDenied, ... message: "Permission denied"``)."""
    return isinstance(exc, PermissionError) or "permission denied" in str(exc).lower()


def _not_permitted(doing: str, directory: Path) -> str:
    """A folder this user may not write, said as the graph store's is: not a damaged index
    (deleting it is no fix), but another user's, or one whose permissions were taken."""
    return (
        f"Cannot {doing} the full-text index at {directory}: permission denied. This user may not "
        f"read or write it: give it back the permissions (`chmod -R u+rwX {directory.parent}`, "
        "as the user that owns it), or run graphmem as that user."
    )
