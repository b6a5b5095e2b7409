"""What only the Kùzu store does: schema version, the process lock, reopening, crashes of Kùzu.

The behaviour every store shares is tested once, against Kùzu and the in-memory store, in
test_store_contract.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from support.records import NOW, memory
from support.stores import new_kuzu

from graphmem.adapters import kuzu_connection, kuzu_store
from graphmem.adapters.graph_cache import ENTITY_FANOUT
from graphmem.adapters.kuzu_links import DIRECT_GRAPH_ASKS
from graphmem.adapters.kuzu_schema import SCHEMA_VERSION
from graphmem.adapters.kuzu_store import KuzuGraphStore
from graphmem.core.models import Entity, EntityKind, Link, LinkKind, Status
from graphmem.core.ports import Neighbour, Visibility
from graphmem.errors import StoreError

DIM = 8
EVERYONE = Visibility("/src/proj", frozenset(Status))


def run_python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def store(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[KuzuGraphStore]:
    """A new, empty store: a copy of the process's template (``support/stores.py``)."""
    store = new_kuzu(tmp_path / "data", request, DIM)
    yield store
    store.close()


def test_a_new_store_records_its_schema_version(tmp_path: Path) -> None:
    store = KuzuGraphStore(tmp_path / "data", dimension=DIM)
    try:
        assert store.get_meta("schema_version") == str(SCHEMA_VERSION)
    finally:
        store.close()


def test_a_second_process_is_told_which_process_holds_the_store(store: KuzuGraphStore) -> None:
    done = run_python(
        """
        import sys
        from pathlib import Path
        from graphmem.adapters.kuzu_store import KuzuGraphStore
        from graphmem.errors import StoreLockedError
        try:
            KuzuGraphStore(Path(sys.argv[1]), dimension=8)
        except StoreLockedError as exc:
            print("LOCKED", exc)
        """,
        str(store.data_dir),
    )
    assert done.stdout.startswith("LOCKED"), done.stderr[-2000:]
    assert f"process {os.getpid()}" in done.stdout


def test_a_closed_store_reopens_with_its_data(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    first = new_kuzu(tmp_path / "data", request, DIM)
    first.add_memories([memory("m1", "We chose Kùzu")])
    first.close()
    second = KuzuGraphStore(tmp_path / "data", dimension=DIM)
    try:
        assert second.get_memories(["m1"])["m1"].text == "We chose Kùzu"
        assert [i for i, _ in second.search_text("kuzu", EVERYONE, 5)] == ["m1"]
    finally:
        second.close()


# Kùzu 0.11.3 has crashed the process in both scenarios below (heap corruption; segfault on close),
# so they run in a child where a crash fails the test instead of killing the session.
_STORE_SCRIPT_HEAD = """
import sys
from datetime import UTC, datetime
from pathlib import Path
import numpy as np
from graphmem.adapters.kuzu_store import KuzuGraphStore
from graphmem.core.models import Category, MemoryRecord, Scope

now = datetime.now(UTC)
def records(prefix, n):
    return [MemoryRecord(id=f"{prefix}{i}", text=f"note {prefix} {i}", category=Category.FACT,
                         scope=Scope.GLOBAL, project=None, created_at=now, updated_at=now,
                         valid_from=now) for i in range(n)]
data = Path(sys.argv[1])
"""


def test_bulk_add_after_a_text_update_succeeds(tmp_path: Path) -> None:
    # What `graphmem edit` followed by `graphmem import` of >= 64 memories does.
    done = run_python(
        _STORE_SCRIPT_HEAD
        + """
store = KuzuGraphStore(data, dimension=8)
store.add_memories(records("a", 3))
store.replace_text("a1", text="edited words", content_hash="h", updated_at=datetime.now(UTC), entities=[])
store.add_memories(records("b", 70))
print("COUNT", sum(store.count_memories().values()), flush=True)
store.close()
""",
        str(tmp_path / "data"),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "COUNT 73" in done.stdout


def test_clearing_embeddings_of_a_reopened_store_then_closing_it_succeeds(tmp_path: Path) -> None:
    # What `graphmem reindex` does: the store was created by an earlier process.
    done = run_python(
        _STORE_SCRIPT_HEAD
        + """
store = KuzuGraphStore(data, dimension=8)
store.add_memories(records("a", 2))
store.close()
store = KuzuGraphStore(data, dimension=4)
store.clear_embeddings(4)
store.set_embeddings(["a0", "a1"], np.ones((2, 4), np.float32))
store.close()
print("CLOSED", flush=True)
""",
        str(tmp_path / "data"),
    )
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-2000:]}"
    assert "CLOSED" in done.stdout


def test_vectors_load_page_by_page_with_every_embedded_memory_once(
    store: KuzuGraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages of node offsets, with deleted and not yet embedded memories between them."""
    import numpy as np

    from graphmem.adapters import kuzu_vectors

    monkeypatch.setattr(kuzu_vectors, "VECTOR_PAGE", 3)
    vectors = np.eye(10, store.dimension, dtype=np.float32)
    store.add_memories([memory(f"m{i}") for i in range(10)], vectors)
    store.add_memories([memory("pending")])
    store.delete_memory("m4")
    store.delete_memory("m7")

    loaded = store.load_vectors()

    kept = [i for i in range(10) if i not in (4, 7)]
    assert sorted(loaded.ids) == sorted(f"m{i}" for i in kept)
    rows = dict(zip(loaded.ids, np.asarray(loaded.matrix).tolist(), strict=True))
    assert all(rows[f"m{i}"] == vectors[i].tolist() for i in kept)
    assert loaded.statuses == ["active"] * 8 and loaded.projects == [None] * 8


@pytest.mark.parametrize("lookup_max_ids", [2, 200])
def test_links_are_stored_once_whether_added_by_key_or_in_bulk(
    store: KuzuGraphStore, monkeypatch: pytest.MonkeyPatch, lookup_max_ids: int
) -> None:
    """A few links go by primary-key lookups, many by one UNWIND: both store each link once."""
    from graphmem.adapters import kuzu_links
    from graphmem.core.models import Link, LinkKind

    monkeypatch.setattr(kuzu_links, "LOOKUP_MAX_IDS", lookup_max_ids)
    store.add_memories([memory(f"m{i}") for i in range(6)])
    when = datetime(2025, 1, 2, tzinfo=UTC)
    links = [Link(f"m{i}", f"m{i + 1}", LinkKind.RELATED, when) for i in range(5)]
    links.append(Link("m0", "unknown", LinkKind.RELATED, when))

    store.add_links(links)
    store.add_links(links[:3])

    stored = sorted((link.source, link.target, link.kind) for link in store.links())
    assert stored == [(f"m{i}", f"m{i + 1}", LinkKind.RELATED) for i in range(5)]


def test_graph_expansion_reads_the_edges_around_its_seeds_until_asked_often(store: KuzuGraphStore) -> None:
    issue = Entity("Issue:group/proj#4", EntityKind.ISSUE, "#4", "/src/proj", "Flaky test")
    hub = Entity("File:/src/proj::src/app.py", EntityKind.FILE, "src/app.py", "/src/proj")
    store.add_memories([memory(f"m{i:03}") for i in range(ENTITY_FANOUT + 5)])
    store.upsert_entities([issue, hub])
    store.add_next([("m000", "m001"), ("m002", "m000")])
    store.add_links(
        [Link("m003", "m000", LinkKind.EXTENDS, NOW), Link("m000", "m004", LinkKind.RELATED, NOW)]
    )
    store.link_about([("m000", issue), ("m005", issue), ("m006", issue)])
    store.link_about([(f"m{i:03}", hub) for i in range(ENTITY_FANOUT + 1)])
    seeds = [["m000"], ["m005", "m001"], ["m003"], ["m100"], ["m000", "m006"]]

    around = [store.neighbours(ids, 100) for ids in seeds]
    assert not store._graph.ready  # a one-shot recall never loads every edge
    assert around[0] == [
        Neighbour("m000", "next", "m001"),
        Neighbour("m000", "next", "m002"),
        Neighbour("m000", "extends", "m003"),
        Neighbour("m000", "related", "m004"),
        Neighbour("m000", issue.key, "m005", 3),
        Neighbour("m000", issue.key, "m006", 3),
    ]
    for _ in range(DIRECT_GRAPH_ASKS):
        store.neighbours(["m000"], 1)
    assert store._graph.ready
    assert [store.neighbours(ids, 100) for ids in seeds] == around


def test_vectors_written_one_at_a_time_neither_fill_kuzu_nor_leave_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the daemon does: embed each memory as it comes. With the vectors in a Kùzu
    column (55f3ec6^), about 800 of them filled Kùzu's 512 MB buffer pool and every write
    failed after; in 64 MB at the 242nd, and in these 24 MB (and a quarter of them as the
    checkpoint threshold) at the 103rd of these 160."""
    import numpy as np

    pool = 24 * 1024 * 1024
    monkeypatch.setattr(kuzu_store, "BUFFER_POOL_BYTES", pool)
    monkeypatch.setattr(kuzu_connection, "POOL_CHECKPOINT_BYTES", pool // 4)
    store = KuzuGraphStore(tmp_path / "data", dimension=384)
    rng = np.random.default_rng(1)
    for i in range(160):
        store.add_memories([memory(f"m{i:04}")])
        store.set_embeddings([f"m{i:04}"], rng.standard_normal((1, 384)).astype(np.float32))
    assert store.count_vectors() == 160 and store.pending_embeddings(5) == []
    store.close()

    wal = tmp_path / "data" / "graph.kuzu.wal"  # checkpointed as it grew, so left small at close
    assert not wal.exists() or wal.stat().st_size <= kuzu_store.CLOSE_CHECKPOINT_BYTES
    again = KuzuGraphStore(tmp_path / "data", dimension=384)
    try:
        assert len(again.load_vectors().ids) == 160
    finally:
        again.close()


def test_a_store_from_before_schema_9_has_its_vectors_moved_out_of_kuzu(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    import numpy as np

    data = tmp_path / "data"
    store = new_kuzu(data, request, DIM)
    store.add_memories([memory("a"), memory("b"), memory("c")])
    old = np.eye(2, DIM, dtype=np.float32)  # as the store wrote them before: in the column
    for memory_id, vector in zip(["a", "b"], old, strict=True):
        store.db.run(
            "MATCH (m:Memory {id: $id}) SET m.embedding = $e, m.embedded = true",
            {"id": memory_id, "e": vector.tolist()},
        )
    store.set_meta("schema_version", "8")
    store.close()
    (data / "graph.vectors").unlink()

    store = KuzuGraphStore(data, dimension=DIM)
    try:
        loaded = store.load_vectors()
        assert store.get_meta("schema_version") == str(SCHEMA_VERSION)
        assert dict(zip(loaded.ids, np.asarray(loaded.matrix).tolist(), strict=True)) == {
            "a": old[0].tolist(),
            "b": old[1].tolist(),
        }
        assert [memory_id for memory_id, _ in store.pending_embeddings(10)] == ["c"]
        assert store.get_memories(["a"])["a"].embedded and not store.get_memories(["c"])["c"].embedded
    finally:
        store.close()


def test_the_memories_without_a_vector_follow_writes_and_rollbacks(store: KuzuGraphStore) -> None:
    import numpy as np

    store.add_memories([memory("a"), memory("b")])
    assert sorted(i for i, _ in store.pending_embeddings(10)) == ["a", "b"]  # read once here
    store.set_embeddings(["a", "unknown"], np.ones((2, DIM), np.float32))
    store.add_memories([memory("c")])
    with pytest.raises(RuntimeError), store.transaction():
        store.add_memories([memory("rolled-back")])
        raise RuntimeError("abort")
    store.replace_text("a", text="new words", content_hash="h2", updated_at=NOW, entities=[])
    store.delete_memory("b")

    assert sorted(i for i, _ in store.pending_embeddings(10)) == ["a", "c"]
    assert store.embedding_of("unknown") is None and store.count_vectors() == 0


def test_a_transactions_lone_write_commits_on_its_own_and_a_failed_one_keeps_nothing(
    store: KuzuGraphStore,
) -> None:
    sent: list[str] = []
    execute = store.db._conn.execute

    def spy(query: object, *args: object, **kwargs: object) -> object:
        if not (isinstance(query, str) and "bm_info" in query):  # the pool's watch (kuzu_connection.py)
            sent.append(query if isinstance(query, str) else "prepared")
        return execute(query, *args, **kwargs)  # type: ignore[arg-type]

    store.db._conn.execute = spy  # type: ignore[method-assign,assignment]
    with store.transaction():
        store.add_memories([memory("a")])
    assert sent == ["prepared"]  # no BEGIN and COMMIT around it: Kùzu's auto-commit

    with pytest.raises(StoreError), store.transaction():
        store.add_memories([memory("a", text="the same id again")])  # fails at the block's end
    with pytest.raises(StoreError), store.transaction():
        store.add_memories([memory("b")])
        store.add_memories([memory("a", text="the same id again")])  # fails: b goes too
    assert "BEGIN TRANSACTION" in sent and "ROLLBACK" not in sent  # Kùzu ended it itself

    assert list(store.get_memories(["a", "b"])) == ["a"]
    assert store.get_memories(["a"])["a"].text == memory("a").text
    store.add_memories([memory("c")])  # the store goes on
    assert list(store.get_memories(["a", "b", "c"])) == ["a", "c"]


def test_a_write_of_a_few_rows_and_a_keyed_read_run_on_one_thread_other_reads_and_bulk_loads_on_all(
    store: KuzuGraphStore,
) -> None:
    every = int(store.db.rows("CALL current_setting('threads') RETURN *")[0][0])
    threads = [every]
    sent: list[tuple[str, int]] = []
    conn = store.db._conn
    execute, limit = conn.execute, conn.set_max_threads_for_exec

    def spy(query: object, *args: object, **kwargs: object) -> object:
        if not (isinstance(query, str) and "bm_info" in query):  # the pool's watch (kuzu_connection.py)
            sent.append((query if isinstance(query, str) else "prepared", threads[-1]))
        return execute(query, *args, **kwargs)  # type: ignore[arg-type]

    def set_threads(count: int) -> None:
        threads.append(count)
        limit(count)

    conn.execute = spy  # type: ignore[method-assign,assignment]
    conn.set_max_threads_for_exec = set_threads  # type: ignore[method-assign,assignment]
    store.add_memories([memory("a")])  # one row, by its key (and its content hash's)
    assert sent == [("prepared", kuzu_connection.FEW_ROWS_THREADS)]
    store.get_memories(["unknown"])  # a read of one node by its key: as a write of a few rows
    assert sent[-1] == ("prepared", kuzu_connection.FEW_ROWS_THREADS)
    store.total_memories()  # any other read
    assert sent[-1] == ("MATCH (m:Memory) RETURN count(*)", every)
    store.db.run("MATCH (m:Memory) WHERE m.project = $p SET m.reinforced = 1", {"p": "/elsewhere"})
    assert sent[-1] == ("prepared", every)  # a write over a scan
    sent.clear()
    store.add_memories([memory(f"bulk{i}") for i in range(kuzu_store.COPY_MIN_ROWS)])  # COPY
    assert ("COPY Memory FROM $t", every) in sent and sent[-1] == ("COMMIT", every)
    assert store.total_memories() == kuzu_store.COPY_MIN_ROWS + 1


def test_all_memories_read_page_by_page_come_oldest_first_and_filter_by_project(
    store: KuzuGraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kuzu_store, "ALL_MEMORIES_PAGE", 2)  # as a million memories are read: in pages
    hours = {"e": 5, "b": 1, "d": 3, "a": 3, "c": 0}  # written in another order than they were made
    store.add_memories(
        [
            memory(
                i, created_at=datetime(2026, 1, 1, hours[i], tzinfo=UTC), project="/p" if i in "ad" else None
            )
            for i in hours
        ]
    )

    assert [r.id for r in store.all_memories()] == ["c", "b", "a", "d", "e"]  # ties by id
    assert [r.id for r in store.all_memories("/p")] == ["a", "d"]


def test_a_held_write_is_read_back_inside_its_transaction_and_rolled_back_with_it(
    store: KuzuGraphStore,
) -> None:
    with pytest.raises(RuntimeError), store.transaction():
        store.add_memories([memory("x")])
        assert store.get_memories(["x"])["x"].text == memory("x").text  # Kùzu has it already
        raise RuntimeError("abort")
    assert store.get_memories(["x"]) == {}
    with store.transaction():
        pass  # nothing to write: nothing is sent
    store.add_memories([memory("y")])
    assert list(store.get_memories(["x", "y"])) == ["y"]


def test_keyed_reads_split_over_two_connections_keep_the_keys_order(store: KuzuGraphStore) -> None:
    store.add_memories([memory(i) for i in "abcdef"])
    query = "MATCH (m:Memory {id: $key}) RETURN m.id"

    rows = store.db.keyed_rows(query, ["f", "a", "unknown", "c", "a", "e"])

    assert rows == [["f"], ["a"], ["c"], ["e"]]
    assert any(t.name.startswith("graphmem-kuzu-read") for t in threading.enumerate())
    with pytest.raises(StoreError, match="rejected a query"):
        store.db.keyed_rows("MATCH (m:Nothing {id: $key}) RETURN m.id", ["a", "b", "c"])
    store.close()
    assert not any(t.name.startswith("graphmem-kuzu-read") for t in threading.enumerate())


def test_keyed_reads_inside_a_transaction_see_its_writes(store: KuzuGraphStore) -> None:
    with store.transaction():
        store.add_memories([memory("x"), memory("y"), memory("z")])
        store.add_memories([memory("w")])
        assert sorted(store.get_memories(["w", "x", "y", "z"])) == ["w", "x", "y", "z"]
    store._records.clear()
    assert sorted(store.get_memories(["w", "x", "y", "z"])) == ["w", "x", "y", "z"]


def test_long_strings_updated_one_at_a_time_do_not_fill_kuzus_pool(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before the store watched Kùzu's pool (41bb5ad^): full at the 919th of 1,500 such writes
    # in the usual 512 MB pool, every write failing after; in a quarter of the pool (and of its
    # checkpoint threshold), full within these 500.
    pool = 128 * 1024 * 1024
    monkeypatch.setattr(kuzu_store, "BUFFER_POOL_BYTES", pool)
    monkeypatch.setattr(kuzu_connection, "POOL_CHECKPOINT_BYTES", pool // 4)
    store = new_kuzu(tmp_path / "data", request, DIM)
    try:
        for i in range(500):
            store.set_meta(f"note-{i % 125}", f"{i} " + "x" * 4_000)

        assert store.get_meta("note-124") == "499 " + "x" * 4_000
        assert store.db._pool_used() < pool // 2
    finally:
        store.close()


def test_an_import_s_lookups_of_ids_and_hashes_fit_a_small_pool(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before (1e217df^): a lookup of more than 200 ids joined them with the whole Memory table,
    # every column of every memory in the join's hash table: an import's lookups filled the
    # 512 MB pool at 943,016 memories; 10 MB of memories fill a 24 MB pool (5,000 of 2 KB, or
    # these 1,250 of 8 KB; 7.5 MB did too, 5 MB did not).
    data = tmp_path / "data"
    store = new_kuzu(data, request, DIM)
    store.add_memories([memory(f"m{i:05}", f"{i} " + "x" * 8_000) for i in range(1_250)])
    store.close()
    monkeypatch.setattr(kuzu_store, "BUFFER_POOL_BYTES", 24 * 1024 * 1024)
    store = KuzuGraphStore(data, dimension=DIM)
    try:
        found = store.get_memories([f"new{i}" for i in range(1_250)] + ["m00007", "m01249"])
        assert sorted(found) == ["m00007", "m01249"]
        held = store.find_by_hashes([f"hash-m{i:05}" for i in range(0, 1_250, 2)] + ["hash-none"])
        assert len(held) == 625 and [r.id for r in held["hash-m00010"]] == ["m00010"]
        assert [r.id for r in store.find_by_hash("hash-m01248")] == ["m01248"]
    finally:
        store.close()


def test_a_log_left_that_the_pool_cannot_checkpoint_is_written_in_at_open(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    data = tmp_path / "data"
    new_kuzu(data, request, DIM).close()
    left = run_python(
        """
        import os, sys, kuzu
        db = kuzu.Database(sys.argv[1], buffer_pool_size=2 * 1024**3, auto_checkpoint=False)
        conn = kuzu.Connection(db)
        for i in range(200):  # a 2 MB log, in few writes of 10 KB (cheaper than many small ones)
            value = f"{i} " + "x" * 10_000
            conn.execute("MERGE (m:Meta {key: $k}) SET m.value = $v", {"k": f"k{i % 50}", "v": value})
        os._exit(0)  # killed: the log stays, never checkpointed
        """,
        str(data / "graph.kuzu"),
    )
    assert left.returncode == 0, left.stderr
    assert (data / "graph.kuzu.wal").stat().st_size > kuzu_store.CLOSE_CHECKPOINT_BYTES == 1024 * 1024

    store = KuzuGraphStore(data, dimension=DIM)
    try:
        assert store.get_meta("k49") == "199 " + "x" * 10_000
        wal = data / "graph.kuzu.wal"
        assert not wal.exists() or wal.stat().st_size < 1024 * 1024  # written into the database
        store.set_meta("after", "a write")
    finally:
        store.close()
    reopened = KuzuGraphStore(data, dimension=DIM)
    try:
        assert reopened.get_meta("after") == "a write"
    finally:
        reopened.close()


def _hash_lookups(store: KuzuGraphStore) -> tuple[list[str], dict[str, list[str]]]:
    found = store.find_by_hashes(["same", "hash-c", "hash-bulk-7", "none"])
    return (
        [m.id for m in store.find_by_hash("same")],
        {h: [m.id for m in group] for h, group in found.items()},
    )


def test_a_schema_12_store_finds_its_duplicates_by_hash_once_migrated(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    data = tmp_path / "data"
    store = new_kuzu(data, request, DIM)
    store.add_memories([memory("b", content_hash="same"), memory("a", content_hash="same"), memory("c")])
    store.add_memories([memory(f"bulk-{i}") for i in range(kuzu_store.COPY_MIN_ROWS)])  # by COPY
    expected = (["a", "b"], {"same": ["a", "b"], "hash-c": ["c"], "hash-bulk-7": ["bulk-7"]})
    assert _hash_lookups(store) == expected
    store.db.run("DROP TABLE ContentHash")  # a store as schema 12 left it
    store.set_meta("schema_version", "12")
    store.close()

    store = KuzuGraphStore(data, dimension=DIM)
    try:
        assert store.get_meta("schema_version") == str(SCHEMA_VERSION)
        assert _hash_lookups(store) == expected
    finally:
        store.close()


def test_a_memorys_hash_follows_its_updates_deletion_and_rolled_back_writes(store: KuzuGraphStore) -> None:
    store.add_memories([memory("a", content_hash="one"), memory("b", content_hash="one")])
    assert [m.id for m in store.find_by_hash("one")] == ["a", "b"]

    store.update_memory("a", {"project": "/src/proj", "content_hash": "two"})  # a project renamed
    assert [m.id for m in store.find_by_hash("one")] == ["b"]
    assert [(m.id, m.project) for m in store.find_by_hash("two")] == [("a", "/src/proj")]

    store.replace_text("b", text="new text", content_hash="three", updated_at=NOW, entities=[])
    assert store.find_by_hash("one") == [] and [m.id for m in store.find_by_hash("three")] == ["b"]

    store.delete_memory("a")
    assert store.find_by_hash("two") == [] and store.find_by_hashes(["two", "three"]).keys() == {"three"}

    with pytest.raises(RuntimeError), store.db.transaction():
        store.add_memories([memory("c", content_hash="three")])
        raise RuntimeError("the rest of the write failed")
    assert [m.id for m in store.find_by_hash("three")] == ["b"]


def test_a_bulk_load_adds_its_ids_to_stored_hashes_and_its_own(store: KuzuGraphStore) -> None:
    store.add_memories([memory("a", content_hash="old")])
    shared = {"bulk-000": "new", "bulk-001": "new", "bulk-002": "old"}
    batch = [memory(f"bulk-{i:03d}") for i in range(80)]
    store.add_memories([replace(r, content_hash=shared.get(r.id, r.content_hash)) for r in batch])  # COPY

    assert [m.id for m in store.find_by_hash("old")] == ["a", "bulk-002"]
    assert [m.id for m in store.find_by_hash("new")] == ["bulk-000", "bulk-001"]
    found = store.find_by_hashes(["old", "hash-bulk-079", "none"])
    assert {h: [m.id for m in group] for h, group in found.items()} == {
        "old": ["a", "bulk-002"],
        "hash-bulk-079": ["bulk-079"],
    }


def test_a_new_store_whose_schema_fails_halfway_keeps_no_table_and_opens_whole_next_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = kuzu_store.create_schema()
    broken = [*whole[:5], "CREATE NODE TABLE Broken(", *whole[5:]]  # the sixth statement fails
    monkeypatch.setattr(kuzu_store, "create_schema", lambda: broken)
    with pytest.raises(StoreError):
        KuzuGraphStore(tmp_path / "data", dimension=8)
    monkeypatch.undo()

    store = KuzuGraphStore(tmp_path / "data", dimension=8)  # not taken for a store of some tables
    try:
        store.add_memories([memory("m1", "the schema is whole")])
        assert store.db.get_meta("schema_version") == str(SCHEMA_VERSION)
        assert [m.id for m in store.all_memories()] == ["m1"]
    finally:
        store.close()


def test_a_store_this_user_may_not_open_says_to_fix_the_permissions_not_to_restore_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def denied(path: str, **_: object) -> None:  # what Kùzu raises for a store of another user's
        raise RuntimeError(f"IO exception: Cannot open file {path}: Permission denied")

    monkeypatch.setattr(kuzu_store.kuzu, "Database", denied)

    with pytest.raises(StoreError, match="permissions") as raised:
        KuzuGraphStore(tmp_path / "data", dimension=8)
    assert "restore" not in str(raised.value)  # the store is whole: restoring it would lose data


def test_a_small_log_is_left_at_close_and_replayed_at_the_next_open(tmp_path: Path) -> None:
    """Replaying a small log at open is cheaper than a checkpoint at every close (a CLI command,
    a test): Kùzu checkpoints at close unless told not to, and is told when the log is small."""
    store = KuzuGraphStore(tmp_path / "data", dimension=4)
    store.add_memories([memory("m0001")])
    store.close()

    wal = tmp_path / "data" / "graph.kuzu.wal"
    assert wal.exists() and 0 < wal.stat().st_size <= kuzu_store.CLOSE_CHECKPOINT_BYTES
    again = KuzuGraphStore(tmp_path / "data", dimension=4)
    try:
        assert list(again.get_memories(["m0001"])) == ["m0001"]
    finally:
        again.close()
