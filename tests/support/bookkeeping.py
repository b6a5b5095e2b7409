"""A stand-in for ``SemanticIndex`` that records what the writer tells it, for tests of the
write path (``tests/unit/service/test_writer.py``, ``test_remember.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from graphmem.core.models import Status

# The write path's clock in these tests, and a secret the writer must redact.
T0 = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
TOKEN = "glpat-" + "l9guXCYJmdQFTvffexLP"


class Bookkeeping:
    """Records what the writer tells the semantic index (stands in for SemanticIndex)."""

    loaded = True

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def added(self, ids: Sequence[str] = (), *, source: str | None = None) -> None:
        self.calls.append(("added",))

    def will_change(self, ids: Sequence[str]) -> None:
        self.calls.append(("will_change", *ids))

    def stored(self, ids: Sequence[str], vectors: object) -> None:
        self.calls.append(("stored", *ids))

    def status_changed(self, memory_id: str, status: Status) -> None:
        self.calls.append(("status_changed", memory_id, status.value))

    def text_changed(self, memory_id: str) -> None:
        self.calls.append(("text_changed", memory_id))

    def removed(self, memory_id: str) -> None:
        self.calls.append(("removed", memory_id))

    def reset(self) -> None:
        self.calls.append(("reset",))
