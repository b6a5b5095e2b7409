"""The vector index saved between runs: what is restored, what the journal brings back, and
what makes a save unusable (then the caller rebuilds from the store)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from graphmem.adapters import vector_index
from graphmem.adapters.hnsw_graph import FINE, graph_dtype, mapped_graph, new_graph
from graphmem.adapters.vector_files import FORMAT_VERSION, INDEX_FILE, VectorIndexFiles
from graphmem.adapters.vector_graphs import MIXED
from graphmem.adapters.vector_index import HnswVectorIndex
from graphmem.core.ports import Vector, VectorQuery

DIM = 8
KEY = "token:model:8"
CURRENT = frozenset({"active", "resolved"})


def normalised(count: int, seed: int) -> Vector:
    vectors = np.random.default_rng(seed).normal(size=(count, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def filled(count: int = 40, *, graph: bool = False) -> HnswVectorIndex:
    index = HnswVectorIndex(DIM)
    projects = [None if i % 2 else "/p" for i in range(count)]
    index.add([f"m{i}" for i in range(count)], normalised(count, 1), projects, ["active"] * count)
    if graph:
        assert index.tidy()
    return index


def results(index: HnswVectorIndex, project: str | None = "/p") -> list[list[str]]:
    return [
        [memory_id for memory_id, _ in index.search(VectorQuery(q, 5, project=project, statuses=CURRENT))]
        for q in normalised(5, 2)
    ]


def dtypes(index: HnswVectorIndex) -> set[str]:
    """The kinds of vectors the graphs of ``index`` keep."""
    return {graph_dtype(graph) for graph in index.state()["graphs"].values()}


def an_older_save(files: VectorIndexFiles, version: int, dtype: str = FINE) -> None:
    """The save in ``files`` (of ``filled()``'s 40 memories, every one in a graph) as a
    format before 4 kept it: one graph of every project's rows, ``dtype`` vectors."""
    meta = json.loads((files.directory / INDEX_FILE).read_text())
    graph = new_graph(DIM, dtype)
    # On one thread, as the index seeds a graph (vector_graphs.SEED_ROWS): built concurrently, a
    # graph of 40 rows leaves one unreachable now and then, and a search comparing it with the
    # exact scan fails at random.
    graph.add(np.arange(40, dtype=np.uint64), normalised(40, 1), threads=1)
    graph.save(str(files.directory / "graph-9.usearch"))
    names = {part: name for part, name in meta.pop("files").items() if part != "graphs"}
    del meta["graph_sizes"]
    meta.update(version=version, files={**names, "graph": "graph-9.usearch"}, graph_rows=40)
    (files.directory / INDEX_FILE).write_text(json.dumps(meta))


@pytest.fixture
def files(tmp_path: Path) -> Iterator[VectorIndexFiles]:
    opened = VectorIndexFiles(tmp_path / "vectors")
    yield opened
    opened.close()


@pytest.fixture
def reopen(files: VectorIndexFiles) -> Iterator[Callable[[], VectorIndexFiles]]:
    """The save's directory opened again (``files`` closed first), as the next process would;
    closed at the end of the test even when it fails."""
    opened: list[VectorIndexFiles] = []

    def reopened() -> VectorIndexFiles:
        files.close()
        opened.append(VectorIndexFiles(files.directory))
        return opened[-1]

    yield reopened
    for each in opened:
        each.close()


@pytest.mark.parametrize("graph", [False, True], ids=["exact", "graph"])
def test_a_saved_index_is_restored_with_the_same_results(
    files: VectorIndexFiles,
    reopen: Callable[[], VectorIndexFiles],
    graph: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(vector_index, "HNSW_FROM_ROWS", 1)
    monkeypatch.setattr(vector_index, "EXACT_VISIBLE_ROWS", 0)
    saved = filled(graph=graph)
    saved.set_status("m3", "archived")
    saved.remove("m5")
    files.save(saved, KEY)

    again = reopen()
    restored = HnswVectorIndex(DIM)
    assert again.restore(restored, KEY) == []
    again.close()

    assert len(restored) == len(saved) == 39 and "m5" not in restored
    assert restored.graph_size == saved.graph_size
    assert results(restored) == results(saved)
    assert results(restored, None) == results(saved, None)
    assert "m3" not in {i for row in results(restored, None) for i in row}


def test_a_restored_graph_takes_new_rows_and_merges_them(
    files: VectorIndexFiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_index, "HNSW_FROM_ROWS", 1)
    monkeypatch.setattr(vector_index, "MERGE_AT_ROWS", 1)
    files.save(filled(graph=True), KEY)
    restored = HnswVectorIndex(DIM)
    files.restore(restored, KEY)
    new = normalised(1, 9)
    restored.add(["new"], new, [None], ["active"])
    assert restored.tidy()  # the mapped graph is copied, then the new row merged
    assert restored.graph_size == 41
    assert restored.search(VectorQuery(new[0], 1, project=None, statuses=CURRENT))[0][0] == "new"
    before = json.loads((files.directory / INDEX_FILE).read_text())["files"]["graphs"]
    files.save(restored, KEY)  # the global graph changed: written again, its old file removed
    after = json.loads((files.directory / INDEX_FILE).read_text())["files"]["graphs"]
    p = str(restored.state()["projects"]["/p"])
    assert after[p] == before[p] and after["-1"] != before["-1"]  # /p's kept as it was
    assert sorted(path.name for path in files.directory.glob("graph-*.usearch")) == sorted(after.values())


def test_the_journal_names_what_changed_after_the_save(
    files: VectorIndexFiles, reopen: Callable[[], VectorIndexFiles]
) -> None:
    index = filled()
    files.save(index, KEY)
    files.will_change(["m1", "m2"])
    files.applied(["m1", "m2"])

    again = reopen()
    assert again.restore(HnswVectorIndex(DIM), KEY) == ["m1", "m2"]
    again.close()


def test_a_save_keeps_in_the_journal_what_was_not_applied_yet(files: VectorIndexFiles) -> None:
    files.will_change(["applied", "in-flight"])
    files.applied(["applied"])
    files.save(filled(), KEY)

    assert files.journal() == ["in-flight"]
    files.applied(["in-flight"])
    files.save(filled(), KEY)
    assert files.journal() == []


@pytest.mark.parametrize("key", ["other-store:model:8", "token:other-model:8"])
def test_a_save_of_another_store_or_model_is_not_used(files: VectorIndexFiles, key: str) -> None:
    files.save(filled(), KEY)
    assert files.restore(HnswVectorIndex(DIM), key) is None


def test_no_save_restores_nothing(files: VectorIndexFiles) -> None:
    assert files.restore(HnswVectorIndex(DIM), KEY) is None


@pytest.mark.parametrize(
    "damage",
    [
        "garbage index",
        "missing rows",
        "truncated arrays",
        "bad graph",
        "graphs not a table",
        "graph code not a number",
    ],
)
def test_a_damaged_save_is_not_used(
    files: VectorIndexFiles, damage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_index, "HNSW_FROM_ROWS", 1)
    files.save(filled(graph=True), KEY)
    directory = files.directory
    if damage == "garbage index":
        (directory / INDEX_FILE).write_text("{not json", "utf-8")
    elif damage == "missing rows":
        next(directory.glob("rows-*.json")).unlink()
    elif damage == "truncated arrays":
        arrays = next(directory.glob("rows-*.npz"))
        arrays.write_bytes(arrays.read_bytes()[:100])
    elif damage == "bad graph":
        next(directory.glob("graph-*.usearch")).write_bytes(b"\0" * 64)
    else:  # index.json edited by hand
        meta = json.loads((directory / INDEX_FILE).read_text("utf-8"))
        graphs = meta["files"]["graphs"]
        meta["files"]["graphs"] = list(graphs.values()) if damage == "graphs not a table" else {"one": "x"}
        (directory / INDEX_FILE).write_text(json.dumps(meta), "utf-8")
    assert files.restore(HnswVectorIndex(DIM), KEY) is None


def test_a_save_cut_short_leaves_the_previous_one(files: VectorIndexFiles) -> None:
    first = filled(10)
    files.save(first, KEY)
    meta = json.loads((files.directory / INDEX_FILE).read_text("utf-8"))
    # A later save that died before replacing index.json left its files behind.
    (files.directory / "rows-99.json").write_text('{"ids": []', "utf-8")
    restored = HnswVectorIndex(DIM)
    assert files.restore(restored, KEY) == []
    assert len(restored) == 10
    assert json.loads((files.directory / INDEX_FILE).read_text("utf-8")) == meta


def test_a_saved_graph_is_on_the_disk_before_the_save_names_it(
    files: VectorIndexFiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every file ``index.json`` names is synced before it is written: a graph left to the
    kernel's writeback could be cut short by a crash under a complete-looking save."""
    monkeypatch.setattr(vector_index, "HNSW_FROM_ROWS", 1)
    synced: list[int] = []  # the files' inodes, which their renames keep
    fsync = os.fsync

    def recorded(fd: int) -> None:
        synced.append(os.fstat(fd).st_ino)
        fsync(fd)

    monkeypatch.setattr(os, "fsync", recorded)
    files.save(filled(graph=True), KEY)
    named = json.loads((files.directory / INDEX_FILE).read_text("utf-8"))["files"]
    graphs = list(named["graphs"].values())
    assert len(graphs) == 2  # the global memories' and /p's
    inode = {
        name: (files.directory / name).stat().st_ino for name in [*graphs, named["rows"], named["arrays"]]
    }
    inode[INDEX_FILE] = (files.directory / INDEX_FILE).stat().st_ino
    assert synced[-1] == inode[INDEX_FILE]
    assert {inode[name] for name in (*graphs, named["rows"], named["arrays"])} <= set(synced[:-1])


def test_discard_forgets_the_save(files: VectorIndexFiles) -> None:
    files.save(filled(), KEY)
    files.discard()
    assert files.restore(HnswVectorIndex(DIM), KEY) is None
    assert [p.name for p in files.directory.iterdir()] == ["journal"]


def test_a_save_of_the_first_format_is_restored_and_saved_again_in_the_new_one(
    files: VectorIndexFiles, reopen: Callable[[], VectorIndexFiles], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_index, "HNSW_FROM_ROWS", 1)
    monkeypatch.setattr(vector_index, "EXACT_VISIBLE_ROWS", 0)
    saved = filled(graph=True)
    saved.remove("m5")
    files.save(saved, KEY)
    files.close()
    # The first format: the ids and the live rows in the JSON file, not in the arrays.
    meta = json.loads((files.directory / INDEX_FILE).read_text())
    names = meta["files"]
    rows = json.loads((files.directory / names["rows"]).read_text())
    rows.update(ids=[f"m{i}" for i in range(40)], live=[i for i in range(40) if i != 5])
    (files.directory / names["rows"]).write_text(json.dumps(rows))
    with np.load(files.directory / names["arrays"]) as arrays:
        kept = {name: arrays[name] for name in arrays.files if name not in ("ids", "row_keys", "row_numbers")}
    np.savez(files.directory / names["arrays"], **kept)
    an_older_save(files, 1)

    again = reopen()
    restored = HnswVectorIndex(DIM)
    assert again.restore(restored, KEY) == []
    assert len(restored) == 39 and "m5" not in restored and restored.changed
    assert results(restored) == results(saved) and results(restored, None) == results(saved, None)
    again.save(restored, KEY)
    again.close()
    assert json.loads((files.directory / INDEX_FILE).read_text())["version"] == FORMAT_VERSION


def exact_of(count: int) -> vector_index.ExactVectors:
    """The store's vectors of ``filled(count)``'s memories (``HnswVectorIndex(exact=...)``)."""
    vectors = normalised(count, 1)

    def read(ids: Sequence[str]) -> tuple[Vector, npt.NDArray[np.bool_]]:
        rows = [int(memory_id[1:]) for memory_id in ids]
        return vectors[rows], np.ones(len(ids), np.bool_)

    return read


def test_an_8_bit_graph_is_saved_and_restored(
    files: VectorIndexFiles, reopen: Callable[[], VectorIndexFiles], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_index, "HNSW_FROM_ROWS", 1)
    monkeypatch.setattr(vector_index, "EXACT_VISIBLE_ROWS", 0)
    saved = HnswVectorIndex(DIM, exact=exact_of(40))
    projects = [None if i % 2 else "/p" for i in range(40)]
    saved.add([f"m{i}" for i in range(40)], normalised(40, 1), projects, ["active"] * 40)
    assert saved.tidy() and dtypes(saved) == {"i8"}
    files.save(saved, KEY)
    assert json.loads((files.directory / INDEX_FILE).read_text())["version"] == FORMAT_VERSION

    again = reopen()
    restored = HnswVectorIndex(DIM, exact=exact_of(40))
    assert again.restore(restored, KEY) == [] and not restored.changed
    again.close()
    assert dtypes(restored) == {"i8"} and not restored.tidy()  # nothing to build again
    assert results(restored) == results(saved) == results(filled())  # filled(): the exact scan's
    assert results(restored, None) == results(filled(), None)


def test_a_saved_8_bit_graph_is_mapped_without_its_table_of_keys_and_still_takes_rows(
    files: VectorIndexFiles, reopen: Callable[[], VectorIndexFiles], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_index, "HNSW_FROM_ROWS", 1)
    monkeypatch.setattr(vector_index, "EXACT_VISIBLE_ROWS", 0)
    monkeypatch.setattr(vector_index, "MERGE_AT_ROWS", 1)
    vectors = normalised(41, 1)  # the first 40 are filled()'s
    saved = HnswVectorIndex(DIM, exact=exact_of(41))
    projects = [None if i % 2 else "/p" for i in range(40)]
    saved.add([f"m{i}" for i in range(40)], vectors[:40], projects, ["active"] * 40)
    assert saved.tidy()
    files.save(saved, KEY)

    again = reopen()
    restored = HnswVectorIndex(DIM, exact=exact_of(41))
    assert again.restore(restored, KEY) == []
    graph = restored.state()["graphs"][-1]  # the global memories'
    saved_graphs = json.loads((files.directory / INDEX_FILE).read_text())["files"]["graphs"]
    with_keys = mapped_graph(str(files.directory / saved_graphs["-1"]))
    assert graph.memory_usage < with_keys.memory_usage  # no table of its keys (48 MB a million)
    assert results(restored) == results(filled()) and results(restored, None) == results(filled(), None)
    query = normalised(1, 2)[0]
    sims = restored.similarities(query, [f"m{i}" for i in range(40)])
    assert max(abs(sims[f"m{i}"] - float(vectors[i] @ query)) for i in range(40)) < 1e-6
    vector = restored.vector("m3")
    assert vector is not None and vector.tolist() == vectors[3].tolist()
    restored.add(["m40"], vectors[40:], [None], ["active"])
    assert restored.tidy() and restored.graph_size == 41  # copied into memory, then merged
    found = restored.search(VectorQuery(vectors[40], 1, project=None, statuses=CURRENT))
    assert found[0][0] == "m40" and found[0][1] == pytest.approx(1.0, abs=1e-6)
    again.close()


def test_a_half_precision_graph_of_format_2_is_searched_then_built_again_8_bit_per_project(
    files: VectorIndexFiles, reopen: Callable[[], VectorIndexFiles], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_index, "HNSW_FROM_ROWS", 1)
    monkeypatch.setattr(vector_index, "EXACT_VISIBLE_ROWS", 0)
    saved = filled(graph=True)  # no exact vectors: a half-precision graph, as format 2 saved it
    files.save(saved, KEY)
    an_older_save(files, 2)

    again = reopen()
    restored = HnswVectorIndex(DIM, exact=exact_of(40))
    assert again.restore(restored, KEY) == [] and restored.changed  # saved again as format 3
    assert dtypes(restored) == {"f16"}
    assert results(restored) == results(filled()) and results(restored, None) == results(filled(), None)
    assert restored.state()["graph_sizes"] == {MIXED: 40}  # one graph of both projects' rows
    assert restored.tidy()  # the idle worker's upkeep builds them again, 8-bit, one per project
    assert dtypes(restored) == {"i8"} and restored.graph_size == 40
    assert restored.state()["graph_sizes"] == {-1: 20, restored.state()["projects"]["/p"]: 20}
    assert results(restored) == results(filled()) and results(restored, None) == results(filled(), None)
    again.save(restored, KEY)
    again.close()
    assert json.loads((files.directory / INDEX_FILE).read_text())["version"] == FORMAT_VERSION


def test_an_index_read_from_the_stores_rows_is_saved_whole_before_its_graph_is_built(
    files: VectorIndexFiles,
    reopen: Callable[[], VectorIndexFiles],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """Loaded from the vector log's rows (``VectorLog.rows``, read when asked) and saved before
    a build (a daemon closing during its first): the save holds every vector."""
    from graphmem.adapters.vector_log import VectorLog
    from graphmem.core.ports import StoredVectors

    monkeypatch.setattr(vector_index, "HNSW_FROM_ROWS", 10)
    names = [f"m{i}" for i in range(40)]
    projects = [None if i % 2 else "/p" for i in range(40)]
    log = VectorLog(tmp_path / "graph.vectors", DIM)
    log.put(names, normalised(40, 1))
    saved = HnswVectorIndex(DIM)
    saved.load(StoredVectors(names, log.rows(names), projects, ["active"] * 40))
    log.close()
    saved.remove("m5")
    saved.set_status("m3", "archived")
    assert saved.graph_size == 0
    files.save(saved, KEY)

    again = reopen()
    restored = HnswVectorIndex(DIM)
    assert again.restore(restored, KEY) == []
    assert len(restored) == 39 and "m5" not in restored
    assert results(restored) == results(saved) == results(filled_like(names, projects))
    assert results(restored, None) == results(saved, None)
    assert restored.tidy() and restored.graph_size == 39


def filled_like(names: list[str], projects: list[str | None]) -> HnswVectorIndex:
    index = HnswVectorIndex(DIM)
    index.add(names, normalised(40, 1), projects, ["active"] * 40)
    index.remove("m5")
    index.set_status("m3", "archived")
    return index
