"""The contract of ``core.ports.GraphStore``, run against every store: Kùzu and the in-memory fake.

A second store joins by adding its name and constructor to ``STORES`` (docs/architecture.md,
"A new store"). Scores differ between stores: tests assert order and membership, not values.
What only Kùzu does (COPY, the process lock, reopening, crashes) is in test_kuzu_store.py.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from support.records import NOW, memory
from support.stores import STORES, open_store

from graphmem.adapters.graph_cache import ENTITY_FANOUT
from graphmem.adapters.kuzu_store import COPY_MIN_ROWS
from graphmem.adapters.postgres_store import PostgresGraphStore
from graphmem.core.models import Category, Entity, EntityKind, Link, LinkKind, Scope, Status
from graphmem.core.ports import GraphStore, Neighbour, Visibility
from graphmem.errors import StoreError

DIM = 8
ISSUE = Entity("Issue:group/proj#4", EntityKind.ISSUE, "#4", "/src/proj", "Flaky test")
FILE = Entity("File:/src/proj::src/app.py", EntityKind.FILE, "src/app.py", "/src/proj")
EVERYONE = Visibility("/src/proj", frozenset(Status))
CYPHER = "MATCH (n) DETACH DELETE n; // ' \" \\ `"


@pytest.fixture(params=sorted(STORES))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[GraphStore]:
    opened = open_store(request.param, tmp_path, request, DIM)
    yield opened
    opened.close()


def found(store: GraphStore, query: str, visibility: Visibility = EVERYONE, limit: int = 10) -> list[str]:
    return [memory_id for memory_id, _ in store.search_text(query, visibility, limit)]


# -- metadata -------------------------------------------------------------------------


def test_closing_a_store_twice_is_harmless(store: GraphStore) -> None:
    store.add_memories([memory("mem_closed_twice")])

    store.close()  # the fixture closes it again


def test_meta_values_can_be_replaced(store: GraphStore) -> None:
    store.set_meta("embedding_model", "a")
    store.set_meta("embedding_model", "b")
    assert store.get_meta("embedding_model") == "b"
    assert store.get_meta("missing") is None


# -- memory records -------------------------------------------------------------------


@pytest.mark.parametrize("count", [3, COPY_MIN_ROWS - 1, COPY_MIN_ROWS, 150])
def test_added_memories_read_back_unchanged(store: GraphStore, count: int) -> None:
    records = [
        memory(
            f"m{i}",
            scope=Scope.PROJECT,
            project="/src/proj",
            status=Status.SUPERSEDED,
            valid_to=NOW + timedelta(days=1),
            session="s1",
            reinforced=i,
        )
        for i in range(count)
    ]
    store.add_memories(records)
    assert store.get_memories([r.id for r in records]) == {r.id: r for r in records}


def test_hundreds_of_ids_are_read_at_once_with_unknown_and_repeated_ones(store: GraphStore) -> None:
    records = [memory(f"m{i:04d}") for i in range(450)]  # past one query per id (Kùzu: 200)
    store.add_memories(records)
    ids = [r.id for r in records]

    found = store.get_memories([*ids, "nope", "nope", *ids[:5], "mem_0000000000000000"])

    assert found == {r.id: r for r in records}


def test_unknown_ids_are_left_out_of_get_memories(store: GraphStore) -> None:
    store.add_memories([memory("a")])
    assert list(store.get_memories(["nope", "a", "a"])) == ["a"]
    assert store.get_memories([]) == {}


def test_the_scopes_a_store_shares_are_those_of_the_memories_it_shares_once_written(
    store: GraphStore,
) -> None:
    written = {"mine": Scope.GLOBAL, "ours": Scope.PROJECT}
    store.add_memories(
        [memory(i, scope=s, project="/src/proj" if s is Scope.PROJECT else None) for i, s in written.items()]
    )

    shared = store.shared_memories(list(written))

    assert shared == {i for i, scope in written.items() if scope in store.shared_scopes()}
    assert shared == ({"ours"} if isinstance(store, PostgresGraphStore) else set())  # a team's store


def test_adding_an_id_twice_fails_and_keeps_the_first(store: GraphStore) -> None:
    store.add_memories([memory("a", "the first words")])
    with pytest.raises(StoreError):
        store.add_memories([memory("a", "other words")])
    assert store.get_memories(["a"])["a"].text == "the first words"


def test_find_by_hash_returns_every_memory_with_the_hash(store: GraphStore) -> None:
    store.add_memories([memory("b", content_hash="h"), memory("a", content_hash="h"), memory("c")])
    assert sorted(r.id for r in store.find_by_hash("h")) == ["a", "b"]
    assert store.find_by_hash("unknown") == []


def test_find_by_hashes_answers_many_hashes_at_once(store: GraphStore) -> None:
    store.add_memories(
        [memory("b", content_hash="h"), memory("a", content_hash="h"), memory("c", content_hash="g")]
    )
    found = store.find_by_hashes(["h", "g", "unknown"])
    assert {h: [r.id for r in records] for h, records in found.items()} == {"h": ["a", "b"], "g": ["c"]}
    assert store.find_by_hashes([]) == {}


def test_update_memory_changes_the_given_fields(store: GraphStore) -> None:
    store.add_memories([memory("m1")])
    store.find_by_hash("hash-m1")  # a cached read must not outlive the update
    store.update_memory("m1", {"status": Status.ARCHIVED, "valid_to": NOW, "reinforced": 3})
    updated = store.get_memories(["m1"])["m1"]
    assert (updated.status, updated.valid_to, updated.reinforced) == (Status.ARCHIVED, NOW, 3)
    assert updated.text == "memory m1"


def test_update_memory_rejects_unknown_fields(store: GraphStore) -> None:
    store.add_memories([memory("m1")])
    with pytest.raises(ValueError, match="colour"):
        store.update_memory("m1", {"colour": "red"})


@pytest.mark.parametrize("name", ["id", "embedded", "seq", "search_text"])
def test_update_memory_refuses_what_is_not_a_field_to_set(store: GraphStore, name: str) -> None:
    """The id, the ``embedded`` flag (set by ``embedding``) and a store's own columns are no
    memory field ``update_memory`` sets, on any store."""
    store.add_memories([memory("m1")])
    with pytest.raises(ValueError, match=name):
        store.update_memory("m1", {name: 1})
    assert store.get_memories(["m1"])["m1"].id == "m1"


def test_update_memory_refuses_text(store: GraphStore) -> None:
    store.add_memories([memory("m1")])
    with pytest.raises(ValueError, match="replace_text"):
        store.update_memory("m1", {"text": "new"})
    assert store.get_memories(["m1"])["m1"].text == "memory m1"


def test_list_memories_filters_by_category_and_since(store: GraphStore) -> None:
    store.add_memories(
        [
            memory("old", category=Category.DECISION, created_at=NOW - timedelta(days=30)),
            memory("new", category=Category.DECISION),
            memory("fact"),
        ]
    )
    visibility = Visibility(
        None, frozenset({Status.ACTIVE}), frozenset({Category.DECISION}), NOW - timedelta(days=1)
    )
    assert [r.id for r in store.list_memories(visibility, limit=10)] == ["new"]


def test_a_current_memory_past_its_expiry_is_listed_only_with_the_archived(store: GraphStore) -> None:
    store.add_memories(
        [
            memory("expired", expires_at=NOW - timedelta(hours=1)),
            memory("later", expires_at=NOW + timedelta(hours=1)),
            memory("superseded", status=Status.SUPERSEDED, expires_at=NOW - timedelta(hours=1)),
            memory("forever"),
        ]
    )
    seen = Visibility(None, frozenset({Status.ACTIVE, Status.SUPERSEDED}), expired_by=NOW)

    assert {r.id for r in store.list_memories(seen, limit=10)} == {"later", "superseded", "forever"}
    with_archived = Visibility(None, frozenset(Status), expired_by=NOW)
    assert len(store.list_memories(with_archived, limit=10)) == 4


def test_list_memories_pages_newest_first(store: GraphStore) -> None:
    store.add_memories([memory(f"m{i}", created_at=NOW + timedelta(minutes=i)) for i in range(5)])
    visibility = Visibility(None)
    assert [r.id for r in store.list_memories(visibility, limit=2)] == ["m4", "m3"]
    assert [r.id for r in store.list_memories(visibility, limit=2, offset=2)] == ["m2", "m1"]
    assert [r.id for r in store.list_memories(visibility, limit=10, offset=4)] == ["m0"]


@pytest.mark.parametrize("offset", [6, 10_000, 100_000, 2**32, 2**40])
def test_a_page_past_the_last_memory_is_empty(store: GraphStore, offset: int) -> None:
    store.add_memories([memory(f"m{i}", created_at=NOW + timedelta(minutes=i)) for i in range(5)])
    store.add_memories([memory("mine", scope=Scope.PROJECT, project="/src/proj")])

    # Kùzu's SKIP far past what matches killed the process; 2^32 read as 0 gave the first page.
    assert store.list_memories(Visibility(None), limit=10, offset=offset) == []
    assert (
        store.list_memories(Visibility("/src/proj", frozenset({Status.ACTIVE})), limit=10, offset=offset)
        == []
    )


def test_all_memories_are_oldest_first_and_filter_by_project(store: GraphStore) -> None:
    store.add_memories(
        [
            memory("late", created_at=NOW + timedelta(hours=1)),
            memory("mine", scope=Scope.PROJECT, project="/src/proj"),
            memory("early", created_at=NOW - timedelta(hours=1)),
        ]
    )
    assert [r.id for r in store.all_memories()] == ["early", "mine", "late"]
    assert [r.id for r in store.all_memories("/src/proj")] == ["mine"]


def test_count_memories_counts_by_category_scope_and_status(store: GraphStore) -> None:
    store.add_memories(
        [memory("a"), memory("b"), memory("c", category=Category.DECISION, status=Status.ARCHIVED)]
    )
    assert store.count_memories() == {("fact", "global", "active"): 2, ("decision", "global", "archived"): 1}
    assert store.total_memories() == 3


def test_projects_are_each_name_memories_are_kept_under_with_their_first_memory(store: GraphStore) -> None:
    later = NOW + timedelta(days=3)
    store.add_memories(
        [
            memory("a", scope=Scope.PROJECT, project="github.com/Acme/Shop", created_at=later),
            memory("b", scope=Scope.PROJECT, project="github.com/Acme/Shop", status=Status.ARCHIVED),
            memory("c", scope=Scope.PROJECT, project="github.com/acme/shop", created_at=later),
            memory("d", scope=Scope.PROJECT, project="/src/Shop"),
            memory("e"),  # global: no project
        ]
    )
    assert store.projects() == {  # as written, one entry per spelling, archived memories counted
        "github.com/Acme/Shop": NOW,
        "github.com/acme/shop": later,
        "/src/Shop": NOW,
    }


def test_last_in_session_is_the_latest_memory_of_the_session(store: GraphStore) -> None:
    store.add_memories([memory("a", session="s"), memory("b", session="s"), memory("c", session="other")])
    assert store.last_in_session("s") == "b"
    assert store.last_in_session("nobody") is None


def test_delete_removes_the_memory_and_its_edges(store: GraphStore) -> None:
    store.add_memories([memory("a"), memory("b"), memory("c")])
    store.upsert_entities([ISSUE])
    store.link_about([("a", ISSUE), ("b", ISSUE)])
    store.add_links([Link("a", "b", LinkKind.RELATED, NOW), Link("c", "a", LinkKind.EXTENDS, NOW)])
    store.add_next([("a", "b"), ("c", "a")])
    store.delete_memory("a")
    assert store.get_memories(["a"]) == {}
    assert store.links() == []
    assert store.next_pairs() == []
    assert store.memories_about([ISSUE.key]) == {ISSUE.key: ["b"]}
    assert store.get_entities([ISSUE.key]) == {ISSUE.key: ISSUE}
    assert store.neighbours(["b", "c"], 10) == []
    assert set(found(store, "memory")) == {"b", "c"}


def test_replace_text_keeps_the_edges_and_sets_the_entities(store: GraphStore) -> None:
    store.add_memories([memory("a"), memory("b"), memory("c")], np.eye(3, DIM, dtype=np.float32))
    store.upsert_entities([ISSUE])
    store.link_about([("a", ISSUE)])
    store.add_links([Link("a", "b", LinkKind.RELATED, NOW)])
    store.add_next([("c", "a")])
    store.replace_text("a", text="new words", content_hash="h2", updated_at=NOW, entities=[FILE])
    record = store.get_memories(["a"])["a"]
    assert (record.text, record.content_hash, record.embedded) == ("new words", "h2", False)
    assert store.links(["a"]) == [Link("a", "b", LinkKind.RELATED, NOW)]
    assert store.next_pairs(["c"]) == [("c", "a")]
    assert store.about(["a"]) == {"a": [FILE]}
    assert store.memories_about([ISSUE.key]) == {}
    assert [i for i, _ in store.pending_embeddings(10)] == ["a"]
    assert [r.id for r in store.find_by_hash("h2")] == ["a"]


def test_replace_text_of_an_unknown_memory_does_nothing(store: GraphStore) -> None:
    store.replace_text("nope", text="words", content_hash="h", updated_at=NOW, entities=[])
    assert store.get_memories(["nope"]) == {}


def test_cypher_like_text_is_stored_and_found_literally(store: GraphStore) -> None:
    store.add_memories([memory("a", "first note"), memory("cypher", CYPHER), memory("b", "second note")])
    store.replace_text("a", text=CYPHER + " again", content_hash="h", updated_at=NOW, entities=[])
    assert store.get_memories(["cypher"])["cypher"].text == CYPHER
    assert store.get_memories(["a"])["a"].text == CYPHER + " again"
    assert set(found(store, "detach delete", limit=5)) == {"a", "cypher"}
    assert sum(store.count_memories().values()) == 3


def test_cypher_like_text_is_stored_literally_in_bulk(store: GraphStore) -> None:
    store.add_memories([memory(f"m{i}", f"{CYPHER} {i}") for i in range(COPY_MIN_ROWS)])
    assert store.get_memories(["m7"])["m7"].text == f"{CYPHER} 7"
    assert sum(store.count_memories().values()) == COPY_MIN_ROWS


def test_concurrent_writers_lose_nothing(store: GraphStore) -> None:
    def add(prefix: str) -> None:
        for i in range(20):
            store.add_memories([memory(f"{prefix}{i}", session=prefix)])

    threads = [threading.Thread(target=add, args=(p,)) for p in "abc"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(store.count_memories().values()) == 60
    assert store.last_in_session("b") == "b19"


# -- full-text search -----------------------------------------------------------------


@pytest.mark.parametrize("count", [3, COPY_MIN_ROWS])
def test_full_text_search_folds_accents(store: GraphStore, count: int) -> None:
    store.add_memories([memory("kuzu", "We chose Kùzu as the graph store")])
    store.add_memories([memory(f"m{i}", f"filler note {i}") for i in range(count)])
    assert found(store, "kuzu", limit=5) == ["kuzu"]
    assert found(store, "KÙZU", limit=5) == ["kuzu"]


def test_full_text_search_finds_memories_added_in_bulk(store: GraphStore) -> None:
    store.add_memories([memory(f"m{i}", f"filler note {i}") for i in range(COPY_MIN_ROWS - 1)])
    store.add_memories(
        [memory("zebra", "The zebra crossing test")] + [memory(f"n{i}") for i in range(COPY_MIN_ROWS)]
    )
    assert found(store, "zebra", limit=5) == ["zebra"]


def test_full_text_search_joins_inflections(store: GraphStore) -> None:
    store.add_memories([memory("m1", "We deployed the service with helm charts"), memory("m2", "unrelated")])
    assert found(store, "deploying") == ["m1"]
    assert found(store, "chart") == ["m1"]


def test_full_text_search_ranks_more_matched_words_first(store: GraphStore) -> None:
    store.add_memories(
        [
            memory("one", "the release train leaves on monday"),
            memory("both", "the release train of the graph store leaves on friday"),
            memory("none", "an unrelated note about lunch"),
        ]
    )
    hits = store.search_text("graph release", EVERYONE, 10)
    assert [i for i, _ in hits] == ["both", "one"]
    assert all(score > 0 for _, score in hits)


def test_a_memory_that_holds_the_whole_phrase_comes_first_and_is_named_exact(store: GraphStore) -> None:
    store.add_memories(
        [
            memory("words", "Park, park, park: we went to the beach and then the park went quiet."),
            memory("sentence", "Yesterday we went to the park with the kids and a long list of errands."),
            memory("none", "an unrelated note about lunch"),
        ]
    )
    hits = store.search_text("went to the park", EVERYONE, 10)
    assert [i for i, _ in hits] == ["sentence", "words"]
    assert hits.exact == {"sentence"}
    assert all(score > 0 for _, score in hits)


def test_the_phrase_asked_whole_can_differ_from_the_query(store: GraphStore) -> None:
    store.add_memories([memory("sentence", "we went to the park"), memory("words", "park went to")])
    assert store.search_text("went to the park walker", EVERYONE, 10).exact == frozenset()
    hits = store.search_text("went to the park walker", EVERYONE, 10, phrase="went to the park")
    assert hits.exact == {"sentence"}
    assert hits[0][0] == "sentence"


@pytest.mark.parametrize("query", ["the park", "we went to the park on a long sunny day with all the kids"])
def test_fewer_than_three_or_more_than_twelve_words_are_no_phrase(store: GraphStore, query: str) -> None:
    store.add_memories([memory("m1", query)])
    hits = store.search_text(query, EVERYONE, 10)
    assert [i for i, _ in hits] == ["m1"]
    assert hits.exact == frozenset()


def test_a_phrase_of_stopwords_alone_finds_the_memories_that_hold_it(store: GraphStore) -> None:
    store.add_memories(
        [memory("said", "Hey! How have you been? Long time."), memory("other", "how are you, have you eaten")]
    )
    hits = store.search_text("How have you been", EVERYONE, 10)
    assert [i for i, _ in hits] == ["said"]
    assert hits.exact == {"said"} and hits[0][1] > 0
    assert store.search_text("have you", EVERYONE, 10) == []  # two stopwords are no phrase


def test_full_text_search_of_no_words_finds_nothing(store: GraphStore) -> None:
    store.add_memories([memory("m1", "the store of the memory")])
    assert found(store, "") == []
    assert found(store, "   ") == []
    assert found(store, "?! -- **") == []


def test_a_store_says_which_of_its_searches_answers_its_words(store: GraphStore) -> None:
    """A team's store opened without a folder for its index has only the database's search (with
    one, see test_postgres_lexical); the embedded stores have one search, their own."""
    expected = "database" if isinstance(store, PostgresGraphStore) else None
    assert store.full_text_search == expected


def test_updating_text_updates_full_text_search(store: GraphStore) -> None:
    store.add_memories([memory("m1", "We deploy with make release"), memory("m2", "unrelated note")])
    store.replace_text("m1", text="We deploy with helm charts", content_hash="h", updated_at=NOW, entities=[])
    assert store.search_text("release", EVERYONE, 5) == []
    assert found(store, "helm", limit=5) == ["m1"]
    assert store.get_memories(["m1"])["m1"].text == "We deploy with helm charts"


def test_a_deleted_memory_is_not_found(store: GraphStore) -> None:
    store.add_memories([memory("m1", "zebra crossing"), memory("m2", "zebra stripes")])
    store.delete_memory("m1")
    assert found(store, "zebra") == ["m2"]


def test_search_text_respects_visibility(store: GraphStore) -> None:
    store.add_memories(
        [
            memory("global", "release train"),
            memory("mine", "release train", scope=Scope.PROJECT, project="/src/proj", content_hash="x"),
            memory("theirs", "release train", scope=Scope.PROJECT, project="/src/other", content_hash="y"),
            memory("gone", "release train", status=Status.ARCHIVED, content_hash="z"),
        ]
    )
    current = frozenset({Status.ACTIVE})
    assert set(found(store, "release", Visibility("/src/proj", current))) == {"global", "mine"}
    assert set(found(store, "release", Visibility(None, current))) == {"global"}
    assert set(found(store, "release", Visibility(None, frozenset({Status.ARCHIVED})))) == {"gone"}


def test_a_projects_aliases_are_seen_as_the_project(store: GraphStore) -> None:
    """``Visibility.aliases``: names a project's memories are still kept under (a checkout's path,
    another spelling) till a writer moves them; every read of the project sees them."""
    store.add_memories(
        [
            memory("mine", "release train", scope=Scope.PROJECT, project="github.com/Acme/Shop"),
            memory("split", "release train", scope=Scope.PROJECT, project="github.com/acme/shop",
                   content_hash="x"),
            memory("theirs", "release train", scope=Scope.PROJECT, project="/src/other", content_hash="y"),
        ]
    )  # fmt: skip
    seen = Visibility("github.com/Acme/Shop", aliases=frozenset({"github.com/acme/shop"}))
    alone = Visibility("github.com/Acme/Shop")

    assert {r.id for r in store.list_memories(seen, limit=10)} == {"mine", "split"}
    assert set(found(store, "release", seen)) == {"mine", "split"}
    assert {m.id for m in store.text_matches("release train", seen, 10)} == {"mine", "split"}
    assert {r.id for r in store.list_memories(alone, limit=10)} == {"mine"}
    assert set(found(store, "release", alone)) == {"mine"}


def test_search_text_honours_the_limit(store: GraphStore) -> None:
    store.add_memories([memory(f"m{i}", f"zebra note {i}") for i in range(6)])
    assert len(found(store, "zebra", limit=4)) == 4


# -- vectors --------------------------------------------------------------------------


@pytest.mark.parametrize("count", [3, COPY_MIN_ROWS])
def test_added_vectors_are_stored(store: GraphStore, count: int) -> None:
    vectors = np.eye(count, DIM, dtype=np.float32)
    store.add_memories([memory(f"m{i}") for i in range(count)], vectors)
    loaded = store.load_vectors()
    assert sorted(loaded.ids) == sorted(f"m{i}" for i in range(count))
    assert store.get_memories(["m0"])["m0"].embedded
    embedding = store.embedding_of("m1")
    assert embedding is not None and embedding.tolist() == vectors[1].tolist()
    assert store.pending_embeddings(10) == []


def test_memories_without_vectors_are_pending_until_embedded(store: GraphStore) -> None:
    store.add_memories([memory("a", "alpha"), memory("b", "beta")])
    assert sorted(store.pending_embeddings(10)) == [("a", "alpha"), ("b", "beta")]
    assert len(store.pending_embeddings(1)) == 1
    store.set_embeddings(["a"], np.ones((1, DIM), np.float32))
    assert store.pending_embeddings(10) == [("b", "beta")]
    assert store.get_memories(["a"])["a"].embedded
    assert store.embedding_of("b") is None
    assert store.embedding_of("nope") is None


def test_the_backlog_counts_the_memories_without_a_vector(store: GraphStore) -> None:
    def backlog() -> int:
        count = store.count_pending_embeddings()
        assert count == len(store.pending_embeddings(1_000))
        return count

    assert backlog() == 0
    store.add_memories([memory("a"), memory("b"), memory("c")])
    store.add_memories([memory("d"), memory("e")], np.ones((2, DIM), np.float32))
    assert backlog() == 3
    store.set_embeddings(["a", "unknown"], np.ones((2, DIM), np.float32))
    assert backlog() == 2
    store.delete_memory("b")
    store.delete_memory("d")
    assert backlog() == 1
    with pytest.raises(RuntimeError), store.transaction():
        store.add_memories([memory("rolled-back")])
        store.set_embeddings(["rolled-back", "c"], np.ones((2, DIM), np.float32))
        raise RuntimeError("abort")
    assert backlog() == 1
    store.replace_text("a", text="new words", content_hash="h2", updated_at=NOW, entities=[])
    assert backlog() == 2
    store.clear_embeddings(DIM)
    assert backlog() == 3


def test_loaded_vectors_carry_project_and_status_in_id_order(store: GraphStore) -> None:
    store.add_memories(
        [memory("a"), memory("b", scope=Scope.PROJECT, project="/src/proj", status=Status.RESOLVED)],
        np.eye(2, DIM, dtype=np.float32),
    )
    loaded = store.load_vectors()
    matrix = np.asarray(loaded.matrix)  # the Kùzu store's are read when asked (``VectorRows``)
    rows = {
        i: (p, s, m.tolist())
        for i, p, s, m in zip(loaded.ids, loaded.projects, loaded.statuses, matrix, strict=True)
    }
    assert matrix.dtype == np.float32 and loaded.matrix.shape == (2, DIM)
    assert rows["a"][:2] == (None, "active") and rows["a"][2] == np.eye(2, DIM)[0].tolist()
    assert rows["b"][:2] == ("/src/proj", "resolved")


def test_count_vectors_counts_the_memories_that_have_one(store: GraphStore) -> None:
    assert store.count_vectors() == 0
    store.add_memories([memory("a"), memory("b")], np.eye(2, DIM, dtype=np.float32))
    store.add_memories([memory("c")])
    assert store.count_vectors() == 2
    store.delete_memory("a")
    assert store.count_vectors() == 1


def test_clearing_embeddings_makes_every_memory_pending(store: GraphStore) -> None:
    store.add_memories([memory("a"), memory("b")], np.eye(2, DIM, dtype=np.float32))
    store.clear_embeddings(4)
    assert len(store.pending_embeddings(10)) == 2
    loaded = store.load_vectors()
    assert loaded.ids == [] and loaded.matrix.shape == (0, 4)
    store.set_embeddings(["a"], np.ones((1, 4), np.float32))
    assert store.load_vectors().matrix.shape == (1, 4)


# -- entities -------------------------------------------------------------------------


def test_upserting_an_entity_without_title_keeps_the_known_title(store: GraphStore) -> None:
    store.upsert_entities([ISSUE])
    store.upsert_entities([Entity(ISSUE.key, ISSUE.kind, ISSUE.name, ISSUE.project)])
    assert store.get_entities([ISSUE.key])[ISSUE.key].title == "Flaky test"


def test_get_entities_finds_by_key_and_skips_unknown_keys(store: GraphStore) -> None:
    store.upsert_entities([ISSUE, FILE])
    assert store.get_entities([FILE.key, "File:nope", "Nolabel:x", "x"]) == {FILE.key: FILE}
    assert {e.key for e in store.all_entities()} == {ISSUE.key, FILE.key}


def test_find_entities_matches_the_name_or_the_path_after_the_project(store: GraphStore) -> None:
    other = Entity("File:/src/other::lib/app.py", EntityKind.FILE, "lib/app.py", "/src/other")
    store.upsert_entities([ISSUE, FILE, other])
    assert store.find_entities("src/app.py", [EntityKind.FILE]) == [FILE]
    assert store.find_entities("#4", [EntityKind.FILE]) == []
    assert store.find_entities("#4", [EntityKind.FILE, EntityKind.ISSUE]) == [ISSUE]


def test_memories_are_linked_to_entities_once(store: GraphStore) -> None:
    store.add_memories([memory("a"), memory("b")])
    store.upsert_entities([ISSUE, FILE])
    store.link_about([("a", ISSUE), ("a", ISSUE), ("a", FILE), ("b", FILE), ("nope", FILE)])
    about = store.about(["a", "b", "nope"])
    assert sorted(e.key for e in about["a"]) == sorted([ISSUE.key, FILE.key])
    assert about["b"] == [FILE] and "nope" not in about
    assert {k: sorted(v) for k, v in store.memories_about([FILE.key, ISSUE.key, "File:x"]).items()} == {
        FILE.key: ["a", "b"],
        ISSUE.key: ["a"],
    }


def test_an_unknown_entity_is_not_linked(store: GraphStore) -> None:
    store.add_memories([memory("a")])
    store.link_about([("a", ISSUE)])
    assert store.about(["a"]) == {}


# -- edges between memories -----------------------------------------------------------


def test_links_are_merged_and_removable(store: GraphStore) -> None:
    store.add_memories([memory("a"), memory("b")])
    store.add_links([Link("a", "b", LinkKind.CONTRADICTS, NOW)] * 2)
    assert store.links(["b"]) == [Link("a", "b", LinkKind.CONTRADICTS, NOW)]
    assert store.remove_link("a", "b", LinkKind.CONTRADICTS)
    assert not store.remove_link("a", "b", LinkKind.CONTRADICTS)
    assert store.links() == []


def test_links_touch_either_end_oldest_first_and_skip_unknown_memories(store: GraphStore) -> None:
    store.add_memories([memory("a"), memory("b"), memory("c")])
    later = NOW + timedelta(seconds=1)
    store.add_links(
        [
            Link("c", "a", LinkKind.EXTENDS, later),
            Link("a", "b", LinkKind.RELATED, NOW),
            Link("a", "nope", LinkKind.RELATED, NOW),
        ]
    )
    assert store.links(["a"]) == [
        Link("a", "b", LinkKind.RELATED, NOW),
        Link("c", "a", LinkKind.EXTENDS, later),
    ]
    assert store.links(["b"]) == [Link("a", "b", LinkKind.RELATED, NOW)]


def test_next_pairs_start_at_the_given_memories(store: GraphStore) -> None:
    store.add_memories([memory("a"), memory("b"), memory("c")])
    store.add_next([("a", "b"), ("b", "c"), ("a", "b"), ("c", "nope")])
    assert sorted(store.next_pairs()) == [("a", "b"), ("b", "c")]
    assert store.next_pairs(["b"]) == [("b", "c")]


def test_neighbours_walk_next_relates_and_shared_entities(store: GraphStore) -> None:
    store.add_memories([memory("a"), memory("b"), memory("c"), memory("d")])
    store.upsert_entities([ISSUE])
    store.add_next([("a", "b")])
    store.add_links([Link("c", "a", LinkKind.EXTENDS, NOW)])
    store.link_about([("a", ISSUE), ("d", ISSUE)])
    assert store.neighbours(["a"], 10) == [
        Neighbour("a", "next", "b"),
        Neighbour("a", "extends", "c"),
        Neighbour("a", ISSUE.key, "d", 2),
    ]
    assert len(store.neighbours(["a"], 2)) == 2


def test_neighbours_skip_entities_shared_by_too_many_memories(store: GraphStore) -> None:
    hub = [memory(f"m{i:03}") for i in range(ENTITY_FANOUT + 1)]
    store.add_memories(hub)
    store.upsert_entities([FILE])
    store.link_about([(r.id, FILE) for r in hub])
    assert store.neighbours(["m000"], 100) == []
    store.delete_memory("m050")
    assert len(store.neighbours(["m000"], 100)) == ENTITY_FANOUT - 1


RENAMED = Entity(
    "File:gitlab.com/shop/proj::src/app.py", EntityKind.FILE, "src/app.py", "gitlab.com/shop/proj"
)


def test_move_about_makes_the_memories_about_one_entity_about_another(store: GraphStore) -> None:
    store.add_memories([memory("a"), memory("b"), memory("c")])
    store.upsert_entities([FILE, RENAMED, ISSUE])
    store.link_about([("a", FILE), ("b", FILE), ("b", ISSUE), ("c", ISSUE)])

    moved = store.move_about(EntityKind.FILE, FILE.key, RENAMED.key)

    assert sorted(moved) == ["a", "b"]
    assert store.memories_about([FILE.key, RENAMED.key]) == {RENAMED.key: ["a", "b"]}
    assert {m: sorted(e.key for e in es) for m, es in store.about(["a", "b", "c"]).items()} == {
        "a": [RENAMED.key],
        "b": sorted([RENAMED.key, ISSUE.key]),
        "c": [ISSUE.key],
    }


def test_move_about_onto_an_entity_a_memory_is_already_about_keeps_one_edge(store: GraphStore) -> None:
    store.add_memories([memory("a")])
    store.upsert_entities([FILE, RENAMED])
    store.link_about([("a", FILE), ("a", RENAMED)])

    assert store.move_about(EntityKind.FILE, FILE.key, RENAMED.key) == ["a"]
    assert [e.key for e in store.about(["a"])["a"]] == [RENAMED.key]
    assert store.move_about(EntityKind.FILE, RENAMED.key, RENAMED.key) == []


def test_remembered_names_the_entities_some_memory_is_about(store: GraphStore) -> None:
    store.add_memories([memory("a")])
    store.upsert_entities([FILE, RENAMED, ISSUE])
    store.link_about([("a", FILE), ("a", ISSUE)])
    assert store.remembered([FILE.key, RENAMED.key, ISSUE.key, "File:nowhere::x.py"]) == {FILE.key, ISSUE.key}
    assert store.remembered([]) == set()
