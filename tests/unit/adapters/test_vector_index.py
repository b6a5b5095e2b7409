"""The in-process vector index: cosine top-k filtered by project and status."""

from __future__ import annotations

import numpy as np
import pytest

from graphmem.adapters.vector_index import NumpyVectorIndex
from graphmem.core.ports import StoredVectors, Vector

DIM = 8
CURRENT = {"active", "resolved"}


def unit(*weights: float) -> Vector:
    vector = np.zeros(DIM, np.float32)
    vector[: len(weights)] = weights
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def rows(*vectors: Vector) -> Vector:
    return np.stack(vectors).astype(np.float32)


@pytest.fixture
def index() -> NumpyVectorIndex:
    """Global "g", project-a "a", project-b "b", and an archived global "old", all near axis 0."""
    index = NumpyVectorIndex(DIM)
    index.add(
        ["g", "a", "b", "old"],
        rows(unit(1, 0.1), unit(1, 0.2), unit(1, 0.3), unit(1)),
        [None, "/a", "/b", None],
        ["active", "active", "active", "archived"],
    )
    return index


def ids(found: list[tuple[str, float]]) -> list[str]:
    return [memory_id for memory_id, _ in found]


def test_search_ranks_by_cosine(index: NumpyVectorIndex) -> None:
    found = index.search(unit(1, 0.2), 10, project="/a", statuses=CURRENT)
    assert ids(found) == ["a", "g"]
    assert found[0][1] == pytest.approx(1.0)


def test_search_without_project_sees_only_global_rows(index: NumpyVectorIndex) -> None:
    assert ids(index.search(unit(1), 10, project=None, statuses=CURRENT)) == ["g"]


def test_search_in_a_project_sees_its_rows_and_global_ones(index: NumpyVectorIndex) -> None:
    assert set(ids(index.search(unit(1), 10, project="/b", statuses=CURRENT))) == {"g", "b"}


def test_search_in_an_unknown_project_sees_only_global_rows(index: NumpyVectorIndex) -> None:
    assert ids(index.search(unit(1), 10, project="/elsewhere", statuses=CURRENT)) == ["g"]


def test_search_respects_statuses(index: NumpyVectorIndex) -> None:
    assert set(ids(index.search(unit(1), 10, project=None, statuses={"active", "archived"}))) == {"g", "old"}
    assert ids(index.search(unit(1), 10, project=None, statuses={"archived"})) == ["old"]
    assert index.search(unit(1), 10, project=None, statuses={"superseded"}) == []


def test_search_returns_at_most_k(index: NumpyVectorIndex) -> None:
    assert len(index.search(unit(1), 1, project="/a", statuses=CURRENT)) == 1
    assert index.search(unit(1), 0, project="/a", statuses=CURRENT) == []


def test_set_status_hides_and_shows_a_row(index: NumpyVectorIndex) -> None:
    index.set_status("g", "superseded")
    assert ids(index.search(unit(1), 10, project=None, statuses=CURRENT)) == []
    index.set_status("g", "active")
    assert ids(index.search(unit(1), 10, project=None, statuses=CURRENT)) == ["g"]


def test_removed_rows_are_not_found(index: NumpyVectorIndex) -> None:
    index.remove("g")
    assert "g" not in index and len(index) == 3
    assert index.search(unit(1), 10, project=None, statuses=CURRENT) == []
    assert index.similarities(unit(1), ["g"]) == {}
    assert index.vector("g") is None


def test_a_removed_row_can_be_added_again(index: NumpyVectorIndex) -> None:
    index.remove("g")
    index.add(["g"], rows(unit(0, 1)), [None], ["active"])
    found = index.search(unit(0, 1), 10, project=None, statuses=CURRENT)
    assert found == [("g", pytest.approx(1.0))]
    assert len(index) == 4


def test_adding_an_existing_id_replaces_its_row(index: NumpyVectorIndex) -> None:
    index.add(["a"], rows(unit(0, 0, 1)), ["/a"], ["active"])
    assert len(index) == 4
    assert ids(index.search(unit(0, 0, 1), 1, project="/a", statuses=CURRENT)) == ["a"]


def test_similarities_cover_only_known_ids(index: NumpyVectorIndex) -> None:
    sims = index.similarities(unit(1, 0.1), ["g", "nope"])
    assert set(sims) == {"g"} and sims["g"] == pytest.approx(1.0)


def test_the_index_grows_beyond_its_first_allocation() -> None:
    index = NumpyVectorIndex(DIM)
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
    assert ids(index.search(first, 1, project=None, statuses=CURRENT)) == ["m0"]
    assert ids(index.search(last, 1, project=None, statuses=CURRENT)) == ["m2299"]


def test_load_replaces_the_contents(index: NumpyVectorIndex) -> None:
    stored = StoredVectors(["x", "y"], rows(unit(1), unit(0, 1)), [None, "/a"], ["active", "resolved"])
    index.load(stored)
    assert len(index) == 2 and "g" not in index
    assert ids(index.search(unit(0, 1), 10, project="/a", statuses=CURRENT)) == ["y", "x"]


def test_an_empty_index_finds_nothing() -> None:
    assert NumpyVectorIndex(DIM).search(unit(1), 5, project=None, statuses=CURRENT) == []
