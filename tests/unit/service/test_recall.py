"""Recall ranks what people said above what tools scraped (source priors), exactly at any limit."""

from __future__ import annotations

import threading
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from graphmem.core.fusion import PLANS, Plan
from graphmem.core.models import Entity, EntityKind
from graphmem.core.ports import TextHits, Vector, VectorQuery, Visibility
from graphmem.service.memory import MemoryService

HYBRID = PLANS["hybrid"]
NO_PRIORS = Plan("no-priors", HYBRID.weights, source_priors=MappingProxyType({}))
PROJECT = "/work/shop"  # an agent's memory belongs to a project
# A bound on a wait that a recall on the code under test ends at once (no timing is asserted).
WORDS_SEARCH_WAIT_S = 10.0


def _stated_and_scraped(memory: MemoryService) -> tuple[str, str]:
    stated = memory.remember("We chose Kuzu for the graph store", category="decision").memory.id
    scraped = memory.remember(
        "Commit 1a2b3c4: Kuzu graph store: tune the Kuzu graph store buffer pool",
        category="event",
        source="git:1a2b3c4d5e6f",
    ).memory.id
    return stated, scraped


def test_a_scraped_commit_that_matches_better_still_ranks_below_the_users_decision(
    memory_service: MemoryService,
) -> None:
    stated, scraped = _stated_and_scraped(memory_service)
    unweighted = [h.memory.id for h in memory_service.recall("kuzu graph store", plan=NO_PRIORS).hits]
    assert unweighted == [scraped, stated]  # on its words alone the commit wins

    hits = memory_service.recall("kuzu graph store").hits

    assert [h.memory.id for h in hits] == [stated, scraped]
    assert hits[1].score < hits[0].score


def test_the_prior_applies_before_the_limit_cuts(memory_service: MemoryService) -> None:
    stated, _ = _stated_and_scraped(memory_service)

    assert [h.memory.id for h in memory_service.recall("kuzu graph store", limit=1).hits] == [stated]


def test_a_memory_from_an_agent_or_a_session_keeps_its_whole_score(memory_service: MemoryService) -> None:
    ids = {
        source: memory_service.remember(
            f"The {word} cache holds recall results", project=PROJECT, source=source
        ).memory.id
        for source, word in (("mcp", "query"), ("opencode", "answer"), ("user", "result"))
    }
    hits = memory_service.recall("cache recall results", plan=NO_PRIORS, project=PROJECT).hits
    weighted = {
        h.memory.id: h.score for h in memory_service.recall("cache recall results", project=PROJECT).hits
    }

    assert {h.memory.id: h.score for h in hits} == weighted
    assert set(weighted) == set(ids.values())


def test_a_memory_about_the_rarely_touched_named_file_beats_the_busy_files_crowd(
    memory_service: MemoryService, tmp_path: Path
) -> None:
    project = tmp_path / "repo"
    project.mkdir()
    for name in ("app.py", "util.py"):
        (project / name).write_text("x = 1\n")
    where = str(project)
    for task in (
        "fix the parser for tabs",
        "fix the parser on empty input",
        "the parser fails on unicode: fix",
        "fix parser errors in nested blocks",
        "fix the parser crash on comments",
        "parser: fix the line numbers",
        "fix the parser for long lines",
        "fix the parser state leak",
    ):
        memory_service.remember(f"{task} in app.py, util helpers py", project=where, category="event")
    target = memory_service.remember(
        "util.py and app.py: the parser shares helpers now", project=where, category="event"
    ).memory.id
    query = "fix the parser in app.py and util.py"
    # Before: every memory about a named entity scored 1 and the channel weighed 1.
    before = Plan("before", {**HYBRID.weights, "entity": 1.0}, entity_specificity=False)

    assert memory_service.recall(query, project=where, plan=before).hits[0].memory.id != target
    assert memory_service.recall(query, project=where).hits[0].memory.id == target


# -- the sentence a user half-remembers ------------------------------------------------

SENTENCE = "Yesterday we went to the park with the kids and a long list of errands."
CROWD = "Park, park, park: we went to the beach and then the park went quiet."


def test_a_memory_that_holds_the_query_word_for_word_ranks_first_level_with_the_best(
    memory_service: MemoryService,
) -> None:
    crowd = memory_service.remember(CROWD).memory.id
    sentence = memory_service.remember(SENTENCE).memory.id

    hits = memory_service.recall("we went to the park", plan=NO_PRIORS).hits

    assert [h.memory.id for h in hits][:2] == [sentence, crowd]
    assert hits[0].score >= hits[1].score


def test_a_scraped_commit_that_holds_the_keywords_still_ranks_below_the_users_decision(
    memory_service: MemoryService,
) -> None:
    stated, scraped = _stated_and_scraped(memory_service)  # only the commit says "kuzu graph store"

    hits = memory_service.recall("kuzu graph store").hits

    assert [h.memory.id for h in hits] == [stated, scraped]


def test_the_word_for_word_match_clears_a_floor_that_drops_every_other_candidate(
    memory_service: MemoryService,
) -> None:
    memory_service.remember(CROWD)
    sentence = memory_service.remember(SENTENCE).memory.id
    strict = Plan("strict", HYBRID.weights, semantic_floor=1.01, lexical_floor=1.01)

    assert [h.memory.id for h in memory_service.recall("went to the park with", plan=strict).hits] == [
        sentence
    ]
    assert memory_service.recall("park went quiet beach", plan=strict).hits == []  # no phrase held


def test_a_word_variant_added_to_the_query_does_not_hide_the_phrase(memory_service: MemoryService) -> None:
    memory_service.remember("The linter runs ruff and the formatter runs black on every commit.")
    held = memory_service.remember("Before the merge the formatter runs black over the code.").memory.id
    strict = Plan("strict", HYBRID.weights, semantic_floor=1.01, lexical_floor=1.01)

    # "formatter" also asks "format": the phrase is still the words as typed.
    found = memory_service.recall("the merge the formatter runs", plan=strict).hits
    assert [h.memory.id for h in found] == [held]


def test_a_query_of_fewer_words_than_the_plan_asks_gets_no_word_for_word_rule(
    memory_service: MemoryService,
) -> None:
    sentence = memory_service.remember(SENTENCE).memory.id
    floor = 1.01  # no candidate clears the floors: only the word-for-word rule finds one

    strict = Plan("strict", HYBRID.weights, semantic_floor=floor, lexical_floor=floor)
    found = memory_service.recall("went to the park", plan=strict).hits
    assert [h.memory.id for h in found] == [sentence]
    five = Plan("five", HYBRID.weights, exact_phrase_words=5, semantic_floor=floor, lexical_floor=floor)
    assert memory_service.recall("went to the park", plan=five).hits == []
    off = Plan("off", HYBRID.weights, exact_phrase_words=0, semantic_floor=floor, lexical_floor=floor)
    assert memory_service.recall("went to the park with", plan=off).hits == []


def test_a_sentence_of_stopwords_alone_finds_the_memory_that_says_it(memory_service: MemoryService) -> None:
    memory_service.remember("Ben: how are you doing these days?")
    said = memory_service.remember("Ana: Hey! How have you been? Long time.").memory.id

    assert memory_service.recall("how have you been").hits[0].memory.id == said


def _by_one_author(memory: MemoryService, kind: EntityKind, key: str) -> tuple[str, str]:
    """A commit that answers "retry budget" and one that says nothing of it, both about ``key``."""
    on_topic = memory.remember(
        "Commit 1111111: the retry budget is five attempts", category="event", source="git:1111111"
    ).memory.id
    other = memory.remember(
        "Commit 2222222: reformat the changelog headings", category="event", source="git:2222222"
    ).memory.id
    entity = Entity(key, kind, key.partition(":")[2])
    memory.store.upsert_entities([entity])
    memory.store.link_about([(on_topic, entity), (other, entity)])
    return on_topic, other


def test_graph_spreading_passes_nothing_through_a_commits_author(memory_service: MemoryService) -> None:
    _, other = _by_one_author(memory_service, EntityKind.PERSON, "Person:mayank@example.com")

    hits = memory_service.recall("retry budget", limit=10).hits

    assert other not in [h.memory.id for h in hits]


def test_graph_spreading_still_passes_through_a_shared_file(memory_service: MemoryService) -> None:
    _, other = _by_one_author(memory_service, EntityKind.FILE, "File:repo::src/retry.py")

    hits = memory_service.recall("retry budget", limit=10).hits

    assert other in [h.memory.id for h in hits]


def test_a_commit_a_person_confirmed_keeps_its_whole_score(memory_service: MemoryService) -> None:
    commit = memory_service.remember(
        "Commit 3333333: the retry budget is five attempts", category="event", source="git:3333333"
    ).memory.id
    before = memory_service.recall("retry budget").hits[0].score
    memory_service.confirm(commit)

    after = memory_service.recall("retry budget").hits[0].score

    assert after > before


def _asked_cosines(
    memory: MemoryService, monkeypatch: pytest.MonkeyPatch, *, in_store: bool
) -> tuple[list[tuple[str, str, set[str]]], list[str], tuple[str, str]]:
    """Recall's calls of the vector search and of the cosines, in order (call, thread, ids),
    with the vectors taken for a database's (``in_store``) or this process's; and its hits."""
    stated, scraped = _stated_and_scraped(memory)
    semantic = memory.semantic
    assert semantic is not None
    monkeypatch.setattr(semantic.index(), "in_store", in_store)
    calls: list[tuple[str, str, set[str]]] = []
    similarities, search = semantic.similarities, semantic.search

    def recorded(vector: Vector, ids: list[str]) -> dict[str, float]:
        calls.append(("similarities", threading.current_thread().name, set(ids)))
        return similarities(vector, ids)

    def searched(query: VectorQuery) -> list[tuple[str, float]]:
        calls.append(("search", threading.current_thread().name, set()))
        return search(query)

    monkeypatch.setattr(semantic, "similarities", recorded)
    monkeypatch.setattr(semantic, "search", searched)
    hits = [h.memory.id for h in memory.recall("kuzu graph store", plan=NO_PRIORS).hits]
    return calls, hits, (stated, scraped)


def test_on_a_database_store_the_cosines_of_the_words_hits_are_asked_beside_the_vector_search(
    memory_service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls, hits, (stated, scraped) = _asked_cosines(memory_service, monkeypatch, in_store=True)
    asked = [(thread, ids) for call, thread, ids in calls if call == "similarities"]

    # The search's thread asks them on its own connection while this one searches the
    # vectors; none is asked twice.
    assert [(thread.startswith("graphmem-recall-search"), ids) for thread, ids in asked[:1]] == [
        (True, {stated, scraped})
    ]
    assert not any({stated, scraped} & ids for _, ids in asked[1:])
    assert hits == [scraped, stated]


def test_in_this_process_the_cosines_of_the_words_hits_are_asked_after_the_vector_search(
    memory_service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls, hits, (stated, scraped) = _asked_cosines(memory_service, monkeypatch, in_store=False)
    caller = threading.current_thread().name

    # On the caller's thread, after the search (on the other they took turns with it for the
    # interpreter); none is asked twice; the hits are the same.
    assert [(call, thread) for call, thread, _ in calls[:2]] == [("search", caller), ("similarities", caller)]
    assert calls[1][2] == {stated, scraped}
    assert not any({stated, scraped} & ids for _, _, ids in calls[2:])
    assert hits == [scraped, stated]


class _WordsWithCosines:
    """``NearTextSearch`` as a database store offers it, over the fake store and the service's
    vectors: the words' hits with their cosines in one call, each call's thread noted."""

    def __init__(self, memory: MemoryService, *, cosines_with_words: bool = True) -> None:
        self._memory = memory
        self.threads: list[str] = []
        self.cosines_with_words = cosines_with_words  # False: its words come from an index, apart

    def search_text_near(
        self, query: str, visibility: Visibility, limit: int, vector: Vector, *, phrase: str | None = None
    ) -> tuple[TextHits, dict[str, float]]:
        self.threads.append(threading.current_thread().name)
        hits = self._memory.store.search_text(query, visibility, limit, phrase=phrase)
        assert self._memory.semantic is not None
        return hits, self._memory.semantic.index().similarities(vector.copy(), [i for i, _ in hits])


def test_a_store_that_gives_the_words_hits_cosines_with_them_is_asked_for_both_at_once(
    memory_service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    near = _WordsWithCosines(memory_service)
    monkeypatch.setattr(memory_service._recaller, "_near_text", near)

    calls, hits, (stated, scraped) = _asked_cosines(memory_service, monkeypatch, in_store=True)

    # Once the query is embedded, on the search's thread while this one searches the vectors;
    # the words' hits' cosines are not asked apart, and the hits are the same.
    assert [thread.startswith("graphmem-recall-search") for thread in near.threads] == [True]
    assert not any({stated, scraped} & ids for call, _, ids in calls if call == "similarities")
    assert hits == [scraped, stated]


def test_a_store_whose_words_need_no_vector_searches_them_while_the_query_is_embedded(
    memory_service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    near = _WordsWithCosines(memory_service, cosines_with_words=False)  # a daemon's index answers
    monkeypatch.setattr(memory_service._recaller, "_near_text", near)
    stated, scraped = _stated_and_scraped(memory_service)
    searching = threading.Event()
    store, semantic = memory_service.store, memory_service.semantic
    assert semantic is not None
    search_text, embed_query = store.search_text, semantic.embed_query

    def search(*args: Any, **kwargs: Any) -> TextHits:
        searching.set()
        return search_text(*args, **kwargs)

    began: list[bool] = []

    def embed(text: str) -> Vector:
        began.append(searching.wait(WORDS_SEARCH_WAIT_S))  # the words' search under way meanwhile
        return embed_query(text)

    monkeypatch.setattr(store, "search_text", search)
    monkeypatch.setattr(semantic, "embed_query", embed)
    hits = [h.memory.id for h in memory_service.recall("kuzu graph store", plan=NO_PRIORS).hits]

    assert began == [True]
    assert near.threads == []  # the words' search and their cosines are asked apart
    assert hits == [scraped, stated]


def test_concurrent_recalls_search_their_words_at_once_not_one_after_the_other(
    memory_service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    stated, scraped = _stated_and_scraped(memory_service)
    store = memory_service.store
    search_text = store.search_text
    together = threading.Barrier(2, timeout=WORDS_SEARCH_WAIT_S)
    met: list[bool] = []

    def search(*args: Any, **kwargs: Any) -> TextHits:
        try:  # both recalls' word searches under way at the same time (a daemon's agents)
            together.wait()
            met.append(True)
        except threading.BrokenBarrierError:
            met.append(False)
        return search_text(*args, **kwargs)

    monkeypatch.setattr(store, "search_text", search)
    found: list[list[str]] = []

    def recall() -> None:
        found.append([h.memory.id for h in memory_service.recall("kuzu graph store", plan=NO_PRIORS).hits])

    callers = [threading.Thread(target=recall) for _ in range(2)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()

    assert met == [True, True]
    assert found == [[scraped, stated], [scraped, stated]]
