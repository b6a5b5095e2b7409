"""Schema 4 and later: a store written by schema 3 is migrated in place and keeps its memories;
the long texts GitLab gives (schema 11) live apart from their nodes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from support.stores import new_kuzu

from graphmem.adapters import kuzu_connection, kuzu_schema, kuzu_store
from graphmem.adapters.kuzu_gitlab import KuzuGitLabGraph
from graphmem.adapters.kuzu_store import KuzuGraphStore
from graphmem.core.enrichment import EnrichState, target_key
from graphmem.core.gitlab import ChangedFile, MergeRequestData
from graphmem.core.gitlab_edits import GitLabAnswer, edit_for
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
        assert store.get_meta("schema_version") == str(kuzu_schema.SCHEMA_VERSION)
        graph = KuzuGitLabGraph(store)
        due = graph.due(utc_now(), 10)
        assert [(row.key, row.state) for row in due] == [
            ("MergeRequest:acme/shop/backend!12", EnrichState.PENDING)
        ]
        assert graph.counts() == {"pending": 1}
    finally:
        store.close()


T0 = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def merge_request(iid: int, description: str) -> MergeRequestData:
    return MergeRequestData(
        project="group/proj",
        iid=iid,
        title=f"Change {iid}",
        state="merged",
        draft=False,
        author=None,
        assignees=(),
        reviewers=(),
        labels=("payments",),
        milestone=None,
        source_branch=f"change-{iid}",
        target_branch="main",
        merged_at=T0,
        created_at=T0 - timedelta(days=1),
        updated_at=T0,
        description=description,
        web_url=f"https://gl/group/proj/-/merge_requests/{iid}",
        changed_files=tuple(ChangedFile(f"src/m{n}.py", f"src/m{n}.py", ranges=((1, 9),)) for n in range(20)),
        changed_files_total=20,
        closes=(),
    )


def save(graph: KuzuGitLabGraph, key: str, data: MergeRequestData) -> None:
    graph.apply(
        edit_for(
            GitLabAnswer(
                key, data, local=None, hops=0, fetched_at=T0, next_attempt=T0, file_keys=[], symbol_keys=[]
            )
        )
    )


def test_long_descriptions_saved_one_after_another_all_read_back(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    # Updated in place on their nodes (schema 10, f6f2ce7^), 6 KB descriptions of 3,000 MRs in
    # a row: 2,550 read back wrong in the usual 512 MB pool. A quarter of the pool, and of the
    # MRs: 635 of 1,000 wrong then. A sixteenth of the pool: 139 of the 150 MRs here read back
    # wrong (139 of 200 too; none of 135).
    monkeypatch.setattr(kuzu_store, "BUFFER_POOL_BYTES", 32 * 1024 * 1024)
    monkeypatch.setattr(kuzu_connection, "POOL_CHECKPOINT_BYTES", 8 * 1024 * 1024)
    store = new_kuzu(data, request, 8)
    try:
        graph = KuzuGitLabGraph(store)
        keys = [target_key(EntityKind.MERGE_REQUEST, "group/proj", iid) for iid in range(1, 151)]
        store.upsert_entities([Entity(key, EntityKind.MERGE_REQUEST, key.split(":")[1]) for key in keys])
        for iid, key in enumerate(keys, 1):
            save(graph, key, merge_request(iid, f"{iid} " + "d" * 6_000))

        for iid, key in enumerate(keys, 1):
            saved = graph.merge_request(key)
            assert saved is not None and saved.description == f"{iid} " + "d" * 6_000
        assert saved.changed_files == merge_request(1, "").changed_files
    finally:
        store.close()


def test_a_store_from_before_schema_11_has_its_descriptions_moved_out_of_their_nodes(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    data = tmp_path / "data"
    store = new_kuzu(data, request, 8)
    graph = KuzuGitLabGraph(store)
    key = target_key(EntityKind.MERGE_REQUEST, "group/proj", 12)
    store.upsert_entities([Entity(key, EntityKind.MERGE_REQUEST, "!12")])
    save(graph, key, merge_request(12, "Retries with backoff."))
    store.db.run("DROP TABLE GitLabText")  # as schema 10 had them: columns of the nodes
    for table, columns in kuzu_schema.GITLAB_TEXT_COLUMNS.items():
        for column in columns:
            store.db.run(f"ALTER TABLE {table} ADD {column} STRING")
    store.db.run(
        "MATCH (e:MergeRequest {key: $k}) SET e.description = $d, e.changed_files = $f",
        {"k": key, "d": "Retries with backoff.", "f": '[{"path": "src/app.py", "old_path": "src/app.py"}]'},
    )
    store.set_meta("schema_version", "10")
    store.close()

    store = KuzuGraphStore(data, dimension=8)
    try:
        saved = KuzuGitLabGraph(store).merge_request(key)
        assert saved is not None and saved.description == "Retries with backoff."
        assert [f.new_path for f in saved.changed_files] == ["src/app.py"]
        columns = {row[1] for row in store.db.rows("CALL table_info('MergeRequest') RETURN *")}
        assert not columns & {"description", "changed_files"} and "web_url" in columns
        assert store.get_meta("schema_version") == str(kuzu_schema.SCHEMA_VERSION)
    finally:
        store.close()
