"""A team's memory on PostgreSQL (docs/team.md) through the whole service: remember and recall
on the store, several processes writing and recalling at once, and export from the embedded
Kùzu store imported into PostgreSQL (and back) losing nothing."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.postgres import PostgresServer
from support.stores import postgres_url

from graphmem.adapters.embedders import HashEmbedder
from graphmem.adapters.postgres_embeddings import BULK_ROWS_MIN
from graphmem.adapters.postgres_vector_parts import ALL_INDEXED
from graphmem.app import open_memory
from graphmem.bench.synthetic import synthetic_memories
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings

pytestmark = pytest.mark.integration

DIMENSION = 256
PROJECT = "/src/shop"
REPO = Path(__file__).resolve().parents[2]


def on_postgres(url: str, data_dir: Path) -> MemoryService:
    settings = load_settings(data_dir=data_dir, store={"url": url})
    return open_memory(settings, embedder=HashEmbedder(DIMENSION))


def on_kuzu(data_dir: Path) -> MemoryService:
    return open_memory(load_settings(data_dir=data_dir), embedder=HashEmbedder(DIMENSION))


@pytest.fixture
def team(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryService]:
    memory = on_postgres(postgres_url(request), tmp_path / "team-data")
    yield memory
    memory.close()


def exported(memory: MemoryService) -> list[dict[str, object]]:
    """Every line of a full export but the header (its time differs), in file order, each
    memory as what it holds: who wrote it and how far it is trusted are each store's own (an
    import never takes them from the file, and a directive or preference comes in proposed)."""
    out = io.StringIO()
    memory.export(out, project=None)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    return [_held(line) for line in lines if line["type"] != "header"]


def imported(lines: list[dict[str, object]], name: str = "The export") -> list[dict[str, object]]:
    """``lines`` as an import of ``name`` stores them: each event made by the import, who the file
    says made it kept in words in its reason, unless an import made it already
    (``service/transfer.py``, ``_imported``)."""
    out = []
    for line in lines:
        if line["type"] == "event":
            actor, rule, reason = str(line["actor"]), line.get("rule"), line.get("reason")
            if rule or not actor.startswith("import:"):
                who = f"rule {rule}" if rule else actor
                reason = f"by {who}, as the file says" + (f": {reason}" if reason else "")
            line = {**line, "actor": f"import:{name}", "rule": None, "reason": reason}
        out.append(line)
    return out


def _held(line: dict[str, object]) -> dict[str, object]:
    if line["type"] != "memory":
        return line
    held = {k: v for k, v in line.items() if k not in ("source", "provenance", "reinforced", "trust")}
    return {**held, "status": "active" if held["status"] == "proposed" else held["status"]}


def fill(memory: MemoryService) -> None:
    """Memories of every kind, entities, links, a supersession, an edit, an archive, a session."""
    first = memory.remember(
        "Payments retry 3 times with exponential backoff, see !123 and src/payments/retry.py",
        category="decision",
        scope="project",
        project=PROJECT,
        session="ses_1",
    ).memory
    memory.remember(
        "Payments retry 5 times with exponential backoff, see !123",
        category="decision",
        scope="project",
        project=PROJECT,
        session="ses_1",
        supersedes=first.id,
    )
    tool = memory.remember("Prefer tenacity over hand-written retry loops", category="preference").memory
    note = memory.remember("The staging database is rebuilt every night", project=PROJECT).memory
    memory.link(note.id, tool.id, "related")
    memory.edit(note.id, text="The staging database is rebuilt every night at 02:00")
    old = memory.remember("Deploys freeze on Fridays", category="directive").memory
    memory.archive(old.id)


def test_remember_and_recall_on_postgresql_find_by_words_and_meaning(team: MemoryService) -> None:
    fill(team)
    result = team.recall("how often do payments retry", project=PROJECT)
    assert result.hits[0].memory.text.startswith("Payments retry 5 times")
    assert {"lexical", "semantic"} <= {c.channel for c in result.hits[0].channels}
    history = team.history(result.hits[0].memory.id)
    assert history  # the supersession is in the history


def test_export_from_kuzu_imports_into_postgresql_and_back_losslessly(
    team: MemoryService, tmp_path: Path
) -> None:
    kuzu = on_kuzu(tmp_path / "kuzu-data")
    try:
        fill(kuzu)
        before = exported(kuzu)
        out = io.StringIO()
        kuzu.export(out, project=None)
    finally:
        kuzu.close()

    summary = team.import_text(out.getvalue())
    assert summary.memories_added == sum(1 for line in before if line["type"] == "memory")
    on_team = exported(team)
    # Who wrote each event into the team's store is the database's: the role that imported it;
    # who made it is the import's, the file's word for it kept in its reason.
    assert {line.pop("person") for line in on_team if line["type"] == "event"} == {"postgres"}
    before = imported(before)
    assert on_team == [{k: v for k, v in line.items() if k != "person"} for line in before]

    back = io.StringIO()
    team.export(back, project=None)
    again = on_kuzu(tmp_path / "kuzu-again")
    try:
        again.import_text(back.getvalue())
        assert exported(again) == before
    finally:
        again.close()


def test_a_large_import_into_a_new_team_store_builds_its_vector_index_at_the_end(
    team: MemoryService, caplog: pytest.LogCaptureFixture
) -> None:
    records = synthetic_memories(BULK_ROWS_MIN)
    with caplog.at_level(logging.INFO, logger="graphmem.adapters.postgres_embeddings"):
        summary = team.import_text("".join(json.dumps(record) + "\n" for record in records))
    assert summary.memories_added == BULK_ROWS_MIN
    assert "the vector index is built again after" in caplog.text
    store = team.store
    indexed = store.db.rows(f"SELECT {ALL_INDEXED}")  # type: ignore[attr-defined]
    assert indexed == [(True,)]
    result = team.recall(records[7]["text"], project=None, plan="semantic")
    assert result.hits[0].memory.id == records[7]["id"]


WRITERS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet")


def test_ten_processes_writing_and_recalling_at_once_lose_nothing(
    postgres_server: PostgresServer, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Ten daemons of a team (each its own process and pool) remember and recall at once: each
    finds every memory it wrote right after writing it, and none is lost."""
    url = postgres_url(request)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")])}
    count = 8
    writers = [
        subprocess.Popen(
            [sys.executable, "-m", "support.team_writer", url, prefix, str(count)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for prefix in WRITERS
    ]
    outputs = [writer.communicate(timeout=600) for writer in writers]
    assert [writer.returncode for writer in writers] == [0] * len(WRITERS), [
        err[-2000:] for _, err in outputs
    ]
    assert [int(out.strip()) for out, _ in outputs] == [count] * len(WRITERS)  # each found every own memory

    team = on_postgres(url, tmp_path / "reader")
    try:
        assert team.stats().total == len(WRITERS) * count
        texts = " ".join(record.text for record in team.list(limit=100, project=None))
        assert all(f"rule number {i} for the {p} service" in texts for p in WRITERS for i in range(count))
    finally:
        team.close()


def test_bootstrap_keeps_the_code_graph_in_postgresql_for_every_daemon(
    request: pytest.FixtureRequest, tmp_path: Path, git_project: str
) -> None:
    url = postgres_url(request)
    one = on_postgres(url, tmp_path / "one")
    try:
        report = one.bootstrap(git_project, history=0)
        assert (report.files, report.symbols) == (1, 1)
        note = one.remember("main() prints the greeting; see src/app.py", project=git_project).memory
    finally:
        one.close()
    other = on_postgres(url, tmp_path / "other")  # another developer's daemon
    try:
        assert other.bootstrap(git_project, history=0).unchanged == 1  # nothing parsed again
        bundle = other.get_context("src/app.py", project=git_project)
        assert bundle.found and bundle.code  # the file and its symbols, from the shared graph
        assert note.id in {item.hit.memory.id for items in bundle.groups.values() for item in items}
    finally:
        other.close()
