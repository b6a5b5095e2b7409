"""The contract of the bodies an ABOUT edge to a symbol records (``EntityGraph.about_bodies``),
run against Kùzu, PostgreSQL and the in-memory store, each with its code graph.

A link records the symbol's body hash when it is made, and again when its memory's
``updated_at`` moves later; a move carries it. Staleness compares it with the body of now
(service/staleness.py), so that a branch switched to and back clears the flag it raised.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from unit.adapters.test_code_graph_contract import GRAPHS, PROJECT, T0, T1, function, key, moved, parsed, save

from graphmem.core.codegraph import file_key
from graphmem.core.models import Category, Entity, EntityKind, MemoryRecord, Scope
from graphmem.core.ports import CodeGraph, GraphStore

HELPER = key("util.py", "helper")
TOOL = key("util.py", "Tool")
V1 = parsed(function("helper", 1), function("Tool", 5))
V2 = parsed(function("helper", 1, body="v2"), function("Tool", 5))


@pytest.fixture(params=sorted(GRAPHS))
def graphs(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[GraphStore, CodeGraph]]:
    store, code = GRAPHS[request.param](tmp_path, request)
    yield store, code
    store.close()


def body(qualified: str, version: str = "") -> str:
    return f"hash-{qualified}-{version}"  # as test_code_graph_contract.function hashes a body


def remember(store: GraphStore, memory_id: str, *keys: str) -> MemoryRecord:
    record = MemoryRecord(memory_id, f"a note {memory_id}", Category.FACT, Scope.GLOBAL, None, T0, T0, T0)
    store.add_memories([record])
    store.link_about([(memory_id, Entity(k, EntityKind(k.split(":", 1)[0]), k)) for k in keys])
    return record


def test_a_new_link_to_a_symbol_records_its_body_of_now(graphs: tuple[GraphStore, CodeGraph]) -> None:
    store, code = graphs
    save(code, {"util.py": V1})
    remember(store, "m", HELPER, file_key(PROJECT, "util.py"))

    assert store.about_bodies(["m", "nope"]) == {"m": {HELPER: body("helper")}}  # files record none
    assert store.about_bodies([]) == {}


def test_a_body_change_leaves_what_the_link_recorded(graphs: tuple[GraphStore, CodeGraph]) -> None:
    store, code = graphs
    save(code, {"util.py": V1})
    remember(store, "m", HELPER)
    save(code, {"util.py": V2}, at=T1)

    assert code.symbols([HELPER])[HELPER].body_hash == body("helper", "v2")
    assert store.about_bodies(["m"]) == {"m": {HELPER: body("helper")}}


def test_linking_again_keeps_the_body_the_link_recorded(graphs: tuple[GraphStore, CodeGraph]) -> None:
    store, code = graphs
    save(code, {"util.py": V1})
    remember(store, "m", HELPER)
    save(code, {"util.py": V2}, at=T1)
    store.link_about([("m", Entity(k, EntityKind.SYMBOL, k)) for k in (HELPER, TOOL)])

    assert store.about_bodies(["m"]) == {"m": {HELPER: body("helper"), TOOL: body("Tool")}}


def test_a_later_updated_at_records_the_bodies_of_now(graphs: tuple[GraphStore, CodeGraph]) -> None:
    store, code = graphs
    save(code, {"util.py": V1})
    remember(store, "m", HELPER, TOOL)
    save(code, {"util.py": V2}, at=T1)

    store.update_memory("m", {"updated_at": T0})  # not later: a copy as old as it
    store.update_memory("m", {"reinforced": 2})
    assert store.about_bodies(["m"]) == {"m": {HELPER: body("helper"), TOOL: body("Tool")}}
    store.update_memory("m", {"updated_at": T1 + timedelta(minutes=1)})  # confirmed, remembered again
    assert store.about_bodies(["m"]) == {"m": {HELPER: body("helper", "v2"), TOOL: body("Tool")}}


def test_new_text_records_the_bodies_of_now(graphs: tuple[GraphStore, CodeGraph]) -> None:
    store, code = graphs
    save(code, {"util.py": V1})
    remember(store, "m", HELPER)
    save(code, {"util.py": V2}, at=T1)

    entities = [Entity(HELPER, EntityKind.SYMBOL, "helper", PROJECT)]
    store.replace_text("m", text="edited", content_hash="edited", updated_at=T1, entities=entities)
    assert store.about_bodies(["m"]) == {"m": {HELPER: body("helper", "v2")}}


def test_a_moved_link_carries_the_body_it_recorded_when_not_the_old_ones_of_now(
    graphs: tuple[GraphStore, CodeGraph],
) -> None:
    store, code = graphs
    save(code, {"util.py": V1, "new.py": parsed(function("helper", 1, body="moved"))})
    remember(store, "m", HELPER)
    save(code, {"util.py": V2}, at=T1)  # flagged: it was written against the body before
    moved_to = key("new.py", "helper")

    assert store.move_about(EntityKind.SYMBOL, HELPER, moved_to) == ["m"]
    assert store.about_bodies(["m"]) == {"m": {moved_to: body("helper")}}


def test_a_link_to_a_symbol_no_pass_stored_records_none(graphs: tuple[GraphStore, CodeGraph]) -> None:
    store, _ = graphs
    store.upsert_entities([Entity(HELPER, EntityKind.SYMBOL, "helper", PROJECT)])  # an import's
    remember(store, "m", HELPER)

    assert store.about_bodies(["m"]) == {}


def test_a_rolled_back_write_leaves_the_bodies_recorded(graphs: tuple[GraphStore, CodeGraph]) -> None:
    store, code = graphs
    save(code, {"util.py": V1})
    remember(store, "m", HELPER)
    save(code, {"util.py": V2}, at=T1)

    with pytest.raises(RuntimeError), store.transaction():
        store.update_memory("m", {"updated_at": T1 + timedelta(minutes=1)})
        raise RuntimeError("a later write of the same transaction failed")
    assert store.about_bodies(["m"]) == {"m": {HELPER: body("helper")}}


def test_a_pass_that_renames_a_symbol_keeping_its_body_moves_the_link_to_the_new_body(
    graphs: tuple[GraphStore, CodeGraph],
) -> None:
    store, code = graphs
    save(code, {"util.py": V1})
    remember(store, "m", HELPER)
    renamed = parsed(function("assist", 1), function("Tool", 5))  # its hash names it: another hash
    save(code, {"util.py": renamed}, at=T1, moves=moved(("util.py", "helper"), ("util.py", "assist")))

    assist = key("util.py", "assist")
    assert store.about_bodies(["m"]) == {"m": {assist: code.symbols([assist])[assist].body_hash}}


def test_a_pass_that_moves_a_symbol_with_an_edit_leaves_the_link_on_the_old_body(
    graphs: tuple[GraphStore, CodeGraph],
) -> None:
    store, code = graphs
    save(code, {"util.py": V1})
    remember(store, "m", HELPER)
    plan = moved(("util.py", "helper"), ("lib.py", "helper"), same_body=False)
    edited = parsed(function("helper", 1, body="edited"))
    save(code, {"util.py": parsed(function("Tool", 5)), "lib.py": edited}, at=T1, moves=plan)

    assert store.about_bodies(["m"]) == {"m": {key("lib.py", "helper"): body("helper")}}
