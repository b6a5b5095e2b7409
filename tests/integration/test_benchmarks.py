"""The benchmark commands run end to end and report every figure (values are not asserted)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import psycopg
import pytest
from support.postgres import PostgresServer

from graphmem.adapters import vector_index
from graphmem.adapters.embedders import HashEmbedder, OnnxEmbedder
from graphmem.adapters.postgres_migrate import migrate
from graphmem.adapters.postgres_vector_parts import PART_OF_NAMES
from graphmem.app import serve_memory
from graphmem.bench import clients, locomo, scale, scale_report
from graphmem.errors import InvalidInputError
from graphmem.settings import load_settings

# The memories of `bench scale` with the real model: enough for every figure, few to embed.
SMALL_STORE = 64
# A `bench scale` run on PostgreSQL: its database and its report.
Scaled = tuple[str, dict[str, Any]]


def _qa(question: str, answer: str, evidence: list[str], category: int) -> dict[str, object]:
    return {"question": question, "answer": answer, "evidence": evidence, "category": category}


def _locomo_file(tmp_path: Path) -> Path:
    """A two-session conversation in LoCoMo's shape, written for this test."""
    conversation = {
        "sample_id": "conv-test",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a grey cat named Pixel last week."},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "Lovely! Does Pixel like the new flat?"},
                {"speaker": "Ana", "dia_id": "D1:3", "text": "She sleeps on the radiator all day."},
            ],
            "session_2_date_time": "10:00 am on 20 May, 2023",
            "session_2": [
                {"speaker": "Ben", "dia_id": "D2:1", "text": "I started rock climbing at the gym downtown."},
                {"speaker": "Ana", "dia_id": "D2:2", "text": "Climbing sounds scary, is it?"},
            ],
        },
        "qa": [
            _qa("What is the name of Ana's cat?", "Pixel", ["D1:1"], 4),
            _qa("Which sport did Ben start?", "climbing", ["D2:1"], 4),
            _qa("What did Ana say about the moon?", "nothing", [], 5),
        ],
    }
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([conversation]), "utf-8")
    return path


def test_locomo_reports_recall_per_category_for_each_plan(tmp_path: Path) -> None:
    reports = locomo.run(_locomo_file(tmp_path), HashEmbedder(256), plans=("hybrid", "lexical"))

    assert [r["plan"] for r in reports] == ["hybrid", "lexical"]
    for report in reports:
        overall = report["categories_1_4"]
        assert overall["questions"] == 2
        assert {"R@5", "R@10", "All@10", "NDCG@10"} <= overall.keys()
        assert report["query_ms"]["p50"] is not None
    assert "1-4 (all)" in locomo.format_report(reports[0])


def test_locomo_finds_the_evidence_of_a_plain_question(tmp_path: Path) -> None:
    [report] = locomo.run(_locomo_file(tmp_path), HashEmbedder(256), plans=("lexical",))

    assert report["categories_1_4"]["R@10"] == 1.0


def test_locomo_on_postgresql_finds_the_evidence_there_and_leaves_no_table_behind(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    url = postgres_server.new_database()
    [report] = locomo.run(_locomo_file(tmp_path), HashEmbedder(256), plans=("lexical",), store_url=url)

    assert report["categories_1_4"]["R@10"] == 1.0
    with psycopg.connect(url) as conn:
        left = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()
    assert left == [("graphmem_migrations",)]
    migrate(url)
    with pytest.raises(InvalidInputError, match="empty database"):
        locomo.run(_locomo_file(tmp_path), HashEmbedder(256), plans=("lexical",), store_url=url)


@pytest.mark.integration
def test_scale_reports_every_figure(real_embedder: OnnxEmbedder) -> None:
    # Every figure is there whatever the store's size; the model's throughput is measured on as
    # many texts as there are memories, three times before the import and three after: at 200
    # memories about 1,500 embeddings, half the test's CPU.
    report = scale.run(SMALL_STORE, real_embedder, queries=10, cold_runs=1, writes=5)

    assert report["memories"] == SMALL_STORE
    assert report["daemon_writes"]["count"] == 5
    assert report["daemon_writes"]["remember_ms"]["p50"] > 0
    assert report["daemon_writes"]["embed_ms"]["p50"] > 0
    for figure in (
        report["remember_ms"]["p50"],
        report["import"]["share_of_model"],
        report["recall_ms"]["p95"],
        report["first_recall_cold_s"],
        report["rss_mb"]["serving_process"],
        report["rss_mb"]["cold_recall_peak"],
        report["store_mb"],
    ):
        assert figure > 0
    assert report["stored_vectors"] == "model"
    assert "first recall from a cold process" in scale_report.format_report(report)
    assert "daemon writes 5: remember p50" in scale_report.format_report(report)
    assert "text_search" not in report  # the embedded store has one search


@pytest.mark.integration
def test_scale_with_hash_vectors_builds_the_store_without_the_model(
    real_embedder: OnnxEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_index, "HNSW_FROM_ROWS", 100)  # the graph is built and searched
    report = scale.run(300, real_embedder, queries=10, cold_runs=1, hash_vectors=True)

    assert report["stored_vectors"] == "hash"
    assert report["import"]["share_of_model"] is None
    assert report["recall_ms"]["p50"] > 0
    assert "vectors from the hash embedder" in scale_report.format_report(report)


@pytest.fixture(scope="module")
def postgres_scale(real_embedder: OnnxEmbedder, postgres_server: PostgresServer) -> Scaled:
    """One `bench scale` on a PostgreSQL database with hash vectors and the options each test
    below reads the figures of (the daemon's writes, two projects and a small one beside the
    first): its database and report. The same path run once, not once a test (a run is about
    6.5 s of CPU: its import, 200 remembers, a cold recall process and a serving one)."""
    url = postgres_server.new_database()
    report = scale.run(
        300,
        real_embedder,
        queries=10,
        cold_runs=1,
        writes=3,
        hash_vectors=True,
        store_url=url,
        projects=2,
        small_project=40,
    )
    return url, report


@pytest.mark.integration
def test_scale_on_postgresql_builds_the_store_there_and_leaves_no_table_behind(
    real_embedder: OnnxEmbedder, postgres_scale: Scaled
) -> None:
    url, report = postgres_scale

    assert report["store"] == "postgresql"
    assert report["recall_ms"]["p50"] > 0 and report["first_recall_cold_s"] > 0
    assert report["store_mb"] > 0
    assert "on PostgreSQL" in scale_report.format_report(report)
    with psycopg.connect(url) as conn:
        left = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()
    assert left == [("graphmem_migrations",)]
    with pytest.raises(InvalidInputError, match="empty database"):
        migrate(url)
        scale.run(200, real_embedder, queries=10, cold_runs=1, hash_vectors=True, store_url=url)


@pytest.mark.integration
def test_scale_on_postgresql_times_the_daemons_full_text_index_and_says_so(
    postgres_scale: Scaled,
) -> None:
    # A one-shot CLI's open searches the database; the daemon's keeps an index beside it
    # (adapters/postgres_lexical.py): the measure phase opens the store as the daemon does, waits
    # for the index, and names the search that answered its timed calls.
    _, report = postgres_scale

    assert report["text_search"]["answering"] == "index"
    assert report["text_search"]["current_s"] > 0
    assert "full text     answered by the daemon's index (current " in scale_report.format_report(report)


@pytest.mark.integration
def test_scale_on_postgresql_puts_the_small_project_in_the_first_projects_part_of_the_vector_index(
    postgres_scale: Scaled,
) -> None:
    # The search a team's store must get right: a project that is a small share of its part
    # (postgres_embeddings.READ_WHOLE_MAX); its 40 memories are fewer than the recall's depth,
    # so the exact top k is all of them.
    url, report = postgres_scale

    small = report["small_project"]
    with psycopg.connect(url) as conn:  # which part a name hashes to: a function of the server's
        parts = dict(conn.execute(PART_OF_NAMES, ([small["beside"], small["project"]],)).fetchall())
    assert small["beside"] == report["recall_project"]
    assert parts[small["project"]] == parts[small["beside"]]
    assert small["vector_search"] == {"k": 40, "searches": 10, "share_of_exact": 1.0, "short": 0}
    assert small["recall_ms"]["p50"] > 0


def test_scale_refusing_a_database_leaves_no_temporary_directory_behind(
    postgres_server: PostgresServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = postgres_server.new_database()
    migrate(url)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    with pytest.raises(InvalidInputError, match="empty database"):
        scale.run(200, HashEmbedder(256), store_url=url)

    assert not list(tmp_path.glob("graphmem-scale-*"))


@pytest.mark.integration
def test_concurrent_clients_on_postgresql_are_processes_whose_every_write_is_kept(
    real_embedder: OnnxEmbedder, postgres_server: PostgresServer, tmp_path: Path
) -> None:
    url = postgres_server.new_database()
    saved = _store_with_its_index_closed(url, tmp_path / "data", real_embedder)

    [report] = clients.run([2], tmp_path / "data", store_url=url, seconds=1)

    assert (report["clients"], report["mode"], report["errors"]) == (2, "processes", 0)
    assert report["recall_ms"]["calls"] > 0 and report["remember_ms"]["calls"] > 0
    # Each client's daemon was given a copy of the index, waited for it, and every timed call of
    # it was answered by it (else the run fails); the copied index is left as it was.
    assert report["text_search"]["index_copy_mb"] is not None  # under 0.1 MB here
    assert [client["answering"] for client in report["text_search"]["clients"]] == ["index", "index"]
    assert saved and sorted((tmp_path / "data" / "team-text").rglob("feed-position.json")) == saved
    with psycopg.connect(url) as conn:
        writers = conn.execute(
            "SELECT DISTINCT split_part(text, ' note ', 1) FROM memories "
            "WHERE text LIKE 'Client %' ORDER BY 1"
        ).fetchall()
        waiting = conn.execute(
            "SELECT count(*) FROM memories WHERE text LIKE 'Client %' AND embedding IS NULL"
        ).fetchone()
    assert writers == [("Client 0",), ("Client 1",)]
    assert waiting == (0,)  # each client is a daemon: a remember stores its vector before it answers


@pytest.mark.integration
def test_http_clients_on_postgresql_share_one_daemon_whose_own_index_answers(
    real_embedder: OnnxEmbedder, postgres_server: PostgresServer, tmp_path: Path
) -> None:
    url = postgres_server.new_database()
    saved = _store_with_its_index_closed(url, tmp_path / "data", real_embedder)

    [report] = clients.run([], tmp_path / "data", store_url=url, seconds=1, http_counts=[2])

    assert (report["clients"], report["mode"], report["errors"]) == (2, "http", 0)
    assert report["recall_ms"]["calls"] > 0 and report["remember_ms"]["calls"] > 0
    # The one daemon was given a copy of the index, was ready once it answered, and it still did
    # at the end (else the run fails); the copied index is left as it was.
    assert report["text_search"]["index_copy_mb"] is not None
    assert report["text_search"]["daemon"]["answering"] == "index"
    assert saved and sorted((tmp_path / "data" / "team-text").rglob("feed-position.json")) == saved
    with psycopg.connect(url) as conn:
        writers = conn.execute(
            "SELECT split_part(text, ' note ', 1), count(*) FROM memories "
            "WHERE text LIKE 'Client %' GROUP BY 1 ORDER BY 1"
        ).fetchall()
    assert [writer for writer, _ in writers] == ["Client 0", "Client 1"]
    assert (
        0 < sum(count for _, count in writers) <= report["remember_ms"]["calls"]
    )  # a near-duplicate reinforces


def _store_with_its_index_closed(url: str, data_dir: Path, embedder: OnnxEmbedder) -> list[Path]:
    """A team's store at ``url`` and its full-text index beside a daemon in ``data_dir``, built and
    closed as the measure phase leaves them; the index's saved positions."""
    migrate(url)
    settings = load_settings(data_dir=data_dir, store={"url": url})
    memory = serve_memory(settings, embedder=embedder)
    memory.remember("The payments service retries with exponential backoff", category="fact")
    lexical = getattr(memory.store, "lexical", None)
    assert lexical is not None
    lexical.settle()
    memory.close()
    return sorted((data_dir / "team-text").rglob("feed-position.json"))
