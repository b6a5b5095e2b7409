"""The full-text index's visibility filter: the hits filtered by their columns after the
search (``filtered_hits``) are those of the query that leaves the hidden ones out
(``excluded_hits``), to the score's last bit, for random stores and visibilities."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from graphmem.adapters import lexical_index, lexical_visibility
from graphmem.adapters.lexical_analysis import clauses
from graphmem.adapters.lexical_index import LexicalIndex
from graphmem.adapters.lexical_visibility import (
    ColumnFilter,
    Columns,
    Hit,
    Search,
    excluded_hits,
    filtered_hits,
    first_depth,
    visible_share,
)
from graphmem.core.models import Category, MemoryRecord, Scope, Status
from graphmem.core.ports import TextHits, TextMatch, Visibility
from tests.support.lexical import empty_index
from tests.support.records import memory

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
WORDS = [
    "kuzu",
    "graph",
    "store",
    "ruff",
    "lint",
    "cache",
    "deploy",
    "schema",
    "index",
    "vector",
    "query",
    "branch",
    "merge",
    "token",
]
PROJECTS = [None, "/src/a", "/src/b"]
BRANCHES = [None, "main-fix", "feature/x"]


def random_memory(rng: random.Random, memory_id: str) -> MemoryRecord:
    project = rng.choice(PROJECTS)
    scope = Scope.PROJECT if project is not None and rng.random() < 0.7 else Scope.GLOBAL
    words = rng.choices(WORDS[: rng.randint(3, len(WORDS))], k=rng.randint(1, 10))
    return memory(
        memory_id,
        " ".join(words),
        status=rng.choice(list(Status)),
        scope=scope,
        project=project,
        branch=rng.choice(BRANCHES) if project is not None else None,
        category=rng.choice(list(Category)),
        created_at=NOW - timedelta(hours=rng.randint(0, 24 * 30)),
    )


def random_id(rng: random.Random, n: int) -> str:
    return f"mem_{rng.getrandbits(64):016x}" if rng.random() < 0.7 else f"imported-{n}"


def random_visibility(rng: random.Random) -> Visibility:
    statuses = frozenset(s for s in Status if rng.random() < 0.5)
    categories = frozenset(c for c in Category if rng.random() < 0.6)
    project = rng.choice(PROJECTS)
    return Visibility(
        project,
        rng.choice([Visibility(None).statuses, statuses, frozenset(Status)]),
        rng.choice([None, None, categories]),
        rng.choice([None, None, NOW - timedelta(days=rng.randint(1, 30))]),
        rng.choice(BRANCHES),
        rng.random() < 0.2,
        aliases=frozenset(p for p in ("/src/a", "/src/b") if project not in (None, p) and rng.random() < 0.3),
    )


@pytest.fixture
def index(tmp_path: Path) -> Iterator[LexicalIndex]:
    index = empty_index(tmp_path)
    yield index
    index.close()


def answers(index: LexicalIndex, query: str, visibility: Visibility, limit: int) -> tuple[TextHits, ...]:
    return (
        index.search(query, visibility, limit),
        index.search(query, visibility, limit, phrase=query),
    )


def matches(index: LexicalIndex, query: str, visibility: Visibility, limit: int) -> list[TextMatch]:
    return index.matches(query, visibility, limit)


def counting(calls: list[bool]) -> Callable[..., list[Hit] | None]:
    def counted(*args: object) -> list[Hit] | None:
        found = filtered_hits(*args)  # type: ignore[arg-type]
        calls.append(found is not None)
        return found

    return counted


def answer_as_the_exclusions(
    index: LexicalIndex, monkeypatch: pytest.MonkeyPatch, rng: random.Random, words: list[str], most: int
) -> None:
    """40 random searches (up to ``most`` of ``words``), each answered as with the exclusions
    alone (``excluded_hits``): the same hits, scores and order, and the same matches."""
    for _ in range(40):
        visibility = random_visibility(rng)
        query = " ".join(rng.sample(words, rng.randint(1, most)))
        limit = rng.choice([1, 3, 8, 20, 50])
        found = answers(index, query, visibility, limit), matches(index, query, visibility, limit)
        with monkeypatch.context() as old:
            old.setattr(lexical_index, "top_hits", excluded_hits)
            expected = answers(index, query, visibility, limit), matches(index, query, visibility, limit)
        assert found == expected, (query, visibility, limit)


@pytest.mark.parametrize("seed", range(8))
def test_the_filtered_search_answers_as_the_query_that_leaves_the_hidden_out(
    index: LexicalIndex, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    rng = random.Random(seed)
    stored: list[str] = []
    for batch in range(3):  # a segment each; too few to start the background commit
        records = [random_memory(rng, random_id(rng, batch * 1000 + n)) for n in range(rng.randint(40, 120))]
        index.add(records)
        index.flush()
        stored += [r.id for r in records]
    # Changes waiting in the overlay: new memories, changed ones, deleted ones.
    index.add([random_memory(rng, random_id(rng, 9000 + n)) for n in range(rng.randint(0, 30))])
    index.add([random_memory(rng, memory_id) for memory_id in rng.sample(stored, rng.randint(0, 20))])
    index.remove(rng.sample(stored, rng.randint(0, 10)))
    committed = index._searcher.num_docs
    filtered: list[bool] = []
    monkeypatch.setattr(lexical_visibility, "filtered_hits", counting(filtered))
    answer_as_the_exclusions(index, monkeypatch, rng, WORDS, 4)
    assert index._searcher.num_docs == committed  # the overlay was searched throughout
    assert 0 < sum(filtered) < len(filtered)  # both ways were taken


@pytest.mark.parametrize("seed", range(6))
def test_the_narrow_search_answers_as_the_query_that_leaves_the_hidden_out(
    index: LexicalIndex, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """Every search asked with its places required (``MAX_DEPTH`` 0): the same hits, scores
    and order as the exclusions alone, ties across segments included (few words, many ties)."""
    rng = random.Random(100 + seed)
    for batch in range(3):
        records = [random_memory(rng, random_id(rng, batch * 1000 + n)) for n in range(rng.randint(40, 120))]
        index.add([replace(r, text=" ".join(rng.choices(WORDS[:3], k=2))) for r in records])
        index.flush()
    monkeypatch.setattr(lexical_visibility, "MAX_DEPTH", 0)
    filtered: list[bool] = []
    monkeypatch.setattr(lexical_visibility, "filtered_hits", counting(filtered))
    answer_as_the_exclusions(index, monkeypatch, rng, WORDS[:3], 2)
    assert filtered == []


def test_a_narrow_filter_asks_again_with_the_hidden_left_out_and_finds_them(index: LexicalIndex) -> None:
    # Most of the store is shown, but not the memories that hold "cache": the share of shown
    # memories cannot tell, so the first search asks as few hits as for a wide filter.
    archived = [memory(f"a{n:03d}", "cache cache policy", status=Status.ARCHIVED) for n in range(60)]
    active = [memory(f"v{n}", "cache policy in the deploy notes") for n in range(3)]
    unrelated = [memory(f"u{n:03d}", "deploy notes") for n in range(600)]
    index.add([*archived, *active, *unrelated])
    index.flush()
    searcher = index._searcher
    query = clauses(["cache"])[0].query
    visibility = Visibility(None)
    depth = first_depth(2, visible_share(searcher, visibility))
    assert depth == first_depth(2)
    first = searcher.search(query, depth, count=False).hits
    assert len(first) == depth  # more matches than asked, all archived
    assert filtered_hits(searcher, Search(query, visibility, set(), 2), depth) is None
    assert {memory_id for memory_id, _ in index.search("cache", visibility, 2)} < {"v0", "v1", "v2"}
    assert len(index.search("cache", visibility, 5)) == 3


def project_store(index: LexicalIndex, projects: int, each: int) -> None:
    """``each`` memories of every one of ``projects`` projects, all holding "cache", the projects'
    in turn, in two segments."""
    for half in range(2):
        index.add(
            [
                memory(
                    f"mem_{half:04x}{p:06x}{n:06x}",
                    "cache policy" + " cache" * (n % 3),
                    scope=Scope.PROJECT,
                    project=f"/src/p{p}",
                )
                for n in range(half, each, 2)
                for p in range(projects)
            ]
        )
        index.flush()


def test_a_project_of_a_store_of_many_is_found_by_the_filtered_search_asked_deeper(
    index: LexicalIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    project_store(index, projects=20, each=40)
    searcher = index._searcher
    visibility = Visibility("/src/p3")
    assert visible_share(searcher, visibility) == pytest.approx(1 / 20)
    search = Search(clauses(["cache"])[0].query, visibility, set(), 5)
    assert filtered_hits(searcher, search) is None  # as deep as for a wide filter: too few of /src/p3
    expected = excluded_hits(searcher, search)
    excluded: list[Search] = []
    monkeypatch.setattr(lexical_visibility, "excluded_hits", lambda _s, asked: excluded.append(asked) or [])
    found = lexical_visibility.top_hits(searcher, search)
    assert excluded == []  # found at once, by the columns
    assert [(h.memory_id, h.score) for h in found] == [(h.memory_id, h.score) for h in expected]
    assert len(found) == 5


def test_a_visibility_too_narrow_for_the_filtered_search_is_asked_among_its_places_alone(
    index: LexicalIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    project_store(index, projects=200, each=2)
    searcher = index._searcher
    search = Search(clauses(["cache"])[0].query, Visibility("/src/p7"), set(), 30)
    assert first_depth(30, visible_share(searcher, search.visibility)) > lexical_visibility.MAX_DEPTH
    filtered: list[bool] = []
    monkeypatch.setattr(lexical_visibility, "filtered_hits", counting(filtered))
    found = lexical_visibility.top_hits(searcher, search)
    assert filtered == []  # not asked: it would have read more hits than the exclusions cost
    assert {h.memory_id for h in found} == {"mem_0000000007000000", "mem_0001000007000001"}


def of_a(count: int) -> list[MemoryRecord]:
    return [memory(f"a{n}", "x", scope=Scope.PROJECT, project="/src/a") for n in range(count)]


@pytest.mark.parametrize(
    ("records", "visibility", "share"),
    [
        ([], Visibility("/src/a"), 1.0),
        ([memory("g1", "x"), memory("g2", "y")], Visibility(None), 1.0),
        (
            [memory("g", "x"), *of_a(3)],
            Visibility(None),
            1 / 4,
        ),
        (
            [memory("g", "x"), *of_a(3)],
            Visibility("/src/a"),
            1.0,
        ),
        (
            [
                *of_a(2),
                *(memory(f"b{n}", "x", scope=Scope.PROJECT, project="/src/b") for n in range(6)),
            ],
            Visibility("/src/c", aliases=frozenset({"/src/a"})),
            1 / 4,
        ),
        (
            [memory("g", "x"), memory("h", "x", status=Status.ARCHIVED)],
            Visibility(None),
            1 / 2,
        ),
    ],
)
def test_the_share_a_visibility_shows_is_read_from_the_index_s_term_counts(
    index: LexicalIndex, records: list[MemoryRecord], visibility: Visibility, share: float
) -> None:
    index.add(records)
    index.flush()
    assert visible_share(index._searcher, visibility) == pytest.approx(share)


@pytest.mark.parametrize("limit", [1, 5, 30, 100])
def test_the_first_search_asks_deeper_the_narrower_the_visibility(limit: int) -> None:
    assert first_depth(limit, 1.0) == first_depth(limit) == 2 * limit + 16
    depths = [first_depth(limit, share) for share in (1.0, 0.5, 0.2, 0.05, 0.01, 0.0)]
    assert depths == sorted(depths)
    assert depths[3] * 0.05 >= limit + 2 * limit**0.5  # expects more than ``limit`` visible ones


@pytest.mark.parametrize("limit", [1, 3, 7, 30])
def test_ties_across_segments_are_cut_where_the_query_that_leaves_the_hidden_out_cuts_them(
    index: LexicalIndex, limit: int
) -> None:
    rng = random.Random(limit)
    for batch in range(4):  # the same score everywhere, in four segments
        statuses = [rng.choice([Status.ACTIVE, Status.ARCHIVED]) for _ in range(30)]
        index.add([memory(f"m{batch}-{n:02d}", "cache policy", status=s) for n, s in enumerate(statuses)])
        index.flush()
    query = clauses(["cache"])[0].query
    search = Search(query, Visibility(None), set(), limit)
    found = filtered_hits(index._searcher, search)
    expected = excluded_hits(index._searcher, search)
    assert found is not None
    assert [(h.memory_id, h.score) for h in found] == [(h.memory_id, h.score) for h in expected]


@pytest.mark.parametrize(
    ("changes", "visibility", "shown"),
    [
        ({}, Visibility(None), True),
        ({"status": Status.ARCHIVED}, Visibility(None), False),
        ({"scope": Scope.PROJECT, "project": "/p"}, Visibility(None), False),
        ({"scope": Scope.PROJECT, "project": "/p"}, Visibility("/p"), True),
        ({"scope": Scope.PROJECT, "project": "/p"}, Visibility("/q"), False),
        ({"scope": Scope.PROJECT, "project": "/p"}, Visibility("/q", aliases=frozenset({"/p"})), True),
        ({"scope": Scope.PROJECT, "project": "/q"}, Visibility(None, aliases=frozenset({"/q"})), False),
        ({"project": "/p", "branch": "b"}, Visibility("/p"), False),
        ({"project": "/p", "branch": "b"}, Visibility("/p", branch="b"), True),
        ({"project": "/p", "branch": "b"}, Visibility("/p", all_branches=True), True),
        ({"category": Category.IDEA}, Visibility(None, categories=frozenset({Category.FACT})), False),
        ({"created_at": NOW - timedelta(days=2)}, Visibility(None, since=NOW - timedelta(days=1)), False),
        ({"created_at": NOW}, Visibility(None, since=NOW), True),
    ],
)
def test_a_memory_s_columns_say_whether_a_visibility_shows_it(
    changes: dict[str, object], visibility: Visibility, shown: bool
) -> None:
    assert ColumnFilter(visibility).shows(*Columns.of(memory("m", "text", **changes))) is shown
