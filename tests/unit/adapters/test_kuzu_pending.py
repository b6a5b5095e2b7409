"""The Kùzu store's memories without a vector (``kuzu_vectors.PendingScan``): found a page of
node offsets at a time, only as far as an ask needs, oldest written first, and kept in step
with the writes, embeddings, deletions and rollbacks made while the scan is part way."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.records import NOW, memory
from support.stores import new_kuzu

from graphmem.adapters import kuzu_vectors
from graphmem.adapters.kuzu_store import KuzuGraphStore

DIM = 8
PAGE = 4


@pytest.fixture
def store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[KuzuGraphStore]:
    """A new, empty store (a copy of the process's template, ``support/stores.py``) that scans
    for pending memories a small page at a time."""
    monkeypatch.setattr(kuzu_vectors, "PENDING_PAGE", PAGE)
    monkeypatch.setattr(kuzu_vectors, "PENDING_PAGE_MOST", 2 * PAGE)
    opened = new_kuzu(tmp_path / "data", request, DIM)
    yield opened
    opened.close()


def rows_read(store: KuzuGraphStore, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of rows of each statement ``store`` reads from now on (one list, grown)."""
    counts: list[int] = []

    def counted(read: Callable[..., Any], size: Callable[[Any], int]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            result = read(*args, **kwargs)
            counts.append(size(result))
            return result

        return wrapper

    monkeypatch.setattr(store.db, "rows", counted(store.db.rows, len))
    monkeypatch.setattr(store.db, "keyed_rows", counted(store.db.keyed_rows, len))
    monkeypatch.setattr(store.db, "arrow", counted(store.db.arrow, lambda table: table.num_rows))
    return counts


def pending(store: KuzuGraphStore, limit: int = 1_000) -> list[str]:
    return [memory_id for memory_id, _ in store.pending_embeddings(limit)]


def test_the_first_memories_without_a_vector_are_found_in_a_page_not_among_every_memory(
    store: KuzuGraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.add_memories([memory(f"m{i:03}") for i in range(200)])
    counts = rows_read(store, monkeypatch)

    assert pending(store, 1) == ["m000"]
    assert max(counts) == PAGE and sum(counts) < PAGE + 5  # a page of ids; the extent, the record
    assert store.count_pending_embeddings() == 200


def test_a_scan_reads_on_past_embedded_memories_and_finds_the_newest(
    store: KuzuGraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.add_memories([memory(f"m{i:03}") for i in range(40)], np.ones((40, DIM), np.float32))
    store.add_memories([memory("new")])
    counts = rows_read(store, monkeypatch)

    assert pending(store, 8) == ["new"]
    assert sum(counts) <= 41 + 16  # every id once, a few statements more
    assert store.count_pending_embeddings() == 1


def test_changes_while_the_scan_is_part_way_are_neither_lost_nor_repeated(store: KuzuGraphStore) -> None:
    ids = [f"m{i:02}" for i in range(20)]
    store.add_memories([memory(i) for i in ids[:10]])
    store.add_memories([memory(i) for i in ids[10:15]], np.ones((5, DIM), np.float32))
    store.add_memories([memory(i) for i in ids[15:]])
    assert pending(store, 2) == ["m00", "m01"]  # the first page read only

    store.set_embeddings(["m05"], np.ones((1, DIM), np.float32))  # not read yet
    store.delete_memory("m06")  # not read yet
    store.delete_memory("m00")  # read
    store.add_memories([memory("n0")])
    store.replace_text("m07", text="new words", content_hash="h7", updated_at=NOW, entities=[])
    store.update_memory("m12", {"embedding": None})  # had a vector, not read yet
    store.add_memories([memory("n1")])
    store.delete_memory("n1")

    scanned = ["m01", "m02", "m03", "m04", "m08", "m09", "m15", "m16", "m17", "m18", "m19"]
    expected = [*scanned, "n0", "m07", "m12"]  # then those written since the scan began, in order
    assert pending(store) == expected
    assert store.count_pending_embeddings() == len(expected)


def test_a_rollback_while_the_scan_is_part_way_leaves_it_as_the_store_is(store: KuzuGraphStore) -> None:
    store.add_memories([memory(f"m{i:02}") for i in range(12)])
    assert pending(store, 1) == ["m00"]

    with pytest.raises(RuntimeError), store.transaction():
        store.add_memories([memory("rolled-back")])
        store.set_embeddings(["rolled-back", "m09"], np.ones((2, DIM), np.float32))
        store.delete_memory("m01")
        raise RuntimeError("abort")

    assert pending(store) == [f"m{i:02}" for i in range(12)]
    assert store.count_pending_embeddings() == 12
    assert store.embedding_of("rolled-back") is None and store.count_vectors() == 0


def test_an_ask_gives_fewer_than_it_asked_only_when_no_more_wait(store: KuzuGraphStore) -> None:
    store.add_memories([memory(f"m{i:02}") for i in range(6)])
    assert pending(store, 1) == ["m00"]
    store.vectors.now_pending(["gone"])  # a write the store does not hold (as after a rollback)
    store.add_memories([memory("late")])

    # A short answer is the whole backlog: the semantic index stops looking on it.
    assert pending(store, 7) == [*(f"m{i:02}" for i in range(6)), "late"]


def test_vectors_set_inside_a_transaction_are_kept_when_it_commits(store: KuzuGraphStore) -> None:
    with store.transaction():
        store.add_memories([memory("a"), memory("b")])
        store.set_embeddings(["a"], np.ones((1, DIM), np.float32))
    assert pending(store) == ["b"] and store.count_pending_embeddings() == 1
    assert store.get_memories(["a"])["a"].embedded
