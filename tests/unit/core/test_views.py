"""How a hit's explanation reads: every edge named, in words and as typed steps."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from graphmem.core.models import Category, ChannelRank, Hit, MemoryRecord, Scope, Step
from graphmem.core.views import channel_view, hit_view, step_text, why

T0 = datetime(2025, 6, 1, tzinfo=UTC)
MR = "MergeRequest:acme/shop!12"
FILE = "File:/src/shop::src/shop/checkout.py"
RECORD = MemoryRecord("mem_1", "Checkout rounds down", Category.FACT, Scope.PROJECT, "/src/shop", T0, T0, T0)


def test_a_step_reads_along_and_against_its_edge() -> None:
    assert step_text(Step(MR, "CHANGES", FILE, True, "!12", "src/shop/checkout.py")) == (
        "MR !12 changed src/shop/checkout.py"
    )
    assert step_text(Step(FILE, "CHANGES", MR, False, "src/shop/checkout.py", "!12")) == (
        "src/shop/checkout.py changed by MR !12"
    )
    assert step_text(Step("Epic:acme&5", "PART_OF", "Issue:acme/shop#34", False, "&5", "#34")) == (
        "&5 contains #34"
    )


def test_why_names_each_hop_of_the_entity_channel() -> None:
    steps = (
        Step("Epic:acme&5", "PART_OF", "Issue:acme/shop#34", False, "&5", "#34"),
        Step("Issue:acme/shop#34", "CLOSES", MR, False, "#34", "!12"),
        Step(MR, "ABOUT", "mem_1", False, "!12", "mem_1"),
    )
    hit = Hit(RECORD, 0.5, (ChannelRank("lexical", 3, 1.2), ChannelRank("entity", 2, 0.36, steps)))
    assert why(hit) == "its words match; about !12, which closes #34, which is part of &5"


def test_why_says_which_named_entity_a_direct_hit_is_about() -> None:
    steps = (Step(MR, "ABOUT", "mem_1", False, "!12", "mem_1"),)
    assert why(Hit(RECORD, 1.0, (ChannelRank("entity", 1, 1.0, steps),))) == "about !12"


def test_why_says_mentions_when_the_memory_names_the_entity_and_writes_code_as_code() -> None:
    steps = (Step(FILE, "ABOUT", "mem_1", False, "src/shop/checkout.py", "mem_1"),)
    # RECORD's text says "Checkout", not the file: about it, not mentioning it.
    assert why(Hit(RECORD, 1.0, (ChannelRank("entity", 1, 1.0, steps),))) == "about `src/shop/checkout.py`"
    said = replace(RECORD, text="checkout.py rounds down")
    assert why(Hit(said, 1.0, (ChannelRank("entity", 1, 1.0, steps),))) == "mentions `src/shop/checkout.py`"


def test_a_graph_hop_names_the_entities_between_never_a_memory_id() -> None:
    steps = (
        Step("mem_0", "ABOUT", MR, True, "mem_0", "!12"),
        Step(MR, "ABOUT", "mem_2", False, "!12", "mem_2"),
        Step("mem_2", "ABOUT", FILE, True, "mem_2", "src/shop/checkout.py"),
        Step(FILE, "ABOUT", "mem_1", False, "src/shop/checkout.py", "mem_1"),
    )
    hit = Hit(RECORD, 0.4, (ChannelRank("semantic", 4, 0.5), ChannelRank("graph", 2, 0.2, steps)))

    assert why(hit) == "close in meaning; 2 hops via !12 → `src/shop/checkout.py`"
    assert "mem_" not in why(hit)


def test_a_graph_walk_that_comes_back_to_an_entity_is_said_without_the_loop() -> None:
    steps = (
        Step("mem_0", "ABOUT", FILE, True, "mem_0", "src/shop/checkout.py"),
        Step(FILE, "ABOUT", "mem_2", False, "src/shop/checkout.py", "mem_2"),
        Step("mem_2", "ABOUT", FILE, True, "mem_2", "src/shop/checkout.py"),
        Step(FILE, "ABOUT", "mem_1", False, "src/shop/checkout.py", "mem_1"),
    )
    hit = Hit(RECORD, 0.4, (ChannelRank("graph", 2, 0.2, steps),))

    assert why(hit) == "1 hop via `src/shop/checkout.py`"


def test_the_hit_view_keeps_the_ids_beside_the_words() -> None:
    steps = (Step(MR, "ABOUT", "mem_1", False, "!12", "mem_1"),)
    hit = Hit(RECORD, 1.0, (ChannelRank("entity", 1, 1.0, steps),), path=(MR, "ABOUT", "mem_1"))

    view = hit_view(hit, now=T0)["why"]

    assert view["reasons"] == [{"channel": "entity", "text": "about !12"}]
    assert view["path"] == [MR, "ABOUT", "mem_1"]
    assert view["channels"][0]["steps"][0]["from"] == MR


def test_the_channel_view_carries_typed_steps() -> None:
    rank = ChannelRank("entity", 2, 0.6, (Step(MR, "CHANGES", FILE, True, "!12", "src/shop/checkout.py"),))
    assert channel_view(rank)["steps"] == [
        {
            "from": MR,
            "edge": "CHANGES",
            "to": FILE,
            "forward": True,
            "text": "MR !12 changed src/shop/checkout.py",
        }
    ]
    assert channel_view(ChannelRank("lexical", 1, 2.0))["steps"] == []


def test_a_link_between_memories_reads_without_a_direction_it_does_not_know() -> None:
    assert step_text(Step("mem_a", "supersedes", "mem_b", True, "mem_a", "mem_b")) == (
        "mem_a is linked to mem_b (supersedes)"
    )
