"""docs/mcp-tools.md, the guide, describes every MCP tool as the daemon lists it: a section
per tool with an example and its hints, linking to the tool in the generated reference
(docs/reference/mcp-tools.md), which gives every parameter with its type, default and bounds.

The tools come from ``tool_manifest()``, which builds the live FastMCP server from the
tool functions' signatures (no store), so the docs are checked against the code itself;
tests/unit/test_reference_docs.py checks that the reference is what the code renders now.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

import pytest

from graphmem.server.manifest import tool_manifest
from scripts.reference_docs import hints  # the words the overview tables define

DOCS = Path(__file__).resolve().parents[3] / "docs" / "mcp-tools.md"
REFERENCE = DOCS.with_name("reference") / "mcp-tools.md"
OVERVIEW = "The tools at a glance"
TOOL_NAME = re.compile(r"[a-z][a-z0-9_]*")
BOUNDS = ("minimum", "maximum", "minLength", "maxLength", "maxItems")


@functools.cache
def tools() -> dict[str, dict[str, Any]]:
    """Tool name → its listing (``inputSchema``, ``annotations``), in the order clients see."""
    return {tool["name"]: tool for tool in tool_manifest()["tools"]}


@functools.cache
def sections(page: Path = DOCS) -> dict[str, str]:
    """``## heading`` → the text under it; headings inside fenced code blocks are example output."""
    found: dict[str, list[str]] = {}
    body: list[str] = []
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        fenced = fenced != line.startswith("```")
        if not fenced and line.startswith("## "):
            body = found.setdefault(line[3:].strip(), [])
        else:
            body.append(line)
    return {heading: "\n".join(lines) for heading, lines in found.items()}


def table(text: str, first_header: str) -> list[list[str]]:
    """The rows of the Markdown table whose first header cell is ``first_header``, cells stripped."""
    rows: list[list[str]] = []
    inside = False
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if not cells:
            if inside:
                break
        elif cells[0] == first_header:
            inside = True
        elif inside and not set(cells[0]) <= {"-", " "}:
            rows.append(cells)
    return rows


def parameter_rows(tool: str) -> dict[str, list[str]]:
    """Parameter name → its row in the reference's ``| Parameter | Type | Default | ...`` table."""
    rows = table(sections(REFERENCE).get(tool, ""), "Parameter")
    return {row[0].strip("`"): row for row in rows}


def schema_types(schema: dict[str, Any]) -> set[str]:
    return {option["type"] for option in schema.get("anyOf", [schema]) if "type" in option}


TOOLS = list(tools())
PARAMETERS = [
    (name, parameter, schema)
    for name, tool in tools().items()
    for parameter, schema in tool["inputSchema"].get("properties", {}).items()
]
PARAMETER_IDS = [f"{name}.{parameter}" for name, parameter, _ in PARAMETERS]


@pytest.mark.parametrize("name", TOOLS)
def test_every_tool_has_a_section(name: str) -> None:
    assert name in sections(), f"docs/mcp-tools.md has no '## {name}' section"


@pytest.mark.parametrize("name", TOOLS)
def test_every_tool_section_has_an_example(name: str) -> None:
    body = sections().get(name, "")

    assert "Example" in body and "```json" in body, f"docs/mcp-tools.md '## {name}' shows no example"


def test_no_section_names_a_tool_that_does_not_exist() -> None:
    named = [heading for heading in sections() if TOOL_NAME.fullmatch(heading)]

    assert sorted(set(named) - set(TOOLS)) == []


def test_the_overview_lists_every_tool_in_the_order_clients_see_them() -> None:
    listed = [row[0].partition("]")[0].strip("[`") for row in table(sections()[OVERVIEW], "Tool")]

    assert listed == TOOLS


@pytest.mark.parametrize("name", TOOLS)
def test_the_overview_gives_each_tool_its_hints(name: str) -> None:
    rows = {row[0].partition("]")[0].strip("[`"): row for row in table(sections()[OVERVIEW], "Tool")}

    assert rows.get(name, [""])[-1] == hints(tools()[name]["annotations"])


@pytest.mark.parametrize("name", TOOLS)
def test_each_tool_section_gives_its_hints(name: str) -> None:
    said = re.search(r"Hints: ([a-z, -]+?)(?: \(|\.)", sections().get(name, ""))

    assert said is not None, f"docs/mcp-tools.md '## {name}' has no 'Hints: ...' line"
    assert said.group(1) == hints(tools()[name]["annotations"])


@pytest.mark.parametrize("name", TOOLS)
def test_each_tool_section_links_to_the_tool_in_the_reference(name: str) -> None:
    assert f"(reference/mcp-tools.md#{name})" in sections().get(name, ""), (
        f"docs/mcp-tools.md '## {name}' does not link to its parameters in the reference"
    )
    assert name in sections(REFERENCE), f"docs/reference/mcp-tools.md has no '## {name}'"


def test_the_guide_keeps_no_parameter_table_the_reference_generates() -> None:
    assert "| Parameter |" not in DOCS.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", TOOLS)
def test_the_reference_names_exactly_the_tools_parameters(name: str) -> None:
    documented = list(parameter_rows(name))
    actual = list(tools()[name]["inputSchema"].get("properties", {}))

    assert documented == actual, (
        f"docs/reference/mcp-tools.md '## {name}': parameters {documented}, the tool has {actual}"
    )


@pytest.mark.parametrize(("name", "parameter", "schema"), PARAMETERS, ids=PARAMETER_IDS)
def test_each_parameter_is_documented_with_its_type(
    name: str, parameter: str, schema: dict[str, Any]
) -> None:
    described = parameter_rows(name).get(parameter, ["", ""])[1]
    words = {"string", "integer", "boolean", "array", "object"} & set(re.findall(r"[a-z]+", described))
    allows_null = "null" in schema_types(schema)

    assert words == schema_types(schema) - {"null"}, f"{name}.{parameter}: type {described!r}"
    assert ("or null" in described) == allows_null, f"{name}.{parameter}: type {described!r}"


@pytest.mark.parametrize(("name", "parameter", "schema"), PARAMETERS, ids=PARAMETER_IDS)
def test_each_parameter_is_documented_with_its_default(
    name: str, parameter: str, schema: dict[str, Any]
) -> None:
    described = parameter_rows(name).get(parameter, ["", "", ""])[2]
    required = parameter in tools()[name]["inputSchema"].get("required", [])

    assert (described == "required") == required, f"{name}.{parameter}: default {described!r}"
    if schema.get("default") is not None:  # None: the service decides (a setting, the project)
        literal = described.split(" (")[0].strip("`")
        assert json.loads(literal) == schema["default"], f"{name}.{parameter}: default {described!r}"


@pytest.mark.parametrize(("name", "parameter", "schema"), PARAMETERS, ids=PARAMETER_IDS)
def test_each_parameter_is_documented_with_its_bounds(
    name: str, parameter: str, schema: dict[str, Any]
) -> None:
    row = " | ".join(parameter_rows(name).get(parameter, []))
    numbers = set(re.findall(r"\d[\d,]*", row))
    bounds = [option[key] for option in schema.get("anyOf", [schema]) for key in BOUNDS if key in option]

    missing = [bound for bound in bounds if f"{bound:,}" not in numbers and str(bound) not in numbers]

    assert not missing, f"{name}.{parameter}: the docs do not give the bounds {missing}: {row!r}"


def test_the_checks_see_the_tools_and_parameters_they_police() -> None:
    assert len(TOOLS) >= 16
    assert len(PARAMETERS) >= 50
    assert "remember" in sections()
    assert "Memory: src/payments/retry.py" not in sections()  # example output, inside a code fence
