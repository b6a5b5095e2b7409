"""The full-text index (tantivy) on its own and beside a real Kùzu store in ``tmp_path``."""

from __future__ import annotations

import itertools
import json
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import tantivy

from graphmem.adapters import lexical_index
from graphmem.adapters.kuzu_store import KuzuGraphStore
from graphmem.adapters.lexical_analysis import clauses, indexed_pairs, query_parts
from graphmem.adapters.lexical_bounds import ScoreBounds
from graphmem.adapters.lexical_index import DIRNAME, META, LexicalIndex
from graphmem.core.models import Category, MemoryRecord, Scope, Status
from graphmem.core.ports import Visibility
from graphmem.core.text import fold
from graphmem.errors import StoreLockedError
from tests.support.lexical import Records, empty_index
from tests.support.records import memory
from tests.support.stores import new_kuzu

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
GLOBAL = Visibility(None)
EVERYTHING = Visibility("/src/proj", frozenset(Status))


def ids(hits: list[tuple[str, float]]) -> list[str]:
    return [memory_id for memory_id, _ in hits]


@pytest.fixture
def index(tmp_path: Path) -> Iterator[LexicalIndex]:
    index = empty_index(tmp_path)
    yield index
    index.close()


def both_ways(index: LexicalIndex, query: str, visibility: Visibility, limit: int = 10) -> list[str]:
    """The hits before the background commit (from the overlay) and after it, checked equal."""
    before = ids(index.search(query, visibility, limit))
    index.flush()
    after = ids(index.search(query, visibility, limit))
    assert before == after
    return after


@pytest.fixture
def store(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[KuzuGraphStore]:
    """A new, empty store: a copy of the process's template (``support/stores.py``)."""
    store = new_kuzu(tmp_path / "data", request, 8)
    yield store
    store.close()


# -- the query ---------------------------------------------------------------------------


def test_a_query_asks_its_words_and_pairs_without_stopwords_and_only_stopwords_as_a_phrase() -> None:
    # The whole query is asked too, for which memories come first rather than BM25 (see search).
    assert query_parts("Why did we pick Kùzu for the graph store?") == (
        ["pick", "kuzu", "graph", "store"],
        ["pick kuzu", "graph store"],
    )
    assert query_parts("How have you been?") == ([], ["how have you been"])
    assert query_parts("graph store", phrase="the graph store") == (["graph", "store"], ["graph store"])


@pytest.mark.parametrize(
    "memory_id",
    [
        "mem_0000000000000000",
        "mem_7fffffffffffffff",
        "mem_8000000000000000",
        "mem_ffffffffffffffff",
        "mem_ABCDEF0123456789",
        "mem_12",
        "imported:note-7",
        "mem_0123456789abcdef0",
    ],
)
def test_every_shape_of_id_comes_back_as_written(index: LexicalIndex, memory_id: str) -> None:
    # mem_ and 16 lower-case hex digits are read from the key column; any other id (an
    # import may bring its own) from the stored document.
    index.add(
        [memory(memory_id, "the sprocket cache holds warm rows"), memory("mem_aaaaaaaaaaaaaaaa", "sprocket")]
    )

    assert set(both_ways(index, "sprocket cache", GLOBAL)) == {memory_id, "mem_aaaaaaaaaaaaaaaa"}
    assert both_ways(index, "sprocket cache", GLOBAL)[0] == memory_id


@pytest.mark.parametrize("query", ["", "   ", "the of", "???", '"', "*", "OR NOT", "the not of"])
def test_a_query_with_no_word_to_search_matches_nothing(index: LexicalIndex, query: str) -> None:
    index.add([memory("m1", "the of and, or not")])
    assert index.search(query, GLOBAL, 10) == []


@pytest.mark.parametrize("query", ["the of and", "AND OR NOT"])
def test_three_stopwords_are_a_phrase_found_where_they_stand_together(
    index: LexicalIndex, query: str
) -> None:
    index.add([memory("m1", "the of and, or not"), memory("m2", "not or and of the")])
    assert both_ways(index, query, GLOBAL) == ["m1"]
    assert index.search(query, GLOBAL, 10).exact == {"m1"}


@pytest.mark.parametrize(
    "query", ['a "quoted" word', "NEAR(x y)", "col:value", "x* -y ^z", "a) OR (b", "'; DROP TABLE docs; --"]
)
def test_fts5_syntax_in_a_query_is_searched_as_words(index: LexicalIndex, query: str) -> None:
    index.add([memory("m1", "quoted near value table docs drop")])
    assert set(ids(index.search(query, GLOBAL, 10))) <= {"m1"}
    assert index.count() == 1


# -- ranking -----------------------------------------------------------------------------


def test_search_stems_and_folds_accents(index: LexicalIndex) -> None:
    index.add([memory("m1", "We chose Kùzu for storing graphs."), memory("m2", "Unrelated note.")])
    assert both_ways(index, "kuzu stores graph", GLOBAL) == ["m1"]


def test_the_memory_with_the_words_in_order_ranks_first(index: LexicalIndex) -> None:
    index.add(
        [
            memory("scrambled", "The store of the graph retries the payments webhook."),
            memory("phrase", "Payments retries go through the graph store webhook."),
        ]
    )
    assert both_ways(index, "graph store", GLOBAL) == ["phrase", "scrambled"]


def test_a_half_remembered_sentence_finds_the_memory_that_holds_it_word_for_word(
    index: LexicalIndex,
) -> None:
    index.add(
        [
            memory("words", "Going to the beach? The beach was closed, so we went to the park."),
            memory("sentence", "We went to the beach and the park was closed."),
        ]
    )
    assert both_ways(index, "went to the beach and the park", GLOBAL)[0] == "sentence"


def test_the_memory_holding_the_phrase_is_named_exact_before_and_after_the_commit(
    index: LexicalIndex,
) -> None:
    index.add(
        [
            memory("words", "Going to the beach? The beach was closed, so we went to the park."),
            memory("sentence", "We went to the beach and the park was closed."),
        ]
    )
    before = index.search("went to the beach and the park", GLOBAL, 10)
    index.flush()
    after = index.search("went to the beach and the park", GLOBAL, 10)
    assert before.exact == after.exact == {"sentence"}
    assert ids(before) == ids(after) == ["sentence", "words"]
    assert all(0 < score < 100 for _, score in [*before, *after])  # BM25: holding the phrase adds none


@pytest.mark.parametrize("seed", range(3))
def test_a_pair_term_matches_the_memories_its_phrase_matches_scored_by_the_phrases_idf(
    index: LexicalIndex, seed: int
) -> None:
    rng = random.Random(seed)
    vocabulary = ["cache", "caching", "policy", "the", "Retry", "retries", "Kùzu", "x" * 45, "ü" * 21, "a.b"]
    texts = [" ".join(rng.choices(vocabulary, k=rng.randint(1, 9))) for _ in range(150)]
    index.add([memory(f"mem_{n:016x}", text) for n, text in enumerate(texts)])
    index.flush()
    searcher = index._searcher
    bounds = ScoreBounds(searcher)
    pairs = {f"mem_{n:016x}": Counter(indexed_pairs(fold(text)).split()) for n, text in enumerate(texts)}
    average = sum(c.total() for c in pairs.values()) / len(texts)
    compared = 0
    for first, second in itertools.product(vocabulary, repeat=2):
        phrase = clauses([f"{first} {second}"])
        if not phrase or len(phrase[0].tokens) != 2 or len(set(phrase[0].tokens)) == 1:
            continue  # a word the index drops: no pair; a word twice: never asked (query_parts)
        paired = bounds.paired(phrase[0])
        idf = bounds.idf("text", phrase[0].tokens)
        assert idf is not None
        by_phrase = {address_key(a) for _, a in searcher.search(phrase[0].query, 200).hits}
        by_pair = searcher.search(paired.query, 200).hits
        assert {address_key(a) for _, a in by_pair} == by_phrase, (first, second)
        for score, address in by_pair:  # BM25 of the phrase's idf, the pair's count and length
            held = pairs[searcher.doc(address)["id"][0]]
            count = held["_".join(phrase[0].tokens)]
            norm = 1.2 * (1 - 0.75 + 0.75 * held.total() / average)
            assert score == pytest.approx(2.2 * idf * count / (count + norm), rel=1e-3)
        compared += len(by_pair)
    assert compared


def address_key(address: tantivy.DocAddress) -> tuple[int, int]:
    return address.segment_ord, address.doc


def test_a_word_too_long_to_index_leaves_a_gap_between_the_pairs() -> None:
    assert indexed_pairs("retry policy") == "retri_polici"
    assert indexed_pairs(f"retry {'x' * 45} policy") == ""
    assert indexed_pairs("Caching, the POLICY") == "cach_the the_polici"


@pytest.mark.parametrize("word", ["x" * 60, "ünïcødé" * 9])
def test_a_phrase_of_words_too_long_to_index_finds_nothing_and_fails_nothing(
    index: LexicalIndex, word: str
) -> None:
    index.add([memory("m1", "a note")])
    index.flush()
    assert index.search(f"{word} {word} {word}", GLOBAL, 10) == []


def test_scores_are_positive_and_best_first(index: LexicalIndex) -> None:
    index.add([memory("a", "redis cache redis cache"), memory("b", "redis queue"), memory("c", "nothing")])
    overlay = index.search("redis cache", GLOBAL, 10)
    index.flush()
    hits = index.search("redis cache", GLOBAL, 10)
    assert ids(hits) == ids(overlay) == ["a", "b"]
    assert hits[0][1] > hits[1][1] > 0
    assert overlay[0][1] > overlay[1][1] > 0


def test_limit_bounds_the_hits(index: LexicalIndex) -> None:
    index.add([memory(f"m{i}", f"cache note {i}") for i in range(20)])
    assert len(index.search("cache", GLOBAL, 5)) == 5
    assert index.search("cache", GLOBAL, 0) == []


# -- visibility --------------------------------------------------------------------------


def test_search_keeps_only_what_the_visibility_allows(index: LexicalIndex) -> None:
    index.add(
        [
            memory("global", "cache policy"),
            memory("mine", "cache policy", scope=Scope.PROJECT, project="/src/proj"),
            memory("theirs", "cache policy", scope=Scope.PROJECT, project="/src/other"),
            memory("archived", "cache policy", status=Status.ARCHIVED),
            memory("decision", "cache policy", category=Category.DECISION),
            memory("old", "cache policy", created_at=NOW - timedelta(days=30)),
        ]
    )
    assert set(both_ways(index, "cache", GLOBAL)) == {"global", "decision", "old"}
    mine = Visibility("/src/proj")
    assert set(both_ways(index, "cache", mine)) == {"global", "mine", "decision", "old"}
    decisions = Visibility(None, categories=frozenset({Category.DECISION}))
    assert both_ways(index, "cache", decisions) == ["decision"]
    recent = Visibility(None, since=NOW - timedelta(days=1))
    assert set(both_ways(index, "cache", recent)) == {"global", "decision"}
    assert "archived" in both_ways(index, "cache", EVERYTHING)


def test_changed_fields_change_what_is_visible(tmp_path: Path) -> None:
    source = Records()
    index = LexicalIndex(tmp_path / DIRNAME, source)  # type: ignore[arg-type]
    try:
        source.records["m1"] = memory("m1", "cache policy")
        index.add([source.records["m1"]])
        index.flush()
        source.records["m1"] = memory("m1", "cache policy", status=Status.ARCHIVED)
        index.set_fields("m1", {"status": Status.ARCHIVED})
        assert both_ways(index, "cache", GLOBAL) == []
        source.records["m1"] = memory("m1", "cache policy", scope=Scope.PROJECT, project="/src/proj")
        index.set_fields("m1", {"status": Status.ACTIVE, "scope": Scope.PROJECT, "project": "/src/proj"})
        assert both_ways(index, "cache", GLOBAL) == []
        assert both_ways(index, "cache", Visibility("/src/proj")) == ["m1"]
    finally:
        index.close()


def test_a_removed_or_replaced_memory_is_not_found_by_its_old_words(index: LexicalIndex) -> None:
    index.add([memory("m1", "redis cache"), memory("m2", "redis queue")])
    index.remove(["m1"])
    index.add([memory("m2", "kafka topic")])
    assert both_ways(index, "redis", EVERYTHING) == []
    assert both_ways(index, "kafka", EVERYTHING) == ["m2"]
    assert index.count() == 1


def test_the_journal_names_what_is_not_committed_yet(index: LexicalIndex) -> None:
    index.mark(["m1", "m2"])
    assert index.journal() == ["m1", "m2"]
    index.add([memory("m1", "x")])
    index.flush()
    assert index.journal() == ["m2"]  # marked, its write not done: kept
    index.remove(["m2"])
    index.flush()
    assert index.journal() == []
    index.mark(["m3"], {"reinforced": 2})  # no filter reads it: nothing to note
    assert index.journal() == []


def test_many_changes_before_a_commit_are_searched_from_the_overlay(index: LexicalIndex) -> None:
    index.add([memory(f"m{i}", f"note {i} about redis") for i in range(30)])
    index.flush()
    index.remove([f"m{i}" for i in range(0, 30, 2)])
    index.add([memory("new", "redis redis redis")])
    found = ids(index.search("redis", GLOBAL, 100))
    assert found[0] == "new"
    assert set(found) == {"new", *(f"m{i}" for i in range(1, 30, 2))}
    assert both_ways(index, "redis", GLOBAL, 100)[0] == "new"


# -- beside the Kùzu store -----------------------------------------------------------------


def test_the_store_searches_through_the_index_and_finds_it_again_after_reopening(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    data = tmp_path / "data"
    store = new_kuzu(data, request, 8)
    store.add_memories([memory("m1", "We chose Redis for the cache."), memory("m2", "Deploy on Fridays.")])
    store.close()
    store = KuzuGraphStore(data, dimension=8)
    try:
        assert ids(store.search_text("redis cache", GLOBAL, 10)) == ["m1"]
    finally:
        store.close()


def test_the_store_keeps_the_index_current_through_every_write(store: KuzuGraphStore) -> None:
    many = [memory(f"bulk{i}", f"bulk note {i} about kafka") for i in range(70)]  # COPY path
    store.add_memories([memory("m1", "redis cache"), memory("m2", "redis queue"), *many])
    assert len(store.search_text("kafka", GLOBAL, 100)) == 70
    store.get_memories(["m1", "m2"])  # cached before the change
    store.update_memory("m2", {"status": Status.ARCHIVED})
    assert ids(store.search_text("redis", GLOBAL, 10)) == ["m1"]
    store.replace_text("m1", text="postgres cache", content_hash="h", updated_at=NOW, entities=[])
    assert store.search_text("redis", GLOBAL, 10) == []
    assert ids(store.search_text("postgres", GLOBAL, 10)) == ["m1"]
    store.delete_memory("m1")
    assert store.search_text("postgres", EVERYTHING, 10) == []


def test_a_deleted_memory_is_never_returned_even_after_a_crash_between_the_two_writes(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    store = new_kuzu(data, request, 8)
    store.add_memories([memory("m1", "redis cache"), memory("m2", "redis queue")])
    store.close()
    store = KuzuGraphStore(data, dimension=8)
    with monkeypatch.context() as crash:
        crash.setattr(LexicalIndex, "remove", lambda self, ids: (_ for _ in ()).throw(SystemExit("killed")))
        with pytest.raises(SystemExit):
            store.delete_memory("m1")  # Kùzu deleted it; the index did not hear of it
        crash.setattr(LexicalIndex, "flush", lambda self: None)  # killed: nothing committed at close
        store.close()
    store = KuzuGraphStore(data, dimension=8)
    try:
        assert ids(store.search_text("redis", EVERYTHING, 10)) == ["m2"]
    finally:
        store.close()


def test_a_memory_acknowledged_by_the_store_is_found_after_a_crash_before_the_index_write(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    store = new_kuzu(data, request, 8)
    with monkeypatch.context() as crash:
        crash.setattr(LexicalIndex, "add", lambda self, records: (_ for _ in ()).throw(SystemExit("killed")))
        with pytest.raises(SystemExit):
            store.add_memories([memory("m1", "redis cache")])
        crash.setattr(LexicalIndex, "flush", lambda self: None)
        store.close()
    store = KuzuGraphStore(data, dimension=8)
    try:
        assert ids(store.search_text("redis", GLOBAL, 10)) == ["m1"]
    finally:
        store.close()


def test_a_text_change_the_index_missed_is_read_again_from_the_store(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    store = new_kuzu(data, request, 8)
    store.add_memories([memory("m1", "redis cache")])
    with monkeypatch.context() as crash:
        crash.setattr(LexicalIndex, "add", lambda self, records: (_ for _ in ()).throw(SystemExit("killed")))
        with pytest.raises(SystemExit):
            store.replace_text("m1", text="postgres cache", content_hash="h", updated_at=NOW, entities=[])
        crash.setattr(LexicalIndex, "flush", lambda self: None)
        store.close()
    store = KuzuGraphStore(data, dimension=8)
    try:
        assert store.search_text("redis", GLOBAL, 10) == []
        assert ids(store.search_text("postgres", GLOBAL, 10)) == ["m1"]
    finally:
        store.close()


@pytest.mark.parametrize("damage", ["missing", "garbage", "other store", "old version", "journal lost"])
def test_an_index_that_is_missing_or_out_of_date_is_rebuilt_from_the_store_at_open(
    tmp_path: Path, request: pytest.FixtureRequest, damage: str
) -> None:
    data = tmp_path / "data"
    store = new_kuzu(data, request, 8)
    store.add_memories([memory("m1", "redis cache"), memory("m2", "kafka topic")])
    store.close()
    directory = data / DIRNAME
    if damage == "missing":
        shutil.rmtree(directory)
    elif damage == "garbage":
        for path in directory.iterdir():
            if path.is_file() and not path.name.startswith("."):
                path.write_bytes(b"not an index" * 10)
    elif damage == "other store":
        (directory / META).write_text('{"version": "1", "token": "another"}')
    elif damage == "old version":
        (directory / META).write_text('{"version": "0", "token": "x"}')
    else:  # the store lost a memory behind the index's back, and no journal says so
        store = KuzuGraphStore(data, dimension=8)
        store.db.run("MATCH (m:Memory {id: 'm2'}) DETACH DELETE m")
        store.close()
    store = KuzuGraphStore(data, dimension=8)
    try:
        assert ids(store.search_text("redis", GLOBAL, 10)) == ["m1"]
        assert ids(store.search_text("kafka", GLOBAL, 10)) == ([] if damage == "journal lost" else ["m2"])
    finally:
        store.close()


def test_an_index_of_an_older_version_and_schema_is_built_again_at_open(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    data = tmp_path / "data"
    store = new_kuzu(data, request, 8)
    store.add_memories([memory("m1", "redis cache")])
    token = store.get_meta(lexical_index.TOKEN_KEY)
    store.close()
    directory = data / DIRNAME
    shutil.rmtree(directory)
    directory.mkdir()
    older = tantivy.SchemaBuilder()
    older.add_text_field("id", stored=True, tokenizer_name="raw")
    older.add_text_field("text", tokenizer_name="en_stem")
    tantivy.Index(older.build(), path=str(directory))
    (directory / META).write_text(json.dumps({"version": "1", "token": token}))

    store = KuzuGraphStore(data, dimension=8)
    try:
        assert [m.text for m in store.text_matches("redis", GLOBAL, 10)] == ["redis cache"]
        assert json.loads((directory / META).read_text())["version"] == lexical_index.INDEX_VERSION
    finally:
        store.close()


def test_rebuild_text_index_indexes_every_memory_again(store: KuzuGraphStore) -> None:
    store.add_memories([memory("m1", "redis cache"), memory("m2", "kafka topic")])
    assert store.rebuild_text_index() == 2
    assert ids(store.search_text("redis", GLOBAL, 10)) == ["m1"]


def test_a_schema_4_store_with_kuzu_fts_is_migrated_and_stops_keeping_it(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    data = tmp_path / "data"
    store = new_kuzu(data, request, 8)
    store.add_memories([memory("m1", "redis cache")])
    store.db.run("LOAD EXTENSION fts")
    store.db.run("CALL CREATE_FTS_INDEX('Memory', 'memory_text', ['search_text'], stemmer := 'porter')")
    store.set_meta("schema_version", "4")
    store.close()
    shutil.rmtree(data / DIRNAME)  # a store written before the index existed
    store = KuzuGraphStore(data, dimension=8)
    try:
        assert store.db.rows("CALL SHOW_INDEXES() RETURN *") == []
        assert store.get_meta("schema_version") == "14"
        store.add_memories([memory("m2", "redis queue")])
        assert set(ids(store.search_text("redis", GLOBAL, 10))) == {"m1", "m2"}
    finally:
        store.close()


def test_an_unusable_index_folder_is_a_store_error(tmp_path: Path) -> None:
    (tmp_path / DIRNAME).write_text("a file where the folder goes")
    with pytest.raises(lexical_index.StoreError, match="full-text index"):
        LexicalIndex(tmp_path / DIRNAME, Records())  # type: ignore[arg-type]


def commit_threads(before: set[threading.Thread]) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "graphmem-lexical" and t not in before]


def test_an_open_that_only_searches_makes_no_writer_and_starts_no_thread_until_the_first_change(
    tmp_path: Path,
) -> None:
    # What every command opening the store paid for nothing: tantivy's writer (six threads) and
    # the commit loop's thread.
    index = empty_index(tmp_path)
    index.add([memory("m1", "redis cache")])
    index.close()
    before = set(threading.enumerate())

    again = LexicalIndex(tmp_path / DIRNAME, Records())  # type: ignore[arg-type]
    try:
        assert ids(again.search("redis", GLOBAL, 10)) == ["m1"]
        assert again.count() == 1
        assert again._writer is None
        assert commit_threads(before) == []
        again.add([memory("m2", "redis queue")])
        assert len(commit_threads(before)) == 1  # the change waits for the commit loop
        assert again._writer is None
        again.flush()  # by the writer, made now
        assert again._writer is not None
        assert set(ids(again.search("redis", GLOBAL, 10))) == {"m1", "m2"}
    finally:
        again.close()
    assert commit_threads(before) == []
    reopened = LexicalIndex(tmp_path / DIRNAME, Records())  # type: ignore[arg-type]
    try:
        assert reopened.count() == 2
    finally:
        reopened.close()


def test_a_second_index_of_the_folder_is_refused_at_its_open_while_the_first_only_searched(
    tmp_path: Path,
) -> None:
    empty_index(tmp_path).close()
    first = LexicalIndex(tmp_path / DIRNAME, Records())  # type: ignore[arg-type]
    try:
        assert first.search("redis", GLOBAL, 10) == []
        with pytest.raises(lexical_index.StoreError, match="another process"):
            LexicalIndex(tmp_path / DIRNAME, Records())  # type: ignore[arg-type]
    finally:
        first.close()
    LexicalIndex(tmp_path / DIRNAME, Records()).close()  # type: ignore[arg-type]


def test_a_writer_tantivy_holds_for_another_process_keeps_the_open_out(tmp_path: Path) -> None:
    # An older graphmem made its writer at open and holds tantivy's lock for its life.
    empty_index(tmp_path).close()
    older = tantivy.Index.open(str(tmp_path / DIRNAME)).writer(lexical_index.WRITER_HEAP, 1)
    with pytest.raises(lexical_index.StoreError, match="another process"):
        LexicalIndex(tmp_path / DIRNAME, Records())  # type: ignore[arg-type]
    del older
    LexicalIndex(tmp_path / DIRNAME, Records()).close()  # type: ignore[arg-type]


def test_clearing_the_vectors_for_a_reindex_rebuilds_the_full_text_index(store: KuzuGraphStore) -> None:
    store.add_memories([memory("m1", "redis cache")])
    store._lexical.remove(["m1"])  # the index lost a memory the store holds
    assert store.search_text("redis", GLOBAL, 10) == []
    store.clear_embeddings(8)  # what `graphmem reindex` does first
    assert ids(store.search_text("redis", GLOBAL, 10)) == ["m1"]


_KILLED_CHILD = """
import sys
from datetime import UTC, datetime
from pathlib import Path

from graphmem.adapters import lexical_index
from graphmem.adapters.kuzu_store import KuzuGraphStore
from graphmem.core.models import Category, MemoryRecord, Scope

lexical_index.COMMIT_DELAY = 3600  # nothing reaches tantivy before the kill
now = datetime(2025, 6, 1, tzinfo=UTC)
store = KuzuGraphStore(Path(sys.argv[1]), dimension=8)
store.delete_memory("old")
store.add_memories([MemoryRecord("new", "kafka topic", Category.FACT, Scope.GLOBAL, None, now, now, now)])
print("acknowledged", flush=True)
sys.stdin.read()  # killed here
"""


def test_after_kill_9_the_index_finds_what_the_store_acknowledged_and_not_what_it_deleted(
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    data = tmp_path / "data"
    store = new_kuzu(data, request, 8)
    store.add_memories([memory("old", "kafka queue"), memory("kept", "redis cache")])
    store.close()
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_CHILD, str(data)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "acknowledged"
        assert (data / DIRNAME / "pending").read_text().split() == ["old", "new"]
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
        for pipe in (child.stdin, child.stdout):
            if pipe is not None:
                pipe.close()
    store = KuzuGraphStore(data, dimension=8)
    try:
        assert ids(store.search_text("kafka", EVERYTHING, 10)) == ["new"]
        assert ids(store.search_text("redis", EVERYTHING, 10)) == ["kept"]
        assert (data / DIRNAME / "pending").read_text() == ""
    finally:
        store.close()


# -- what remember's near-duplicate check reads ----------------------------------------------


def test_matches_carry_the_text_as_written_and_its_fields_before_and_after_the_commit(
    index: LexicalIndex,
) -> None:
    index.add(
        [
            memory("g", "Kùzu keeps the GRAPH store", category=Category.DECISION),
            memory("p", "the graph store of a project", scope=Scope.PROJECT, project="/src/proj"),
        ]
    )
    before = index.matches("graph store", EVERYTHING, 10)
    index.flush()
    after = index.matches("graph store", EVERYTHING, 10)

    assert before == after
    by_id = {match.id: match for match in after}
    assert by_id["g"].text == "Kùzu keeps the GRAPH store"
    assert (by_id["g"].category, by_id["g"].scope, by_id["g"].project) == (
        Category.DECISION,
        Scope.GLOBAL,
        None,
    )
    assert (by_id["p"].scope, by_id["p"].project) == (Scope.PROJECT, "/src/proj")


def test_matches_are_the_search_hits_in_their_order(index: LexicalIndex) -> None:
    index.add([memory(f"m{i}", "redis " * (i + 1) + f"note {i}") for i in range(5)])
    index.flush()
    index.add([memory("new", "redis redis redis redis redis redis")])

    assert [m.id for m in index.matches("redis", GLOBAL, 3)] == ids(index.search("redis", GLOBAL, 3))


def test_a_changed_memory_is_matched_as_it_is_now_not_as_committed(index: LexicalIndex) -> None:
    index.add([memory("m", "the cache uses redis")])
    index.flush()
    index.add([memory("m", "the cache uses redis cluster", category=Category.DECISION)])

    [match] = index.matches("redis", GLOBAL, 10)
    assert (match.text, match.category) == ("the cache uses redis cluster", Category.DECISION)


def test_enough_waiting_changes_are_committed_without_waiting_for_the_delay(
    index: LexicalIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lexical_index, "COMMIT_DELAY", 3600.0)
    monkeypatch.setattr(lexical_index, "COMMIT_MAX_CHANGES", 10)
    index.add([memory("first", "one change waits")])  # the loop waits out the delay from here
    index.add([memory(f"m{i}", f"note {i}") for i in range(10)])

    deadline = time.monotonic() + 60
    while index._index.searcher().num_docs < 11 and time.monotonic() < deadline:
        time.sleep(0.05)  # the background commit, started by the number of changes
    assert index._index.searcher().num_docs == 11


def test_closing_finishes_the_merges_so_the_next_process_searches_few_segments(tmp_path: Path) -> None:
    index = empty_index(tmp_path)
    for batch in range(8):  # eight commits of a size: tantivy merges them, in the background
        index.add([memory(f"m{batch}-{i}", f"note {i} of batch {batch} on the deploy") for i in range(500)])
        index.flush()
    index.close()  # at once, while the merge runs (a writer dropped without waiting left 8 of 8)
    segments = json.loads((tmp_path / DIRNAME / "meta.json").read_text())["segments"]
    assert sum(s["max_doc"] for s in segments) == 4_000
    assert len(segments) < 8

    again = LexicalIndex(tmp_path / DIRNAME, Records())  # type: ignore[arg-type]
    try:
        assert len(again.search("batch deploy", GLOBAL, 50)) == 50
    finally:
        again.close()


def test_matches_holding_are_alike_from_the_overlay_and_the_committed_index(index: LexicalIndex) -> None:
    index.add([memory("a", "The parser wasn't handling retries"), memory("b", "retries of the parser")])

    for committed in (False, True):
        if committed:
            index.flush()
        asked = [m.id for m in index.matches("parser retries", GLOBAL, 10, [{"handled", "handles"}])]
        # Another form of a stem held counts (the index holds stems): "handled" for "handling".
        assert asked == ["a"], committed
        assert index.matches("parser retries", GLOBAL, 10, [{"wasn"}, {"zebra"}]) == [], committed
        assert index.matches("parser retries", GLOBAL, 10, [set()]) == [], committed


class MetaRecords(Records):
    """A store of record with its meta rows and no memory: what ``open_lexical_index`` asks."""

    def __init__(self) -> None:
        super().__init__()
        self.meta: dict[str, str] = {}

    def get_meta(self, key: str) -> str | None:
        return self.meta.get(key)

    def set_meta(self, key: str, value: str) -> None:
        self.meta[key] = value

    def total_memories(self) -> int:
        return 0

    def all_memories(self, project: str | None = None) -> list[MemoryRecord]:
        return []


def test_an_index_open_elsewhere_is_refused_not_deleted_and_rebuilt(tmp_path: Path) -> None:
    source = MetaRecords()
    lexical_index.open_lexical_index(tmp_path, source).close()  # type: ignore[arg-type]
    first = lexical_index.open_lexical_index(tmp_path, source)  # type: ignore[arg-type]
    try:
        files = sorted(path.name for path in (tmp_path / DIRNAME).iterdir())
        with pytest.raises(StoreLockedError, match="another process"):
            lexical_index.open_lexical_index(tmp_path, source)  # type: ignore[arg-type]
        assert sorted(path.name for path in (tmp_path / DIRNAME).iterdir()) == files
    finally:
        first.close()
