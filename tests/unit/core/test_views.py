"""How a hit's explanation reads: every edge named, in words and as typed steps."""

from __future__ import annotations

from datetime import UTC, datetime

from graphmem.core.models import Category, ChannelRank, Hit, MemoryRecord, Scope, Step
from graphmem.core.views import channel_view, step_text, why

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
    assert why(hit) == "lexical #3, entity #2 via &5 contains #34, closed by MR !12"


def test_why_says_which_named_entity_a_direct_hit_is_about() -> None:
    steps = (Step(MR, "ABOUT", "mem_1", False, "!12", "mem_1"),)
    assert why(Hit(RECORD, 1.0, (ChannelRank("entity", 1, 1.0, steps),))) == "entity #1 about MR !12"


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
