"""The full-text index on its own, for its tests: a store of record reduced to what the index
reads back (``Records``), and a new empty index in a directory (``empty_index``)."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from graphmem.adapters.lexical_index import DIRNAME, LexicalIndex
from graphmem.core.models import MemoryRecord


class Records:
    """A store of record reduced to what the index reads back."""

    def __init__(self) -> None:
        self.records: dict[str, MemoryRecord] = {}

    def get_memories(self, ids: Collection[str]) -> dict[str, MemoryRecord]:
        return {i: self.records[i] for i in ids if i in self.records}


def empty_index(directory: Path) -> LexicalIndex:
    """A new index in ``directory`` with nothing in it yet; the caller closes it."""
    index = LexicalIndex(directory / DIRNAME, Records())  # type: ignore[arg-type]
    index.rebuild([], token="t")
    return index
