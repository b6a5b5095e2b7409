"""The daemon's side of ``/rpc`` (``server/rpc.py``) on the in-memory store: a request runs the
service's verb and answers JSON; graphmem's errors travel by class name (the CLI raises them
again). The HTTP route around it: test_http.py."""

from __future__ import annotations

import json

from graphmem.server import rpc
from graphmem.service.memory import MemoryService


def test_a_verb_runs_and_answers_its_result_as_json(memory_service: MemoryService) -> None:
    made = rpc.call(
        memory_service, {"method": "remember", "arguments": {"text": "We chose Kùzu", "category": "decision"}}
    )

    shown = rpc.call(
        memory_service, {"method": "show", "arguments": {"memory_id": made["result"]["memory"]["id"]}}
    )

    assert shown["result"]["memory"]["text"] == "We chose Kùzu"
    assert shown["result"]["memory"]["category"] == "decision"
    assert json.loads(json.dumps(shown)) == shown


def test_a_graphmem_error_travels_by_class_name(memory_service: MemoryService) -> None:
    answer = rpc.call(memory_service, {"method": "show", "arguments": {"memory_id": "mem_0000000000000000"}})

    assert answer["error"]["type"] == "NotFoundError"
    assert "mem_0000000000000000" in answer["error"]["message"]


def test_an_import_error_carries_its_line_numbers(memory_service: MemoryService) -> None:
    answer = rpc.call(memory_service, {"method": "import_text", "arguments": {"text": "{not json\n"}})

    assert answer["error"]["type"] == "ImportFileError"
    assert [line for line, _ in answer["error"]["problems"]] == [1]


def test_an_export_answers_the_text_and_its_counts(memory_service: MemoryService) -> None:
    memory_service.remember("We chose Kùzu for the graph store", category="decision")

    answer = rpc.call(memory_service, {"method": "export", "arguments": {}})

    assert "We chose Kùzu for the graph store" in answer["result"]["text"]
    assert answer["result"]["summary"]["memories"] == 1


def test_a_parameter_only_a_local_caller_can_pass_is_unknown_over_rpc(memory_service: MemoryService) -> None:
    answer = rpc.call(memory_service, {"method": "reindex", "arguments": {"progress": None}})

    assert answer["error"]["type"] == "InvalidInputError"
    assert "Unknown argument(s) for reindex: progress" in answer["error"]["message"]


def test_a_refused_request_changes_nothing(memory_service: MemoryService) -> None:
    rpc.call(memory_service, {"method": "remember", "arguments": {"text": "x", "category": "wish"}})

    assert list(memory_service.store.all_memories()) == []


def test_history_and_undo_run_over_rpc_and_decode_on_the_cli_side(memory_service: MemoryService) -> None:
    from graphmem.server.rpc_types import decode_result

    made = memory_service.remember("CI is red on main", category="blocker").memory
    memory_service.resolve(made.id)

    listed = rpc.call(memory_service, {"method": "history", "arguments": {"memory_id": made.id}})
    [event] = decode_result("history", json.loads(json.dumps(listed["result"])))
    undone = rpc.call(memory_service, {"method": "undo", "arguments": {"event_id": event.id}})
    again = rpc.call(memory_service, {"method": "undo", "arguments": {"event_id": event.id}})

    assert event.after == {"status": "resolved"}
    assert decode_result("undo", undone["result"]).undoes == event.id
    assert again["error"]["type"] == "ConflictError"
    assert memory_service.show(made.id).memory.status.value == "active"
