"""A team's store's full-text index beside each process (``postgres_lexical.py``), kept in step
by the database's change feed (``postgres_feed.py``): stores on one database, each with its own
folder, built at open (not on a thread) so that the index answers from the first search."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import psycopg
import pytest
from support.records import NOW, memory
from support.stores import postgres_url, writer_role
from support.team import person_role

from graphmem.adapters import postgres_lexical
from graphmem.adapters.postgres_feed import ChangeFeed, Position
from graphmem.adapters.postgres_rows import INSERT_MEMORY, memory_params
from graphmem.adapters.postgres_store import PostgresGraphStore
from graphmem.core.events import EventKind, MemoryEvent
from graphmem.core.models import Scope, Status
from graphmem.core.ports import Visibility

DIM = 8
CURRENT = Visibility("/p")  # active and resolved memories, global ones and the project's
EVERY_STATUS = Visibility("/p", frozenset(Status))


def indexed(url: str, folder: Path) -> PostgresGraphStore:
    return PostgresGraphStore(url, dimension=DIM, text_index=folder, text_index_background=False)


def found(store: PostgresGraphStore, query: str, visibility: Visibility = CURRENT) -> list[str]:
    assert store.lexical is not None and store.lexical.answering == "index"
    return sorted(memory_id for memory_id, _ in store.search_text(query, visibility, 10))


@pytest.fixture
def url(request: pytest.FixtureRequest) -> str:
    return postgres_url(request, DIM)


@pytest.fixture
def pair(url: str, tmp_path: Path) -> Iterator[tuple[PostgresGraphStore, PostgresGraphStore]]:
    one, other = indexed(url, tmp_path / "one"), indexed(url, tmp_path / "other")
    yield one, other
    one.close()
    other.close()


def test_a_write_through_one_store_is_found_by_the_others_next_search(
    pair: tuple[PostgresGraphStore, PostgresGraphStore],
) -> None:
    one, other = pair
    assert found(other, "quokka") == []
    one.add_memories([memory("m1", "the quokka smiles at the camera")])
    assert found(other, "quokka") == ["m1"]
    assert found(one, "quokka") == ["m1"]


def test_a_transaction_that_took_its_number_first_and_commits_last_is_not_skipped(
    pair: tuple[PostgresGraphStore, PostgresGraphStore], url: str
) -> None:
    one, other = pair
    assert found(other, "quokka") == []
    with psycopg.connect(url) as late:  # a transaction of its own, left open
        late.execute(INSERT_MEMORY, memory_params(memory("early", "an early quokka"), None))
        one.add_memories([memory("later", "a later quokka")])  # a larger number, committed first
        assert found(other, "quokka") == ["later"]
        late.commit()
    assert found(other, "quokka") == ["early", "later"]


def test_a_deleted_or_archived_memory_is_never_returned(
    pair: tuple[PostgresGraphStore, PostgresGraphStore],
) -> None:
    one, other = pair
    one.add_memories(
        [memory("kept", "wombat burrow"), memory("old", "wombat den"), memory("gone", "wombat tunnel")]
    )
    assert found(other, "wombat") == ["gone", "kept", "old"]
    one.update_memory("old", {"status": Status.ARCHIVED})
    one.delete_memory("gone")
    assert found(other, "wombat") == ["kept"]
    assert found(other, "wombat", EVERY_STATUS) == ["kept", "old"]
    assert found(other, "tunnel", EVERY_STATUS) == []


def test_an_edit_of_the_text_is_searched_by_its_new_words_only(
    pair: tuple[PostgresGraphStore, PostgresGraphStore],
) -> None:
    one, other = pair
    one.add_memories([memory("m1", "the platypus lays eggs")])
    assert found(other, "platypus") == ["m1"]
    one.replace_text("m1", text="the echidna lays eggs", content_hash="h2", updated_at=NOW, entities=[])
    assert found(other, "platypus") == []
    assert found(other, "echidna") == ["m1"]


def test_near_duplicates_and_cosines_come_from_the_index(
    pair: tuple[PostgresGraphStore, PostgresGraphStore],
) -> None:
    one, other = pair
    vector = np.eye(1, DIM, dtype=np.float32)
    one.add_memories([memory("m1", "numbat eats termites")], vectors=vector)
    one.add_memories([memory("m2", "numbat sleeps")])
    assert [m.id for m in other.text_matches("numbat termites", CURRENT, 10, holding=[["termites"]])] == [
        "m1"
    ]
    hits, cosines = other.search_text_near("numbat", CURRENT, 10, vector[0])
    assert sorted(i for i, _ in hits) == ["m1", "m2"]
    assert cosines == {"m1": pytest.approx(1.0)}


def test_a_second_store_on_the_same_folder_searches_the_database(url: str, tmp_path: Path) -> None:
    first = indexed(url, tmp_path)
    second = indexed(url, tmp_path)  # tantivy's writer lock is the first's
    try:
        assert (first.full_text_search, second.full_text_search) == ("index", "database")
        first.add_memories([memory("m1", "a dingo howls")])
        assert [i for i, _ in second.search_text("dingo", CURRENT, 10)] == ["m1"]
        assert found(first, "dingo") == ["m1"]
    finally:
        second.close()
        first.close()


def test_the_words_cosines_are_read_with_them_only_where_the_database_searches(
    url: str, tmp_path: Path
) -> None:
    plain = PostgresGraphStore(url, dimension=DIM)  # a CLI's: the database searches, cosines and all
    first = indexed(url, tmp_path)  # a daemon's: its index finds the hits, a statement their cosines
    second = indexed(url, tmp_path)  # tantivy's writer lock is the first's: the database searches
    try:
        assert [s.cosines_with_words for s in (plain, first, second)] == [True, False, True]
    finally:
        second.close()
        first.close()
        plain.close()


def test_an_index_closed_and_opened_again_catches_up_from_where_it_was(url: str, tmp_path: Path) -> None:
    writer = PostgresGraphStore(url, dimension=DIM)
    store = indexed(url, tmp_path)
    writer.add_memories([memory("m1", "a bilby digs")])
    assert found(store, "bilby") == ["m1"]
    store.close()
    assert store.lexical is not None
    saved = (store.lexical.folder / "feed-position.json").read_text("utf-8")
    writer.add_memories([memory("m2", "another bilby digs")])
    writer.delete_memory("m1")
    again = indexed(url, tmp_path)
    try:
        assert found(again, "bilby") == ["m2"]
        assert not (again.lexical.folder / "feed-position.json").exists()  # type: ignore[union-attr]
        assert saved  # it resumed from a saved position, the one written at close
    finally:
        again.close()
        writer.close()


def test_a_role_never_indexes_nor_learns_of_another_roles_private_memory(url: str, tmp_path: Path) -> None:
    admin = url
    alice_url = writer_role(admin, person_role(admin, "alice"))
    bob_url = writer_role(admin, person_role(admin, "bob"))
    alice, bob = indexed(alice_url, tmp_path / "alice"), indexed(bob_url, tmp_path / "bob")
    try:
        alice.add_memories(
            [
                memory("private", "alice's secret quoll"),
                memory("shared", "the team quoll", scope=Scope.PROJECT, project="/p"),
            ]
        )
        assert found(bob, "quoll") == ["shared"]
        assert found(alice, "quoll") == ["private", "shared"]
        assert bob.lexical is not None and bob.lexical._index is not None
        assert bob.lexical._index.count() == 1
        for gone in ("private", "shared"):  # as graphmem deletes: with its event (schema 20)
            with alice.transaction():
                alice.add_events([MemoryEvent(f"evt_{gone}", gone, NOW, EventKind.DELETE, "user", "")])
                alice.delete_memory(gone)
        start = Position(0, (), 0)
        assert ChangeFeed(bob.db).since(start).removed == ["shared"]  # never the private one's id
        assert sorted(ChangeFeed(alice.db).since(start).removed) == ["private", "shared"]
        assert found(bob, "quoll") == []
    finally:
        alice.close()
        bob.close()


def test_built_in_the_background_the_database_answers_until_the_index_is_current(
    url: str, tmp_path: Path
) -> None:
    writer = PostgresGraphStore(url, dimension=DIM)
    writer.add_memories([memory("m1", "a kookaburra laughs")])
    store = PostgresGraphStore(url, dimension=DIM, text_index=tmp_path)  # a daemon's: built on a thread
    try:
        assert store.lexical is not None
        assert [i for i, _ in store.search_text("kookaburra", CURRENT, 10)] == ["m1"]  # either answers
        store.lexical.settle()
        writer.add_memories([memory("m2", "another kookaburra")])
        assert found(store, "kookaburra") == ["m1", "m2"]
    finally:
        store.close()
        writer.close()


def test_a_memory_handed_to_another_role_leaves_the_first_ones_index(url: str, tmp_path: Path) -> None:
    alice_url = writer_role(url, person_role(url, "alice"))
    bob_url = writer_role(url, person_role(url, "bob"))
    alice, bob = indexed(alice_url, tmp_path / "alice"), indexed(bob_url, tmp_path / "bob")
    try:
        alice.add_memories([memory("private", "alice's galah")])
        assert (found(alice, "galah"), found(bob, "galah")) == (["private"], [])
        with psycopg.connect(url, autocommit=True) as admin:  # an administrator hands it over
            admin.execute("UPDATE memories SET owner = %s WHERE id = 'private'", (person_role(url, "bob"),))
        assert (found(alice, "galah"), found(bob, "galah")) == ([], ["private"])
    finally:
        alice.close()
        bob.close()


def test_a_build_reads_the_memories_a_page_at_a_time_and_misses_none(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postgres_lexical, "PAGE", 3)
    writer = PostgresGraphStore(url, dimension=DIM)
    writer.add_memories([memory(f"m{i:02}", f"a wallaby number {i}") for i in range(10)])
    store = indexed(url, tmp_path)
    try:
        assert store.lexical is not None and store.lexical._index is not None
        assert store.lexical._index.count() == 10
        assert len(found(store, "wallaby")) == 10
    finally:
        store.close()
        writer.close()


def test_a_build_reads_the_table_in_its_own_order_not_an_index_s(url: str) -> None:
    # One sequential scan, through a small ring of the server's buffers on a large table: pages
    # in id order read the heap at random, and pushed the vector index out of the server's buffers.
    writer = PostgresGraphStore(url, dimension=DIM)
    try:
        stored = [f"m{i:02}" for i in reversed(range(10))]  # the last id first
        writer.add_memories([memory(memory_id, f"a wallaby {memory_id}") for memory_id in stored])
        with ChangeFeed(writer.db).everything(3) as (pages, _):
            read = [[record.id for record in page] for page in pages]
    finally:
        writer.close()
    assert [len(page) for page in read] == [3, 3, 3, 1]
    assert [memory_id for page in read for memory_id in page] == stored
