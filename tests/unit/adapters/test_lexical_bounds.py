"""The leading hits of a query of words found among the memories that hold its rarer words
(``lexical_bounds.proven_hits``): always the whole query's own leading hits, with their scores
to the bit and in its order, ties at the cut left to the whole query; and the answers of the
index's near-duplicate search (``matches``) the same with them as without."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
import tantivy

from graphmem.adapters import lexical_bounds, lexical_index, lexical_visibility
from graphmem.adapters.lexical_analysis import any_of, clauses
from graphmem.adapters.lexical_bounds import ScoreBounds, proven_hits
from graphmem.adapters.lexical_index import LexicalIndex
from graphmem.adapters.lexical_visibility import first_depth
from graphmem.core.models import Category, Scope, Status
from graphmem.core.ports import Visibility
from tests.support.lexical import empty_index
from tests.support.records import memory

COMMON = ["call", "retry", "policy", "deploy", "cache"]
RARE = ["zorblat", "quixel", "mandrake", "tessellate", "obelisk", "fjord"]


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LexicalIndex]:
    monkeypatch.setattr(lexical_bounds, "MIN_POSTINGS", 0)  # these stores are small
    # No background commit: the answers compared are of one searcher and one overlay.
    monkeypatch.setattr(lexical_index, "COMMIT_MAX_CHANGES", 10**9)
    monkeypatch.setattr(lexical_index, "COMMIT_DELAY", 3600.0)
    index = empty_index(tmp_path)
    yield index
    index.close()


def test_a_query_of_few_matches_is_asked_whole(tmp_path: Path) -> None:
    index = empty_index(tmp_path)
    try:
        index.add([memory(f"mem_{n:016x}", "zorblat call" + " note" * n) for n in range(40)])
        index.add([memory(f"mem_{500 + n:016x}", "call retry policy") for n in range(400)])
        index.flush()
        tokens, query = query_of(["zorblat", "call", "retry"])
        assert proven_hits(ScoreBounds(index._searcher), tokens, query, first_depth(8), 8) == []
    finally:
        index.close()


def fill(index: LexicalIndex, rng: random.Random, segments: int = 3) -> list[str]:
    """Memories of mostly common words, some with rare ones, some alike (tied scores), in
    ``segments`` segments, a few deleted."""
    stored: list[str] = []
    for batch in range(segments):
        records = []
        for n in range(rng.randint(80, 160)):
            words = rng.choices(COMMON, k=rng.randint(1, 6))
            if rng.random() < 0.15:
                words += rng.choices(RARE, k=rng.randint(1, 2))
            if rng.random() < 0.2:
                words = ["call", "retry", "zorblat"]  # the same text: the same score
            memory_id = f"mem_{batch:04x}{n:012x}"
            rng.shuffle(words)
            status = Status.ARCHIVED if rng.random() < 0.2 else Status.ACTIVE
            records.append(memory(memory_id, " ".join(words), status=status))
        index.add(records)
        index.flush()
        stored += [r.id for r in records]
    index.remove(rng.sample(stored, 10))
    index.flush()
    return stored


def whole_hits(searcher: tantivy.Searcher, query: tantivy.Query, depth: int) -> list[tuple[float, int, int]]:
    whole = tantivy.Query.boolean_query([(tantivy.Occur.Should, query)])
    return [(score, a.segment_ord, a.doc) for score, a in searcher.search(whole, depth, count=False).hits]


def query_of(words: list[str]) -> tuple[tuple[str, ...], tantivy.Query]:
    asked = clauses(words)
    assert all(len(clause.tokens) == 1 for clause in asked) and len(asked) == len(words)
    return tuple(clause.tokens[0] for clause in asked), any_of([clause.query for clause in asked])


@pytest.mark.parametrize("seed", range(6))
def test_the_proven_hits_begin_the_whole_querys_hits(index: LexicalIndex, seed: int) -> None:
    rng = random.Random(seed)
    fill(index, rng)
    bounds = ScoreBounds(index._searcher)
    proved = 0
    for _ in range(30):
        words = list(
            dict.fromkeys(rng.sample(COMMON, rng.randint(1, 4)) + rng.sample(RARE, rng.randint(0, 2)))
        )
        tokens, query = query_of(words)
        depth = rng.choice([first_depth(1), first_depth(8), 5])
        want = rng.randint(1, depth)
        proven = [(s, a.segment_ord, a.doc) for s, a in proven_hits(bounds, tokens, query, depth, want)]
        assert proven == whole_hits(index._searcher, query, depth)[: len(proven)]
        proved += len(proven)
    assert proved  # some were found without the whole query


def test_a_rare_word_beside_common_ones_is_proven_without_the_whole_query(index: LexicalIndex) -> None:
    common = [memory(f"mem_{n:016x}", "call retry policy deploy cache call") for n in range(400)]
    # of as many lengths: no two score alike
    rare = [memory(f"mem_{1000 + n:016x}", "zorblat call" + " note" * n) for n in range(40)]
    index.add([*common, *rare])
    index.flush()
    tokens, query = query_of(["zorblat", "call", "retry", "policy"])
    depth = first_depth(8)
    proven = proven_hits(ScoreBounds(index._searcher), tokens, query, depth, 8)
    assert len(proven) >= 8  # the memories holding "zorblat" score above any other
    expected = whole_hits(index._searcher, query, depth)[: len(proven)]
    assert [(s, a.segment_ord, a.doc) for s, a in proven] == expected


def test_hits_tied_at_the_cut_are_left_to_the_whole_query(index: LexicalIndex) -> None:
    index.add([memory(f"mem_{n:016x}", "zorblat call") for n in range(100)])
    index.add([memory(f"mem_{500 + n:016x}", "call retry") for n in range(100)])
    index.flush()
    tokens, query = query_of(["zorblat", "call", "retry"])
    assert proven_hits(ScoreBounds(index._searcher), tokens, query, first_depth(8), 8) == []


@pytest.mark.parametrize("seed", range(4))
def test_the_near_duplicate_search_answers_alike_with_the_bounds_and_without(
    index: LexicalIndex, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    rng = random.Random(100 + seed)
    fill(index, rng)
    index.add([memory(f"mem_{9000 + n:016x}", "zorblat retry call") for n in range(5)])  # the overlay's
    texts = [" ".join(rng.sample(COMMON, 3) + rng.sample(RARE, 1)) for _ in range(25)]
    visibilities = [
        Visibility(None),
        Visibility(None, frozenset({Status.ACTIVE, Status.ARCHIVED})),
        Visibility("/src/a", categories=frozenset({Category.FACT})),
    ]
    asked = [(text, v, limit) for text in texts for v in visibilities for limit in (1, 8)]
    with_bounds = [index.matches(text, v, limit) for text, v, limit in asked]
    monkeypatch.setattr(lexical_visibility, "proven_hits", lambda *args: [])
    assert [index.matches(text, v, limit) for text, v, limit in asked] == with_bounds
    assert any(m.scope is Scope.GLOBAL for found in with_bounds for m in found)


def test_a_recall_of_words_and_phrases_asks_the_whole_query(
    index: LexicalIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A query with phrases was slower asked from its rarer words' memories at a million.
    index.add([memory(f"mem_{n:016x}", "the zorblat retry policy" + " note" * n) for n in range(40)])
    index.flush()
    asked: list[object] = []

    def none_proven(*args: object) -> list[object]:
        asked.append(args)
        return []

    monkeypatch.setattr(lexical_visibility, "proven_hits", none_proven)
    assert index.search("where is the retry policy of zorblat", Visibility(None), 8)
    assert not asked
    assert index.matches("zorblat retry policy", Visibility(None), 8)
    assert asked  # the near-duplicate check's words alone
