"""The write path the service's tests share: a MemoryWriter over a real Kùzu store in tmp_path,
with a ``Bookkeeping`` semantic index and the clock at ``T0``, and the Rememberer over it. A
test module that needs another defines its own fixture of the same name."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
from support.stores import new_kuzu

from graphmem.adapters.kuzu_store import KuzuGraphStore
from graphmem.service.mentions import Mentions
from graphmem.service.remember import Rememberer
from graphmem.service.semantic import SemanticIndex
from graphmem.service.writer import MemoryWriter
from tests.support.bookkeeping import T0, Bookkeeping


@pytest.fixture
def store(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[KuzuGraphStore]:
    kuzu = new_kuzu(tmp_path / "data", request, 8)
    yield kuzu
    kuzu.close()


@pytest.fixture
def index() -> Bookkeeping:
    return Bookkeeping()


@pytest.fixture
def writer(store: KuzuGraphStore, index: Bookkeeping) -> MemoryWriter:
    return MemoryWriter(
        store, cast(SemanticIndex, index), Mentions(None, lambda project: None), clock=lambda: T0
    )


@pytest.fixture
def rememberer(writer: MemoryWriter) -> Rememberer:
    return Rememberer(writer)  # how a test writes the memory it changes
