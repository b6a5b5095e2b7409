"""The PostgreSQL store's full-text search reads the memories holding two of the query's words
first, and only when they cannot be the whole answer all the candidates: the same ranking either
way (``postgres_text.py``)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from support.records import memory
from support.stores import opened_postgres, postgres_url

from graphmem.adapters import postgres_text
from graphmem.adapters.postgres_store import PostgresGraphStore
from graphmem.core.models import Status
from graphmem.core.ports import Visibility

EVERYONE = Visibility(None, frozenset(Status))
WORDS = ["kafka", "lag", "consumer", "deploy", "service", "cache", "redis", "timeout", "retry", "queue"]


@pytest.fixture
def store(request: pytest.FixtureRequest) -> PostgresGraphStore:
    opened = opened_postgres(postgres_url(request), request, 8)
    rng = random.Random(5)
    # Common words in many memories, rare ones in few: the shapes the narrowing meets.
    texts = [" ".join(rng.sample(WORDS[: 3 + i % 7], 1 + i % 3)) + f" note {i}" for i in range(400)]
    opened.add_memories([memory(f"m{i:03d}", text) for i, text in enumerate(texts)])
    return opened


def _statements(store: PostgresGraphStore, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    sent: list[tuple[str, Any]] = []
    rows = store.db.rows

    def counted(sql: str, params: Any = None, **kwargs: Any) -> list[tuple[object, ...]]:
        sent.append((sql, params))
        return rows(sql, params, **kwargs)

    monkeypatch.setattr(store.db, "rows", counted)
    return sent


def _rows_read(store: PostgresGraphStore, sql: str, params: Any) -> int:
    """The rows of ``memories`` the statement took (its plan's scans of the table, as it ran)."""
    plan = store.db.rows(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", params)[0][0][0]["Plan"]
    nodes, read = [plan], 0
    while nodes:
        node = nodes.pop()
        nodes += node.get("Plans", [])
        if node.get("Relation Name") == "memories":
            read += int(node["Actual Rows"] * node["Actual Loops"])
    return read


@pytest.mark.parametrize("limit", [1, 5, 40])
def test_reading_the_memories_with_a_second_word_first_changes_no_answer(
    store: PostgresGraphStore, monkeypatch: pytest.MonkeyPatch, limit: int
) -> None:
    rng = random.Random(limit)
    queries = [" ".join(rng.sample(WORDS, rng.randint(1, 4))) for _ in range(25)]
    queries += ["kafka lag", "lag consumer note", "redis timeout retry queue"]
    narrowed = [(q, store.search_text(q, EVERYONE, limit, phrase=q)) for q in queries]
    matched = [(q, store.text_matches(q, EVERYONE, limit)) for q in queries]
    monkeypatch.setattr(postgres_text, "_with_another", lambda candidates, scored: None)
    for query, hits in narrowed:
        assert hits == store.search_text(query, EVERYONE, limit, phrase=query), query
        assert hits.exact == store.search_text(query, EVERYONE, limit, phrase=query).exact
    for query, found in matched:
        assert found == store.text_matches(query, EVERYONE, limit), query


def test_a_query_whose_best_memories_hold_two_of_its_words_reads_only_those(
    store: PostgresGraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.add_memories([memory(f"both{i}", f"zeppelin hangar {i}") for i in range(3)])
    store.add_memories([memory(f"one{i}", f"zeppelin ride {i}") for i in range(30)])
    store.search_text("zeppelin hangar", EVERYONE, 3)  # word statistics read
    sent = _statements(store, monkeypatch)
    hits = store.search_text("zeppelin hangar", EVERYONE, 3)
    assert sorted(i for i, _ in hits) == ["both0", "both1", "both2"]
    assert len(sent) == 1
    assert _rows_read(store, *sent[0]) == 3  # no second read of every memory holding "zeppelin"


def test_a_memory_whose_one_word_outweighs_two_common_ones_is_still_first(
    store: PostgresGraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.add_memories([memory("pair", "deploy service zeppelin"), memory("lone", "quokka sighting")])
    store.search_text("deploy service quokka", EVERYONE, 2)  # word statistics read
    sent = _statements(store, monkeypatch)
    hits = store.search_text("deploy service quokka", EVERYONE, 2)
    assert hits[0][0] == "lone"
    assert len(sent) == 1  # both reads in one round trip


def test_words_counted_after_the_store_grew_still_weigh_for_the_memories_holding_them(
    request: pytest.FixtureRequest,
) -> None:
    store = opened_postgres(postgres_url(request), request, 8)
    store.add_memories([memory("first", "an early note")])
    store.search_text("early", EVERYONE, 5)  # a new store's statistics: one memory, counted
    texts = ["charlie rule 7", "bravo rule 7", "delta rule 7", "charlie rule 8", "charlie rule 9"]
    store.add_memories([memory(f"m{i}", text) for i, text in enumerate(texts)])
    # Each word is now in more memories than the one counted first: none may weigh less than nothing.
    assert store.text_matches("charlie rule 7", EVERYONE, 5)[0].id == "m0"
    assert store.search_text("7 rule charlie", EVERYONE, 5)[0][0] == "m0"  # not as a phrase
