"""What ``remember`` asks of every store (Kùzu and the in-memory fake) beyond the main contract.

``transaction``: the writes of a transaction are kept together or not at all, and what the
store keeps in memory beside them (the full-text index, the graph of edges, the hash index)
follows. ``text_matches``: the full-text hits with what comparing texts needs.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from support.records import NOW, memory
from support.stores import STORES, open_store

from graphmem.core.models import Category, Entity, EntityKind, Link, LinkKind, Scope, Status
from graphmem.core.ports import GraphStore, Visibility
from graphmem.errors import StoreError

ISSUE = Entity("Issue:group/proj#4", EntityKind.ISSUE, "#4", "/src/proj", "Flaky test")
EVERYONE = Visibility("/src/proj", frozenset(Status))
DIM = 8


@pytest.fixture(params=sorted(STORES))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[GraphStore]:
    opened = open_store(request.param, tmp_path, request, DIM)
    yield opened
    opened.close()


class Boom(Exception):
    pass


def found(store: GraphStore, query: str) -> list[str]:
    return sorted(memory_id for memory_id, _ in store.search_text(query, EVERYONE, 10))


def test_the_writes_of_a_transaction_are_all_kept(store: GraphStore) -> None:
    store.add_memories([memory("old", "the old cache decision")])
    with store.transaction():
        store.add_memories([memory("new", "the new cache decision")])
        store.upsert_entities([ISSUE])
        store.link_about([("new", ISSUE)])
        store.add_next([("old", "new")])
        store.add_links([Link("new", "old", LinkKind.SUPERSEDES, NOW)])
        store.update_memory("old", {"status": Status.SUPERSEDED})

    assert store.get_memories(["old"])["old"].status is Status.SUPERSEDED
    assert [e.key for e in store.about(["new"])["new"]] == [ISSUE.key]
    assert store.next_pairs() == [("old", "new")]
    assert [(link.source, link.target) for link in store.links()] == [("new", "old")]
    assert found(store, "cache decision") == ["new", "old"]
    assert {n.other_id for n in store.neighbours(["new"], 10)} == {"old"}


def test_a_failure_inside_a_transaction_keeps_none_of_its_writes(store: GraphStore) -> None:
    store.add_memories([memory("old", "the old cache decision")])
    store.upsert_entities([ISSUE])
    store.neighbours(["old"], 10)  # the graph of edges is loaded before the transaction

    with pytest.raises(Boom), store.transaction():
        store.add_memories([memory("new", "the new cache decision", content_hash="hash-new")])
        store.link_about([("new", ISSUE)])
        store.add_next([("old", "new")])
        store.add_links([Link("new", "old", LinkKind.SUPERSEDES, NOW)])
        store.update_memory("old", {"status": Status.SUPERSEDED})
        raise Boom

    assert store.get_memories(["old", "new"]).keys() == {"old"}
    assert store.get_memories(["old"])["old"].status is Status.ACTIVE
    assert store.find_by_hash("hash-new") == []
    assert store.memories_about([ISSUE.key]) == {}
    assert store.next_pairs() == [] and store.links() == []
    assert store.neighbours(["old"], 10) == []
    assert found(store, "cache decision") == ["old"]
    assert sum(store.count_memories().values()) == 1


def test_a_store_error_inside_a_transaction_keeps_none_of_its_writes(store: GraphStore) -> None:
    store.add_memories([memory("old")])

    with pytest.raises(StoreError), store.transaction():
        store.add_memories([memory("new")])
        store.add_memories([memory("old")])  # a duplicated id: the store refuses it

    assert store.get_memories(["old", "new"]).keys() == {"old"}


def test_a_store_error_caught_inside_a_transaction_still_ends_it_without_its_writes(
    store: GraphStore,
) -> None:
    store.add_memories([memory("old")])

    with pytest.raises(StoreError), store.transaction():
        store.add_memories([memory("new")])
        with contextlib.suppress(StoreError):  # a caller that goes on must not keep "new" alone
            store.add_memories([memory("old")])
        store.add_memories([memory("later")])

    assert store.get_memories(["old", "new", "later"]).keys() == {"old"}


def test_the_store_works_on_after_a_rolled_back_transaction(store: GraphStore) -> None:
    with pytest.raises(Boom), store.transaction():
        store.add_memories([memory("gone", "a rolled back zebra")])
        raise Boom

    store.add_memories([memory("gone", "a kept zebra")])

    assert store.get_memories(["gone"])["gone"].text == "a kept zebra"
    assert found(store, "zebra") == ["gone"]


def test_a_transaction_inside_a_transaction_is_part_of_it(store: GraphStore) -> None:
    with pytest.raises(Boom), store.transaction():
        with store.transaction():
            store.add_memories([memory("inner")])
        store.add_memories([memory("outer")])
        raise Boom

    assert store.get_memories(["inner", "outer"]) == {}


def test_a_replaced_text_and_a_deletion_roll_back_too(store: GraphStore) -> None:
    store.add_memories([memory("a", "the parser uses regexes"), memory("b", "the walrus operator")])

    with pytest.raises(Boom), store.transaction():
        store.replace_text(
            "a", text="the parser uses tree-sitter", content_hash="h2", updated_at=NOW, entities=[]
        )
        store.delete_memory("b")
        raise Boom

    assert store.get_memories(["a"])["a"].text == "the parser uses regexes"
    assert found(store, "regexes") == ["a"] and found(store, "tree-sitter") == []
    assert found(store, "walrus") == ["b"]


def test_other_threads_never_see_an_open_transaction_half_done(store: GraphStore) -> None:
    seen: list[set[str]] = []
    started = threading.Event()

    def read() -> None:
        started.set()
        seen.append(set(store.get_memories(["first", "second"])))

    with store.transaction():
        store.add_memories([memory("first")])
        reader = threading.Thread(target=read)
        reader.start()
        started.wait()
        time.sleep(0.05)
        store.add_memories([memory("second", created_at=NOW + timedelta(seconds=1))])
    reader.join()

    # Kùzu and the fake make the reader wait till the commit; PostgreSQL shows it the state
    # before the transaction (MVCC). Never the transaction half done.
    assert seen in ([{"first", "second"}], [set()])


def test_a_transaction_of_nothing_is_harmless(store: GraphStore) -> None:
    with store.transaction():
        pass

    assert store.list_memories(EVERYONE, limit=5) == []


# -- text_matches -------------------------------------------------------------------------


def test_text_matches_are_the_search_hits_with_their_text_and_fields(store: GraphStore) -> None:
    store.add_memories(
        [
            memory("g", "Kùzu keeps the GRAPH store", category=Category.DECISION),
            memory("p", "the graph store of the project", scope=Scope.PROJECT, project="/src/proj"),
            memory("other", "the graph store of another project", scope=Scope.PROJECT, project="/src/other"),
            memory("none", "nothing in common"),
        ]
    )

    matches = store.text_matches("graph store", EVERYONE, 10)

    by_id = {m.id: m for m in matches}
    assert by_id.keys() == {"g", "p"}
    assert (by_id["g"].text, by_id["g"].category, by_id["g"].project) == (
        "Kùzu keeps the GRAPH store",
        Category.DECISION,
        None,
    )
    assert (by_id["p"].scope, by_id["p"].project) == (Scope.PROJECT, "/src/proj")


def test_text_matches_rank_by_the_words_held_and_honour_the_limit(store: GraphStore) -> None:
    store.add_memories(
        [
            memory("one", "redis for the cache"),
            memory("two", "redis streams carry the cache events"),
            memory("zero", "postgres holds the orders"),
        ]
    )

    assert [m.id for m in store.text_matches("redis streams cache", EVERYONE, 10)][:1] == ["two"]
    assert len(store.text_matches("redis streams cache", EVERYONE, 1)) == 1


def test_text_matches_follow_changes_and_deletions(store: GraphStore) -> None:
    store.add_memories([memory("a", "the cache uses redis"), memory("b", "redis streams for events")])
    store.replace_text(
        "a", text="the cache uses redis cluster", content_hash="h2", updated_at=NOW, entities=[]
    )
    store.update_memory("a", {"category": Category.DECISION})
    store.delete_memory("b")

    assert [(m.id, m.text, m.category) for m in store.text_matches("redis", EVERYONE, 10)] == [
        ("a", "the cache uses redis cluster", Category.DECISION)
    ]


# -- text_matches holding ----------------------------------------------------------------


def test_text_matches_holding_keep_the_memories_with_a_word_of_each_group(store: GraphStore) -> None:
    store.add_memories(
        [
            memory("a", "Kùzu wasn't handling RETRIES on_call"),
            memory("b", "the retries of the cache were handled"),
            memory("c", "retries everywhere"),
        ]
    )

    def matched(*groups: set[str]) -> list[str]:
        return sorted(m.id for m in store.text_matches("retries handling", EVERYONE, 10, holding=groups))

    assert matched() == ["a", "b", "c"]
    assert matched({"handling", "handled"}) == ["a", "b"]
    assert matched({"handling"}, {"wasn"}) == ["a"]  # "wasn't" holds "wasn"
    assert matched({"handling"}, {"kuzu"}, {"call"}) == ["a"]
    assert matched({"zebra"}, {"retries"}) == []


def test_text_matches_holding_follow_changes(store: GraphStore) -> None:
    store.add_memories([memory("a", "the cache uses redis"), memory("b", "redis holds the orders")])
    store.replace_text(
        "a", text="the cache uses redis cluster", content_hash="h2", updated_at=NOW, entities=[]
    )
    store.delete_memory("b")

    assert [m.id for m in store.text_matches("redis", EVERYONE, 10, holding=[{"cluster"}])] == ["a"]
    assert store.text_matches("redis", EVERYONE, 10, holding=[{"orders"}]) == []
