"""The daemon's side of ``/rpc`` (``server/rpc.py``) on the in-memory store: a request runs the
service's verb and answers JSON; graphmem's errors travel by class name (the CLI raises them
again). The HTTP route around it: test_http.py."""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Iterable, Sequence
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Any

import pytest

from graphmem.errors import InvalidInputError
from graphmem.server import rpc
from graphmem.server.rpc_types import VERBS
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


COLLECTIONS = (Iterable, Sequence, list, tuple, set, frozenset)


def _members(hint: Any) -> tuple[Any, ...]:
    """The kinds a parameter's hint allows (``str | Category | None``: str and Category)."""
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        return tuple(m for m in typing.get_args(hint) if m is not type(None))
    return (hint,)


def _wrong(hint: Any) -> Any:
    """A JSON value of the wrong type for a collection or enum parameter; None for other kinds."""
    members = _members(hint)
    if any(typing.get_origin(m) in COLLECTIONS for m in members):
        return [{"not": "an item"}]  # a collection, of an item no member takes
    if any(isinstance(m, type) and issubclass(m, Enum) for m in members):
        return {"not": "a name"}  # neither the enum's value nor the text beside it
    return None


def _valid(hint: Any) -> Any:
    """A JSON value a required parameter of ``hint`` takes."""
    kind = _members(hint)[0]
    if isinstance(kind, type) and issubclass(kind, Enum):
        return next(iter(kind)).value
    samples: dict[Any, Any] = {
        str: "x",
        int: 1,
        bool: False,
        Path: "/x",
        datetime: "2026-01-02T03:04:05+00:00",
    }
    return samples[kind]


def _wrong_calls() -> list[tuple[str, str, dict[str, Any]]]:
    """Every /rpc verb's collection and enum parameters, each with a wrong value, the verb's
    required arguments beside it."""
    calls = []
    for method in sorted(VERBS):
        hints = typing.get_type_hints(getattr(MemoryService, method))
        required = {name: _valid(hints[name]) for name in rpc._required(method)}
        for name in rpc.signature(method)[0]:
            wrong = _wrong(hints[name])
            if wrong is not None:
                calls.append((method, name, {**required, name: wrong}))
    return calls


WRONG_CALLS = _wrong_calls()


def test_the_wrong_calls_cover_the_lazily_checked_iterables() -> None:
    covered = {(method, name) for method, name, _ in WRONG_CALLS}
    assert {
        ("list", "statuses"),
        ("select", "statuses"),
        ("recall", "categories"),
        ("link", "kind"),
    } <= covered


@pytest.mark.parametrize(
    ("method", "name", "arguments"), WRONG_CALLS, ids=[f"{m}.{n}" for m, n, _ in WRONG_CALLS]
)
def test_every_verb_refuses_a_wrong_collection_or_enum_before_it_runs_naming_the_argument(
    memory_service: MemoryService, method: str, name: str, arguments: dict[str, Any]
) -> None:
    with pytest.raises(InvalidInputError) as refused:
        rpc.parse({"method": method, "arguments": arguments})

    assert str(refused.value).startswith(f"Invalid arguments for {method}: {name}")
    answer = rpc.call(memory_service, {"method": method, "arguments": arguments})
    assert answer["error"]["type"] == "InvalidInputError"


def test_an_unknown_status_is_refused_naming_the_argument_and_the_item(memory_service: MemoryService) -> None:
    for method in ("list", "select"):
        answer = rpc.call(memory_service, {"method": method, "arguments": {"statuses": ["active", "zzz"]}})

        assert answer["error"]["type"] == "InvalidInputError"
        assert answer["error"]["message"].startswith(
            f"Invalid arguments for {method}: statuses[1]: Input should be"
        )
