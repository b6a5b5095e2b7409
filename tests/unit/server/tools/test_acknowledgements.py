"""Every acknowledgement is true: for every mutating tool, a success answer means the store
changed and a failure means it did not, whatever shape the memory id is given in."""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.tools_client import Tools

from graphmem.service.memory import MemoryService


@pytest.fixture
def memory(memory_service: MemoryService) -> MemoryService:
    """The service on the in-memory store: what the tools answer does not depend on Kùzu."""
    return memory_service


def snapshot(memory: MemoryService) -> tuple[object, ...]:
    """Everything a mutating tool may change: each memory's state and every link."""
    memories = sorted(
        (m.id, m.text, m.category.value, m.status.value, m.valid_to, m.reinforced)
        for m in memory.store.all_memories()
    )
    ids = [m[0] for m in memories]
    links = sorted((link.source, link.target, link.kind.value) for link in memory.store.links(ids))
    return tuple(memories), tuple(links)


PROJECT = "/work/shop"  # an agent's memories belong to a project
SHAPES = ["{id}", " {id}", "{id} ", "\t{id}\n", "{id}x", "mem_0000000000000000", "MEM_{tail}"]
# (tool, arguments): {id} is a memory, {other} another; the blocker is {id}.
CALLS = [
    ("update_memory", {"action": "edit", "id": "{id}", "text": "The staging deploy fails on migration 42"}),
    ("update_memory", {"action": "edit", "id": "{id}", "category": "fact"}),
    ("update_memory", {"action": "archive", "id": "{id}"}),
    ("update_memory", {"action": "resolve", "id": "{id}"}),
    ("update_memory", {"action": "link", "id": "{id}", "target_id": "{other}", "link_kind": "related"}),
    ("update_memory", {"action": "supersede", "id": "{other}", "target_id": "{id}"}),
    ("delete_memory", {"id": "{id}", "confirm": True}),
    (
        "remember",
        {
            "text": "A new fact about deploys",
            "supersedes": "{id}",
            "category": "decision",
            "project": PROJECT,
        },
    ),
]
UNDO_CALLS = [  # each needs the state its first step makes
    (
        ("update_memory", {"action": "archive", "id": "{id}"}),
        ("update_memory", {"action": "restore", "id": "{id}"}),
    ),
    (
        ("update_memory", {"action": "resolve", "id": "{id}"}),
        ("update_memory", {"action": "unresolve", "id": "{id}"}),
    ),
    (
        ("update_memory", {"action": "link", "id": "{id}", "target_id": "{other}", "link_kind": "extends"}),
        ("update_memory", {"action": "unlink", "id": "{id}", "target_id": "{other}", "link_kind": "extends"}),
    ),
]


def fill(arguments: dict[str, Any], **ids: str) -> dict[str, Any]:
    return {k: v.format(**ids) if isinstance(v, str) else v for k, v in arguments.items()}


def seed(memory: MemoryService) -> tuple[str, str]:
    """An agent's memories: the agent may change them all (the user's own are the user's to change)."""
    blocker = memory.remember(
        "The staging deploy fails on migrations", category="blocker", project=PROJECT, source="mcp"
    )
    other = memory.remember(
        "Migrations run in one transaction each", category="fact", project=PROJECT, source="mcp"
    )
    return blocker.memory.id, other.memory.id


def assert_true_answer(tools: Tools, tool: str, arguments: dict[str, Any]) -> None:
    memory = tools.runtime.memory
    before = snapshot(memory)
    failed, text = tools.call(tool, arguments)
    after = snapshot(memory)
    if failed:
        assert after == before, f"{tool} {arguments} failed ({text}) but changed the store"
        assert "failed inside" not in text, text
    else:
        assert after != before, f"{tool} {arguments} answered success ({text[:200]}) but changed nothing"


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(("tool", "arguments"), CALLS)
def test_a_success_changed_the_store_and_a_failure_did_not(
    memory: MemoryService, tools: Tools, tool: str, arguments: dict[str, Any], shape: str
) -> None:
    blocker, other = seed(memory)
    given = shape.format(id=blocker, tail=blocker[4:])

    assert_true_answer(tools, tool, fill(arguments, id=given, other=other))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(("first", "undo"), UNDO_CALLS)
def test_undoing_is_true_too(
    memory: MemoryService,
    tools: Tools,
    first: tuple[str, dict[str, Any]],
    undo: tuple[str, dict[str, Any]],
    shape: str,
) -> None:
    blocker, other = seed(memory)
    assert not tools.call(first[0], fill(first[1], id=blocker, other=other))[0]
    given = shape.format(id=blocker, tail=blocker[4:])

    assert_true_answer(tools, undo[0], fill(undo[1], id=given, other=other))


def test_a_padded_id_reaches_the_memory(memory: MemoryService, tools: Tools) -> None:
    blocker, _ = seed(memory)

    failed, text = tools.call("update_memory", {"action": "archive", "id": f"{blocker} "})

    assert not failed and json.loads(text)["memory"]["status"] == "archived"
    assert memory.show(blocker).memory.status.value == "archived"


def test_an_unknown_id_is_named(tools: Tools) -> None:
    failed, text = tools.call("delete_memory", {"id": "mem_0000000000000000", "confirm": True})

    assert failed and "No memory with id mem_0000000000000000" in text


def test_an_import_that_fails_changes_nothing_and_one_that_succeeds_adds(
    memory: MemoryService, tools: Tools
) -> None:
    seed(memory)
    line = {
        "type": "memory", "id": "mem_1111111111111111", "text": "Imported fact", "category": "fact",
        "scope": "global", "created_at": "2024-01-01T00:00:00+00:00",
    }  # fmt: skip

    assert_true_answer(tools, "import_memories", {"content": json.dumps(line) + "\n{broken"})
    assert_true_answer(tools, "import_memories", {"content": json.dumps(line)})
