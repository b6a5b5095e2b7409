"""The embedded store's files' parses: a SQLite file beside Kùzu's (``<data_dir>/parses.sqlite3``).

A parse is each file's definitions and references as JSON (``core.code.parsed_to_json``,
about 12 KB for a Python module of a dozen functions), what a pass reads back to resolve
every call and import of the project again and to match moved code. It is derived data,
kept by path, replaced whole when its file changes.

Not in Kùzu since schema 12. Kùzu 0.11 held these strings badly: updated in place they
filled its buffer pool and corrupted the column (schema 10 made them rows of their own,
deleted and loaded again), and even so the checkpoint after a re-scan that replaced the
parses of 3,030 files, in a store holding 6,060, needed more than its 512 MB pool: the
re-scan failed. SQLite replaces them in one transaction, in memory bounded by a page cache.
The file is opened at the first use: a command that reads no parse (a recall) does not open it.

Stored compressed: zstd at level 1 (Arrow's codec: pyarrow is graphmem's already), a fifth of the
JSON, 0.03 ms a file where zlib's level 1 took 0.07 and left more (3,030 files: 0.09 against 0.22
s of CPU, 6.6 against 7.9 MB); a parse stored zlib'd by an earlier graphmem is read as it is.
Committed with ``synchronous=FULL`` before the pass records the files' new content hashes in
Kùzu (``kuzu_code.py``): a file Kùzu calls scanned always has its parse here.
"""

from __future__ import annotations

import sqlite3
import threading
import zlib
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from graphmem.adapters.parse_worker import FRAME_MAX_BYTES
from graphmem.errors import StoreError

if TYPE_CHECKING:
    import pyarrow as pa

PARSES_FILE = "parses.sqlite3"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS parses ("
    "project TEXT NOT NULL, path TEXT NOT NULL, parsed BLOB NOT NULL, PRIMARY KEY (project, path))"
)
# A blob this graphmem writes: this prefix, the JSON's length (8 bytes, big-endian), a zstd frame
# (Arrow's decompression needs the length). Any other blob is an earlier graphmem's zlib stream.
_ZSTD = b"zstd"
_LENGTH_BYTES = 8
_ZSTD_LEVEL = 1


class ParseStore:
    """Each scanned file's parse, by project and path."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._opened: sqlite3.Connection | None = None  # at the first use (``_db``)

    @property
    def _db(self) -> sqlite3.Connection:
        """The connection, opened at the first use (under ``_lock``, in ``_errors``)."""
        if self._opened is None:
            db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            db.execute(_SCHEMA)
            self._opened = db
        return self._opened

    def load(self, project: str, paths: Collection[str] | None = None) -> dict[str, str]:
        """The JSON parse of each of ``project``'s files (of ``paths`` alone when given)."""
        with self._lock, _errors(self.path):
            if paths is None:
                rows = self._db.execute("SELECT path, parsed FROM parses WHERE project = ?", (project,))
                return {path: _text(blob) for path, blob in rows}
            found: dict[str, str] = {}
            for path in paths:
                row = self._db.execute(
                    "SELECT parsed FROM parses WHERE project = ? AND path = ?", (project, path)
                ).fetchone()
                if row is not None:
                    found[path] = _text(row[0])
            return found

    def replace(self, project: str, dropped: Iterable[str], parses: Iterable[tuple[str, str]]) -> None:
        """Delete the parses of ``dropped`` paths and store ``parses`` ((path, JSON) pairs,
        read as they come: a pass's are not all held at once), in one transaction."""
        with self._lock, _errors(self.path):
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(
                    "DELETE FROM parses WHERE project = ? AND path = ?", ((project, p) for p in dropped)
                )
                self._db.executemany(
                    "INSERT OR REPLACE INTO parses (project, path, parsed) VALUES (?, ?, ?)",
                    ((project, path, _blob(text)) for path, text in parses),
                )
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def paths(self, project: str) -> set[str]:
        """The paths of ``project`` that have a parse (a file without one is parsed again)."""
        with self._lock, _errors(self.path):
            return {
                row[0] for row in self._db.execute("SELECT path FROM parses WHERE project = ?", (project,))
            }

    def close(self) -> None:
        with self._lock:
            if self._opened is not None:
                self._opened.close()
                self._opened = None


@contextmanager
def _errors(path: Path) -> Iterator[None]:
    """SQLite's errors as the store's (a full disk, a damaged file), naming the file."""
    try:
        yield
    except (sqlite3.Error, zlib.error, OSError) as exc:  # OSError: Arrow's zstd on a damaged blob
        raise StoreError(
            f"The files' parses at {path} could not be used: {exc}. Delete the file: the next "
            "`graphmem bootstrap` parses the files again."
        ) from exc


@cache
def _codec() -> pa.Codec:
    """Arrow's zstd (stateless: one for every thread); pyarrow imported at the first parse, as
    every use of it in graphmem is (a command that stores no parse does not import it)."""
    import pyarrow as pa

    return pa.Codec("zstd", compression_level=_ZSTD_LEVEL)


def _blob(text: str) -> bytes:
    """A parse's JSON as this graphmem stores it (see ``_ZSTD``)."""
    data = text.encode("utf-8")
    frame: bytes = _codec().compress(data, asbytes=True)
    return _ZSTD + len(data).to_bytes(_LENGTH_BYTES, "big") + frame


def _text(blob: bytes) -> str:
    """A stored parse's JSON: this graphmem's zstd blob, or an earlier one's zlib stream."""
    if not blob.startswith(_ZSTD):
        return zlib.decompress(blob).decode("utf-8")
    start = len(_ZSTD) + _LENGTH_BYTES
    size = int.from_bytes(blob[len(_ZSTD) : start], "big")
    if size > FRAME_MAX_BYTES:  # a parse is one worker's frame at most: a damaged length, never allocated
        raise OSError(f"a parse of {size} bytes")
    data: bytes = _codec().decompress(blob[start:], decompressed_size=size, asbytes=True)
    return data.decode("utf-8")
