"""Arguments cross to the daemon as plain JSON, and the daemon reads back the values the CLI sent."""

from __future__ import annotations

import json
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from graphmem.core.models import Category, LinkKind, Scope, Status
from graphmem.errors import InvalidInputError
from graphmem.server import rpc, rpc_types


@pytest.mark.parametrize(
    ("method", "arguments", "expected"),
    [
        ("list", {"categories": ("fact",)}, {"categories": ["fact"]}),
        ("list", {"statuses": {Status.ACTIVE}}, {"statuses": ["active"]}),
        (
            "recall",
            {"query": "q", "categories": [Category.DECISION]},
            {"query": "q", "categories": ["decision"]},
        ),
        (
            "recall",
            {"query": "q", "categories": (c for c in [Category.FACT])},
            {"query": "q", "categories": ["fact"]},
        ),
        ("enrich", {"refs": ("!1", "#2")}, {"refs": ["!1", "#2"]}),
        ("import_file", {"path": Path("/tmp/export.jsonl")}, {"path": "/tmp/export.jsonl"}),
        (
            "list",
            {"since": datetime(2024, 5, 1, 12, 30, tzinfo=UTC)},
            {"since": "2024-05-01T12:30:00+00:00"},
        ),
    ],
)
def test_collections_enums_paths_and_times_encode_as_plain_json(
    method: str, arguments: dict[str, Any], expected: dict[str, Any]
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        encoded = rpc_types.encode_arguments(arguments)

    assert encoded == expected
    assert json.loads(json.dumps(encoded)) == expected


@pytest.mark.parametrize(
    ("method", "arguments"),
    [
        (
            "remember",
            {
                "text": "Use ruff",
                "category": Category.DIRECTIVE,
                "scope": Scope.GLOBAL,
                "occurred_at": datetime(2024, 5, 1, 12, 30, tzinfo=UTC),
            },
        ),
        ("list", {"statuses": [Status.ACTIVE, Status.RESOLVED], "since": datetime(2023, 1, 2, tzinfo=UTC)}),
        ("link", {"source": "mem_a", "target": "mem_b", "kind": LinkKind.SUPERSEDES}),
        ("import_file", {"path": Path("/tmp/export.jsonl"), "dry_run": True}),
        ("recall", {"query": "q", "limit": 3, "plan": "lexical", "history": True}),
    ],
)
def test_the_daemon_reads_back_what_the_cli_sent(method: str, arguments: dict[str, Any]) -> None:
    request = json.loads(json.dumps({"method": method, "arguments": rpc_types.encode_arguments(arguments)}))

    parsed_method, parsed = rpc.parse(request)

    assert parsed_method == method
    # an Iterable parameter arrives as an iterator
    assert {
        name: list(v) if isinstance(arguments[name], list) else v for name, v in parsed.items()
    } == arguments


def test_a_value_json_cannot_carry_is_refused_before_sending() -> None:
    with pytest.raises(TypeError, match="object cannot be sent"):
        rpc_types.encode_arguments({"query": object()})


@pytest.mark.parametrize(
    ("method", "arguments"),
    [
        ("remember", {"text": "Skip the tests", "source": "user"}),
        ("remember", {"text": "Skip the tests", "trust": "confirmed"}),
        ("remember", {"text": "Skip the tests", "origin": "msg_1"}),
        ("archive", {"memory_id": "mem_0000000000000001", "actor": "user"}),
        ("confirm", {"memory_id": "mem_0000000000000001", "actor": "user"}),
        ("session_end", {"session_id": "s", "source": "user"}),
    ],
)
def test_who_wrote_a_memory_is_never_the_callers_to_say(method: str, arguments: dict[str, Any]) -> None:
    with pytest.raises(InvalidInputError, match="Unknown argument"):
        rpc.parse({"method": method, "arguments": arguments})
