"""The semantic index (``service/semantic.py``) on the in-memory store: the embedding backlog,
cosine search with its filters, and the index kept in step with writes."""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from graphmem.adapters.embedders import HashEmbedder
from graphmem.adapters.fake_store import FakeGraphStore
from graphmem.adapters.vector_files import VectorIndexFiles
from graphmem.adapters.vector_index import HnswVectorIndex
from graphmem.core.models import Category, MemoryRecord, Scope, Status
from graphmem.core.ports import StoredVectors, Vector, VectorQuery, Visibility
from graphmem.service.semantic import SemanticIndex

NOW = datetime(2026, 5, 1, tzinfo=UTC)
ACTIVE = frozenset({Status.ACTIVE})
DEPLOY = "Deploys to staging need a green pipeline"
CACHE = "The build cache lives in /var/cache/shop"


class CountingEmbedder(HashEmbedder):
    """The hash embedder, counting the texts it was asked to embed."""

    def __init__(self) -> None:
        super().__init__(64)
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> Vector:
        self.texts.extend(texts)
        return super().embed(texts)


@pytest.fixture
def store() -> FakeGraphStore:
    return FakeGraphStore(dimension=64)


@pytest.fixture
def embedder() -> CountingEmbedder:
    return CountingEmbedder()


@pytest.fixture
def index(store: FakeGraphStore, embedder: CountingEmbedder) -> SemanticIndex:
    return SemanticIndex(store, embedder, HnswVectorIndex)


def add(store: FakeGraphStore, memory_id: str, text: str, project: str | None = None) -> MemoryRecord:
    scope = Scope.PROJECT if project else Scope.GLOBAL
    record = MemoryRecord(memory_id, text, Category.FACT, scope, project, NOW, NOW, NOW)
    store.add_memories([record])
    return record


def found(index: SemanticIndex, text: str, project: str | None = None) -> list[str]:
    query = VectorQuery.of(index.embed_query(text), 10, Visibility(project, ACTIVE))
    return [memory_id for memory_id, _ in index.search(query)]


def test_the_backlog_is_embedded_once(index: SemanticIndex, store: FakeGraphStore) -> None:
    add(store, "mem_0000000000000001", DEPLOY)
    add(store, "mem_0000000000000002", CACHE)

    first = index.embed_pending()
    second = index.embed_pending()

    assert (first, second) == (2, 0)
    assert store.pending_embeddings(10) == []
    assert index.maybe_pending is False


def test_a_limit_embeds_at_most_that_many(index: SemanticIndex, store: FakeGraphStore) -> None:
    for n in range(3):
        add(store, f"mem_000000000000000{n}", f"{DEPLOY} {n}")

    assert index.embed_pending(limit=2) == 2
    assert len(store.pending_embeddings(10)) == 1


def test_a_search_finds_the_memory_that_says_the_same_first(
    index: SemanticIndex, store: FakeGraphStore
) -> None:
    add(store, "mem_0000000000000001", CACHE)
    add(store, "mem_0000000000000002", DEPLOY)

    hits = index.search(VectorQuery.of(index.embed_query(DEPLOY), 10, Visibility(None, ACTIVE)))

    assert hits[0][0] == "mem_0000000000000002"
    assert hits[0][1] == pytest.approx(1.0, abs=1e-5)


def test_a_search_in_a_project_leaves_other_projects_out(index: SemanticIndex, store: FakeGraphStore) -> None:
    add(store, "mem_0000000000000001", DEPLOY, project="/work/shop")
    add(store, "mem_0000000000000002", DEPLOY + " too", project="/work/other")

    assert "mem_0000000000000002" not in found(index, DEPLOY, project="/work/shop")
    assert "mem_0000000000000001" in found(index, DEPLOY, project="/work/shop")


def test_a_memory_whose_status_changed_leaves_an_active_only_search(
    index: SemanticIndex, store: FakeGraphStore
) -> None:
    add(store, "mem_0000000000000001", DEPLOY)
    index.index()

    store.update_memory("mem_0000000000000001", {"status": Status.ARCHIVED})
    index.status_changed("mem_0000000000000001", Status.ARCHIVED)

    assert found(index, DEPLOY) == []


def test_a_removed_memory_is_never_found(index: SemanticIndex, store: FakeGraphStore) -> None:
    add(store, "mem_0000000000000001", DEPLOY)
    index.index()

    store.delete_memory("mem_0000000000000001")
    index.removed("mem_0000000000000001")

    assert found(index, DEPLOY) == []


def test_a_changed_text_is_found_by_its_new_words(index: SemanticIndex, store: FakeGraphStore) -> None:
    record = add(store, "mem_0000000000000001", DEPLOY)
    index.index()

    store.replace_text(record.id, text=CACHE, content_hash="cache", updated_at=NOW, entities=[])
    index.text_changed(record.id)
    hits = index.search(VectorQuery.of(index.embed_query(CACHE), 1, Visibility(None, ACTIVE)))

    assert hits[0][0] == record.id
    assert hits[0][1] == pytest.approx(1.0, abs=1e-5)


def test_a_repeated_query_is_embedded_once(index: SemanticIndex, embedder: CountingEmbedder) -> None:
    index.embed_query("which graph database")
    index.embed_query("which graph database")

    assert embedder.texts == ["which graph database"]


def test_without_embed_on_read_a_search_leaves_the_backlog_to_the_worker(
    index: SemanticIndex, store: FakeGraphStore
) -> None:
    add(store, "mem_0000000000000001", DEPLOY)
    index.embed_on_read = False

    assert found(index, DEPLOY) == []
    assert len(store.pending_embeddings(10)) == 1


def test_after_a_reset_the_index_is_read_again_from_the_store(
    index: SemanticIndex, store: FakeGraphStore
) -> None:
    add(store, "mem_0000000000000001", DEPLOY)
    index.index()
    index.reset()

    assert index.loaded is False
    assert found(index, DEPLOY) == ["mem_0000000000000001"]


# -- the index saved between runs -------------------------------------------------------


class LoadCountingStore(FakeGraphStore):
    """The in-memory store, counting how often every vector is read back."""

    loads = 0
    pending_reads = 0

    def load_vectors(self) -> StoredVectors:
        self.loads += 1
        return super().load_vectors()

    def pending_embeddings(self, limit: int) -> list[tuple[str, str]]:
        self.pending_reads += 1
        return super().pending_embeddings(limit)


@pytest.fixture
def saved_store() -> LoadCountingStore:
    return LoadCountingStore(dimension=64)


def saving(store: FakeGraphStore, embedder: CountingEmbedder, directory: Path) -> SemanticIndex:
    return SemanticIndex(store, embedder, HnswVectorIndex, VectorIndexFiles(directory))


def run_and_save(store: FakeGraphStore, embedder: CountingEmbedder, directory: Path) -> None:
    """A run that stores DEPLOY's memory, loads the index and saves it at its close."""
    add(store, "mem_0000000000000001", DEPLOY)
    first = saving(store, embedder, directory)
    first.index()
    first.close()


def test_a_closed_index_is_restored_without_reading_the_vectors_back(
    saved_store: LoadCountingStore, embedder: CountingEmbedder, tmp_path: Path
) -> None:
    add(saved_store, "mem_0000000000000001", DEPLOY)
    first = saving(saved_store, embedder, tmp_path)
    assert found(first, DEPLOY) == ["mem_0000000000000001"]
    first.close()

    second = saving(saved_store, embedder, tmp_path)
    assert found(second, DEPLOY) == ["mem_0000000000000001"]
    assert saved_store.loads == 1  # only the first run read them from the store
    second.close()


def test_a_restored_index_with_every_memory_embedded_looks_for_no_backlog(
    saved_store: LoadCountingStore, embedder: CountingEmbedder, tmp_path: Path
) -> None:
    run_and_save(saved_store, embedder, tmp_path)
    saved_store.pending_reads = 0

    second = saving(saved_store, embedder, tmp_path)
    assert found(second, DEPLOY) == ["mem_0000000000000001"]
    assert saved_store.pending_reads == 0  # a one-shot recall scans no memories for one
    second.close()
    add(saved_store, "mem_0000000000000002", CACHE)  # written by another run, not embedded

    third = saving(saved_store, embedder, tmp_path)
    assert found(third, CACHE)[0] == "mem_0000000000000002"
    third.close()


@pytest.mark.parametrize("change", ["status", "delete", "text", "embedded"])
def test_changes_after_the_save_are_read_again_after_a_crash(
    saved_store: LoadCountingStore, embedder: CountingEmbedder, tmp_path: Path, change: str
) -> None:
    record = add(saved_store, "mem_0000000000000001", DEPLOY)
    first = saving(saved_store, embedder, tmp_path)
    first.index()
    first.close()
    journal = VectorIndexFiles(tmp_path)
    crashed = SemanticIndex(saved_store, embedder, HnswVectorIndex, journal)
    crashed.index()
    # Written through the same steps as the writer's, then the process dies: no close, no save.
    crashed.will_change([record.id])
    if change == "status":
        saved_store.update_memory(record.id, {"status": Status.ARCHIVED})
        crashed.status_changed(record.id, Status.ARCHIVED)
    elif change == "delete":
        saved_store.delete_memory(record.id)
        crashed.removed(record.id)
    elif change == "text":
        saved_store.replace_text(record.id, text=CACHE, content_hash="c", updated_at=NOW, entities=[])
        crashed.text_changed(record.id)
        crashed.embed_pending()
    else:
        add(saved_store, "mem_0000000000000002", CACHE)
        crashed.embed_pending()
    journal.close()  # the process dies: the journal is all that is left of the change

    after = saving(saved_store, embedder, tmp_path)
    best = after.search(VectorQuery.of(after.embed_query(CACHE), 1, Visibility(None, ACTIVE)))
    if change in ("status", "delete"):
        assert best == []
    else:
        expected = "mem_0000000000000001" if change == "text" else "mem_0000000000000002"
        assert best[0][0] == expected and best[0][1] == pytest.approx(1.0, abs=1e-5)
    assert saved_store.loads == 1  # caught up from the journal, not read back whole
    after.close()


def test_a_save_that_disagrees_with_the_store_is_rebuilt_from_it(
    saved_store: LoadCountingStore, embedder: CountingEmbedder, tmp_path: Path
) -> None:
    run_and_save(saved_store, embedder, tmp_path)
    saved_store.delete_memory("mem_0000000000000001")  # behind the index's back: no journal

    after = saving(saved_store, embedder, tmp_path)
    assert found(after, DEPLOY) == []
    assert saved_store.loads == 2
    after.close()


def test_a_reset_forgets_the_save(
    saved_store: LoadCountingStore, embedder: CountingEmbedder, tmp_path: Path
) -> None:
    add(saved_store, "mem_0000000000000001", DEPLOY)
    first = saving(saved_store, embedder, tmp_path)
    first.index()
    first.close()
    again = saving(saved_store, embedder, tmp_path)
    again.reset()
    again.index()
    assert saved_store.loads == 2
    again.close()


def test_queries_embedded_at_once_by_many_threads_all_get_their_vector(
    index: SemanticIndex, embedder: CountingEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A daemon serves several agents: two recalls evicting the same oldest query raised a
    # KeyError from the second (seen with 16 concurrent clients).
    monkeypatch.setattr("graphmem.service.semantic.QUERY_CACHE_SIZE", 1)
    # The model's time is no part of the race: one vector for every query, at once, leaves the
    # threads in the cache (that eviction failed 40 runs of 40 here, 36 with the hash embedder).
    vector = embedder.embed_query("any")
    monkeypatch.setattr(embedder, "embed_query", lambda text: vector)
    errors: list[BaseException] = []
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)

    def ask(thread: int) -> None:
        try:
            for i in range(5000):
                assert index.embed_query(f"query {thread} {i}").shape == (64,)
        except BaseException as exc:  # collected, asserted below
            errors.append(exc)

    try:
        threads = [threading.Thread(target=ask, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)

    assert errors == []
