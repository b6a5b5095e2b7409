"""The embedded store as ``graphmem/app.py`` wires it: an 8-bit HNSW graph whose cosines are
the stored vectors' own, the memory a large import or a graph build freed handed back, and the
cycle collector kept out of a bootstrap's way."""

from __future__ import annotations

import contextlib
import gc
import io
import weakref
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from graphmem import app
from graphmem.adapters import process_memory, vector_index
from graphmem.adapters.embedders import HashEmbedder
from graphmem.adapters.hnsw_graph import graph_dtype
from graphmem.app import open_memory
from graphmem.core.ports import VectorQuery
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[MemoryService]:
    service = open_memory(load_settings(data_dir=tmp_path / "data"), embedder=HashEmbedder(32))
    try:
        yield service
    finally:
        service.close()


def test_the_embedded_graph_is_8_bit_and_scores_with_the_stored_vectors(
    memory: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_index, "HNSW_FROM_ROWS", 1)
    monkeypatch.setattr(vector_index, "EXACT_VISIBLE_ROWS", 0)
    texts = [f"note {i}: the {word} service restarts at night" for i, word in enumerate("abcdefghijklmnop")]
    ids = [memory.remember(text, category="fact").memory.id for text in texts]
    assert memory.semantic is not None
    memory.semantic.embed_pending()
    index = memory.semantic.index()  # opened at its first use
    assert isinstance(index, vector_index.HnswVectorIndex) and memory.semantic.tidy()
    assert {graph_dtype(graph) for graph in index.state()["graphs"].values()} == {"i8"}
    query = HashEmbedder(32).embed_query("the restarts at night")
    found = dict(index.search(VectorQuery(query, 5, project=None, statuses=frozenset({"active"}))))
    stored = {memory_id: np.asarray(memory.store.embedding_of(memory_id), np.float32) for memory_id in ids}
    assert found and all(sim == pytest.approx(float(stored[i] @ query), abs=1e-6) for i, sim in found.items())


def test_a_large_import_hands_the_memory_it_freed_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settled: list[None] = []
    monkeypatch.setattr(process_memory, "release_freed_memory", lambda: settled.append(None))
    monkeypatch.setattr(process_memory, "LARGE_JOB_ROWS", 3)
    source = open_memory(load_settings(data_dir=tmp_path / "a"), embedder=HashEmbedder(32))
    try:
        for i in range(3):
            source.remember(f"decision {i}: ship the {i}th release on Friday", category="decision")
        out = io.StringIO()
        source.export(out)
    finally:
        source.close()
    lines = out.getvalue().splitlines(keepends=True)
    target = open_memory(load_settings(data_dir=tmp_path / "b"), embedder=HashEmbedder(32))
    try:
        assert target.import_text("".join(lines[:3])).records == 2 and not settled  # a small one: nothing
        assert target.import_text("".join(lines)).records == 3 and len(settled) == 1
    finally:
        target.close()


def test_a_graph_build_hands_the_memory_it_freed_back(monkeypatch: pytest.MonkeyPatch) -> None:
    settled: list[None] = []
    monkeypatch.setattr(process_memory, "release_freed_memory", lambda: settled.append(None))
    monkeypatch.setattr(process_memory, "LARGE_JOB_ROWS", 3)
    monkeypatch.setattr(vector_index, "HNSW_FROM_ROWS", 1)
    small = vector_index.HnswVectorIndex(4)
    small.add(["a", "b"], np.eye(4, dtype=np.float32)[:2], [None, None], ["active", "active"])
    assert small.tidy() and not settled  # a small build: nothing
    index = vector_index.HnswVectorIndex(4)
    index.add(["a", "b", "c"], np.eye(4, dtype=np.float32)[:3], [None] * 3, ["active"] * 3)
    assert index.tidy() and settled == [None]


def test_releasing_collects_what_only_a_cycle_holds() -> None:
    class Node:
        other: object = None

    first, second = Node(), Node()
    first.other, second.other = second, first
    held = weakref.ref(first)
    del first, second
    gc.disable()  # only the release may collect it
    try:
        process_memory.release_freed_memory()
    finally:
        gc.enable()
    assert held() is None


def test_a_large_job_collects_rarely_and_the_process_thresholds_are_back_after_the_last() -> None:
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)  # the daemon's, once it serves
    try:
        with process_memory.collecting_rarely():
            assert gc.get_threshold() == process_memory.JOB_GC_THRESHOLDS
            with process_memory.collecting_rarely():  # a second job at once
                assert gc.get_threshold() == process_memory.JOB_GC_THRESHOLDS
            assert gc.get_threshold() == process_memory.JOB_GC_THRESHOLDS  # the first still runs
        assert gc.get_threshold() == (700, 10, 10)
        gc.set_threshold(90_000, 5, 60)  # a process that collects rarer still keeps its pace
        with process_memory.collecting_rarely():
            assert gc.get_threshold() == (90_000, 50, 60)
        assert gc.get_threshold() == (90_000, 5, 60)
    finally:
        gc.set_threshold(*before)


def test_a_bootstrap_runs_as_a_large_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[int, int, int]] = []
    real = process_memory.collecting_rarely

    @contextlib.contextmanager
    def watched() -> Iterator[process_memory.JobRows]:
        with real() as job:
            seen.append(gc.get_threshold())
            yield job

    monkeypatch.setattr(app, "collecting_rarely", watched)
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "app.py").write_text("def run():\n    return 1\n")
    memory = open_memory(load_settings(data_dir=tmp_path / "data"), embedder=HashEmbedder(32))
    try:
        assert memory.bootstrap(tmp_path / "repo", history=0).symbols == 1
    finally:
        memory.close()
    assert seen == [process_memory.JOB_GC_THRESHOLDS]


def test_a_large_bootstrap_hands_back_what_it_freed_and_a_small_or_unchanged_one_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settled: list[tuple[int, int, int]] = []  # the collector's thresholds at each release
    monkeypatch.setattr(process_memory, "release_freed_memory", lambda: settled.append(gc.get_threshold()))
    monkeypatch.setattr(process_memory, "LARGE_JOB_ROWS", 2)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "app.py").write_text("def run():\n    return 1\n")
    before = gc.get_threshold()
    memory = open_memory(load_settings(data_dir=tmp_path / "data"), embedder=HashEmbedder(32))
    try:
        assert memory.bootstrap(repo, history=0).symbols == 1 and not settled  # a small pass
        (repo / "more.py").write_text("def a():\n    pass\n\n\ndef b():\n    pass\n")
        assert memory.bootstrap(repo, history=0).symbols == 3
        assert settled == [before]  # once, after the job: the process's own pace back first
        assert memory.bootstrap(repo, history=0).parsed == 0 and len(settled) == 1  # nothing changed
        (repo / "app.py").unlink()  # a removal resolves the project's edges again, from every parse
        assert memory.bootstrap(repo, history=0).removed == 1 and len(settled) == 2
    finally:
        memory.close()
