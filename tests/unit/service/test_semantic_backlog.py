"""Reads never wait on the embedding backlog (``service/semantic.py``): the model runs outside
the index's lock, a person's memories are embedded before scraped ones, a read with no daemon
embeds for a bounded time, and recall says ``semantic_ready: false`` while vectors are missing."""

from __future__ import annotations

import threading
import time
from collections.abc import Collection, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest
from support.memory_service import in_memory_service

from graphmem.adapters.embedders import HashEmbedder
from graphmem.adapters.fake_store import FakeGraphStore
from graphmem.adapters.vector_index import HnswVectorIndex
from graphmem.core.models import Category, MemoryRecord, Scope, Status
from graphmem.core.ports import Vector, VectorQuery, Visibility
from graphmem.errors import InvalidInputError
from graphmem.service import semantic
from graphmem.service.context import NOT_EMBEDDED_NOTE
from graphmem.service.memory import MemoryService
from graphmem.service.semantic import SemanticIndex

NOW = datetime(2026, 5, 1, tzinfo=UTC)
ACTIVE = frozenset({Status.ACTIVE})
WAIT_S = 30.0  # how long a test waits for a thread that must finish: a hang, not a timing
# A read's budget for the backlog (``semantic.EMBED_ON_READ_S``, 0.5 s) cut to a tenth, and the
# slow embedder's batch with it: the same two batches a budget, each test's waits 0.5 to 1 s shorter
EMBED_ON_READ_S = 0.05


@pytest.fixture(autouse=True)
def _short_read_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(semantic, "EMBED_ON_READ_S", EMBED_ON_READ_S)


class GatedEmbedder(HashEmbedder):
    """Embeds only once the test opens the gate; says when a batch has started."""

    def __init__(self) -> None:
        super().__init__(64)
        self.started = threading.Event()
        self.gate = threading.Event()

    def embed(self, texts: Sequence[str]) -> Vector:
        self.started.set()
        assert self.gate.wait(WAIT_S), "the test never opened the gate"
        return super().embed(texts)


class SlowEmbedder(HashEmbedder):
    """Takes ``seconds`` per batch, counting the texts it embedded."""

    def __init__(self, seconds: float) -> None:
        super().__init__(64)
        self.seconds = seconds
        self.embedded = 0

    def embed(self, texts: Sequence[str]) -> Vector:
        time.sleep(self.seconds)
        self.embedded += len(texts)
        return super().embed(texts)


def add(store: FakeGraphStore, index: SemanticIndex, n: int, source: str, text: str) -> str:
    memory_id = f"mem_{n:016x}"
    record = MemoryRecord(memory_id, text, Category.FACT, Scope.GLOBAL, None, NOW, NOW, NOW, source=source)
    store.add_memories([record])
    index.added([memory_id], source=source)
    return memory_id


def test_a_search_does_not_wait_for_a_batch_being_embedded() -> None:
    store = FakeGraphStore(dimension=64)
    embedder = GatedEmbedder()
    index = SemanticIndex(store, embedder, HnswVectorIndex)
    index.embed_on_read = False  # as in the daemon
    add(store, index, 1, "git:abc", "Move to src directory")
    index.index()
    worker = threading.Thread(target=index.embed_pending, daemon=True)
    worker.start()
    assert embedder.started.wait(WAIT_S)
    query = HashEmbedder(64).embed_query("src")
    answered: list[list[tuple[str, float]]] = []
    reader = threading.Thread(
        target=lambda: answered.append(index.search(VectorQuery.of(query, 5, Visibility(None, ACTIVE)))),
        daemon=True,
    )

    reader.start()
    reader.join(WAIT_S)
    finished = not reader.is_alive()
    embedder.gate.set()
    worker.join(WAIT_S)

    assert finished, "the search waited for the embedding under way"
    assert answered == [[]]
    assert index.complete is True


def test_a_persons_memory_is_embedded_before_the_scraped_backlog() -> None:
    store = FakeGraphStore(dimension=64)
    index = SemanticIndex(store, HashEmbedder(64), HnswVectorIndex)
    for n in range(1, 40):
        add(store, index, n, f"git:{n:040x}", f"Commit number {n}")
    mine = add(store, index, 99, "user", "Prefer pnpm over npm in every project")

    done = index.embed_pending(limit=1)

    assert done == 1
    assert mine not in {memory_id for memory_id, _ in store.pending_embeddings(100)}


def test_an_agents_memory_also_goes_first_but_an_imports_waits_its_turn() -> None:
    store = FakeGraphStore(dimension=64)
    index = SemanticIndex(store, HashEmbedder(64), HnswVectorIndex)
    for n in range(1, 10):
        add(store, index, n, f"bootstrap:README.md#{n}", f"Doc fact {n}")
    imported = add(store, index, 50, "import:team.jsonl", "An imported fact")
    agents = add(store, index, 60, "mcp", "The agent learned the deploy script")

    index.embed_pending(limit=1)

    waiting = {memory_id for memory_id, _ in store.pending_embeddings(100)}
    assert agents not in waiting
    assert imported in waiting


class ReadCountingStore(FakeGraphStore):
    """The in-memory store, counting reads of the backlog and of records (each a round trip on
    a database store)."""

    def __init__(self) -> None:
        super().__init__(dimension=64)
        self.backlog_reads = 0
        self.record_reads = 0

    def pending_embeddings(self, limit: int) -> list[tuple[str, str]]:
        self.backlog_reads += 1
        return super().pending_embeddings(limit)

    def get_memories(self, ids: Collection[str]) -> dict[str, MemoryRecord]:
        self.record_reads += 1
        return super().get_memories(ids)


def test_a_short_backlog_is_read_once_with_the_persons_memory_in_it() -> None:
    store = ReadCountingStore()
    index = SemanticIndex(store, HashEmbedder(64), HnswVectorIndex)
    index.index()
    mine = add(store, index, 1, "user", "Prefer pnpm over npm in every project")
    scraped = add(store, index, 2, "git:abc", "Move to src directory")
    store.backlog_reads = store.record_reads = 0

    assert index.embed_pending() == 2

    # One read of the backlog (both fit in a batch: none again after it to see it is empty), and
    # one of the records, for this process's index: none of the person's memory on its own.
    assert (store.backlog_reads, store.record_reads) == (1, 1)
    assert index.complete and store.pending_embeddings(10) == []
    assert index.vector(mine) is not None and index.vector(scraped) is not None


class DeepBacklogStore(FakeGraphStore):
    """The in-memory store, as if ``waiting`` memories had no vector yet (only the vector
    methods the semantic index calls look at them: building 100,000 real rows took seconds)."""

    def __init__(self, waiting: int) -> None:
        super().__init__(dimension=64)
        self.waiting = list(range(waiting))

    def pending_embeddings(self, limit: int) -> list[tuple[str, str]]:
        return [(f"mem_{n:016x}", f"Commit {n}") for n in self.waiting[:limit]]

    def set_embeddings(self, ids: Sequence[str], vectors: Vector) -> None:
        done = {int(memory_id[4:], 16) for memory_id in ids}
        self.waiting = [n for n in self.waiting if n not in done]


def test_with_no_daemon_a_read_embeds_a_deep_backlog_for_a_bounded_time() -> None:
    store = DeepBacklogStore(100_000)
    embedder = SlowEmbedder(EMBED_ON_READ_S / 2)
    index = SemanticIndex(store, embedder, HnswVectorIndex)

    found = index.search(VectorQuery.of(HashEmbedder(64).embed_query("commit"), 5, Visibility(None, ACTIVE)))

    assert found == []
    assert 0 < embedder.embedded <= 100
    assert len(store.waiting) == 100_000 - embedder.embedded
    assert index.complete is False


def test_recall_says_semantic_not_ready_while_memories_wait_for_vectors(fake_memory: MemoryService) -> None:
    assert fake_memory.semantic is not None
    fake_memory.semantic.embed_on_read = False  # a daemon whose worker has not got to it yet
    stored = fake_memory.remember("Use ruff for linting", category="directive").memory.id

    waiting = fake_memory.recall("ruff linting")
    fake_memory.embed_pending()
    embedded = fake_memory.recall("ruff linting")

    assert [hit.memory.id for hit in waiting.hits] == [stored]
    assert (waiting.semantic_ready, embedded.semantic_ready) == (False, True)


@pytest.fixture
def backlogged(tmp_path: Path) -> Iterator[tuple[MemoryService, SlowEmbedder]]:
    """A one-shot service (no daemon: reads embed) whose store has 100,000 memories waiting."""
    embedder = SlowEmbedder(EMBED_ON_READ_S / 2)
    memory = in_memory_service(tmp_path / "data", store=DeepBacklogStore(100_000), embedder=embedder)
    yield memory, embedder
    memory.close()


def test_a_question_of_2000_words_is_answered_without_waiting_on_a_deep_backlog(
    backlogged: tuple[MemoryService, SlowEmbedder],
) -> None:
    memory, embedder = backlogged
    memory.remember("Retries use exponential backoff with jitter")
    question = " ".join(["why", "do", "the", "retries", "use", "backoff"] * 334)[:7_999]

    result = memory.recall(question)

    assert len(question.split()) >= 1_300
    assert [hit.memory.text for hit in result.hits] == ["Retries use exponential backoff with jitter"]
    assert result.semantic_ready is False
    assert embedder.embedded <= 100


def test_a_question_of_punctuation_only_gets_an_answer_with_nothing_in_it(
    backlogged: tuple[MemoryService, SlowEmbedder],
) -> None:
    memory, _ = backlogged
    memory.remember("Retries use exponential backoff with jitter")

    result = memory.recall("?!...;; -- ...")
    bundle = memory.get_context("?!...;; -- ...")

    assert result.hits == []
    assert "Nothing remembered about this yet." in bundle.markdown


def test_a_question_over_the_limit_says_how_to_fix_it(backlogged: tuple[MemoryService, SlowEmbedder]) -> None:
    memory, _ = backlogged

    with pytest.raises(InvalidInputError, match="shorten it"):
        memory.recall(" ".join(["retries"] * 2_000))


def test_a_context_says_when_memories_still_wait_for_their_vectors(fake_memory: MemoryService) -> None:
    assert fake_memory.semantic is not None
    fake_memory.semantic.embed_on_read = False  # a daemon whose worker has not got to it yet
    fake_memory.remember("Checkout retries payments twice")

    waiting = fake_memory.get_context("checkout retries")
    fake_memory.embed_pending()
    embedded = fake_memory.get_context("checkout retries")

    assert NOT_EMBEDDED_NOTE in waiting.notes
    assert NOT_EMBEDDED_NOTE not in embedded.notes


def test_with_no_daemon_a_read_finds_the_memory_just_written_while_reads_pause_on_a_backlog(
    backlogged: tuple[MemoryService, SlowEmbedder], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer recalls what it just wrote: while reads pause on a backlog they did not finish
    (a team store's is every writer's memories), the newest memory is embedded anyway, else
    its near-duplicates, which have vectors, outranked it (ten writers on PostgreSQL)."""
    memory, _ = backlogged
    monkeypatch.setattr(semantic, "READ_PAUSE_S", 3600.0)  # the pause outlasts the test, however slow
    for i in range(7):
        memory.remember(f"Writer alpha decided rule number {i} for the alpha service")
    memory.recall("alpha service rule number 6")  # spends a read's budget on the backlog: reads pause
    newest = memory.remember("Writer alpha decided rule number 7 for the alpha service").memory

    result = memory.recall("alpha service rule number 7", limit=5)

    assert result.hits[0].memory.id == newest.id
    assert result.semantic_ready is False  # the backlog still waits
