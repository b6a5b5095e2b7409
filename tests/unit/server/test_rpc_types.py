"""The light declarations of the ``/rpc`` verbs agree with ``MemoryService`` itself, verb by verb,
and the CLI decodes the daemon's answers into the same objects pydantic makes."""

from __future__ import annotations

import dataclasses
import inspect
import json
import types
import typing
from collections.abc import Mapping
from datetime import UTC, datetime
from enum import Enum
from typing import Any

import pytest

from graphmem.errors import StoreError
from graphmem.server import rpc
from graphmem.server.rpc_types import DONE_OF, NONE, PROGRESS_SHAPES, VERBS, decode, decode_result
from graphmem.service.memory import MemoryService
from graphmem.service.results import ExportSummary, Stats

POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def test_every_verb_the_daemon_serves_is_declared() -> None:
    assert all(callable(getattr(MemoryService, method, None)) for method in VERBS)


@pytest.mark.parametrize("method", sorted(VERBS))
def test_the_declared_result_is_the_services_return_type(method: str) -> None:
    assert VERBS[method].result == typing.get_type_hints(getattr(MemoryService, method))["return"]


@pytest.mark.parametrize("method", sorted(VERBS))
def test_the_declared_positional_parameters_are_the_services(method: str) -> None:
    parameters = inspect.signature(getattr(MemoryService, method)).parameters.values()
    expected = tuple(p.name for p in parameters if p.kind in POSITIONAL and p.name != "self")
    assert VERBS[method].positional == expected


@pytest.mark.parametrize("method", sorted(VERBS))
def test_a_declared_progress_shape_matches_the_services_callback(method: str) -> None:
    """Every verb that takes a ``progress`` callback declares how it calls it (so that the
    daemon can stream it), with as many arguments as the service's callback takes."""
    hint = typing.get_type_hints(getattr(MemoryService, method)).get("progress")
    shape = VERBS[method].progress
    if hint is None:
        assert shape is None
        return
    callbacks = [a for a in typing.get_args(hint) if a is not NONE]
    assert len(callbacks) == 1, hint
    taken = typing.get_args(callbacks[0])[0]
    assert shape in PROGRESS_SHAPES
    assert taken == ([int, int] if shape == DONE_OF else [int])


def sample(kind: Any, full: bool) -> Any:
    """A value of ``kind``: every optional part filled (``full``), or each left empty or None."""
    origin, arguments = typing.get_origin(kind), typing.get_args(kind)
    if origin is typing.Union or origin is types.UnionType:
        members = [a for a in arguments if a is not NONE]
        return sample(members[-1], full) if full or NONE not in arguments else None
    if kind is NONE:
        return None
    if kind is Any:  # a JSON value (a history event's state)
        return {"text": "Kùzu ✓", "links": [["mem_a", "mem_b", "related", None]]} if full else None
    if dataclasses.is_dataclass(kind):
        hints = typing.get_type_hints(kind)
        return kind(**{f.name: sample(hints[f.name], full) for f in dataclasses.fields(kind) if f.init})
    if isinstance(kind, type) and issubclass(kind, Enum):
        return list(kind)[-1 if full else 0]
    plain = {
        datetime: datetime(2024, 5, 1, 12, 30, 15, 123456, tzinfo=UTC),
        str: "Kùzu ✓",
        int: 7,
        float: 0.25,
    }
    if kind in plain:
        return plain[kind]
    if kind is bool:
        return full
    if origin is list:
        return [sample(arguments[0], full)] if full else []
    if origin is tuple and arguments[-1] is Ellipsis:
        return (sample(arguments[0], full),) if full else ()
    if origin is tuple:
        return tuple(sample(a, full) for a in arguments)
    if origin in (dict, Mapping):
        return {sample(arguments[0], full): sample(arguments[1], full)} if full else {}
    raise AssertionError(f"no sample for {kind}")


@pytest.mark.parametrize("full", [True, False], ids=["filled", "empty"])
@pytest.mark.parametrize("method", sorted(set(VERBS) - {"export"}))
def test_the_cli_decodes_what_the_daemon_dumps_into_what_pydantic_would(method: str, full: bool) -> None:
    """The daemon dumps with pydantic from the service's hints; the CLI decodes without pydantic:
    the same objects as the original, and as pydantic's own reading of that JSON."""
    _, result = rpc.signature(method)
    value = sample(VERBS[method].result, full)
    data = json.loads(json.dumps(result.dump_python(value, mode="json")))

    decoded = decode_result(method, data)

    assert decoded == value
    assert decoded == result.validate_python(data)
    assert type(decoded) is type(value)


def test_the_export_summary_decodes_too() -> None:
    _, result = rpc.signature("export")
    summary = ExportSummary(3, 2, 1)
    assert decode(ExportSummary, result.dump_python(summary, mode="json")) == summary


@pytest.mark.parametrize(
    ("method", "data"),
    [
        ("recall", {"query": "q"}),  # a field missing
        ("recall", {"query": "q", "plan": "hybrid", "hits": "none"}),
        ("stats", None),
        ("show", {"memory": {"id": 3}, "entities": [], "links": []}),
        ("embed_pending", "7"),
        ("unlink", {"done": True}),
    ],
)
def test_an_answer_that_does_not_fit_is_a_store_error_saying_what_to_do(method: str, data: Any) -> None:
    with pytest.raises(StoreError, match=f"answer to {method} does not fit.*graphmem stop"):
        decode_result(method, data)


def test_an_answer_with_fields_this_cli_does_not_know_still_decodes() -> None:
    stats = sample(Stats, True)
    data = {**dataclasses.asdict(stats), "added_later": 1}
    assert decode_result("stats", data) == stats
