"""Opening a file that something else put in place: a regular file, or an ``OSError``.

A name graphmem reads may come from a user's config, a repository being bootstrapped, an agent
client's hook, or an import: what is there may be a FIFO (whose open waits for a writer, for
ever), a device (``/dev/zero`` reads without end), a folder, or a link swapped in after the
name was checked. :func:`open_regular` opens without waiting and hands back the file only when
it is a regular file (whose reads ``O_NONBLOCK`` leaves as they are); :func:`read_regular`
reads it up to a bound. Each caller turns the ``OSError`` into its own layer's error.

Beside the layers, as ``graphmem.errors`` is: the CLI's light path (``graphmem.locate``), the
adapters and the service all read through it, and it imports nothing of graphmem.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

# O_NONBLOCK: a FIFO is opened without waiting for a writer, then refused. (Windows has neither
# it nor O_NOFOLLOW / O_NOCTTY.)
_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


class NotRegularFile(OSError):
    """The name is a folder, a FIFO, a device or a socket. ``folder`` tells the first apart:
    a caller may say what to give instead (``strerror`` says which it is)."""

    def __init__(self, folder: bool) -> None:
        if folder:
            super().__init__(errno.EISDIR, "a folder, not a file")
        else:
            super().__init__(errno.EINVAL, "not a regular file: a pipe, device or socket")
        self.folder = folder


def open_regular(path: Path | str, *, follow_links: bool = True) -> BinaryIO:
    """``path`` open to read in binary, when it is a regular file; ``NotRegularFile`` when it is
    not, the open's own ``OSError`` when it cannot be opened (``ELOOP`` for a link when
    ``follow_links`` is false)."""
    flags = _FLAGS if follow_links else _FLAGS | getattr(os, "O_NOFOLLOW", 0)
    descriptor = os.open(path, flags)
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(folder=stat.S_ISDIR(mode))
    except BaseException:
        os.close(descriptor)
        raise
    return os.fdopen(descriptor, "rb")


def read_regular(path: Path | str, most: int) -> bytes:
    """The bytes of the regular file at ``path``, ``most`` at most and one more when it is longer
    (so a caller tells "too long" apart without reading it all); ``OSError`` as
    :func:`open_regular` raises it, or from the read."""
    with open_regular(path) as handle:
        return handle.read(most + 1)
