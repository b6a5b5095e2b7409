"""The in-process vector index: cosine top-k filtered by project and status, the same
whether a search scans exactly (small indexes) or goes through the HNSW graph."""

from __future__ import annotations

import importlib
import threading
import tracemalloc
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from graphmem.adapters import hnsw_graph, row_visibility, vector_graphs, vector_index, vector_log
from graphmem.adapters.vector_index import HnswVectorIndex
from graphmem.adapters.vector_log import VectorLog
from graphmem.core.branches import place
from graphmem.core.ports import StoredVectors, Vector, VectorQuery

DIM = 8
CURRENT = frozenset({"active", "resolved"})


def unit(*weights: float) -> Vector:
    vector = np.zeros(DIM, np.float32)
    vector[: len(weights)] = weights
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def rows(*vectors: Vector) -> Vector:
    return np.stack(vectors).astype(np.float32)


@pytest.fixture
def graph_always(monkeypatch: pytest.MonkeyPatch) -> None:
    """Build the graph from the first row and search it even for a handful of visible rows."""
    monkeypatch.setattr(vector_index, "HNSW_FROM_ROWS", 1)
    monkeypatch.setattr(vector_index, "MERGE_AT_ROWS", 1)
    monkeypatch.setattr(vector_index, "EXACT_VISIBLE_ROWS", 0)


@pytest.fixture(params=["exact", "graph"])
def index(request: pytest.FixtureRequest) -> HnswVectorIndex:
    """Global "g", project-a "a", project-b "b", and an archived global "old", all near axis 0;
    scanned exactly, or in the HNSW graph (``tidy``)."""
    if request.param == "graph":
        request.getfixturevalue("graph_always")
    index = HnswVectorIndex(DIM)
    index.add(
        ["g", "a", "b", "old"],
        rows(unit(1, 0.1), unit(1, 0.2), unit(1, 0.3), unit(1)),
        [None, "/a", "/b", None],
        ["active", "active", "active", "archived"],
    )
    if request.param == "graph":
        assert index.tidy() and index.graph_size == 4
    return index


def ids(found: list[tuple[str, float]]) -> list[str]:
    return [memory_id for memory_id, _ in found]


def test_search_ranks_by_cosine(index: HnswVectorIndex) -> None:
    found = index.search(VectorQuery(unit(1, 0.2), 10, project="/a", statuses=CURRENT))
    assert ids(found) == ["a", "g"]
    assert found[0][1] == pytest.approx(1.0, abs=1e-3)


def test_search_without_project_sees_only_global_rows(index: HnswVectorIndex) -> None:
    assert ids(index.search(VectorQuery(unit(1), 10, project=None, statuses=CURRENT))) == ["g"]


def test_search_in_a_project_sees_its_rows_and_global_ones(index: HnswVectorIndex) -> None:
    assert set(ids(index.search(VectorQuery(unit(1), 10, project="/b", statuses=CURRENT)))) == {"g", "b"}


def test_search_in_a_project_sees_its_aliases_rows_too(index: HnswVectorIndex) -> None:
    """``VectorQuery.aliases``: names the project's memories are still kept under."""
    query = VectorQuery(unit(1), 10, project="/b", statuses=CURRENT, aliases=frozenset({"/a"}))
    assert set(ids(index.search(query))) == {"g", "a", "b"}
    assert set(ids(index.search(VectorQuery(unit(1), 10, project="/b", statuses=CURRENT)))) == {"g", "b"}


def test_search_in_an_unknown_project_sees_only_global_rows(index: HnswVectorIndex) -> None:
    assert ids(index.search(VectorQuery(unit(1), 10, project="/elsewhere", statuses=CURRENT))) == ["g"]


def test_search_respects_statuses(index: HnswVectorIndex) -> None:
    assert set(
        ids(index.search(VectorQuery(unit(1), 10, project=None, statuses=frozenset({"active", "archived"}))))
    ) == {"g", "old"}
    assert ids(index.search(VectorQuery(unit(1), 10, project=None, statuses=frozenset({"archived"})))) == [
        "old"
    ]
    assert index.search(VectorQuery(unit(1), 10, project=None, statuses=frozenset({"superseded"}))) == []


def test_search_returns_at_most_k(index: HnswVectorIndex) -> None:
    assert len(index.search(VectorQuery(unit(1), 1, project="/a", statuses=CURRENT))) == 1
    assert index.search(VectorQuery(unit(1), 0, project="/a", statuses=CURRENT)) == []


def test_set_status_hides_and_shows_a_row(index: HnswVectorIndex) -> None:
    index.set_status("g", "superseded")
    assert ids(index.search(VectorQuery(unit(1), 10, project=None, statuses=CURRENT))) == []
    index.set_status("g", "active")
    assert ids(index.search(VectorQuery(unit(1), 10, project=None, statuses=CURRENT))) == ["g"]


def test_removed_rows_are_not_found(index: HnswVectorIndex) -> None:
    index.remove("g")
    assert "g" not in index and len(index) == 3
    assert index.search(VectorQuery(unit(1), 10, project=None, statuses=CURRENT)) == []
    assert index.similarities(unit(1), ["g"]) == {}
    assert index.vector("g") is None


def test_a_removed_row_can_be_added_again(index: HnswVectorIndex) -> None:
    index.remove("g")
    index.add(["g"], rows(unit(0, 1)), [None], ["active"])
    found = index.search(VectorQuery(unit(0, 1), 10, project=None, statuses=CURRENT))
    assert found == [("g", pytest.approx(1.0, abs=1e-3))]
    assert len(index) == 4


def test_adding_an_existing_id_replaces_its_row(index: HnswVectorIndex) -> None:
    index.add(["a"], rows(unit(0, 0, 1)), ["/a"], ["active"])
    assert len(index) == 4
    assert ids(index.search(VectorQuery(unit(0, 0, 1), 1, project="/a", statuses=CURRENT))) == ["a"]


def test_similarities_cover_only_known_ids(index: HnswVectorIndex) -> None:
    sims = index.similarities(unit(1, 0.1), ["g", "nope"])
    assert set(sims) == {"g"} and sims["g"] == pytest.approx(1.0, abs=1e-3)


@pytest.mark.usefixtures("graph_always")
def test_similarities_agree_with_the_graphs_own_scores() -> None:
    index = HnswVectorIndex(32)
    vectors = normalised(300, 1, dim=32)
    index.add([f"m{i}" for i in range(300)], vectors, [None] * 300, ["active"] * 300)
    assert index.tidy() and index.graph_size == 300
    query = normalised(1, 2, dim=32)[0]
    scored = dict(index.search(VectorQuery(query, 300, project=None, statuses=CURRENT)))
    asked_again = query.copy()  # another query object: nothing of the search is reused
    sims = index.similarities(asked_again, [f"m{i}" for i in range(300)])
    assert max(abs(sims[i] - scored[i]) for i in scored) < 1e-6
    assert max(abs(sims[f"m{i}"] - float(vectors[i] @ query)) for i in range(300)) < 1e-3


@pytest.mark.usefixtures("graph_always")
def test_similarities_reuse_the_last_search_of_the_same_query_only_while_nothing_moved() -> None:
    index = HnswVectorIndex(DIM)
    index.add(["x", "y"], rows(unit(1, 0.1), unit(0, 1)), [None, None], ["active", "active"])
    assert index.tidy()
    query = unit(1)
    found = dict(index.search(VectorQuery(query, 1, project=None, statuses=CURRENT)))
    assert index.similarities(query, ["x", "y"])["x"] == found["x"]  # the search's own score
    index.load(StoredVectors(["x", "y"], rows(unit(0, 1), unit(1)), [None, None], ["active", "active"]))
    moved = index.similarities(query, ["x", "y"])  # rows renumbered: computed afresh
    assert moved["x"] == pytest.approx(0.0, abs=1e-3) and moved["y"] == pytest.approx(1.0, abs=1e-3)


def test_the_index_grows_beyond_its_first_allocation() -> None:
    index = HnswVectorIndex(DIM)
    rng = np.random.default_rng(7)
    total = 0
    for batch in (700, 700, 900):  # crosses 1024 and then 2048 rows
        vectors = rng.normal(size=(batch, DIM)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        batch_ids = [f"m{total + i}" for i in range(batch)]
        index.add(batch_ids, vectors, [None] * batch, ["active"] * batch)
        total += batch
    assert len(index) == 2300
    first, last = index.vector("m0"), index.vector("m2299")
    assert first is not None and last is not None
    assert ids(index.search(VectorQuery(first, 1, project=None, statuses=CURRENT))) == ["m0"]
    assert ids(index.search(VectorQuery(last, 1, project=None, statuses=CURRENT))) == ["m2299"]


def test_load_replaces_the_contents(index: HnswVectorIndex) -> None:
    stored = StoredVectors(["x", "y"], rows(unit(1), unit(0, 1)), [None, "/a"], ["active", "resolved"])
    index.load(stored)
    assert len(index) == 2 and "g" not in index
    assert ids(index.search(VectorQuery(unit(0, 1), 10, project="/a", statuses=CURRENT))) == ["y", "x"]


def test_an_empty_index_finds_nothing() -> None:
    assert HnswVectorIndex(DIM).search(VectorQuery(unit(1), 5, project=None, statuses=CURRENT)) == []


def normalised(count: int, seed: int, dim: int = DIM) -> Vector:
    vectors = np.random.default_rng(seed).normal(size=(count, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def dtypes(index: HnswVectorIndex) -> set[str]:
    """The kinds of vectors the graphs of ``index`` keep."""
    return {hnsw_graph.graph_dtype(graph) for graph in index.state()["graphs"].values()}


def test_a_small_index_builds_no_graph() -> None:
    index = HnswVectorIndex(DIM)
    index.add(["a", "b"], normalised(2, 1), [None, None], ["active", "active"])
    assert not index.tidy()
    assert index.graph_size == 0


@pytest.mark.usefixtures("graph_always")
def test_rows_added_after_the_graph_are_found_then_merged_into_it() -> None:
    index = HnswVectorIndex(DIM)
    first = normalised(50, 2)
    index.add([f"m{i}" for i in range(50)], first, [None] * 50, ["active"] * 50)
    index.tidy()
    late = unit(0, 0, 0, 1)
    index.add(["late"], rows(late), [None], ["active"])
    assert index.graph_size == 50  # the new row waits in the exact tail
    assert ids(index.search(VectorQuery(late, 1, project=None, statuses=CURRENT))) == ["late"]
    assert index.tidy() and index.graph_size == 51
    assert ids(index.search(VectorQuery(late, 1, project=None, statuses=CURRENT))) == ["late"]
    assert index.similarities(late, ["late"])["late"] == pytest.approx(1.0, abs=1e-3)


@pytest.mark.usefixtures("graph_always")
def test_a_changed_vector_of_a_row_in_the_graph_replaces_it() -> None:
    index = HnswVectorIndex(DIM)
    index.add(["a", "b"], rows(unit(1), unit(0, 1)), [None, None], ["active", "active"])
    index.tidy()
    index.add(["a"], rows(unit(0, 0, 1)), [None], ["active"])
    assert len(index) == 2
    assert ids(index.search(VectorQuery(unit(0, 0, 1), 1, project=None, statuses=CURRENT))) == ["a"]
    found = index.search(VectorQuery(unit(1), 10, project=None, statuses=CURRENT))
    assert sorted(ids(found)) == ["a", "b"]  # the old row of "a" is gone
    assert dict(found)["a"] == pytest.approx(0.0, abs=1e-3)
    vector = index.vector("a")
    assert vector is not None and vector.tolist() == pytest.approx(unit(0, 0, 1).tolist(), abs=1e-3)


@pytest.mark.usefixtures("graph_always")
def test_the_graph_is_rebuilt_without_its_dead_rows() -> None:
    index = HnswVectorIndex(DIM)
    index.add([f"m{i}" for i in range(8)], normalised(8, 3), [None] * 8, ["active"] * 8)
    index.tidy()
    for i in range(4):
        index.remove(f"m{i}")
    assert index.tidy()  # half the graph is dead: rebuilt
    assert index.graph_size == 4 and len(index) == 4
    assert {i for i, _ in index.search(VectorQuery(unit(1), 10, project=None, statuses=CURRENT))} == {
        f"m{i}" for i in range(4, 8)
    }


@pytest.mark.usefixtures("graph_always")
def test_filters_that_hide_most_of_the_graph_still_fill_k() -> None:
    index = HnswVectorIndex(DIM)
    n = 600
    projects = [None if i % 50 == 0 else "/other" for i in range(n)]  # 12 global rows
    index.add([f"m{i}" for i in range(n)], normalised(n, 4), projects, ["active"] * n)
    index.tidy()
    found = index.search(VectorQuery(unit(1), 10, project=None, statuses=CURRENT))
    assert len(found) == 10
    assert all(int(memory_id[1:]) % 50 == 0 for memory_id, _ in found)


@pytest.mark.parametrize("from_store", [False, True], ids=["added", "read-from-the-store"])
@pytest.mark.parametrize("eight_bit", [False, True], ids=["half-precision", "8-bit-rescored"])
def test_the_graph_finds_what_the_exact_scan_finds(
    monkeypatch: pytest.MonkeyPatch, eight_bit: bool, from_store: bool
) -> None:
    vectors = normalised(3000, 5, dim=32)
    names = [f"m{i}" for i in range(3000)]
    queries = normalised(20, 6, dim=32)
    index = HnswVectorIndex(32, exact=exactly(names, vectors) if eight_bit else None)
    if from_store:  # loaded from rows the store reads when asked, a chunk at a time
        monkeypatch.setattr(vector_index, "HNSW_FROM_ROWS", 1000)
        index.load(StoredVectors(names, CountedRows(vectors), [None] * 3000, ["active"] * 3000))
    else:
        index.add(names, vectors, [None] * 3000, ["active"] * 3000)
    expected = [ids(index.search(VectorQuery(q, 10, project=None, statuses=CURRENT))) for q in queries]
    monkeypatch.setattr(vector_index, "HNSW_FROM_ROWS", 1000)
    monkeypatch.setattr(vector_index, "EXACT_VISIBLE_ROWS", 0)
    assert index.tidy() and index.graph_size == 3000
    found = [ids(index.search(VectorQuery(q, 10, project=None, statuses=CURRENT))) for q in queries]
    agreement = sum(len(set(a) & set(b)) for a, b in zip(expected, found, strict=True)) / 200
    assert agreement >= 0.95


@pytest.mark.usefixtures("graph_always")
def test_every_row_of_a_small_graph_is_found_in_every_build() -> None:
    # Built on every core from nothing, 40 rows left one to three unreachable in one build of eight.
    vectors = normalised(40, 1)
    names = [f"m{i}" for i in range(40)]
    for _ in range(30):
        index = HnswVectorIndex(DIM, exact=exactly(names, vectors))
        index.add(names, vectors, [None] * 40, ["active"] * 40)
        assert index.tidy() and index.graph_size == 40
        assert len(index.search(VectorQuery(vectors[0], 40, project=None, statuses=CURRENT))) == 40


@pytest.mark.usefixtures("graph_always")
def test_an_interrupted_build_leaves_the_index_as_it_was() -> None:
    index = HnswVectorIndex(DIM)
    index.add([f"m{i}" for i in range(20)], normalised(20, 8), [None] * 20, ["active"] * 20)
    index.interrupt()  # a closing daemon
    assert not index.tidy()
    assert index.graph_size == 0 and len(index) == 20
    assert len(index.search(VectorQuery(unit(1), 5, project=None, statuses=CURRENT))) == 5


def test_a_row_on_a_branch_is_seen_on_that_branch_only(index: HnswVectorIndex) -> None:
    index.add(["f"], rows(unit(1, 0.15)), [place("/a", "feature/x")], ["active"])

    assert set(ids(index.search(VectorQuery(unit(1), 10, project="/a", statuses=CURRENT)))) == {"g", "a"}
    on_branch = index.search(VectorQuery(unit(1), 10, project="/a", statuses=CURRENT, branch="feature/x"))
    assert set(ids(on_branch)) == {"g", "a", "f"}
    elsewhere = index.search(VectorQuery(unit(1), 10, project="/a", statuses=CURRENT, branch="feature/y"))
    assert set(ids(elsewhere)) == {"g", "a"}
    every = index.search(VectorQuery(unit(1), 10, project="/a", statuses=CURRENT, all_branches=True))
    assert set(ids(every)) == {"g", "a", "f"}
    assert set(
        ids(index.search(VectorQuery(unit(1), 10, project="/b", statuses=CURRENT, all_branches=True)))
    ) == {
        "g",
        "b",
    }


def test_a_branch_of_a_project_with_no_other_row_is_found(index: HnswVectorIndex) -> None:
    index.add(["n"], rows(unit(1, 0.15)), [place("/new", "feature/x")], ["active"])

    assert set(
        ids(index.search(VectorQuery(unit(1), 10, project="/new", statuses=CURRENT, branch="feature/x")))
    ) == {
        "g",
        "n",
    }
    assert ids(index.search(VectorQuery(unit(1), 10, project="/new", statuses=CURRENT))) == ["g"]


def numpy_peak(run: Callable[[], object]) -> int:
    """The most memory numpy held at once during ``run``, beyond what it held before (bytes).
    numpy's masked arrays are imported first: ``np.unique`` imports them on its first call
    (numpy 2.4), half a megabyte of a module's import that is no copy of the vectors, counted
    or not by whether a test before in the same process called it."""
    importlib.import_module("numpy.ma")
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        run()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def test_load_takes_the_stored_matrix_without_copying_it() -> None:
    n, dim = 5_000, 384  # 7.7 MB of float32 (what load holds besides: 0.4 MB)
    matrix = normalised(n, 11, dim=dim)
    index = HnswVectorIndex(dim)
    stored = StoredVectors([f"m{i}" for i in range(n)], matrix, [None] * n, ["active"] * n)
    assert numpy_peak(lambda: index.load(stored)) < matrix.nbytes // 4
    assert ids(index.search(VectorQuery(matrix[123], 1, project=None, statuses=CURRENT))) == ["m123"]
    index.add(["m5", "new"], normalised(2, 12, dim=dim), [None, None], ["active", "active"])  # grows the tail
    assert len(index) == n + 1
    assert ids(index.search(VectorQuery(matrix[123], 1, project=None, statuses=CURRENT))) == ["m123"]


def test_a_view_of_another_array_is_copied_on_load() -> None:
    backing = normalised(4, 13)
    index = HnswVectorIndex(DIM)
    index.load(StoredVectors(["a", "b"], backing[:2], [None, None], ["active", "active"]))
    index.add(["a"], rows(unit(0, 0, 0, 0, 1)), [None], ["active"])  # replaced in the tail
    assert backing[0].tolist() == normalised(4, 13)[0].tolist()


def test_the_graph_is_built_without_a_copy_of_every_vector(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vector_index, "HNSW_FROM_ROWS", 1000)
    monkeypatch.setattr(vector_index, "BUILD_CHUNK_ROWS", 200)
    n, dim = 2_000, 256  # 2 MB of float32; a chunk is 0.2 MB (the build's peak: 0.67 MB)
    hnsw_graph.new_graph(dim)  # usearch imported first: its import is no copy of the vectors
    index = HnswVectorIndex(dim)
    vectors = normalised(n, 14, dim=dim)
    index.add([f"m{i}" for i in range(n)], vectors, [None] * n, ["active"] * n)
    assert numpy_peak(index.tidy) < vectors.nbytes // 2
    assert index.graph_size == n
    assert ids(index.search(VectorQuery(vectors[77], 1, project=None, statuses=CURRENT))) == ["m77"]


@pytest.mark.parametrize("kept", [4_096, 3], ids=["masks-kept", "masks-made-anew"])
def test_searches_between_writes_see_every_write(monkeypatch: pytest.MonkeyPatch, kept: int) -> None:
    """The visibility masks are brought up to date with the rows changed since the search
    before (or made anew past ``MASK_CHANGES``): a search shows what a brute-force filter shows."""
    monkeypatch.setattr(row_visibility, "MASK_CHANGES", kept)
    rng = np.random.default_rng(5)
    index = HnswVectorIndex(DIM)
    truth: dict[str, tuple[Vector, str | None, str]] = {}
    query = unit(1, 0.5, 0.25)
    for step in range(60):
        memory_id = f"m{int(rng.integers(0, 25))}"
        action = step % 3
        if action == 0 or memory_id not in truth:
            vector = rng.normal(size=DIM).astype(np.float32)
            vector /= np.linalg.norm(vector)
            project = [None, "/a", "/b"][int(rng.integers(0, 3))]
            status = ["active", "archived"][int(rng.integers(0, 2))]
            index.add([memory_id], vector[None, :], [project], [status])
            truth[memory_id] = (vector, project, status)
        elif action == 1:
            status = ["active", "archived", "resolved"][int(rng.integers(0, 3))]
            index.set_status(memory_id, status)
            truth[memory_id] = (*truth[memory_id][:2], status)
        else:
            index.remove(memory_id)
            del truth[memory_id]
        for project in (None, "/a"):
            shown = {
                m: float(v @ query) for m, (v, p, s) in truth.items() if s in CURRENT and p in (None, project)
            }
            expected = sorted(shown, key=lambda m: -shown[m])[:5]
            assert ids(index.search(VectorQuery(query, 5, project=project, statuses=CURRENT))) == expected


# -- with the store's exact vectors: an 8-bit graph, its candidates scored again exactly ----


def exactly(names: list[str], vectors: Vector) -> vector_index.ExactVectors:
    """The store's vectors by memory id, as ``HnswVectorIndex(exact=...)`` reads them."""
    by_id = dict(zip(names, vectors, strict=True))

    def read(ids: Sequence[str]) -> tuple[Vector, npt.NDArray[np.bool_]]:
        found = np.array([memory_id in by_id for memory_id in ids], np.bool_)
        out = np.zeros((len(ids), vectors.shape[1]), np.float32)
        for i, memory_id in enumerate(ids):
            if memory_id in by_id:
                out[i] = by_id[memory_id]
        return out, found

    return read


@pytest.mark.usefixtures("graph_always")
def test_given_the_exact_vectors_the_graph_is_8_bit_and_every_cosine_exact() -> None:
    vectors = normalised(300, 1, dim=32)
    names = [f"m{i}" for i in range(300)]
    index = HnswVectorIndex(32, exact=exactly(names, vectors))
    index.add(names, vectors, [None] * 300, ["active"] * 300)
    assert index.tidy() and dtypes(index) == {"i8"}
    for seed in range(2, 7):
        query = normalised(1, seed, dim=32)[0]
        cosines = vectors @ query
        found = index.search(VectorQuery(query, 10, project=None, statuses=CURRENT))
        assert ids(found) == [names[i] for i in np.argsort(-cosines)[:10]]
        assert all(sim == pytest.approx(float(cosines[int(m[1:])]), abs=1e-6) for m, sim in found)
        sims = index.similarities(query.copy(), names)  # another query object: computed afresh
        assert max(abs(sims[name] - float(cosines[i])) for i, name in enumerate(names)) < 1e-6
    vector = index.vector("m7")
    assert vector is not None and vector.tolist() == vectors[7].tolist()


@pytest.mark.usefixtures("graph_always")
def test_a_narrow_filter_on_an_8_bit_graph_is_scored_exactly_too() -> None:
    n = 600
    vectors = normalised(n, 4, dim=32)
    names = [f"m{i}" for i in range(n)]
    projects = [None if i % 50 == 0 else "/other" for i in range(n)]  # 12 global rows
    index = HnswVectorIndex(32, exact=exactly(names, vectors))
    index.add(names, vectors, projects, ["active"] * n)
    assert index.tidy()
    query = normalised(1, 5, dim=32)[0]
    found = index.search(VectorQuery(query, 5, project=None, statuses=CURRENT))
    shown = [i for i in range(n) if i % 50 == 0]
    best = sorted(shown, key=lambda i: -float(vectors[i] @ query))[:5]
    assert ids(found) == [names[i] for i in best]
    assert [sim for _, sim in found] == pytest.approx([float(vectors[i] @ query) for i in best], abs=1e-6)


@pytest.mark.usefixtures("graph_always")
def test_a_memory_the_store_has_no_vector_for_keeps_the_graphs_score() -> None:
    vectors = rows(unit(1, 0.1), unit(0, 1))
    index = HnswVectorIndex(DIM, exact=exactly(["x"], vectors[:1]))  # "y" has none in the store now
    index.add(["x", "y"], vectors, [None, None], ["active", "active"])
    assert index.tidy()
    found = dict(index.search(VectorQuery(unit(0, 1), 2, project=None, statuses=CURRENT)))
    assert found["y"] == pytest.approx(1.0, abs=0.02)  # the 8-bit graph's own cosine
    assert found["x"] == pytest.approx(float(vectors[0] @ unit(0, 1)), abs=1e-6)


def test_under_a_narrow_filter_a_graph_that_only_navigates_scores_every_row_exactly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(vector_index, "HNSW_FROM_ROWS", 1)  # EXACT_VISIBLE_ROWS as it is: three rows are few
    vectors = rows(unit(1, 0.1), unit(0, 1), unit(1, 0.5))
    index = HnswVectorIndex(DIM, exact=exactly(["x", "z"], vectors[[0, 2]]))  # "y" has none in the store now
    index.add(["x", "y", "z"], vectors, [None] * 3, ["active"] * 3)
    assert index.tidy() and index.graph_size == 3
    query = unit(0, 1)
    found = index.search(VectorQuery(query, 3, project=None, statuses=CURRENT))
    assert ids(found) == ["z", "x"]  # "y" is not scored from the graph's own vectors
    assert [sim for _, sim in found] == pytest.approx([float(vectors[i] @ query) for i in (2, 0)], abs=1e-6)
    sims = index.similarities(query.copy(), ["x", "y", "z"])  # another query object: computed afresh
    assert sims == pytest.approx({"x": float(vectors[0] @ query), "z": float(vectors[2] @ query)}, abs=1e-6)
    assert index.vector("y") is None


@pytest.mark.usefixtures("graph_always")
def test_a_graph_that_only_navigates_is_rebuilt_from_the_exact_vectors() -> None:
    vectors = normalised(40, 3)
    names = [f"m{i}" for i in range(40)]
    index = HnswVectorIndex(DIM, exact=exactly(names[:-1], vectors[:-1]))  # "m39" has none in the store now
    index.add(names, vectors, [None] * 40, ["active"] * 40)
    assert index.tidy() and index.graph_size == 40  # built from the rows' own vectors
    for name in names[:14]:  # more than a quarter of the graph dead: built again
        index.remove(name)
    assert index.tidy()
    assert index.graph_size == 25 and "m39" not in index  # left out, and out of the index
    query = normalised(1, 4)[0]
    best = sorted(range(14, 39), key=lambda i: -float(vectors[i] @ query))[:5]
    assert ids(index.search(VectorQuery(query, 5, project=None, statuses=CURRENT))) == [
        names[i] for i in best
    ]


@pytest.mark.usefixtures("graph_always")
def test_a_half_precision_graph_is_built_again_8_bit_once_the_exact_vectors_are_at_hand() -> None:
    vectors = normalised(50, 2)
    names = [f"m{i}" for i in range(50)]
    before = HnswVectorIndex(DIM)  # no exact vectors: half precision, as saves before format 3
    before.add(names, vectors, [None] * 50, ["active"] * 50)
    assert before.tidy() and dtypes(before) == {"f16"}
    index = HnswVectorIndex(DIM, exact=exactly(names, vectors))
    index.restore(before.state(), graph_is_view=False)
    query = normalised(1, 3)[0]
    expected = [names[i] for i in np.argsort(-(vectors @ query))[:5]]
    assert ids(index.search(VectorQuery(query, 5, project=None, statuses=CURRENT))) == expected
    assert index.tidy() and dtypes(index) == {"i8"}
    assert index.graph_size == 50 and not index.tidy()
    assert ids(index.search(VectorQuery(query, 5, project=None, statuses=CURRENT))) == expected


# -- loaded from the store's rows, read when asked (``VectorRows``) ---------------------------


class CountedRows:
    """The store's rows as ``VectorRows``, counting what was read: the rows each ``take``
    handed out, and those still held (an array counts until it is dropped); the scans
    (``scores``) hand none out."""

    def __init__(self, matrix: Vector) -> None:
        self._matrix = matrix
        self.takes = 0
        self.held = 0
        self.most_held = 0
        self.scans = 0

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self._matrix), self._matrix.shape[1])

    def take(self, positions: npt.NDArray[np.int64]) -> Vector:
        out = self._matrix[np.asarray(positions, np.int64)]
        self.takes += 1
        self.held += len(out)
        self.most_held = max(self.most_held, self.held)
        weakref.finalize(out, self._dropped, len(out))
        return out

    def scores(self, positions: npt.NDArray[np.int64], query: Vector) -> npt.NDArray[np.float32]:
        self.scans += 1
        return np.asarray(self._matrix[np.asarray(positions, np.int64)] @ query, np.float32)

    def _dropped(self, count: int) -> None:
        self.held -= count

    def __array__(self, dtype: object = None, copy: object = None) -> Vector:
        return self.take(np.arange(len(self._matrix)))


def exact_top(vectors: Vector, query: Vector, k: int) -> list[str]:
    return [f"m{i}" for i in np.argsort(-(vectors @ query), kind="stable")[:k].tolist()]


def test_rows_the_store_reads_are_built_into_the_graph_a_chunk_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No float32 copy of every vector: load reads none, a search before the build has the
    store score them where they are (no row handed out), the build holds one chunk at a time
    (what the graph finds: the test before)."""
    monkeypatch.setattr(vector_index, "HNSW_FROM_ROWS", 1000)
    monkeypatch.setattr(vector_index, "BUILD_CHUNK_ROWS", 200)
    n, dim = 2_000, 256  # 2 MB of float32; a chunk is 0.2 MB
    hnsw_graph.new_graph(dim)  # usearch imported first: its import is no copy of the vectors
    vectors = normalised(n, 21, dim=dim)
    queries = normalised(10, 22, dim=dim)
    stored = CountedRows(vectors)
    index = HnswVectorIndex(dim)
    loaded = StoredVectors([f"m{i}" for i in range(n)], stored, [None] * n, ["active"] * n)

    assert numpy_peak(lambda: index.load(loaded)) < vectors.nbytes // 4
    assert stored.most_held == 0 and len(index) == n
    scanned = [ids(index.search(VectorQuery(q, 10, project=None, statuses=CURRENT))) for q in queries]
    assert scanned == [exact_top(vectors, q, 10) for q in queries]
    assert stored.takes == 0 and stored.scans == len(queries)
    assert numpy_peak(index.tidy) < vectors.nbytes // 2
    assert index.graph_size == n
    assert stored.most_held <= 200 and stored.held == 0

    takes = stored.takes
    assert ids(index.search(VectorQuery(vectors[77], 1, project=None, statuses=CURRENT))) == ["m77"]
    assert stored.takes == takes  # the graph holds them all: the store's rows are read no more


def test_a_search_before_the_build_scores_the_vector_logs_records_as_they_were_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``LogRows.scores`` through maps of ``graph.vectors``, a few records at a time: the exact
    scan's top k in any order of rows, dense spans or sparse, and the records taken, whatever
    is appended (new vectors for the same ids) or compacted after."""
    monkeypatch.setattr(vector_index, "HNSW_FROM_ROWS", 10)
    monkeypatch.setattr(vector_log, "SCAN_RECORDS", 16)
    n, dim = 300, 32
    vectors = normalised(n, 29, dim=dim)
    names = [f"mem_{i:016x}" for i in range(n)]
    log = VectorLog(tmp_path / "graph.vectors", dim)
    log.put(names[::-1], vectors[::-1])  # records in another order than the rows
    log.put(names[:40], normalised(40, 30, dim=dim))  # replaced: their last records are later
    log.put(names[:40], vectors[:40])
    index = HnswVectorIndex(dim)
    index.load(StoredVectors(names, log.rows(names), [None] * n, ["active"] * n))
    queries = normalised(6, 31, dim=dim)
    rows = log.rows(names)
    for positions in (np.arange(n)[::-1].copy(), np.arange(0, n, 37), np.array([5, 299, 5, 0, 150])):
        assert rows.scores(positions, queries[0]) == pytest.approx(vectors[positions] @ queries[0], abs=1e-6)
    assert rows.scores(np.zeros(0, np.int64), queries[0]).shape == (0,)

    log.put(names, -vectors)  # every id's vector changed after the rows were taken
    log.put([f"new_{i}" for i in range(n)], normalised(n, 32, dim=dim))
    for query in queries[:3]:
        assert ids(index.search(VectorQuery(query, 10, project=None, statuses=CURRENT))) == [
            names[i] for i in np.argsort(-(vectors @ query), kind="stable")[:10]
        ]
    log.compact(set(names[:10]))  # the file written again without most of them
    for query in queries[3:]:
        assert ids(index.search(VectorQuery(query, 10, project=None, statuses=CURRENT))) == [
            names[i] for i in np.argsort(-(vectors @ query), kind="stable")[:10]
        ]
    log.close()


def test_rows_from_the_store_are_searched_written_and_scored_as_the_tail_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(vector_index, "HNSW_FROM_ROWS", 10)
    vectors = normalised(40, 23)
    names = [f"m{i}" for i in range(40)]
    projects = [None if i % 2 else "/p" for i in range(40)]
    statuses = ["archived" if i % 5 == 0 else "active" for i in range(40)]
    lazy, eager = HnswVectorIndex(DIM), HnswVectorIndex(DIM)
    lazy.load(StoredVectors(names, CountedRows(vectors), projects, statuses))
    eager.load(StoredVectors(names, vectors.copy(), projects, statuses))
    for index in (lazy, eager):
        index.add(["m3"], rows(unit(0, 0, 1)), ["/p"], ["active"])  # a new row for a stored one
        index.remove("m7")
        index.set_status("m9", "archived")
    assert lazy.graph_size == eager.graph_size == 0
    for project in (None, "/p"):
        for query in normalised(5, 24):
            asked = VectorQuery(query, 8, project=project, statuses=CURRENT)
            found = lazy.search(asked)
            assert ids(found) == ids(eager.search(asked))
            assert dict(found) == pytest.approx(dict(eager.search(asked)), abs=1e-6)
            assert lazy.similarities(query, names) == pytest.approx(
                eager.similarities(query, names), abs=1e-6
            )
    eleventh, third = lazy.vector("m11"), lazy.vector("m3")
    assert eleventh is not None and eleventh.tolist() == vectors[11].tolist() and lazy.vector("m7") is None
    assert third is not None and third.tolist() == pytest.approx(unit(0, 0, 1).tolist())


def after_each_add(monkeypatch: pytest.MonkeyPatch, call: Callable[[], object]) -> None:
    """``call`` on another thread, waited for, after each add to a graph the index makes: what
    a recall or a write does between two chunks of a build (built outside the index's lock)."""
    new_graph = vector_graphs.new_graph

    def watched(dimension: int, dtype: str = vector_index.FINE) -> object:
        graph = new_graph(dimension, dtype)
        add = graph.add

        def added(*args: object, **kwargs: object) -> object:
            done = add(*args, **kwargs)
            other = threading.Thread(target=call)
            other.start()
            other.join()
            return done

        graph.add = added
        return graph

    monkeypatch.setattr(vector_graphs, "new_graph", watched)


def test_a_search_during_a_build_from_the_store_sees_every_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """A recall between two chunks of a build (the graph being built outside the lock)."""
    monkeypatch.setattr(vector_index, "HNSW_FROM_ROWS", 100)
    monkeypatch.setattr(vector_index, "BUILD_CHUNK_ROWS", 100)
    vectors = normalised(600, 25, dim=32)
    query = normalised(1, 26, dim=32)[0]
    index = HnswVectorIndex(32)
    index.load(
        StoredVectors([f"m{i}" for i in range(600)], CountedRows(vectors), [None] * 600, ["active"] * 600)
    )
    seen: list[list[str]] = []
    after_each_add(
        monkeypatch,
        lambda: seen.append(ids(index.search(VectorQuery(query, 10, project=None, statuses=CURRENT)))),
    )
    assert index.tidy() and index.graph_size == 600
    assert len(seen) >= 6
    assert all(found == exact_top(vectors, query, 10) for found in seen)


def test_an_interrupted_build_from_the_store_leaves_the_index_as_it_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(vector_index, "HNSW_FROM_ROWS", 10)
    vectors = normalised(40, 27)
    index = HnswVectorIndex(DIM)
    index.load(
        StoredVectors([f"m{i}" for i in range(40)], CountedRows(vectors), [None] * 40, ["active"] * 40)
    )
    index.interrupt()  # a closing daemon
    assert not index.tidy()
    assert index.graph_size == 0 and len(index) == 40
    assert ids(index.search(VectorQuery(vectors[4], 3, project=None, statuses=CURRENT))) == exact_top(
        vectors, vectors[4], 3
    )
    state = index.state()  # what its save holds: every vector
    assert sorted(state["tail_rows"].tolist()) == list(range(40))
    assert state["tail"][state["tail_rows"].tolist().index(4)].tolist() == vectors[4].tolist()


def test_fewer_rows_from_the_store_than_a_graph_needs_are_read_into_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(vector_index, "HNSW_FROM_ROWS", 100)
    vectors = normalised(40, 28)
    stored = CountedRows(vectors)
    index = HnswVectorIndex(DIM)
    index.load(StoredVectors([f"m{i}" for i in range(40)], stored, [None] * 40, ["active"] * 40))
    takes = stored.takes
    assert ids(index.search(VectorQuery(vectors[4], 1, project=None, statuses=CURRENT))) == ["m4"]
    assert not index.tidy() and stored.takes == takes == 1


def test_each_project_has_a_graph_of_its_rows_and_a_search_reads_only_those_it_sees(
    graph_always: None,
) -> None:
    """A recall for one project of many searches that project's graph and the global one:
    in one graph of them all, usearch was asked for 24 times the rows a search needed."""
    count = 400
    vectors = normalised(count, 31)
    projects = [None if i % 4 == 0 else ("/a", "/b", "/c")[i % 3] for i in range(count)]
    projects[1] = place("/a", "feat")  # a branch's rows are in their project's graph
    index = HnswVectorIndex(DIM)
    index.add([f"m{i}" for i in range(count)], vectors, projects, ["active"] * count)
    assert index.tidy()
    state = index.state()
    codes = state["projects"]
    expected = {-1: projects.count(None), **{codes[p]: projects.count(p) for p in ("/b", "/c")}}
    expected[codes["/a"]] = projects.count("/a") + 1
    assert state["graph_sizes"] == expected
    searched: list[int] = []
    for code, graph in state["graphs"].items():
        search = graph.search

        def recorded(
            *args: object, code: int = code, search: Callable[..., object] = search, **kw: object
        ) -> object:
            searched.append(code)
            return search(*args, **kw)

        graph.search = recorded
    query = normalised(1, 32)[0]
    found = ids(index.search(VectorQuery(query, 10, project="/b", statuses=CURRENT)))
    shown = np.flatnonzero([p in (None, "/b") for p in projects])
    assert found == [f"m{shown[i]}" for i in np.argsort(-(vectors[shown] @ query), kind="stable")[:10]]
    assert sorted(searched) == sorted([-1, codes["/b"]])
    on_branch = ids(index.search(VectorQuery(vectors[1], 1, project="/a", statuses=CURRENT, branch="feat")))
    assert on_branch == ["m1"]


def test_a_memory_written_again_during_a_build_keeps_its_new_vector_and_project(
    graph_always: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build reads the tail a chunk at a time outside the lock: a memory written again after
    its chunk was read is found with what was written last, not what the build read."""
    monkeypatch.setattr(vector_index, "BUILD_CHUNK_ROWS", 10)
    index = HnswVectorIndex(DIM)
    index.add([f"m{i}" for i in range(40)], normalised(40, 33), ["/a"] * 40, ["active"] * 40)
    moved = unit(0, 0, 0, 0, 0, 0, 0, 1)
    written: list[str] = []

    def write_once() -> None:  # after the first chunk, m0-m9, as the build read it
        if not written:
            written.append("m0")
            index.add(["m0"], rows(moved), ["/b"], ["active"])

    after_each_add(monkeypatch, write_once)
    assert index.tidy() and written == ["m0"]
    vector = index.vector("m0")
    assert vector is not None and vector.tolist() == pytest.approx(moved.tolist(), abs=1e-3)
    found = index.search(VectorQuery(moved, 1, project="/b", statuses=CURRENT))
    assert ids(found) == ["m0"] and found[0][1] == pytest.approx(1.0, abs=1e-3)
    assert ids(index.search(VectorQuery(moved, 40, project="/a", statuses=CURRENT))).count("m0") == 0
    assert len(index) == 40 and index.graph_size == 39  # its new row waits in the tail
    assert index.tidy() and index.graph_size == 40
    assert ids(index.search(VectorQuery(moved, 1, project="/b", statuses=CURRENT))) == ["m0"]
