"""Mapping between graphmem's records and Kùzu rows, parameters and Arrow tables."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from graphmem.adapters.kuzu_schema import MEMORY_COLUMNS
from graphmem.adapters.record_rows import column_value
from graphmem.adapters.record_rows import memory_from_row as memory_from_row  # the stores' one mapping
from graphmem.adapters.visibility_clause import Dialect
from graphmem.adapters.visibility_clause import visibility_clause as shared_clause
from graphmem.core.branches import place
from graphmem.core.models import Entity, EntityKind, MemoryRecord
from graphmem.core.ports import StoredVectors, Visibility
from graphmem.core.text import fold

if TYPE_CHECKING:  # imported by the bulk writes and reads that need it: a recall does not
    import pyarrow as pa


def naive_utc(value: datetime | None) -> datetime | None:
    """Kùzu's TIMESTAMP is naive: store UTC."""
    if value is None:
        return None
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value


def aware(value: datetime | None) -> datetime | None:
    return None if value is None else value.replace(tzinfo=UTC)


# The columns a MemoryRecord holds (the rest are the store's own).
MEMORY_FIELDS = tuple(c for c in MEMORY_COLUMNS if c not in ("seq", "search_text", "embedded", "embedding"))
MEMORY_RETURN = ", ".join(f"m.{name}" for name in MEMORY_FIELDS) + ", m.embedded"
# A memory's id added to its content hash's node (kuzu_schema.CONTENT_HASH), made when new.
HASH_MEMORY = (
    "MERGE (h:ContentHash {key: $content_hash}) "
    "ON CREATE SET h.ids = [$id] ON MATCH SET h.ids = list_append(h.ids, $id)"
)
# A memory written or confirmed later than it was: each ABOUT edge to a symbol records the
# symbol's body of now (what staleness compares with, ``EntityGraph.about_bodies``).
RECORD_BODIES = (
    "MATCH (s:Symbol)<-[a:ABOUT]-(m:Memory {id: $id}) WHERE m.updated_at < $at SET a.body_hash = s.body_hash"
)
# A memory, and its id in its content hash's node.
CREATE_MEMORY = (
    "CREATE (m:Memory {"
    + ", ".join(
        f"{name}: ${name}" for name in (*MEMORY_FIELDS, "seq", "search_text", "embedded", "embedding")
    )
    + "}) "
    + HASH_MEMORY
)
# The ids of bulk-loaded memories (``COPY Memory``) added to their content hashes' nodes
# stored already (``hashed_rows``; the new ones are copied: ``hash_table``).
ADD_HASHED = (
    "UNWIND $rows AS r WITH r, r.k AS k MERGE (h:ContentHash {key: k}) "
    "ON CREATE SET h.ids = r.ids ON MATCH SET h.ids = list_concat(h.ids, r.ids)"
)


def hashed_rows(records: Iterable[MemoryRecord]) -> list[dict[str, Any]]:
    """Each content hash of ``records`` with their ids, as ``ADD_HASHED``'s rows."""
    ids: dict[str, list[str]] = {}
    for record in records:
        ids.setdefault(record.content_hash, []).append(record.id)
    return [{"k": content_hash, "ids": group} for content_hash, group in ids.items()]


def hash_table(rows: Sequence[dict[str, Any]]) -> pa.Table:
    """``hashed_rows`` as columns for ``COPY ContentHash``."""
    import pyarrow as pa

    return pa.table(
        [
            pa.array([r["k"] for r in rows], pa.string()),
            pa.array([r["ids"] for r in rows], pa.list_(pa.string())),
        ],
        names=["key", "ids"],
    )


def to_db(value: object) -> object:
    """A field's value as Kùzu takes it: a time naive in UTC (its TIMESTAMP), an enum its string."""
    return naive_utc(value) if isinstance(value, datetime) else column_value(value)


_seq_lock = threading.Lock()
_seq_counter = [0]


def _next_seq() -> int:
    # Orders memories stored within the same microsecond (a session's turns).
    with _seq_lock:
        _seq_counter[0] += 1
        return _seq_counter[0]


def memory_params(record: MemoryRecord) -> dict[str, Any]:
    params = {name: to_db(getattr(record, name)) for name in MEMORY_FIELDS}
    params["seq"] = _next_seq()
    params["search_text"] = fold(record.text)
    return params


def memory_table(records: Sequence[MemoryRecord], *, embedded: bool) -> pa.Table:
    """``records`` as columns for ``COPY Memory``; the vectors are not in Kùzu since schema 9
    (``kuzu_vectors.py``), ``embedded`` says whether they are given."""
    import pyarrow as pa

    columns: dict[str, Any] = {name: [] for name in MEMORY_COLUMNS}
    for record in records:
        params = memory_params(record)
        params["embedded"] = embedded
        for name in MEMORY_COLUMNS:
            if name != "embedding":
                columns[name].append(params[name])
    embedding = pa.nulls(len(records), pa.list_(pa.float32()))
    timestamp = pa.timestamp("us")
    types = {
        "created_at": timestamp,
        "updated_at": timestamp,
        "valid_from": timestamp,
        "valid_to": timestamp,
        "expires_at": timestamp,
        "reinforced": pa.int64(),
        "seq": pa.int64(),
        "embedded": pa.bool_(),
    }
    arrays = [
        embedding if name == "embedding" else pa.array(columns[name], types.get(name, pa.string()))
        for name in MEMORY_COLUMNS
    ]
    return pa.table(arrays, names=list(MEMORY_COLUMNS))


def entity_from_row(label: str, row: Sequence[Any]) -> Entity:
    key, name, project, title = row[:4]
    return Entity(key=key, kind=EntityKind(label), name=name or key, project=project, title=title or "")


# Cypher's way of writing the condition of a Visibility (visibility_clause.py).
CYPHER = Dialect(param=lambda name: f"${name}", one_of=lambda column, p: f"{column} IN {p}", time=naive_utc)


def visibility_clause(visibility: Visibility, alias: str = "m") -> tuple[str, dict[str, Any]]:
    """The Cypher condition (named parameters) of the memories ``visibility`` lets a caller see."""
    return shared_clause(visibility, CYPHER, alias)


# Vectors are read in pages of node offsets: one query for all of them held the whole
# result in Kùzu's buffer pool and in Arrow at once (about 350 MB beside the matrix at 100k).
VECTOR_PAGE = 8192
VECTOR_EXTENT = "MATCH (m:Memory) WHERE m.embedded RETURN count(*), max(offset(id(m)))"
VECTORS_BETWEEN = (
    "MATCH (m:Memory) WHERE offset(id(m)) >= $first AND offset(id(m)) < $stop AND m.embedded "
    "RETURN m.id, m.project, m.status, m.embedding, m.branch"
)


def stored_vectors(pages: Iterable[pa.Table], count: int, dimension: int) -> StoredVectors:
    """The vectors of ``pages`` (id, project, status, embedding, branch) in one float32 matrix,
    filled page by page; ``count`` rows at most."""
    matrix = np.zeros((count, dimension), np.float32)
    ids: list[str] = []
    projects: list[str | None] = []
    statuses: list[str] = []
    for page in pages:
        n = min(page.num_rows, count - len(ids))
        if n <= 0:
            continue
        flat = page.column(3).combine_chunks().flatten().to_numpy(zero_copy_only=False)
        matrix[len(ids) : len(ids) + n] = flat.reshape(page.num_rows, -1)[:n]
        ids += page.column(0).to_pylist()[:n]
        branches = page.column(4).to_pylist()[:n]
        projects += [place(p, b) for p, b in zip(page.column(1).to_pylist()[:n], branches, strict=True)]
        statuses += page.column(2).to_pylist()[:n]
    return StoredVectors(ids, matrix[: len(ids)], projects, statuses)


# A link by two primary-key lookups (about 20 ms at 100k memories, most of it the commit),
# and many at once by UNWIND. Kùzu 0.11 matches a key given as a struct field (``{id: r.s}``)
# by comparing it with every row, so each UNWIND here names the field first (``WITH r.s AS
# s``) and matches that on the primary key's index: 2,000 links at 100k memories 44 s → 0.24 s.
ADD_LINK = (
    "MATCH (a:Memory {id: $s}) MATCH (b:Memory {id: $t}) "
    "MERGE (a)-[x:RELATES {kind: $k}]->(b) ON CREATE SET x.created_at = $c"
)
ADD_LINKS = (
    "UNWIND $rows AS r WITH r, r.s AS s MATCH (a:Memory {id: s}) "
    "WITH a, r, r.t AS t MATCH (b:Memory {id: t}) "
    "MERGE (a)-[x:RELATES {kind: r.k}]->(b) ON CREATE SET x.created_at = r.c"
)
