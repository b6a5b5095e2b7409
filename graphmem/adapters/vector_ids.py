"""Which memory each row of the vector index is, and each live memory's row.

The vector index (``adapters/vector_index.py``) numbers its rows in the order vectors arrive
and never renumbers them: a row whose memory is deleted, or whose text changed (its new vector
gets a new row), is dead. This owns the ids both ways, as numpy arrays, not Python strings:
per row its memory id's UTF-8 bytes, and the live ids' rows an ``IdMap`` (a million ids took
110 MB as a list and a dict, 48 MB so). The index owns the rows' vectors;
``row_visibility.py`` what each row is visible as. The caller holds the index's lock around
every call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from graphmem.adapters.id_map import IdMap, encoded
from graphmem.adapters.row_visibility import grown

__all__ = ["RowIds"]


class RowIds:
    """Per row its memory id; per live memory id its row."""

    def __init__(self) -> None:
        self._keys: npt.NDArray[np.bytes_] = np.zeros(0, "S1")  # each row's memory id, UTF-8
        self._row = IdMap()  # live memory id -> row

    def __len__(self) -> int:
        return len(self._row)

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._row

    # -- reads ------------------------------------------------------------------

    def row(self, memory_id: str) -> int | None:
        """The live row of ``memory_id`` (None: it has none)."""
        return self._row.get(memory_id)

    def rows(self, ids: Sequence[str]) -> npt.NDArray[np.int64]:
        """The live row of each of ``ids``, -1 for those without one."""
        return self._row.get_many(ids)

    def live(self) -> npt.NDArray[np.int64]:
        """Every live row, in no particular order."""
        return self._row.numbers()

    def id(self, row: int) -> str:
        return bytes(self._keys[row]).decode("utf-8")

    def ids(self, rows: Sequence[int] | npt.NDArray[np.int64]) -> list[str]:
        """The memory ids of ``rows``, read at once (a row at a time took 0.2 ms a search)."""
        return [key.decode("utf-8") for key in self._keys[np.asarray(rows, np.int64)].tolist()]

    # -- writes -----------------------------------------------------------------

    def grow(self, capacity: int, width: int = 1) -> None:
        """Room for ``capacity`` rows, and for ids of ``width`` bytes."""
        if width > self._keys.dtype.itemsize:
            self._keys = self._keys.astype(f"S{width}")
        if capacity > len(self._keys):
            self._keys = grown(self._keys, capacity, b"")

    def load(self, ids: Sequence[str]) -> None:
        """``ids`` as rows 0 to ``len(ids) - 1``, every one live (room for them made first)."""
        keys = encoded(ids)
        self.grow(len(keys), keys.dtype.itemsize)
        self._keys[: len(keys)] = keys
        self._row = IdMap.of(ids)

    def set(self, memory_id: str, row: int) -> None:
        """``row`` is ``memory_id``'s, its live one (room for it made first)."""
        self._keys[row] = memory_id.encode("utf-8")
        self._row.set(memory_id, row)

    def pop(self, memory_id: str) -> int | None:
        """``memory_id`` has no live row any more; the row it had (None: it had none)."""
        return self._row.pop(memory_id)

    # -- saving and restoring (adapters/vector_files.py) -----------------------------

    def state(self, rows: int) -> dict[str, Any]:
        """The ids of the first ``rows`` rows, and the live ids' rows sorted by id."""
        row_keys, row_numbers = self._row.arrays()
        return {"ids": self._keys[:rows].copy(), "row_keys": row_keys, "row_numbers": row_numbers}

    def restore(self, state: dict[str, Any]) -> None:
        """Take ``state`` (as ``state`` gave it); the rows it names, room made for them first."""
        keys = state["ids"]
        self.grow(len(keys), keys.dtype.itemsize)
        self._keys[: len(keys)] = keys
        self._row = IdMap.from_sorted(state["row_keys"], state["row_numbers"])
