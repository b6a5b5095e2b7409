"""Memory ids to numbers (a row, a record), compact: a million ids in 32 MB, not 130.

A Python dict of a million ids to numbers took about 130 MB and a second and a half to
build; the vector index and the vector file each kept one. Here the ids are a sorted numpy
array of fixed-width bytes beside their numbers (the *base*, found by binary search), and
the changes since it was made a small dict (the *delta*: an id's new number, or None when
it is gone), merged into the base when it grows past a share of it. The base's two arrays
are what a save keeps and a restore reads back as they are (``arrays``, ``from_sorted``):
sorting a million ids again took seconds.

The vector index's rows and the vector file's records are of the same ids: a large base's
ids are shared with a map that holds the same ones already (``SHARED_FROM``), not kept twice
(19 MB of a serving process at a million memories). A base is never changed in place (a merge
makes a new one), so sharing it is safe.

Ids are UTF-8 without NUL bytes (numpy's fixed-width bytes drop trailing zeros), as memory
ids are. Its owner locks its writes; a read beside a write sees the map before or after it
(the base's two arrays are swapped as one).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["IdMap"]

# The delta is merged into the base past this many ids, or this share of the base.
MERGE_MIN = 4_096
MERGE_SHARE = 0.125
# Bases of this many ids or more are shared with a map that holds the same ids (see the module doc);
# comparing them costs a few milliseconds at a million, once per map made.
SHARED_FROM = 65_536

Keys = npt.NDArray[np.bytes_]
Numbers = npt.NDArray[np.int64]


class IdMap:
    """A mapping of ids (str) to non-negative numbers (see the module doc)."""

    def __init__(self) -> None:
        self._base: tuple[Keys, Numbers] = (np.zeros(0, "S1"), np.zeros(0, np.int64))
        self._delta: dict[bytes, int | None] = {}
        self._size = 0

    # -- building ---------------------------------------------------------------------

    @classmethod
    def from_sorted(cls, keys: Keys, numbers: Numbers) -> IdMap:
        """The map of ``keys`` (sorted, distinct) to ``numbers``, the arrays kept as they are."""
        if len(keys) != len(numbers):
            raise ValueError("the ids and their numbers disagree")
        made = cls()
        made._base, made._size = (_SHARED.same(keys), numbers), len(keys)
        return made

    @classmethod
    def from_arrays(cls, keys: Keys, numbers: Numbers) -> IdMap:
        """The map of ``keys`` to ``numbers``; of an id given twice, the last one wins."""
        last = len(keys) - 1 - np.unique(keys[::-1], return_index=True)[1]  # sorted by key
        return cls.from_sorted(keys[last], np.asarray(numbers, np.int64)[last])

    @classmethod
    def of(cls, ids: Sequence[str]) -> IdMap:
        """Each of ``ids`` to its position (the last one of an id given twice)."""
        return cls.from_arrays(encoded(ids), np.arange(len(ids), dtype=np.int64))

    def arrays(self) -> tuple[Keys, Numbers]:
        """The base with the delta merged in: sorted ids and their numbers (not to be changed)."""
        self._merge()
        return self._base

    # -- reads ------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._size

    def __contains__(self, memory_id: object) -> bool:
        return isinstance(memory_id, str) and self.get(memory_id) is not None

    def get(self, memory_id: str) -> int | None:
        key = memory_id.encode("utf-8")
        delta = self._delta  # before the base: a merge swaps the base first
        if key in delta:
            return delta[key]
        return self._in_base(key)

    def get_many(self, ids: Sequence[str]) -> Numbers:
        """The number of each of ``ids``, -1 for those not in the map."""
        keys = encoded(ids)
        found = np.full(len(keys), -1, np.int64)
        delta = self._delta  # before the base: a merge swaps the base first
        base_keys, numbers = self._base
        if len(base_keys) and len(keys):
            at = self._base_positions(base_keys, keys)
            found[at >= 0] = numbers[at[at >= 0]]
        if delta:
            for i, key in enumerate(keys.tolist()):
                if key in delta:
                    number = delta[key]
                    found[i] = -1 if number is None else number
        return found

    def keys(self) -> Iterator[str]:
        """The ids, in no particular order."""
        delta = self._delta  # before the base: a merge swaps the base first
        for key in self._base[0].tolist():
            if key not in delta:
                yield key.decode("utf-8")
        for key, number in list(delta.items()):
            if number is not None:
                yield key.decode("utf-8")

    def numbers(self) -> Numbers:
        """Every id's number, in no particular order."""
        _, numbers = self.arrays()
        return numbers

    @staticmethod
    def _base_positions(base: Keys, keys: Keys) -> Numbers:
        """Where each of ``keys`` is in the base, -1 where it is not. Asked in the base's own
        width: numpy compares arrays of two widths by converting the whole base first (86 ms
        for a million ids, where the search takes 20 µs)."""
        fits = keys.dtype.itemsize <= base.dtype.itemsize or np.char.str_len(keys) <= base.dtype.itemsize
        asked = keys.astype(base.dtype)  # a longer key cut to the width: not found, see ``fits``
        at = np.minimum(np.searchsorted(base, asked), len(base) - 1)
        return np.where(fits & (base[at] == asked), at, -1)

    def _in_base(self, key: bytes) -> int | None:
        keys, numbers = self._base
        if not len(keys) or len(key) > keys.dtype.itemsize:
            return None
        at = int(np.searchsorted(keys, key))
        if at < len(keys) and keys[at] == key:
            return int(numbers[at])
        return None

    # -- writes -----------------------------------------------------------------------

    def set(self, memory_id: str, number: int) -> None:
        key = memory_id.encode("utf-8")
        if self._current(key) is None:
            self._size += 1
        self._delta[key] = number
        self._merge_when_due()

    def pop(self, memory_id: str) -> int | None:
        """Remove ``memory_id``; its number, None when it was not in the map."""
        key = memory_id.encode("utf-8")
        number = self._current(key)
        if number is not None:
            self._size -= 1
            if self._in_base(key) is None:
                del self._delta[key]
            else:
                self._delta[key] = None
        return number

    def update(self, pairs: Iterable[tuple[str, int]]) -> None:
        for memory_id, number in pairs:
            self.set(memory_id, number)

    def _current(self, key: bytes) -> int | None:
        return self._delta[key] if key in self._delta else self._in_base(key)

    def _merge_when_due(self) -> None:
        if len(self._delta) > max(MERGE_MIN, MERGE_SHARE * len(self._base[0])):
            self._merge()

    def _merge(self) -> None:
        """The delta into the base: the base's ids it changed or removed dropped, its new
        numbers inserted in order."""
        if not self._delta:
            return
        changed = encoded_bytes(list(self._delta))
        old_keys, old_numbers = self._base
        keep = np.ones(len(old_keys), np.bool_)
        if len(old_keys):
            at = self._base_positions(old_keys, changed)
            keep[at[at >= 0]] = False
        added = [(key, number) for key, number in self._delta.items() if number is not None]
        added.sort()
        new_keys = encoded_bytes([key for key, _ in added])
        width = max(old_keys.dtype.itemsize, new_keys.dtype.itemsize)
        base_keys = old_keys[keep].astype(f"S{width}")
        base_numbers = old_numbers[keep]
        where = np.searchsorted(base_keys, new_keys.astype(f"S{width}"))
        self._base = (
            np.insert(base_keys, where, new_keys.astype(f"S{width}")),
            np.insert(base_numbers, where, np.array([n for _, n in added], np.int64)),
        )
        self._delta = {}


class _SharedKeys:
    """The large bases' ids in use (weakly held), for a new map of the same ids to share them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: list[weakref.ref[Keys]] = []

    def same(self, keys: Keys) -> Keys:
        """An array in use equal to ``keys`` if there is one, else ``keys`` (kept for the next)."""
        if len(keys) < SHARED_FROM:
            return keys
        with self._lock:
            self._held = [ref for ref in self._held if ref() is not None]
            for ref in self._held:
                held = ref()
                if held is not None and held.dtype == keys.dtype and np.array_equal(held, keys):
                    return held
            self._held.append(weakref.ref(keys))
            return keys


_SHARED = _SharedKeys()


def encoded(ids: Sequence[str]) -> Keys:
    """``ids`` as an array of fixed-width UTF-8 bytes."""
    return encoded_bytes([memory_id.encode("utf-8") for memory_id in ids])


def encoded_bytes(keys: Sequence[bytes]) -> Keys:
    width = max((len(key) for key in keys), default=1) or 1
    return np.array(keys, f"S{width}")
