"""docs/architecture.md stays the picture and the reasons: its "Where a change goes" names
every kind of change and only paths and symbols that exist, and it counts nothing no test
checks (a count of tools, methods or modules goes stale with the next one)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "architecture.md"
SECTION = "## Where a change goes"
CHANGES = (
    "A new verb",
    "A new store",
    "A new agent client",
    "A new setting",
    "A new recall channel",
    "A new external system",
)
NAMED = re.compile(r"`((?:graphmem|tests|scripts|docs)/[^`\s<>]+)`")
MAX_LINES = 400


def section() -> str:
    text = DOCS.read_text(encoding="utf-8")
    return text[text.index(SECTION) :].split("\n## ", 1)[0]


def named() -> list[str]:
    return sorted(set(NAMED.findall(section())))


def defined(path: Path) -> dict[str, set[str]]:
    """Top-level names of a module, each with the names defined in it (a class's methods)."""
    names: dict[str, set[str]] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            inner = {
                each.name if not isinstance(each, ast.AnnAssign) else ast.unparse(each.target)
                for each in getattr(node, "body", [])
                if isinstance(each, ast.FunctionDef | ast.AsyncFunctionDef | ast.AnnAssign)
            }
            names[node.name] = inner
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update({target.id: set() for target in targets if isinstance(target, ast.Name)})
    return names


@pytest.mark.parametrize("change", CHANGES)
def test_where_a_change_goes_names_each_kind_of_change(change: str) -> None:
    assert f"**{change}**" in section(), f"docs/architecture.md '{SECTION}' does not say where {change} goes"


def test_the_section_names_what_it_checks() -> None:
    assert len(named()) >= 30, named()


@pytest.mark.parametrize("reference", named())
def test_each_named_path_and_symbol_exists(reference: str) -> None:
    path, _, symbol = reference.partition(":")

    assert (ROOT / path).exists(), f"docs/architecture.md names {path}, which does not exist"
    if symbol:
        outer, _, inner = symbol.partition(".")
        names = defined(ROOT / path)
        assert outer in names, f"docs/architecture.md names {reference}: {path} defines no {outer}"
        assert not inner or inner in names[outer], f"docs/architecture.md names {reference}: no {inner}"


def test_the_picture_stays_short_and_counts_nothing() -> None:
    text = DOCS.read_text(encoding="utf-8")
    counts = re.findall(r"\b\d+ (?:MCP )?(?:tools|methods|modules|ports|commands|settings|verbs)\b", text)

    assert len(text.splitlines()) < MAX_LINES
    assert counts == []
