"""The tests' new Kùzu stores are copies of one made once (``support/stores.py``,
``KuzuTemplates``): a copy must be what a store made from nothing is, wherever it is copied to,
and the test's own.

What a copy shares with the other copies is the full-text index's token (``lexical_index.py``,
random per store): it names the store the index was built for, and each copy's index is its
own store's, as a new store's is."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from support.records import memory
from support.stores import KuzuTemplates

from graphmem.adapters.kuzu_store import KuzuGraphStore
from graphmem.adapters.lexical_index import DIRNAME, META, TOKEN_KEY
from graphmem.core.models import Status
from graphmem.core.ports import Visibility

DIM = 8
EVERYONE = Visibility(None, frozenset(Status))


def catalog(store: KuzuGraphStore) -> dict[str, Any]:
    """What Kùzu says the store holds: its tables with their columns, its indexes, its meta rows
    (but the full-text index's token) and its number of memories."""
    tables = sorted(tuple(row[1:]) for row in store.db.rows("CALL show_tables() RETURN *"))
    return {
        "tables": tables,
        "columns": {name: store.db.rows(f"CALL table_info('{name}') RETURN *") for name, *_ in tables},
        "indexes": sorted(map(tuple, store.db.rows("CALL SHOW_INDEXES() RETURN *"))),
        "meta": sorted(
            tuple(row) for row in store.db.rows("MATCH (m:Meta) RETURN m.key, m.value") if row[0] != TOKEN_KEY
        ),
        "memories": store.total_memories(),
    }


def files(data_dir: Path) -> list[str]:
    return sorted(str(path.relative_to(data_dir)) for path in data_dir.rglob("*"))


@pytest.fixture
def templates(tmp_path: Path) -> KuzuTemplates:
    return KuzuTemplates(tmp_path / "templates")


def test_a_copy_is_what_a_store_made_from_nothing_is(templates: KuzuTemplates, tmp_path: Path) -> None:
    made = KuzuGraphStore(tmp_path / "made", dimension=DIM)
    copied = templates.new_store(tmp_path / "copied", DIM)
    try:
        assert catalog(copied) == catalog(made)
        assert copied.dimension == made.dimension == DIM
        for store in (made, copied):  # the full-text index is the store's own (not built again)
            built_for = json.loads((store.data_dir / DIRNAME / META).read_text("utf-8"))["token"]
            assert built_for == store.get_meta(TOKEN_KEY)
    finally:
        made.close()
        copied.close()
    assert files(tmp_path / "copied") == files(tmp_path / "made")


def test_a_copy_opens_wherever_it_is_and_keeps_what_it_is_given_with_the_template_gone(
    templates: KuzuTemplates, tmp_path: Path
) -> None:
    store = templates.new_store(tmp_path / "first", DIM)
    store.close()
    shutil.rmtree(tmp_path / "templates")
    (tmp_path / "first").rename(tmp_path / "moved")

    store = KuzuGraphStore(tmp_path / "moved", dimension=DIM)
    store.add_memories([memory("m1", "kept where the copy went")])
    store.close()
    store = KuzuGraphStore(tmp_path / "moved", dimension=DIM)
    try:
        assert store.get_memories(["m1"])["m1"].text == "kept where the copy went"
        assert [memory_id for memory_id, _ in store.search_text("copy", EVERYONE, 5)] == ["m1"]
    finally:
        store.close()


def test_what_a_test_writes_in_its_copy_no_later_copy_holds(templates: KuzuTemplates, tmp_path: Path) -> None:
    first = templates.new_store(tmp_path / "first", DIM)
    empty = catalog(first)
    first.add_memories([memory("m1", "only the first copy's")])
    first.set_meta("embedding_model", "the first copy's")
    second = templates.new_store(tmp_path / "second", DIM)  # while the first is open
    try:
        assert catalog(second) == empty
        assert [memory_id for memory_id, _ in second.search_text("first", EVERYONE, 5)] == []
    finally:
        first.close()
        second.close()
    third = templates.new_store(tmp_path / "third", DIM)  # after the first was closed
    try:
        assert catalog(third) == empty
    finally:
        third.close()
