"""The embedded store's vectors: one file, ``<data_dir>/graph.vectors``, appended to.

Kùzu 0.11 keeps every change of a list column in its buffer pool until a checkpoint, and
its checkpoint of such a column needs memory in proportion to the whole column. With the
vectors in Kùzu, a daemon that embedded each memory as it came filled the 512 MB pool after
about 800 memories, after which every write failed; at 100,000 memories a checkpoint after
512 new vectors took 3 s and 1.2 GB. So the Kùzu store keeps its vectors here, and Kùzu the
rest of each memory.

The file is a header (``MAGIC``, the dimension, the id width) and records of one size: the
id, padded with zero bytes to the width, and the float32 vector. A vector of NaNs says the
id has none any more (a model's vectors are finite: ``put`` refuses others). The last
record of an id wins. A write appends and flushes to the OS before it returns: it survives
the process being killed, and a record torn by a kill is cut off at the next open. An id
longer than the width writes the file again with a wider one.

Only where each vector starts stays in memory, read at the first use in one pass over
the file, a chunk of records at a time as a numpy array (a one-shot command that asks for
no vector does not pay it). The file is read, never mapped: mapped, its pages counted in
the process's memory (145 MB more at a cold recall of 100,000 memories). It is written
again without its dead records (``compact``) when they outweigh the live ones.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Collection, Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from graphmem.errors import StoreError

MAGIC = b"GMVEC2\n"
_HEADER = struct.Struct("<II")  # the dimension, the id width in bytes; after MAGIC
HEADER_SIZE = len(MAGIC) + _HEADER.size
ID_WIDTH = 24  # bytes: a `mem_` id is 20
CHUNK_RECORDS = 1_024  # records read at a time (1.6 MB of 384-dimension vectors)
FEW_VECTORS = 256  # ``matrix`` reads up to this many one by one, more in one pass


class VectorLog:
    """The vectors in the file at ``path`` (created for ``dimension`` when missing)."""

    def __init__(self, path: Path, dimension: int) -> None:
        self.path = path
        self._index: dict[bytes, int] | None = None  # id -> its record's number; None: not read
        self._dead = 0  # records no longer read: replaced or removed vectors, removals
        try:
            if not path.exists() or path.stat().st_size < HEADER_SIZE:
                self.create(path, dimension)
            with open(path, "rb") as head:
                start = head.read(HEADER_SIZE)
            if not start.startswith(MAGIC):
                raise StoreError(
                    f"{path} is not a graphmem vectors file. Move it away: the memories are embedded again."
                )
            dimension, width = _HEADER.unpack_from(start, len(MAGIC))
            self.dimension, self.width = int(dimension), int(width)
            self._file = open(path, "a+b")  # noqa: SIM115
        except OSError as exc:
            raise StoreError(f"Cannot open the vectors at {path}: {exc.strerror or exc}.") from exc

    @property
    def _record(self) -> int:
        return self.width + self.dimension * 4

    @property
    def _at(self) -> dict[bytes, int]:
        if self._index is None:
            self._index = self._read()
        return self._index

    # -- reads ------------------------------------------------------------------------

    def __contains__(self, memory_id: object) -> bool:
        return isinstance(memory_id, str) and memory_id.encode("utf-8") in self._at

    def __len__(self) -> int:
        return len(self._at)

    def ids(self) -> Iterator[str]:
        return (key.decode("utf-8") for key in self._at)

    def get(self, memory_id: str) -> npt.NDArray[np.float32] | None:
        number = self._at.get(memory_id.encode("utf-8"))
        if number is None:
            return None
        offset = HEADER_SIZE + number * self._record + self.width
        data = os.pread(self._file.fileno(), self.dimension * 4, offset)
        return np.frombuffer(data, "<f4").astype(np.float32)

    def matrix(self, ids: Sequence[str]) -> npt.NDArray[np.float32]:
        """The vectors of ``ids`` (each must have one), a row each."""
        out = np.empty((len(ids), self.dimension), np.float32)
        if len(ids) <= FEW_VECTORS:
            for row, memory_id in enumerate(ids):
                vector = self.get(memory_id)
                if vector is None:
                    raise KeyError(memory_id)
                out[row] = vector
            return out
        at = self._at
        numbers = np.fromiter((at[memory_id.encode("utf-8")] for memory_id in ids), np.int64, len(ids))
        order = np.argsort(numbers, kind="stable")
        wanted = numbers[order]
        for first, rows in self._chunks():
            lo, hi = np.searchsorted(wanted, [first, first + len(rows)])
            out[order[lo:hi]] = rows["vector"][wanted[lo:hi] - first]
        return out

    # -- writes -----------------------------------------------------------------------

    def put(self, ids: Sequence[str], vectors: npt.ArrayLike) -> None:
        matrix = np.asarray(vectors, np.float32).reshape(len(ids), -1)
        if not len(ids):
            return
        if not np.isfinite(matrix).all():
            raise StoreError("A vector with NaN or infinite values: the model's output is broken.")
        index = self._at  # read first: reading may cut a torn record off the end
        if matrix.shape[1] != self.dimension:
            if index:
                raise StoreError(
                    f"A vector of {matrix.shape[1]} dimensions, where the store holds vectors of "
                    f"{self.dimension}: run `graphmem reindex` after changing the model."
                )
            self.clear(matrix.shape[1])
        keys = [memory_id.encode("utf-8") for memory_id in ids]
        if max(len(key) for key in keys) > self.width:
            self._rewrite(max(len(key) for key in keys))
        self._append(keys, matrix)

    def remove(self, ids: Iterable[str]) -> None:
        keys = [memory_id.encode("utf-8") for memory_id in dict.fromkeys(ids)]
        gone = [key for key in keys if key in self._at]
        if gone:
            self._append(gone, np.full((len(gone), self.dimension), np.nan, np.float32))

    def clear(self, dimension: int) -> None:
        """Forget every vector; vectors of ``dimension`` come next."""
        self._file.close()
        self.create(self.path, dimension)
        self._index, self._dead, self.dimension, self.width = {}, 0, dimension, ID_WIDTH
        self._file = open(self.path, "a+b")  # noqa: SIM115

    def compact(self, live: Collection[str]) -> None:
        """Forget the vectors of memories not in ``live`` (the store's), and write the file
        again without its dead records when they outweigh the kept ones."""
        self.remove([memory_id for memory_id in self.ids() if memory_id not in live])
        if self._dead > len(self._at):
            self._rewrite(self.width)

    def close(self) -> None:
        self._file.close()

    # -- the file ---------------------------------------------------------------------

    def _append(self, keys: Sequence[bytes], matrix: npt.NDArray[np.float32]) -> None:
        index = self._at  # read before the write, which it must not hold
        number = len(index) + self._dead  # the first new record's
        try:
            self._file.write(self._records(keys, matrix, self.width))
            self._file.flush()  # in the OS's hands: survives the process being killed
        except OSError as exc:
            raise StoreError(f"Cannot write the vectors at {self.path}: {exc.strerror or exc}.") from exc
        for i, key in enumerate(keys):
            if index.pop(key, None) is not None:
                self._dead += 1
            if np.isnan(matrix[i, 0]):
                self._dead += 1
            else:
                index[key] = number + i

    def _dtype(self, width: int | None = None) -> np.dtype[np.void]:
        return np.dtype([("id", f"S{width or self.width}"), ("vector", "<f4", (self.dimension,))])

    def _records(self, keys: Sequence[bytes], matrix: npt.NDArray[np.float32], width: int) -> bytes:
        rows = np.zeros(len(keys), self._dtype(width))
        rows["id"] = keys
        rows["vector"] = matrix
        return rows.tobytes()

    def _chunks(self) -> Iterator[tuple[int, npt.NDArray[np.void]]]:
        """The records, ``CHUNK_RECORDS`` at a time, each chunk with its first record's number."""
        dtype = self._dtype()
        with open(self.path, "rb") as records:
            records.seek(HEADER_SIZE)
            first = 0
            while count := len(data := records.read(CHUNK_RECORDS * dtype.itemsize)) // dtype.itemsize:
                yield first, np.frombuffer(data, dtype, count)
                first += count

    def _read(self) -> dict[bytes, int]:
        """The file's index of records, a torn last one cut off."""
        try:
            size = self.path.stat().st_size
            whole = HEADER_SIZE + (size - HEADER_SIZE) // self._record * self._record
            if whole != size:  # a record torn by a kill: cut off
                self._file.flush()
                os.truncate(self.path, whole)
            keys: list[bytes] = []
            gone: list[int] = []
            for first, rows in self._chunks():
                keys += rows["id"].tolist()  # zero bytes stripped, as ``_append`` got them
                gone += (first + np.flatnonzero(np.isnan(rows["vector"][:, 0]))).tolist()
        except OSError as exc:
            raise StoreError(f"Cannot read the vectors at {self.path}: {exc.strerror or exc}.") from exc
        index = dict(zip(keys, range(len(keys)), strict=True))  # an id's last record wins
        if gone:
            removals = set(gone)
            index = {key: number for key, number in index.items() if number not in removals}
        self._dead = len(keys) - len(index)
        return index

    def _rewrite(self, width: int) -> None:
        """The live vectors alone, in a file ``width`` bytes wide for ids: written whole under
        another name, then put in place of this one (a kill meanwhile leaves the old file)."""
        keys = list(self._at)
        matrix = self.matrix([key.decode("utf-8") for key in keys])
        self._file.close()
        self._replace(self.path, self.dimension, width, self._records(keys, matrix, width))
        self._index, self._dead, self.width = {key: number for number, key in enumerate(keys)}, 0, width
        self._file = open(self.path, "a+b")  # noqa: SIM115

    @classmethod
    def create(cls, path: Path, dimension: int) -> None:
        """Make ``path`` an empty vector log (replacing what is there)."""
        cls._replace(path, dimension, ID_WIDTH, b"")

    @staticmethod
    def _replace(path: Path, dimension: int, width: int, records: bytes) -> None:
        fresh = path.with_name(f"{path.name}.new")
        with open(fresh, "wb") as out:
            out.write(MAGIC + _HEADER.pack(dimension, width) + records)
            out.flush()
            os.fsync(out.fileno())
        os.replace(fresh, path)
