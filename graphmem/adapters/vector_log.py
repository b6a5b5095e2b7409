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

Only where each vector starts stays in memory (``id_map.IdMap``: a million ids in 32 MB),
read at the first use (a one-shot command that asks for no vector does not pay it): from
the snapshot of it the last process wrote at close (``<file>.ids``, the records it covers
and a copy of the last of them, to know the file still starts with them), then the records
appended since; without a usable snapshot, from one pass over the file, a chunk of records
at a time. Reading a million records took seconds at each cold start; the snapshot, 30 ms.
The file is read, not kept mapped: mapped, its pages counted in the process's memory (145 MB
more at a cold recall of 100,000 memories). An exact scan of many records (``LogRows.scores``,
the vector index's before its first build) maps a few thousand at a time and lets them go.
It is written again without its dead records (``compact``) when they outweigh the live ones.
"""

from __future__ import annotations

import mmap
import os
import struct
import weakref
import zipfile
from collections.abc import Collection, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from graphmem.adapters.id_map import IdMap
from graphmem.errors import StoreError

MAGIC = b"GMVEC2\n"
_HEADER = struct.Struct("<II")  # the dimension, the id width in bytes; after MAGIC
HEADER_SIZE = len(MAGIC) + _HEADER.size
ID_WIDTH = 24  # bytes: a `mem_` id is 20
CHUNK_RECORDS = 1_024  # records read at a time (1.6 MB of 384-dimension vectors)
FEW_VECTORS = 256  # ``matrix`` reads up to this many one by one, more in one pass
SNAPSHOT_SUFFIX = ".ids"  # the snapshot of the index of records, beside the file
# Records an exact scan (``LogRows.scores``) maps at a time (6.4 MB of 384-dimension vectors).
SCAN_RECORDS = 4_096


class VectorLog:
    """The vectors in the file at ``path`` (created for ``dimension`` when missing)."""

    def __init__(self, path: Path, dimension: int) -> None:
        self.path = path
        self._index: IdMap | None = None  # id -> its record's number; None: not read
        self._records = 0  # records in the file, dead ones included
        self._snapshot_stale = False  # the index differs from the snapshot's
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
    def _at(self) -> IdMap:
        if self._index is None:
            self._index = self._read()
        return self._index

    @property
    def _dead(self) -> int:
        """Records no longer read: replaced or removed vectors, removals."""
        return self._records - len(self._at)

    # -- reads ------------------------------------------------------------------------

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._at

    def __len__(self) -> int:
        return len(self._at)

    def ids(self) -> Iterator[str]:
        return self._at.keys()

    def holding(self, ids: Sequence[str]) -> npt.NDArray[np.bool_]:
        """Which of ``ids`` have a vector, asked at once (a page of the store's memory ids)."""
        return self._at.get_many(ids) >= 0 if len(ids) else np.zeros(0, np.bool_)

    def get(self, memory_id: str) -> npt.NDArray[np.float32] | None:
        number = self._at.get(memory_id)
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
        numbers = self._at.get_many(ids)
        if (numbers < 0).any():
            raise KeyError(ids[int(np.argmax(numbers < 0))])
        self._read_into(out, numbers)
        return out

    def rows(self, ids: Sequence[str]) -> LogRows:
        """The vectors of ``ids`` (each must have one) as they are now, read from the file when
        asked (``LogRows``), not into memory: the vector index's loaded rows."""
        numbers = self._at.get_many(ids) if len(ids) else np.zeros(0, np.int64)
        if (numbers < 0).any():
            raise KeyError(ids[int(np.argmax(numbers < 0))])
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError as exc:
            raise StoreError(f"Cannot read the vectors at {self.path}: {exc.strerror or exc}.") from exc
        return LogRows(fd, numbers, self._dtype())

    def gather(self, ids: Sequence[str]) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.bool_]]:
        """The vectors of ``ids``, a row each (zeros where an id has none), and which have one:
        each read by a ``preadv`` straight into its row, in the file's order. 150 scattered
        records of a million: 0.08 ms, against 0.24 ms reading each into bytes and copying
        it (a ``pread`` each) and 0.8-1.4 ms copying them out of a map of the file (its
        faults, then unmapped again). Safe beside appends (records are only added after those
        read); a file written again meanwhile (``compact``, ``clear``) gives none found."""
        numbers = self._at.get_many(ids) if len(ids) else np.zeros(0, np.int64)
        found = (numbers >= 0) & (numbers < self._records)
        out = np.zeros((len(ids), self.dimension), "<f4")  # as the records hold them
        size = self.dimension * 4
        rows = out.reshape(-1).view(np.uint8).data
        read = os.preadv
        try:
            fd = self._file.fileno()
            wanted = np.flatnonzero(found)[np.argsort(numbers[found], kind="stable")]
            offsets = HEADER_SIZE + numbers[wanted] * self._record + self.width
            for i, offset in zip(wanted.tolist(), offsets.tolist(), strict=True):
                if read(fd, [rows[i * size : (i + 1) * size]], offset) != size:
                    raise ValueError("a record cut short")
        except (OSError, ValueError):  # the file was closed or replaced under the read
            return np.zeros((len(ids), self.dimension), np.float32), np.zeros(len(ids), np.bool_)
        return out.astype(np.float32, copy=False), found

    def _read_into(self, out: npt.NDArray[np.float32], numbers: npt.NDArray[np.int64]) -> None:
        """The vectors of the records ``numbers`` into the rows of ``out``, in one pass."""
        order = np.argsort(numbers, kind="stable")
        wanted = numbers[order]
        for first, rows in self._chunks():
            lo, hi = np.searchsorted(wanted, [first, first + len(rows)])
            out[order[lo:hi]] = rows["vector"][wanted[lo:hi] - first]

    # -- writes -----------------------------------------------------------------------

    def put(self, ids: Sequence[str], vectors: npt.ArrayLike) -> None:
        matrix = np.asarray(vectors, np.float32).reshape(len(ids), -1)
        if not len(ids):
            return
        if not np.isfinite(matrix).all():
            raise StoreError("A vector with NaN or infinite values: the model's output is broken.")
        index = self._at  # read first: reading may cut a torn record off the end
        if matrix.shape[1] != self.dimension:
            if len(index):
                raise StoreError(
                    f"A vector of {matrix.shape[1]} dimensions, where the store holds vectors of "
                    f"{self.dimension}: run `graphmem reindex` after changing the model."
                )
            self.clear(matrix.shape[1])
        widest = max(len(memory_id.encode("utf-8")) for memory_id in ids)
        if widest > self.width:
            self._rewrite(widest)
        self._append(ids, matrix)

    def remove(self, ids: Iterable[str]) -> None:
        gone = [memory_id for memory_id in dict.fromkeys(ids) if memory_id in self._at]
        if gone:
            self._append(gone, np.full((len(gone), self.dimension), np.nan, np.float32))

    def clear(self, dimension: int) -> None:
        """Forget every vector; vectors of ``dimension`` come next."""
        self._file.close()
        self.create(self.path, dimension)
        self._index, self._records, self.dimension, self.width = IdMap(), 0, dimension, ID_WIDTH
        self._snapshot_stale = False
        self._file = open(self.path, "a+b")  # noqa: SIM115

    def compact(self, live: Collection[str]) -> None:
        """Forget the vectors of memories not in ``live`` (the store's), and write the file
        again without its dead records when they outweigh the kept ones."""
        self.remove([memory_id for memory_id in self.ids() if memory_id not in live])
        if self._dead > len(self._at):
            self._rewrite(self.width)

    def close(self) -> None:
        """Close the file, and keep a snapshot of the index of records for the next open."""
        self._file.close()
        if self._index is not None and self._snapshot_stale:
            self._write_snapshot(self._index)

    # -- the file ---------------------------------------------------------------------

    def _append(self, ids: Sequence[str], matrix: npt.NDArray[np.float32]) -> None:
        index = self._at  # read before the write, which it must not hold
        number = self._records  # the first new record's
        keys = [memory_id.encode("utf-8") for memory_id in ids]
        try:
            self._file.write(self._records_of(keys, matrix, self.width))
            self._file.flush()  # in the OS's hands: survives the process being killed
        except OSError as exc:
            raise StoreError(f"Cannot write the vectors at {self.path}: {exc.strerror or exc}.") from exc
        self._records += len(ids)
        self._snapshot_stale = True
        for i, memory_id in enumerate(ids):
            if np.isnan(matrix[i, 0]):
                index.pop(memory_id)
            else:
                index.set(memory_id, number + i)

    def _dtype(self, width: int | None = None) -> np.dtype[np.void]:
        return np.dtype([("id", f"S{width or self.width}"), ("vector", "<f4", (self.dimension,))])

    def _records_of(self, keys: Sequence[bytes], matrix: npt.NDArray[np.float32], width: int) -> bytes:
        rows = np.zeros(len(keys), self._dtype(width))
        rows["id"] = keys
        rows["vector"] = matrix
        return rows.tobytes()

    def _chunks(self, start: int = 0) -> Iterator[tuple[int, npt.NDArray[np.void]]]:
        """The records from number ``start``, ``CHUNK_RECORDS`` at a time, each chunk with its
        first record's number."""
        dtype = self._dtype()
        with open(self.path, "rb") as records:
            records.seek(HEADER_SIZE + start * dtype.itemsize)
            first = start
            while count := len(data := records.read(CHUNK_RECORDS * dtype.itemsize)) // dtype.itemsize:
                yield first, np.frombuffer(data, dtype, count)
                first += count

    def _read(self) -> IdMap:
        """The file's index of records, a torn last one cut off: from the snapshot and the
        records after it, or from every record."""
        try:
            size = self.path.stat().st_size
            records = (size - HEADER_SIZE) // self._record
            whole = HEADER_SIZE + records * self._record
            if whole != size:  # a record torn by a kill: cut off
                self._file.flush()
                os.truncate(self.path, whole)
            snapshot = self._read_snapshot(records)
            start = 0 if snapshot is None else snapshot[1]
            keys, gone = [], []
            for first, rows in self._chunks(start):
                keys.append(rows["id"])
                gone.append(first + np.flatnonzero(np.isnan(rows["vector"][:, 0])))
        except OSError as exc:
            raise StoreError(f"Cannot read the vectors at {self.path}: {exc.strerror or exc}.") from exc
        self._records = records
        read = _last_records(keys, gone, start)  # an id's last record wins
        if snapshot is None:
            self._snapshot_stale = True
            kept = read[1] >= 0
            return IdMap.from_sorted(read[0][kept], read[1][kept])
        index = snapshot[0]
        self._snapshot_stale = start < records
        for key, number in zip(read[0].tolist(), read[1].tolist(), strict=True):
            if number < 0:
                index.pop(key.decode("utf-8"))
            else:
                index.set(key.decode("utf-8"), number)
        return index

    def _rewrite(self, width: int) -> None:
        """The live vectors alone, in a file ``width`` bytes wide for ids: written whole under
        another name, then put in place of this one (a kill meanwhile leaves the old file)."""
        keys, numbers = self._at.arrays()
        matrix = np.empty((len(keys), self.dimension), np.float32)
        self._read_into(matrix, numbers)
        self._file.close()
        self._snapshot_path.unlink(missing_ok=True)
        self._replace(self.path, self.dimension, width, self._records_of(keys.tolist(), matrix, width))
        self._index = IdMap.from_sorted(keys, np.arange(len(keys), dtype=np.int64))
        self._records, self.width, self._snapshot_stale = len(keys), width, True
        self._file = open(self.path, "a+b")  # noqa: SIM115

    # -- the snapshot of the index ------------------------------------------------------

    @property
    def _snapshot_path(self) -> Path:
        return self.path.with_name(self.path.name + SNAPSHOT_SUFFIX)

    def _last_record(self, records: int) -> bytes:
        """The bytes of the record ``records - 1`` (none: empty)."""
        if records <= 0:
            return b""
        with open(self.path, "rb") as file:
            return os.pread(file.fileno(), self._record, HEADER_SIZE + (records - 1) * self._record)

    def _write_snapshot(self, index: IdMap) -> None:
        """Best effort: a snapshot that cannot be written is read again from the file."""
        keys, numbers = index.arrays()
        fresh = self._snapshot_path.with_name(self._snapshot_path.name + ".tmp")
        last = self._last_record(self._records)
        try:
            with open(fresh, "wb") as out:
                np.savez(
                    out,
                    keys=keys,
                    numbers=numbers,
                    covers=np.array([self._records, self.width, self.dimension], np.int64),
                    last=np.frombuffer(last, np.uint8),
                )
            os.replace(fresh, self._snapshot_path)
        except OSError:
            fresh.unlink(missing_ok=True)

    def _read_snapshot(self, records: int) -> tuple[IdMap, int] | None:
        """The snapshot's index and the records it covers, when the file still starts with them."""
        try:
            with open(self._snapshot_path, "rb") as handle, np.load(handle, allow_pickle=False) as saved:
                covers, width, dimension = (int(value) for value in saved["covers"])
                last = saved["last"].tobytes()
                keys, numbers = saved["keys"], saved["numbers"]
        except (OSError, ValueError, KeyError, zipfile.BadZipFile):
            return None
        same = (width, dimension) == (self.width, self.dimension) and covers <= records
        if not same or self._last_record(covers) != last or (numbers >= covers).any():
            return None
        return IdMap.from_sorted(keys, numbers), covers

    @classmethod
    def create(cls, path: Path, dimension: int) -> None:
        """Make ``path`` an empty vector log (replacing what is there)."""
        path.with_name(path.name + SNAPSHOT_SUFFIX).unlink(missing_ok=True)
        cls._replace(path, dimension, ID_WIDTH, b"")

    @staticmethod
    def _replace(path: Path, dimension: int, width: int, records: bytes) -> None:
        fresh = path.with_name(f"{path.name}.new")
        with open(fresh, "wb") as out:
            out.write(MAGIC + _HEADER.pack(dimension, width) + records)
            out.flush()
            os.fsync(out.fileno())
        os.replace(fresh, path)


class LogRows:
    """Records of a vector log read when asked (``VectorRows``): row ``i`` is record
    ``numbers[i]``. Read through a descriptor of its own, opened when the rows were taken:
    records are only appended after them, and a file written again (``compact``, ``clear``)
    is a new file, so the rows read stay those taken. Closed when the rows are dropped."""

    def __init__(self, fd: int, numbers: npt.NDArray[np.int64], dtype: np.dtype[np.void]) -> None:
        self._fd = fd
        self._numbers = numbers
        self._dtype = dtype
        field = dtype.fields["vector"] if dtype.fields else None
        assert field is not None
        self._dimension, self._offset = int(field[0].shape[0]), int(field[1])  # the vector's, in a record
        self.dtype = np.dtype(np.float32)
        weakref.finalize(self, os.close, fd)

    @property
    def shape(self) -> tuple[int, int]:
        return len(self._numbers), self._dimension

    def __len__(self) -> int:
        return len(self._numbers)

    def take(self, positions: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        """The vectors of rows ``positions``, in that order: in the file's order, a ``pread``
        of up to ``CHUNK_RECORDS`` records where the rows wanted fill an eighth of them or
        more (rows taken in order, or all of them), else a ``pread`` each."""
        numbers = self._numbers[np.asarray(positions, np.int64)]
        out = np.empty((len(numbers), self._dimension), np.float32)
        order = np.argsort(numbers, kind="stable")
        wanted = numbers[order]
        size = self._dtype.itemsize
        start = 0
        while start < len(wanted):
            first = int(wanted[start])
            stop = int(np.searchsorted(wanted, first + CHUNK_RECORDS))
            span = int(wanted[stop - 1]) - first + 1
            if (stop - start) * 8 >= span:
                data = os.pread(self._fd, span * size, HEADER_SIZE + first * size)
                block = np.frombuffer(data, self._dtype, span)
                out[order[start:stop]] = block["vector"][wanted[start:stop] - first]
            else:
                for i in range(start, stop):
                    offset = HEADER_SIZE + int(wanted[i]) * size + self._offset
                    out[order[i]] = np.frombuffer(os.pread(self._fd, self._dimension * 4, offset), "<f4")
            start = stop
        return out

    def scores(self, positions: npt.NDArray[np.int64], query: npt.ArrayLike) -> npt.NDArray[np.float32]:
        """The inner product of ``query`` with the rows at ``positions``, in that order: the
        records mapped up to ``SCAN_RECORDS`` at a time, in the file's order, and multiplied
        where they are mapped (a span whose wanted rows fill an eighth of it or more, whole; the
        wanted rows of another copied out first). ``einsum``, not ``@``: in the file the vectors
        are not 4-byte aligned, and numpy's matrix product then takes a loop of its own 4 times
        slower (or a copy first). Each span is mapped from this descriptor and let go before the
        next: what is read stays the records taken, and the process holds a span of the file's
        pages at a time, not the file."""
        numbers = self._numbers[np.asarray(positions, np.int64)]
        out = np.empty(len(numbers), np.float32)
        vector = np.asarray(query, np.float32)
        order = np.argsort(numbers, kind="stable")
        wanted = numbers[order]
        start = 0
        while start < len(wanted):
            first = int(wanted[start])
            stop = int(np.searchsorted(wanted, first + SCAN_RECORDS))
            out[order[start:stop]] = self._span_scores(first, wanted[start:stop] - first, vector)
            start = stop
        return out

    def _span_scores(
        self, first: int, picks: npt.NDArray[np.int64], query: npt.NDArray[np.float32]
    ) -> npt.NDArray[np.float32]:
        """``query``'s inner product with the records ``first + picks``, through a map of the
        records ``first`` to the last picked."""
        size = self._dtype.itemsize
        span = int(picks[-1]) + 1
        dense = len(picks) * 8 >= span
        begin = HEADER_SIZE + first * size
        base = begin - begin % mmap.ALLOCATIONGRANULARITY
        try:
            mapped = mmap.mmap(self._fd, begin + span * size - base, access=mmap.ACCESS_READ, offset=base)
        except OSError as exc:
            raise StoreError(f"Cannot map the vectors file to scan it: {exc.strerror or exc}.") from exc
        with mapped:
            vectors = np.frombuffer(mapped, self._dtype, span, begin - base)["vector"]
            sims: npt.NDArray[np.float32] = np.einsum("ij,j->i", vectors if dense else vectors[picks], query)
            del vectors  # no view of the map left: it can be closed
        return sims[picks] if dense else sims

    def __array__(self, dtype: Any = None, copy: Any = None) -> npt.NDArray[Any]:
        """Every row, read whole (``np.asarray``)."""
        every = self.take(np.arange(len(self._numbers)))
        return every if dtype is None else every.astype(dtype)


def _last_records(
    keys: list[npt.NDArray[np.bytes_]], gone: list[npt.NDArray[np.int64]], start: int
) -> tuple[npt.NDArray[np.bytes_], npt.NDArray[np.int64]]:
    """Each id's last record among the chunks' ``keys`` (numbered from ``start``), sorted by
    id; the number -1 when that record is a removal."""
    if not keys:
        return np.zeros(0, "S1"), np.zeros(0, np.int64)
    every = np.concatenate(keys)
    numbers = start + np.arange(len(every), dtype=np.int64)
    last = len(every) - 1 - np.unique(every[::-1], return_index=True)[1]
    found = numbers[last]
    found[np.isin(found, np.concatenate(gone))] = -1
    return every[last], found
