"""The manifest ``graphmem mcp`` lists is the tools' own listing, and every tool publishes the
shape of its result: an output schema with its properties, not an open object."""

from __future__ import annotations

import json

import pytest

from graphmem.server.manifest import render, tool_manifest
from graphmem.server.proxy import load_manifest


def test_the_shipped_manifest_is_the_tools_listing() -> None:
    assert load_manifest() == json.loads(render()), "run: python -m graphmem.server.manifest"


@pytest.mark.parametrize("tool", tool_manifest()["tools"], ids=lambda tool: tool["name"])
def test_each_tool_publishes_the_properties_of_its_result(tool: dict[str, object]) -> None:
    schema = tool["outputSchema"]

    assert isinstance(schema, dict) and schema["type"] == "object"
    assert schema.get("properties"), schema
    assert "x-fastmcp-wrap-result" not in schema  # the result is the object itself, as before
