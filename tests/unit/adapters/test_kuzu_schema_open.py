"""What a Kùzu store's open asks Kùzu (``kuzu_store._init_schema``, ``kuzu_connection``): of a
current store its schema version alone, nothing of its tables, indexes or pool; a store of a
newer version is still refused. (Kùzu's own loading of the schema is most of an open's cost; the
migrations of older stores are tested with their versions: test_kuzu_store.py and others.)"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import kuzu
import pytest
from support.stores import new_kuzu

from graphmem.adapters.kuzu_connection import SET_META
from graphmem.adapters.kuzu_schema import SCHEMA_VERSION
from graphmem.adapters.kuzu_store import KuzuGraphStore
from graphmem.errors import StoreMismatchError

DIM = 8
VERSION_READ = "MATCH (m:Meta {key: $k}) RETURN m.value"  # ``KuzuConnection.get_meta``
ABOUT_THE_SCHEMA = re.compile(
    r"show_tables|SHOW_INDEXES|table_info|\b(CREATE|ALTER|DROP|COPY)\b", re.IGNORECASE
)


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts of the statements every Kùzu connection runs or prepares from now on, in order."""
    sent: list[str] = []
    execute, prepare = kuzu.Connection.execute, kuzu.Connection.prepare

    def spy_execute(self: kuzu.Connection, query: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(query, str):  # else a prepared statement: its text was seen by ``prepare``
            sent.append(query)
        return execute(self, query, *args, **kwargs)

    def spy_prepare(self: kuzu.Connection, query: str, *args: Any, **kwargs: Any) -> Any:
        sent.append(query)
        return prepare(self, query, *args, **kwargs)

    monkeypatch.setattr(kuzu.Connection, "execute", spy_execute)
    monkeypatch.setattr(kuzu.Connection, "prepare", spy_prepare)
    return sent


def test_a_current_store_opens_with_its_schema_version_read_and_nothing_of_its_tables(
    tmp_path: Path, request: pytest.FixtureRequest, statements: list[str]
) -> None:
    new_kuzu(tmp_path / "data", request, DIM).close()
    statements.clear()

    store = KuzuGraphStore(tmp_path / "data", dimension=DIM)
    opened = list(statements)
    store.close()

    assert VERSION_READ in opened
    assert [statement for statement in opened if ABOUT_THE_SCHEMA.search(statement)] == []


def test_the_pool_is_first_asked_about_before_the_first_write_not_at_open(
    tmp_path: Path, request: pytest.FixtureRequest, statements: list[str]
) -> None:
    store = new_kuzu(tmp_path / "data", request, DIM)
    try:
        store.get_meta("missing")
        store.total_memories()
        assert [statement for statement in statements if "bm_info" in statement] == []

        store.set_meta("note", "one")
        store.set_meta("note", "two")

        pool = [i for i, statement in enumerate(statements) if "bm_info" in statement]
        assert len(pool) == 1 and statements[pool[0] + 1 :].count(SET_META) == 1  # once, before it
        assert store.get_meta("note") == "two"
    finally:
        store.close()


def test_a_store_of_a_newer_schema_is_refused(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    store = new_kuzu(tmp_path / "data", request, DIM)
    store.set_meta("schema_version", str(SCHEMA_VERSION + 1))
    store.close()

    with pytest.raises(StoreMismatchError, match=f"schema version {SCHEMA_VERSION + 1}.*Upgrade graphmem"):
        KuzuGraphStore(tmp_path / "data", dimension=DIM)
