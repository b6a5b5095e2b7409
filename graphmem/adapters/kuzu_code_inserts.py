"""New rows of the code graph in Kùzu: a pass's new files, symbols and external modules, and
its new edges (``kuzu_code.py`` decides which are new).

Many go in with one ``COPY`` from an Arrow table per table; a few (``FEW_COPY_ROWS``: a
re-scan of the files just edited) with one parameterised ``CREATE`` for nodes, and edges one
by one in a transaction, which cost Kùzu a tenth of a ``COPY``'s start.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from graphmem.adapters.kuzu_connection import KuzuConnection
from graphmem.adapters.kuzu_schema import CODE_COLUMNS

if TYPE_CHECKING:  # imported by the bulk writes that need it: a recall does not
    import pyarrow as pa

# Column types other than text, by name (pyarrow is imported by a scan's write, not by a recall).
SYMBOL_TYPES = {
    "start_line": "int64",
    "end_line": "int64",
    "body_changed_at": "timestamp",
    "deleted_at": "timestamp",
}
FILE_TYPES = {
    "size": "int64",
    "mtime_ns": "int64",
    "error_count": "int64",
    "scanned_at": "timestamp",
    "deleted_at": "timestamp",
}
# New rows of a table (nodes or edges) up to which a pass writes them with parameterised
# statements rather than a ``COPY`` (``insert_nodes``, ``insert_edges``): a ``COPY`` cost Kùzu
# 13 to 17 ms of CPU however few its rows, an ``UNWIND ... CREATE`` of three symbols 0.1 ms, an
# edge matched by its two keys 0.04 ms in a small store (a key's lookup about 0.3 ms at 100,000
# rows, ``FEW_NODE_KEYS``). Two small passes on a new store took 48 ms of CPU instead of 144;
# a re-scan of graphmem's own tree after one file changed, 528 ms instead of 582 (median of 20,
# two alternated runs, load 9 to 10).
FEW_COPY_ROWS = 32


def insert_nodes(db: KuzuConnection, table: str, rows: list[dict[str, Any]], types: dict[str, str]) -> None:
    """New nodes of ``table`` (``rows``: each column by name; ``types``: those not text): by
    ``COPY`` from Arrow, or with one ``UNWIND ... CREATE`` when they are few (``FEW_COPY_ROWS``)."""
    if len(rows) > FEW_COPY_ROWS:
        db.copy(table, _table(table, rows, types))
        return
    if not rows:
        return
    columns = _columns(table)
    values = ", ".join(f"{name}: CAST(r.{name} AS {kind})" for name, kind in columns)
    db.run(
        f"UNWIND $rows AS r CREATE (:{table} {{{values}}})",
        {"rows": [{name: row.get(name) for name, _ in columns} for row in rows]},
    )


def insert_edges(
    db: KuzuConnection,
    rel: str,
    source: str,
    target: str,
    pairs: Sequence[tuple[str, str]],
    columns: dict[str, list[Any]] | None = None,
) -> None:
    """New edges ``source key -> target key`` (with the property ``columns``): by ``COPY``,
    or, when they are few (``FEW_COPY_ROWS``), each matched by its two keys in one
    transaction (an ``UNWIND`` of them would hash every node of both tables)."""
    if len(pairs) > FEW_COPY_ROWS:
        db.copy_edges(rel, source, target, pairs, columns)
        return
    if not pairs:
        return
    names = sorted(columns or {})
    values = ", ".join(f"{name}: ${name}" for name in names)
    query = f"MATCH (a:{source} {{key: $a}}), (b:{target} {{key: $b}}) CREATE (a)-[:{rel} {{{values}}}]->(b)"
    with db.transaction():
        for i, (a, b) in enumerate(pairs):
            db.run(query, {"a": a, "b": b, **{n: (columns or {})[n][i] for n in names}})


def _columns(table: str) -> list[tuple[str, str]]:
    """A code node table's columns with their Kùzu types, in the table's order."""
    return [
        ("key", "STRING"),
        ("name", "STRING"),
        ("project", "STRING"),
        ("title", "STRING"),
        *CODE_COLUMNS.get(table, ()),
    ]


def _table(table: str, rows: list[dict[str, Any]], types: dict[str, str]) -> pa.Table | None:
    """Rows as an Arrow table in the node table's column order (COPY maps by position)."""
    if not rows:
        return None
    import pyarrow as pa

    kinds = {"int64": pa.int64(), "timestamp": pa.timestamp("us")}
    names = [name for name, _ in _columns(table)]
    # The rows read as one struct array (in Arrow's C++, a missing column null), then split into
    # its columns: 48,000 symbols in two thirds of the CPU of a Python list per column.
    struct = pa.struct([(n, kinds[types[n]] if n in types else pa.string()) for n in names])
    return pa.Table.from_batches([pa.RecordBatch.from_struct_array(pa.array(rows, type=struct))])
