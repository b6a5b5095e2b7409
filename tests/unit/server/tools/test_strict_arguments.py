"""A tool's argument is the JSON type its parameter names, nothing pydantic's lax mode would make
of something else: ``"yes"`` or ``1`` is no ``true``, ``"3"``, ``3.0`` or ``true`` no ``3``
(``registry.ArgumentCheck``, through ``body_json.validated``)."""

from __future__ import annotations

from typing import Any

import pytest
from support.tools_client import Tools

from graphmem.service.memory import MemoryService

PROJECT = "/work/shop"


def test_a_string_for_confirm_deletes_nothing(tools: Tools, memory_service: MemoryService) -> None:
    memory_id = tools.ok("remember", text="Old staging host is stage-1", project=PROJECT)["id"]

    message = tools.refused("delete_memory", id=memory_id, confirm="yes")

    assert "confirm: Input should be a valid boolean" in message
    assert memory_id in memory_service.store.get_memories([memory_id])


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"history": "yes"}, "history: Input should be a valid boolean"),
        ({"history": 1}, "history: Input should be a valid boolean"),
        ({"limit": True}, "limit: Input should be a valid integer"),
        ({"limit": "3"}, "limit: Input should be a valid integer"),
        ({"limit": 3.0}, "limit: Input should be a valid integer"),
    ],
)
def test_recall_takes_no_other_json_type_for_a_boolean_or_an_integer(
    tools: Tools, arguments: dict[str, Any], says: str
) -> None:
    message = tools.refused("recall", query="staging host", project=PROJECT, **arguments)

    assert says in message
