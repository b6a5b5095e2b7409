"""Chains of supersedes links (``core/supersession.py``): read a level at a time, walked shortest first."""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime

import pytest

from graphmem.core.models import Link, LinkKind
from graphmem.core.supersession import closes_cycle, describe_chain, keep_in_sight, supersessions
from graphmem.errors import NotAllowedError

NOW = datetime(2024, 5, 1, tzinfo=UTC)
LINKS = [
    Link("a", "b", LinkKind.SUPERSEDES, NOW),
    Link("b", "c", LinkKind.SUPERSEDES, NOW),
    Link("a", "c", LinkKind.SUPERSEDES, NOW),
    Link("c", "d", LinkKind.RELATED, NOW),  # not a supersession: not walked
]


def test_the_supersessions_a_memory_reaches_are_read_one_level_at_a_time() -> None:
    reads: list[set[str]] = []

    def read(ids: Collection[str]) -> list[Link]:
        reads.append(set(ids))
        return [link for link in LINKS if link.source in ids or link.target in ids]

    assert supersessions(["a"], read) == {"a": {"b", "c"}, "b": {"c"}}
    assert reads == [{"a"}, {"b", "c"}]


def test_a_link_closes_a_cycle_when_its_target_already_supersedes_its_source() -> None:
    graph = {"a": {"b", "c"}, "b": {"c"}}

    assert closes_cycle("c", "a", graph) == ["a", "c"]  # the shortest chain
    assert closes_cycle("a", "c", graph) is None
    assert describe_chain(["a", "b", "c"]) == "a already supersedes c (through b)"


def test_a_memory_only_its_writer_sees_never_supersedes_one_others_see() -> None:
    with pytest.raises(NotAllowedError, match="mem_team is the team's"):
        keep_in_sight("mem_mine", "mem_team", shared={"mem_team"})
    keep_in_sight("mem_ours", "mem_team", shared={"mem_team", "mem_ours"})  # both the team's
    keep_in_sight("mem_mine", "mem_older", shared=set())  # a store of one person: nothing is refused
