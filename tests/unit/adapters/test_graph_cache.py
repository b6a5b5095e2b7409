"""The in-process copy of the memory graph: edges through an entity say how many share it."""

from __future__ import annotations

from graphmem.adapters.graph_cache import ENTITY_FANOUT, GraphCache


def cache(about: list[tuple[str, str]], nexts: list[tuple[str, str]] | None = None) -> GraphCache:
    return GraphCache(lambda: (about, [("a", "r", "related")], nexts or []))


def test_an_edge_through_an_entity_carries_the_entitys_fanout() -> None:
    graph = cache([("a", "File:x"), ("b", "File:x"), ("c", "File:x"), ("a", "MR:1"), ("d", "MR:1")])

    edges = {(n.via, n.other_id): n.fanout for n in graph.neighbours(["a"], 100)}

    assert edges[("File:x", "b")] == edges[("File:x", "c")] == 3
    assert edges[("MR:1", "d")] == 2
    assert edges[("related", "r")] == 0  # RELATES and NEXT edges are no entity


def test_an_entity_over_the_fanout_limit_joins_nobody() -> None:
    hub = [(f"m{i}", "File:hub") for i in range(ENTITY_FANOUT + 1)]
    graph = cache(hub, [("m0", "m1")])

    assert [(n.via, n.other_id, n.fanout) for n in graph.neighbours(["m0"], 1000)] == [("next", "m1", 0)]
