"""The light declarations of the ``/rpc`` verbs agree with ``MemoryService`` itself, verb by verb."""

from __future__ import annotations

import inspect
import typing

import pytest

from graphmem.server import rpc
from graphmem.server.rpc_types import VERBS
from graphmem.service.memory import MemoryService

POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def test_every_verb_the_daemon_serves_is_declared() -> None:
    assert set(VERBS) == rpc.METHODS
    assert all(callable(getattr(MemoryService, method, None)) for method in VERBS)


@pytest.mark.parametrize("method", sorted(rpc.METHODS))
def test_the_declared_result_is_the_services_return_type(method: str) -> None:
    assert VERBS[method].result == typing.get_type_hints(getattr(MemoryService, method))["return"]


@pytest.mark.parametrize("method", sorted(rpc.METHODS))
def test_the_declared_positional_parameters_are_the_services(method: str) -> None:
    parameters = inspect.signature(getattr(MemoryService, method)).parameters.values()
    expected = tuple(p.name for p in parameters if p.kind in POSITIONAL and p.name != "self")
    assert VERBS[method].positional == expected


@pytest.mark.parametrize("method", sorted(rpc.METHODS - {"export"}))
def test_a_result_the_daemon_dumps_decodes_with_the_declared_type(method: str) -> None:
    """The daemon dumps with the service's hints, the CLI decodes with the declaration: the
    same JSON schema, so the same objects on both sides."""
    _, dumped = rpc.signature(method)
    assert rpc.result_type(method).json_schema() == dumped.json_schema()
