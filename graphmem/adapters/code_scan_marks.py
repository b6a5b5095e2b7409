"""How far a project's code scans got, as every code graph keeps it in its store's notes
(Kùzu, PostgreSQL and the fake alike): the commit scanned last, and whether a pass stopped
before its edges were stored (the next pass then redoes every file)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class Meta(Protocol):
    """A store's notes by key (``GraphStore.get_meta`` and ``set_meta``)."""

    def get_meta(self, key: str) -> str | None: ...
    def set_meta(self, key: str, value: str) -> None: ...


@dataclass(frozen=True, slots=True)
class ScanMarks:
    """One project's marks in ``meta``, the store the code graph writes."""

    meta: Meta
    project: str

    def head(self) -> str | None:
        """The commit the last pass scanned (None: none yet, or not a git checkout)."""
        return self.meta.get_meta(f"code_scan_head:{self.project}")

    def interrupted(self) -> bool:
        """True when the last pass stopped before its edges were stored: redo every file."""
        return self.meta.get_meta(f"code_scan_dirty:{self.project}") == "1"

    def started(self) -> None:
        """A pass is storing: until ``done`` the project reads as interrupted."""
        self.meta.set_meta(f"code_scan_dirty:{self.project}", "1")

    def done(self, head: str | None) -> None:
        """The pass's edges are in; it scanned ``head`` (None keeps the last one)."""
        if head is not None:
            self.meta.set_meta(f"code_scan_head:{self.project}", head)
        self.meta.set_meta(f"code_scan_dirty:{self.project}", "0")
