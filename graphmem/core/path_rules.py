"""What makes a path unusable: the one owner of the rules every path graphmem is given meets,
a setting's (``graphmem.locate.path_problem``: a ``ConfigError`` naming the setting) and a
caller's (``graphmem.service.inputs.parse_path``: an ``InvalidInputError`` naming the argument).
Each words the flaw its own way; the rules are here, so the two cannot drift apart again.

Standard library only and no I/O: ``graphmem.locate``, which every CLI call reads, imports it.
"""

from __future__ import annotations

import os
from enum import Enum
from typing import NamedTuple

# The longest name of one file or folder on the systems graphmem runs on (ext4, APFS, NTFS).
MAX_NAME_BYTES = 255
# The longest path a system call takes on Linux (PATH_MAX), in bytes: a longer one fails at every
# call with ENAMETOOLONG. A fixed bound, not this system's, as a project's path is also a name
# that export files carry from one machine to another.
MAX_PATH_BYTES = 4096


class Flaw(Enum):
    """Why no file or folder can be at a path, in the order ``path_flaw`` looks."""

    NUL = "nul"  # every system call refuses it (a ``ValueError``)
    TOO_LONG = "too long"  # over MAX_PATH_BYTES in UTF-8
    NOT_UTF8 = "not utf-8"  # a lone surrogate: undecodable bytes of argv or the environment, or a caller's
    UNENCODABLE = "unencodable"  # UTF-8, but the file system's encoding (a legacy locale's) cannot take it
    LONG_NAME = "long name"  # a name between separators over MAX_NAME_BYTES in UTF-8


class PathFlaw(NamedTuple):
    """The first flaw of a path: ``at`` is the character it is at (NUL and the encodings), ``size``
    the path's length in bytes of UTF-8 (``TOO_LONG``). A named tuple, not a frozen dataclass:
    every CLI call imports this (``graphmem.locate``), and the dataclass cost it 0.4 ms more."""

    kind: Flaw
    at: int = 0
    size: int = 0


def path_flaw(path: str) -> PathFlaw | None:
    """The first reason no file or folder can be at ``path``, or None.

    Paths are UTF-8 text: the store's libraries take nothing else, so a path that holds
    undecodable bytes (the lone surrogates ``os.fsdecode`` makes of them) would fail there, with
    a traceback (Kùzu's ``TypeError``, Tantivy's ``UnicodeEncodeError``), not here with its fix;
    lengths are counted in UTF-8, the bytes those libraries hand the system. A path must also be
    one the file system's encoding can write (they differ only under a legacy locale). The length
    is looked at before the encoding, so an overlong path is refused as one whatever it holds."""
    if "\0" in path:
        return PathFlaw(Flaw.NUL, at=path.index("\0"))
    size = len(path.encode("utf-8", "surrogatepass"))  # a lone surrogate counted as its 3 bytes
    if size > MAX_PATH_BYTES:
        return PathFlaw(Flaw.TOO_LONG, size=size)
    try:
        encoded = path.encode("utf-8")
    except UnicodeEncodeError as exc:
        return PathFlaw(Flaw.NOT_UTF8, at=exc.start)
    try:
        os.fsencode(path)
    except UnicodeEncodeError as exc:
        return PathFlaw(Flaw.UNENCODABLE, at=exc.start)
    if any(len(name) > MAX_NAME_BYTES for name in _names(encoded)):
        return PathFlaw(Flaw.LONG_NAME)
    return None


def _names(encoded: bytes) -> list[bytes]:
    """The names between the separators of ``encoded`` (``/``, and ``\\`` too on Windows)."""
    separator = os.sep.encode()
    if os.altsep:
        encoded = encoded.replace(os.altsep.encode(), separator)
    return encoded.split(separator)
