"""Arguments cross to the daemon as JSON without pydantic's serializer warnings."""

from __future__ import annotations

import warnings

import pytest

from graphmem.core.models import Category, Status
from graphmem.server import rpc


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
        ("enrich", {"refs": ("!1", "#2")}, {"refs": ["!1", "#2"]}),
    ],
)
def test_collections_encode_without_warnings(method: str, arguments: dict, expected: dict) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        encoded = rpc.encode_arguments(method, arguments)

    assert encoded == expected
