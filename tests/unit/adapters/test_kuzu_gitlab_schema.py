"""Schema 4 and later: a store written by schema 3 is migrated in place and keeps its memories."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmem.adapters import kuzu_schema, kuzu_store
from graphmem.adapters.kuzu_gitlab import KuzuGitLabGraph
from graphmem.adapters.kuzu_store import KuzuGraphStore
from graphmem.core.enrichment import EnrichState
from graphmem.core.models import Entity, EntityKind
from graphmem.core.timeparse import utc_now


def test_a_schema_3_store_is_migrated_and_its_refs_wait_for_enrichment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as old:
        old.setattr(kuzu_schema, "SCHEMA_VERSION", 3)
        old.setattr(kuzu_store, "SCHEMA_VERSION", 3)
        old.setattr(kuzu_schema, "GITLAB_COLUMNS", {})
        old.setattr(kuzu_schema, "GITLAB_RELS", ())
        store = KuzuGraphStore(tmp_path, dimension=8)
        store.upsert_entities([Entity("MergeRequest:acme/shop/backend!12", EntityKind.MERGE_REQUEST, "!12")])
        assert store.get_meta("schema_version") == "3"
        store.close()
    store = KuzuGraphStore(tmp_path, dimension=8)
    try:
        assert store.get_meta("schema_version") == str(kuzu_schema.SCHEMA_VERSION) == "10"
        graph = KuzuGitLabGraph(store)
        due = graph.due(utc_now(), 10)
        assert [(row.key, row.state) for row in due] == [
            ("MergeRequest:acme/shop/backend!12", EnrichState.PENDING)
        ]
        assert graph.counts() == {"pending": 1}
    finally:
        store.close()
