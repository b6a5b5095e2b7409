"""Reads of many keys in the Kùzu store: joined with the tables on a small store, looked up one by
one on a large one (``adapters/kuzu_keyed.py``), with the same answer either way."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from support.stores import new_kuzu

from graphmem.adapters import kuzu_keyed
from graphmem.adapters.kuzu_code import KuzuCodeGraph
from graphmem.adapters.kuzu_connection import KuzuConnection
from graphmem.adapters.kuzu_store import KuzuGraphStore
from graphmem.core.code import CallRef, Definition, ParsedFile
from graphmem.core.code_moves import MovePlan
from graphmem.core.codegraph import CodeScan, FileState, ProjectCode, file_key, symbol_key
from graphmem.core.models import Category, Entity, EntityKind, MemoryRecord, Scope

PROJECT = "/src/proj"
PATH = "pkg/chain.py"
T0 = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
FUNCTIONS = 30  # below every fixed threshold (FEW_NODE_KEYS, FEW_EDGE_KEYS): a lookup each before


def chain() -> ParsedFile:
    """A file of functions, each calling the next."""
    names = [f"step_{n}" for n in range(FUNCTIONS)]
    definitions = tuple(
        Definition("function", name, name, 3 * n + 1, 3 * n + 3, f"def {name}()", None, f"body-{n}", None)
        for n, name in enumerate(names)
    )
    calls = tuple(CallRef(names[n + 1], None, 3 * n + 2, names[n]) for n in range(FUNCTIONS - 1))
    return ParsedFile("python", definitions, calls, (), (), 0)


@pytest.fixture
def store(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[KuzuGraphStore]:
    """A new store (a copy of the process's template, ``support/stores.py``) with a chain of calls."""
    store = new_kuzu(tmp_path / "data", request, 8)
    code = KuzuCodeGraph(store)
    project = ProjectCode(PROJECT, {PATH: chain()})
    scan = CodeScan(
        PROJECT,
        {PATH: (chain(), FileState(PATH, "c1", 10, 1))},
        [],
        project,
        project.edges(),
        T0,
        MovePlan(),
        None,
    )
    code.save(scan)
    records = [
        MemoryRecord(
            f"m{n:02d}", f"note {n}", Category.FACT, Scope.GLOBAL, None, T0, T0, T0, content_hash=f"h{n}"
        )
        for n in range(FUNCTIONS)
    ]
    store.add_memories(records)
    file = Entity(file_key(PROJECT, PATH), EntityKind.FILE, PATH, PROJECT)
    store.upsert_entities([file])
    store.link_about(
        [
            (r.id, Entity(symbol_key(PROJECT, PATH, f"step_{n}"), EntityKind.SYMBOL, f"step_{n}"))
            for n, r in enumerate(records)
        ]
        + [(r.id, file) for r in records[::2]]
    )
    yield store
    store.close()


def statements(store: KuzuGraphStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The statements the store runs from now on, on either of its connections."""
    ran: list[str] = []
    db = store.db
    rows = db.rows

    def counted(query: str, params: Any = None) -> list[list[Any]]:
        ran.append(query)
        return rows(query, params)

    def side(query: str, each: list[dict[str, Any]]) -> Any:
        ran.extend([query] * len(each))
        return KuzuConnection._side_reads(db, query, each)

    monkeypatch.setattr(db, "rows", counted)
    monkeypatch.setattr(db, "_side_reads", side)
    return ran


def reads(store: KuzuGraphStore) -> tuple[Any, ...]:
    code = KuzuCodeGraph(store)
    symbols = [symbol_key(PROJECT, PATH, f"step_{n}") for n in range(FUNCTIONS)]
    ids = [f"m{n:02d}" for n in range(FUNCTIONS)]
    return (
        store.memories_about([*symbols, file_key(PROJECT, PATH)]),
        store.about(ids),
        sorted((c.key, t, how) for c, t, how in code.calls(symbols, incoming=True, limit=500)),
        sorted(code.symbols(symbols)),
        code.deleted_files([file_key(PROJECT, PATH)]),
        store.get_entities([file_key(PROJECT, PATH)]),
    )


def test_a_small_store_reads_many_keys_in_a_few_statements(
    store: KuzuGraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = statements(store, monkeypatch)
    found = reads(store)

    assert len(found[0]) == FUNCTIONS + 1 and len(found[1]) == FUNCTIONS and len(found[2]) == FUNCTIONS - 1
    sizes = [query for query in ran if query.endswith("RETURN count(*)")]
    assert len(sizes) == len(set(sizes))  # each table counted once
    assert len(ran) - len(sizes) == 7, ran  # one statement a read (two labels: two), never one a key


def test_looked_up_one_by_one_or_joined_the_answer_is_the_same(
    store: KuzuGraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    joined = reads(store)
    monkeypatch.setattr(kuzu_keyed, "JOIN_ROWS_PER_KEY", 1)  # as in a large store: a lookup each
    ran = statements(store, monkeypatch)

    assert reads(store) == joined
    assert len(ran) > 4 * FUNCTIONS  # each key was looked up


def test_each_memory_lists_its_entities_and_each_entity_its_memories_in_one_order(
    store: KuzuGraphStore,
) -> None:
    about = store.about(["m04", "m01"])
    memories = store.memories_about([file_key(PROJECT, PATH)])

    assert list(about) == ["m04", "m01"]
    assert [e.key for e in about["m04"]] == sorted(e.key for e in about["m04"])
    assert memories[file_key(PROJECT, PATH)] == sorted(memories[file_key(PROJECT, PATH)])
