"""``fake_memory`` and ``real_memory`` (tests/conftest.py) open their service on the files of the
process's empty Kùzu store (``KuzuTemplates.lay_out``, ``support/stores.py``): the service
``open_memory`` opens there must be the one it makes from nothing, and each test's own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support.stores import KuzuTemplates

from graphmem.adapters.embedders import HashEmbedder
from graphmem.adapters.kuzu_store import KuzuGraphStore
from graphmem.adapters.lexical_index import TOKEN_KEY
from graphmem.app import open_memory
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings

DIMENSION = 16


def opened(data_dir: Path) -> MemoryService:
    return open_memory(load_settings(data_dir=data_dir), embedder=HashEmbedder(DIMENSION))


def state(data_dir: Path) -> dict[str, Any]:
    """What the Kùzu store a closed service left in ``data_dir`` holds: its tables, meta rows
    (but the full-text index's token, random per store) and memories."""
    store = KuzuGraphStore(data_dir, dimension=DIMENSION)
    try:
        return {
            "tables": sorted(tuple(row[1:]) for row in store.db.rows("CALL show_tables() RETURN *")),
            "meta": sorted(
                tuple(row)
                for row in store.db.rows("MATCH (m:Meta) RETURN m.key, m.value")
                if row[0] != TOKEN_KEY
            ),
            "memories": store.total_memories(),
        }
    finally:
        store.close()


def files(data_dir: Path) -> list[str]:
    return sorted(str(path.relative_to(data_dir)) for path in data_dir.rglob("*"))


def test_a_service_on_a_laid_out_store_is_one_opened_on_nothing(
    kuzu_templates: KuzuTemplates, tmp_path: Path
) -> None:
    opened(tmp_path / "made").close()
    kuzu_templates.lay_out(tmp_path / "copied", DIMENSION)
    opened(tmp_path / "copied").close()

    assert files(tmp_path / "copied") == files(tmp_path / "made")
    assert state(tmp_path / "copied") == state(tmp_path / "made")
    assert dict(state(tmp_path / "copied")["meta"])["embedding_model"] == HashEmbedder(DIMENSION).model_name


def test_what_a_service_writes_on_its_copy_the_next_copy_does_not_hold(
    kuzu_templates: KuzuTemplates, tmp_path: Path
) -> None:
    kuzu_templates.lay_out(tmp_path / "first", DIMENSION)
    first = opened(tmp_path / "first")
    first.store.set_meta("written", "by the first service")
    first.close()
    kuzu_templates.lay_out(tmp_path / "second", DIMENSION)
    opened(tmp_path / "second").close()

    assert ("written", "by the first service") in state(tmp_path / "first")["meta"]
    assert state(tmp_path / "second")["meta"] == [
        row for row in state(tmp_path / "first")["meta"] if row[0] != "written"
    ]
