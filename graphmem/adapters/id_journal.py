"""A journal of memory ids: what a derived index must read again from the store.

A derived index (the full-text index, the saved vector index) notes the ids the store is
about to change, one a line, appended and flushed to the OS *before* the store's write,
so that a change the store acknowledged survives the process being killed. When the
index holds a change it keeps only the ids still owed (``keep``: a new file renamed over
the old one); at open, the ids still in the journal are read again from the store.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path


class IdJournal:
    """The journal file at ``path``, open for appending. Not thread-safe: its owner locks."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115

    def append(self, ids: Iterable[str]) -> None:
        self._file.write("".join(f"{memory_id}\n" for memory_id in ids))
        self._file.flush()  # in the OS's hands: survives the process being killed

    def read(self) -> list[str]:
        """The ids in the journal, each once, in the order first noted."""
        try:
            lines = self.path.read_text("utf-8").split()
        except OSError:
            return []
        return list(dict.fromkeys(lines))

    def keep(self, ids: Iterable[str]) -> None:
        """Keep only ``ids`` in the journal (a new file, renamed over the old one)."""
        fresh = self.path.with_suffix(".new")
        fresh.write_text("".join(f"{memory_id}\n" for memory_id in dict.fromkeys(ids)), "utf-8")
        self._file.close()
        os.replace(fresh, self.path)
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115

    def close(self) -> None:
        self._file.close()
