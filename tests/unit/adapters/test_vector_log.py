"""The embedded store's vector file: appends that survive a kill, a torn record cut off,
removals, compaction and the dimension."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from graphmem.adapters.vector_log import MAGIC, VectorLog
from graphmem.errors import StoreError

DIM = 4


def vectors(n: int, start: float = 0.0) -> np.ndarray:
    return np.arange(start, start + n * DIM, dtype=np.float32).reshape(n, DIM)


def test_vectors_put_are_read_back_after_reopening(tmp_path: Path) -> None:
    log = VectorLog(tmp_path / "v", DIM)
    log.put(["a", "b", "c"], vectors(3))
    log.put(["b"], vectors(1, 100.0))  # the last one wins
    log.remove(["c", "unknown"])
    log.close()

    again = VectorLog(tmp_path / "v", DIM)
    assert sorted(again.ids()) == ["a", "b"] and len(again) == 2 and "c" not in again
    assert again.get("a").tolist() == vectors(3)[0].tolist()
    assert again.get("b").tolist() == vectors(1, 100.0)[0].tolist()
    assert again.get("c") is None
    assert again.matrix(["b", "a"]).tolist() == [vectors(1, 100.0)[0].tolist(), vectors(3)[0].tolist()]
    again.close()


def test_a_put_survives_the_process_being_killed(tmp_path: Path) -> None:
    code = """
        import os, sys
        import numpy as np
        from pathlib import Path
        from graphmem.adapters.vector_log import VectorLog
        log = VectorLog(Path(sys.argv[1]), 4)
        log.put(["kept"], np.ones((1, 4), np.float32))
        os._exit(9)  # no close, no flush at exit
    """
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code), str(tmp_path / "v")], timeout=60)
    assert done.returncode == 9

    log = VectorLog(tmp_path / "v", DIM)
    assert log.get("kept").tolist() == [1.0] * DIM
    log.close()


def test_a_record_torn_by_a_kill_is_cut_off_and_the_log_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "v"
    log = VectorLog(path, DIM)
    log.put(["a"], vectors(1))
    log.close()
    whole = path.stat().st_size
    with open(path, "ab") as out:
        out.write(b"\x01\x05\x00torn!" + b"\x00" * 7)  # a record without all of its vector

    log = VectorLog(path, DIM)
    assert list(log.ids()) == ["a"] and path.stat().st_size == whole
    log.put(["b"], vectors(1, 50.0))
    log.close()
    again = VectorLog(path, DIM)
    assert again.get("b").tolist() == vectors(1, 50.0)[0].tolist() and again.get("a") is not None
    again.close()


def test_compaction_keeps_only_the_live_vectors_once_dead_ones_outweigh_them(tmp_path: Path) -> None:
    path = tmp_path / "v"
    log = VectorLog(path, DIM)
    log.put(["a", "b"], vectors(2))
    log.compact({"a", "b"})  # nothing dead: left as it is
    size = path.stat().st_size
    assert size > len(MAGIC)
    for round_ in range(5):
        log.put(["a"], vectors(1, float(round_)))
    log.put(["orphan"], vectors(1))  # a memory the store no longer has

    log.compact({"a", "b"})

    assert sorted(log.ids()) == ["a", "b"] and path.stat().st_size == size
    assert log.get("a").tolist() == vectors(1, 4.0)[0].tolist()
    log.close()
    again = VectorLog(path, DIM)
    assert sorted(again.ids()) == ["a", "b"]
    again.close()


def test_clearing_forgets_every_vector_and_takes_the_new_dimension(tmp_path: Path) -> None:
    log = VectorLog(tmp_path / "v", DIM)
    log.put(["a"], vectors(1))
    with pytest.raises(StoreError, match="graphmem reindex"):
        log.put(["b"], np.ones((1, DIM + 2), np.float32))

    log.clear(DIM + 2)
    log.put(["b"], np.ones((1, DIM + 2), np.float32))
    log.close()

    again = VectorLog(tmp_path / "v", DIM)
    assert again.dimension == DIM + 2 and list(again.ids()) == ["b"]
    again.close()


def test_a_file_that_is_no_vector_log_is_refused_with_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "v").write_bytes(b"something else entirely")
    with pytest.raises(StoreError, match=r"not a graphmem vectors file\. Move it away"):
        VectorLog(tmp_path / "v", DIM)


def test_many_vectors_are_read_in_chunks_as_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graphmem.adapters import vector_log

    monkeypatch.setattr(vector_log, "CHUNK_RECORDS", 7)
    monkeypatch.setattr(vector_log, "FEW_VECTORS", 3)
    log = VectorLog(tmp_path / "v", DIM)
    ids = [f"mem_{i:016x}" for i in range(50)]
    log.put(ids, vectors(50))
    log.put(ids[10:20], vectors(10, 1000.0))
    log.remove(ids[30:35])
    log.close()

    again = VectorLog(tmp_path / "v", DIM)
    kept = [memory_id for memory_id in ids if memory_id not in ids[30:35]]
    wanted = kept[::-1]
    expected = np.stack([again.get(memory_id) for memory_id in wanted])
    assert sorted(again.ids()) == sorted(kept)
    assert again.matrix(wanted).tolist() == expected.tolist()
    assert again.get(ids[15]).tolist() == vectors(10, 1000.0)[5].tolist()
    again.close()


def test_a_compaction_whose_new_file_cannot_be_put_in_place_leaves_every_vector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "v"
    log = VectorLog(path, DIM)
    log.put(["a", "b"], vectors(2))
    for round_ in range(3):
        log.put(["a"], vectors(1, float(round_)))

    def killed(*_: object) -> None:
        raise OSError("killed before the new file was put in place")

    monkeypatch.setattr("graphmem.adapters.vector_log.os.replace", killed)
    with pytest.raises(OSError):
        log.compact({"a", "b"})
    monkeypatch.undo()

    again = VectorLog(path, DIM)
    assert again.get("a").tolist() == vectors(1, 2.0)[0].tolist()
    assert again.get("b").tolist() == vectors(2)[1].tolist()
    again.close()


def test_the_index_of_records_is_read_from_the_snapshot_and_the_records_after_it(tmp_path: Path) -> None:
    path = tmp_path / "v"
    log = VectorLog(path, DIM)
    log.put(["a", "b", "c"], vectors(3))
    log.close()  # the snapshot covers three records
    assert path.with_name("v.ids").exists()
    with open(path, "ab") as out:  # records appended by a process killed before its close
        out.write(log._records_of([b"d", b"a"], vectors(2, 60.0), log.width))
        out.write(log._records_of([b"b"], np.full((1, DIM), np.nan, np.float32), log.width))

    again = VectorLog(path, DIM)
    assert sorted(again.ids()) == ["a", "c", "d"]
    assert again.get("a").tolist() == vectors(2, 60.0)[1].tolist() and again.get("b") is None
    assert again.matrix(["c", "d"]).tolist() == [vectors(3)[2].tolist(), vectors(2, 60.0)[0].tolist()]
    again.close()


def test_a_snapshot_of_another_file_is_not_believed(tmp_path: Path) -> None:
    path = tmp_path / "v"
    log = VectorLog(path, DIM)
    log.put(["a", "b"], vectors(2))
    log.close()
    snapshot = path.with_name("v.ids").read_bytes()
    log = VectorLog(path, DIM)
    log.clear(DIM)
    log.put(["x", "y", "z"], vectors(3, 9.0))
    log.close()
    path.with_name("v.ids").write_bytes(snapshot)  # of the file before it was cleared

    again = VectorLog(path, DIM)
    assert sorted(again.ids()) == ["x", "y", "z"] and again.get("a") is None
    again.close()
    path.with_name("v.ids").write_bytes(b"not a snapshot")
    again = VectorLog(path, DIM)
    assert sorted(again.ids()) == ["x", "y", "z"]
    again.close()


def test_gather_copies_the_vectors_of_many_ids_at_once(tmp_path: Path) -> None:
    log = VectorLog(tmp_path / "v", DIM)
    log.put(["a", "b", "c"], vectors(3))
    log.put(["b"], vectors(1, 100.0))  # the last one wins
    log.remove(["c"])

    out, found = log.gather(["b", "missing", "a", "c"])

    assert found.tolist() == [True, False, True, False]
    assert out.tolist() == [vectors(1, 100.0)[0].tolist(), [0.0] * DIM, vectors(3)[0].tolist(), [0.0] * DIM]
    log.put(["d"], vectors(1, 7.0))  # the file grew after the last map
    assert log.gather(["d"])[0].tolist() == [vectors(1, 7.0)[0].tolist()]
    assert log.gather([])[0].shape == (0, DIM)
    log.close()


def test_rows_are_read_when_asked_in_any_order_and_stay_those_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``rows``: the vectors as they were when taken, read in the order asked (a ``pread`` a
    span of records or a ``pread`` each), whatever is written or compacted after."""
    from graphmem.adapters import vector_log

    monkeypatch.setattr(vector_log, "CHUNK_RECORDS", 16)
    log = VectorLog(tmp_path / "v", DIM)
    ids = [f"mem_{i:016x}" for i in range(200)]
    log.put(ids, vectors(200))
    log.put(ids[10:20], vectors(10, 5000.0))
    wanted = ids[::-1]
    rows = log.rows(wanted)
    expected = log.matrix(wanted)

    assert rows.shape == (200, DIM) and len(rows) == 200
    assert np.asarray(rows).tolist() == expected.tolist()
    for positions in ([3, 2, 1, 0], [0, 199, 100, 5, 5], list(range(0, 200, 37)), list(range(60, 120))):
        asked = np.array(positions, np.int64)
        assert rows.take(asked).tolist() == expected[asked].tolist()
    assert rows.take(np.zeros(0, np.int64)).shape == (0, DIM)

    log.put(ids[:100], vectors(100, 9000.0))  # new records after those taken
    log.remove(ids[100:])
    log.compact(set(ids[:100]))  # the file written again without its dead records
    assert np.asarray(rows).tolist() == expected.tolist()
    with pytest.raises(KeyError):
        log.rows([ids[150]])
    log.close()
