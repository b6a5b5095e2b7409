"""Stores from before links recorded their symbol's body (Kùzu schema 13, PostgreSQL 13) upgraded in
place: the links the rule of before did not flag get the body of now, the flagged ones none (and
that rule); PostgreSQL's rollback clears what schema 14 recorded."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from support.stores import new_kuzu, opened_postgres, postgres_url
from unit.adapters.test_code_graph_contract import T0, T1, function, key, parsed, save

from graphmem.adapters.kuzu_code import KuzuCodeGraph
from graphmem.adapters.kuzu_store import KuzuGraphStore
from graphmem.adapters.postgres_code import PostgresCodeGraph
from graphmem.adapters.postgres_migrate import SCHEMA_VERSION, migrate
from graphmem.core.models import Category, Entity, EntityKind, MemoryRecord, Scope
from graphmem.core.ports import CodeGraph, GraphStore

HELPER = key("util.py", "helper")
TOOL = key("util.py", "Tool")
# After the pass of T1 (Tool's body changed), under the rule of before: "fresh" (about helper,
# unchanged) and "confirmed" (about Tool, written after its change) are not flagged, "old" is.
EXPECTED = {"fresh": {HELPER: "hash-helper-"}, "confirmed": {TOOL: "hash-Tool-v2"}}


def _written(store: GraphStore, code: CodeGraph) -> None:
    save(code, {"util.py": parsed(function("helper", 1), function("Tool", 5))})
    for memory_id, about, at in (("fresh", HELPER, T0), ("old", TOOL, T0)):
        _remember(store, memory_id, about, at)
    save(code, {"util.py": parsed(function("helper", 1), function("Tool", 5, body="v2"))}, at=T1)
    _remember(store, "confirmed", TOOL, T1 + timedelta(minutes=1))


def _remember(store: GraphStore, memory_id: str, about: str, at: datetime) -> None:
    record = MemoryRecord(memory_id, f"about {about}", Category.FACT, Scope.GLOBAL, None, at, at, at)
    store.add_memories([record])
    store.link_about([(memory_id, Entity(about, EntityKind.SYMBOL, about))])


def test_a_kuzu_store_of_schema_13_records_the_bodies_of_its_unflagged_links(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store = new_kuzu(tmp_path / "data", request, 8)
    _written(store, KuzuCodeGraph(store))
    store.db.run("MATCH (:Memory)-[a:ABOUT]->() SET a.body_hash = NULL")  # as schema 13 left them
    store.set_meta("schema_version", "13")
    store.close()

    store = KuzuGraphStore(tmp_path / "data", dimension=8)
    try:
        assert store.get_meta("schema_version") == "14"
        assert store.about_bodies(["fresh", "old", "confirmed"]) == EXPECTED
    finally:
        store.close()


def _bodies(url: str) -> dict[str, str | None]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT memory_id, body_hash FROM about ORDER BY memory_id").fetchall()
    return {str(m): h for m, h in rows}


def test_postgresql_schema_14_rolls_back_clearing_the_bodies_and_up_again_records_them(
    request: pytest.FixtureRequest,
) -> None:
    url = postgres_url(request)
    store = opened_postgres(url, request, 8)
    _written(store, PostgresCodeGraph(store))
    assert store.about_bodies(["fresh", "old", "confirmed"]) == {**EXPECTED, "old": {TOOL: "hash-Tool-"}}
    store.close()

    assert migrate(url, target=13).after == 13
    assert _bodies(url) == {"confirmed": None, "fresh": None, "old": None}
    assert migrate(url, target=14).after == 14
    assert _bodies(url) == {"confirmed": "hash-Tool-v2", "fresh": "hash-helper-", "old": None}
    assert migrate(url).after == SCHEMA_VERSION
    store = opened_postgres(url, request, 8)
    assert store.about_bodies(["fresh", "old", "confirmed"]) == EXPECTED
