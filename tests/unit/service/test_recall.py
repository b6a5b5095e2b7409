"""Recall ranks what people said above what tools scraped (source priors), exactly at any limit."""

from __future__ import annotations

from types import MappingProxyType

from graphmem.core.fusion import PLANS, Plan
from graphmem.service.memory import MemoryService

HYBRID = PLANS["hybrid"]
NO_PRIORS = Plan("no-priors", HYBRID.weights, source_priors=MappingProxyType({}))


def _stated_and_scraped(memory: MemoryService) -> tuple[str, str]:
    stated = memory.remember("We chose Kuzu for the graph store", category="decision").memory.id
    scraped = memory.remember(
        "Commit 1a2b3c4: Kuzu graph store: tune the Kuzu graph store buffer pool",
        category="event",
        source="git:1a2b3c4d5e6f",
    ).memory.id
    return stated, scraped


def test_a_scraped_commit_that_matches_better_still_ranks_below_the_users_decision(
    fake_memory: MemoryService,
) -> None:
    stated, scraped = _stated_and_scraped(fake_memory)
    unweighted = [h.memory.id for h in fake_memory.recall("kuzu graph store", plan=NO_PRIORS).hits]
    assert unweighted == [scraped, stated]  # on its words alone the commit wins

    hits = fake_memory.recall("kuzu graph store").hits

    assert [h.memory.id for h in hits] == [stated, scraped]
    assert hits[1].score < hits[0].score


def test_the_prior_applies_before_the_limit_cuts(fake_memory: MemoryService) -> None:
    stated, _ = _stated_and_scraped(fake_memory)

    assert [h.memory.id for h in fake_memory.recall("kuzu graph store", limit=1).hits] == [stated]


def test_a_memory_from_an_agent_or_a_session_keeps_its_whole_score(fake_memory: MemoryService) -> None:
    ids = {
        source: fake_memory.remember(f"The {word} cache holds recall results", source=source).memory.id
        for source, word in (("mcp", "query"), ("opencode", "answer"), ("user", "result"))
    }
    hits = fake_memory.recall("cache recall results", plan=NO_PRIORS).hits
    weighted = {h.memory.id: h.score for h in fake_memory.recall("cache recall results").hits}

    assert {h.memory.id: h.score for h in hits} == weighted
    assert set(weighted) == set(ids.values())
