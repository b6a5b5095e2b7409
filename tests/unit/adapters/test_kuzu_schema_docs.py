"""docs/storage.md's schema tables are the schema ``adapters/kuzu_schema.py`` creates:
every node table with its columns and primary key, every relationship table with its
endpoints and properties, and one row per schema version up to ``SCHEMA_VERSION``.

In the docs a column is a backticked ``snake_case`` name outside parentheses; what is in
parentheses is a note (``\\`id\\` (primary key, \\`mem_\\` + 16 hex digits)``).
"""

from __future__ import annotations

import re
from pathlib import Path

from graphmem.adapters.kuzu_schema import ENTITY_TABLES, SCHEMA_VERSION, create_schema

DOCS = Path(__file__).resolve().parents[3] / "docs" / "storage.md"
SECTION = "## Storage: the Kùzu schema"
COLUMN = re.compile(r"`([a-z_][a-z0-9_]*)`")
TABLE = re.compile(r"`([A-Z][A-Za-z_]*)`")
PAIR = re.compile(r"`(\w+)` → (?:`(\w+)`|(each entity table))")
STATEMENT = re.compile(r"CREATE (NODE|REL) TABLE (\w+)\((.*)\)$")

Columns = frozenset[str]
Pairs = frozenset[tuple[str, str]]


def _outside_parentheses(text: str) -> str:
    """``text`` without what is inside (possibly nested) parentheses."""
    kept: list[str] = []
    depth = 0
    for char in text:
        depth += char == "("
        if depth == 0:
            kept.append(char)
        depth -= char == ")" and depth > 0
    return "".join(kept)


def _docs_table(first_header: str) -> list[list[str]]:
    """The rows of the table in the schema section whose header starts with ``first_header``."""
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index(SECTION) :].split("\n## ", 1)[0]
    rows: list[list[str]] = []
    inside = False
    for line in section.splitlines():
        if not line.startswith("|"):
            if inside:
                break
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells[:2] == first_header.split(" | "):
            inside = True
        elif inside and not cells[0].startswith("---"):
            rows.append(cells)
    assert rows, f"docs/storage.md: no table headed '| {first_header} |' under '{SECTION}'"
    return rows


def documented_nodes() -> dict[str, tuple[Columns, str]]:
    """Node table → (its columns, its primary key) as the docs give them."""
    found: dict[str, tuple[Columns, str]] = {}
    for tables, columns in (row[:2] for row in _docs_table("Table | Columns")):
        key = re.search(r"`(\w+)` \(primary key", columns)
        names = frozenset(COLUMN.findall(_outside_parentheses(columns)))
        for table in TABLE.findall(tables):
            found[table] = (names, key.group(1) if key else "")
    return found


def documented_relationships() -> dict[str, tuple[Pairs, Columns]]:
    """Relationship table → (its from/to pairs, its properties) as the docs give them."""
    found: dict[str, tuple[Pairs, Columns]] = {}
    for tables, ends, properties in (row[:3] for row in _docs_table("Table | From → to")):
        pairs = frozenset(
            (source, target)
            for source, named, every in PAIR.findall(ends)
            for target in ((named,) if named else ENTITY_TABLES if every else ())
        )
        names = frozenset(COLUMN.findall(_outside_parentheses(properties)))
        for table in TABLE.findall(tables):
            found[table] = (pairs, names)
    return found


def _statements(kind: str) -> dict[str, list[str]]:
    """Table → the items between the parentheses of its CREATE statement."""
    found: dict[str, list[str]] = {}
    for statement in create_schema():
        match = STATEMENT.match(statement)
        assert match is not None, f"unexpected schema statement: {statement}"
        if match.group(1) == kind:
            found[match.group(2)] = [item.strip() for item in match.group(3).split(",")]
    return found


def schema_nodes() -> dict[str, tuple[Columns, str]]:
    found: dict[str, tuple[Columns, str]] = {}
    for table, items in _statements("NODE").items():
        keys = [item for item in items if item.startswith("PRIMARY KEY(")]
        columns = frozenset(item.split()[0] for item in items if item not in keys)
        found[table] = (columns, keys[0].removeprefix("PRIMARY KEY(").rstrip(")"))
    return found


def schema_relationships() -> dict[str, tuple[Pairs, Columns]]:
    found: dict[str, tuple[Pairs, Columns]] = {}
    for table, items in _statements("REL").items():
        ends = [item.split() for item in items if item.startswith("FROM ")]
        properties = frozenset(item.split()[0] for item in items if not item.startswith("FROM "))
        found[table] = (frozenset((words[1], words[3]) for words in ends), properties)
    return found


def test_the_docs_name_every_node_table_and_no_other() -> None:
    assert sorted(documented_nodes()) == sorted(schema_nodes())


def test_each_node_table_has_the_documented_columns_and_primary_key() -> None:
    documented, schema = documented_nodes(), schema_nodes()

    wrong = {
        table: {"docs": sorted(documented[table][0]), "schema": sorted(schema[table][0])}
        for table in schema.keys() & documented.keys()
        if documented[table] != schema[table]
    }

    assert not wrong, f"docs/architecture.md's node tables differ from kuzu_schema.py: {wrong}"


def test_the_docs_name_every_relationship_table_and_no_other() -> None:
    assert sorted(documented_relationships()) == sorted(schema_relationships())


def test_each_relationship_table_has_the_documented_endpoints_and_properties() -> None:
    documented, schema = documented_relationships(), schema_relationships()

    wrong = {
        table: {"docs": documented[table], "schema": schema[table]}
        for table in schema.keys() & documented.keys()
        if documented[table] != schema[table]
    }

    assert not wrong, f"docs/architecture.md's relationship tables differ from kuzu_schema.py: {wrong}"


def test_the_docs_give_every_schema_version_up_to_the_current_one() -> None:
    versions = [row[0] for row in _docs_table("Version | What it added")]
    current = re.findall(r"`SCHEMA_VERSION` \(now (\d+)\)", DOCS.read_text(encoding="utf-8"))

    assert versions == [str(v) for v in range(1, SCHEMA_VERSION + 1)]
    assert current == [str(SCHEMA_VERSION)]


def test_the_reading_of_the_docs_keeps_notes_out_of_the_columns() -> None:
    memory_columns, memory_key = documented_nodes()["Memory"]

    assert memory_key == "id"
    assert "mem_" not in memory_columns  # inside the note "(primary key, `mem_` + 16 hex digits)"
    assert documented_relationships()["ABOUT"][0] == {("Memory", table) for table in ENTITY_TABLES}
