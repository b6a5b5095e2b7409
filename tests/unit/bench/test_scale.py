"""The scale benchmark's export files: whole lines, under the import's size limit."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from support.stores import postgres_url

from graphmem.adapters import postgres_embeddings
from graphmem.adapters.embedders import HashEmbedder
from graphmem.adapters.postgres_embeddings import PostgresEmbeddings
from graphmem.adapters.postgres_vector_parts import ALL_INDEXED
from graphmem.app import open_memory
from graphmem.bench import scale, scale_children, scale_report
from graphmem.bench.scale import _write_exports
from graphmem.bench.synthetic import synthetic_memories, synthetic_queries
from graphmem.service import file_access
from graphmem.settings import load_settings


def test_a_large_store_is_written_as_several_files_each_under_the_import_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(file_access, "MAX_IMPORT_BYTES", 8_000)
    records = synthetic_memories(300)

    exports = _write_exports(records, tmp_path)

    assert len(exports) > 1
    assert all(path.stat().st_size <= 4_000 for path in exports)
    lines = [line for path in exports for line in path.read_text("utf-8").splitlines()]
    assert [json.loads(line) for line in lines] == records  # each once, in order, whole


def test_a_small_store_is_one_file(tmp_path: Path) -> None:
    exports = _write_exports(synthetic_memories(100), tmp_path)

    assert [path.name for path in exports] == ["memories-1.jsonl"]


def test_a_failed_run_leaves_no_temporary_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    def fail(*args: object) -> dict[str, object]:
        raise RuntimeError("the machine ran out of disk")

    monkeypatch.setattr(scale, "_measure", fail)

    with pytest.raises(RuntimeError, match="out of disk"):
        scale.run(100, HashEmbedder(384))

    assert list(tmp_path.iterdir()) == []


def test_a_store_loaded_from_several_files_builds_its_vector_index_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    # Each file alone would put the index off and build it again at its end (a new store holds
    # fewer than REBUILD_RATIO times its rows): at a million, five builds.
    monkeypatch.setattr(file_access, "MAX_IMPORT_BYTES", 24_000)
    monkeypatch.setattr(postgres_embeddings, "BULK_ROWS_MIN", 10)
    url = postgres_url(request, 8)  # a new store, its (empty) index built
    builds: list[int] = []
    build = PostgresEmbeddings._create_vector_index

    def counted(self: PostgresEmbeddings) -> None:
        builds.append(1)
        build(self)

    monkeypatch.setattr(PostgresEmbeddings, "_create_vector_index", counted)
    exports = _write_exports(synthetic_memories(120), tmp_path)
    settings = load_settings(data_dir=tmp_path / "data", store={"url": url})
    memory = open_memory(settings, embedder=HashEmbedder(8))
    try:
        scale._load(memory, exports, 120)
        held = memory.store.db.rows("SELECT count(embedding) FROM memories")[0][0]
        indexed = memory.store.db.rows(f"SELECT {ALL_INDEXED}")[0][0]
    finally:
        memory.close()

    assert len(exports) > 2
    assert (held, indexed, len(builds)) == (120, True, 1)


class _Lexical:
    """What the benchmark reads of a team's store's full-text index (``PostgresLexical``)."""

    def __init__(self, answering: str) -> None:
        self.answering = answering
        self.settled = False

    def settle(self) -> None:
        self.settled = True


def _service(store: object) -> Any:
    return SimpleNamespace(store=store)


def test_the_timings_wait_for_the_index_and_fail_once_the_database_answers_instead() -> None:
    lexical = _Lexical("index")
    text_search = scale.TextSearch(_service(SimpleNamespace(lexical=lexical)))

    text_search.wait_current(time.perf_counter(), lambda message: None)
    text_search.answered()
    assert lexical.settled
    assert text_search.report is not None and text_search.report["answering"] == "index"

    lexical.answering = "database"  # a catch-up too large to apply in a search, say
    with pytest.raises(RuntimeError, match="did not answer a timed call"):
        text_search.answered()


def test_an_index_not_current_once_built_fails_the_benchmark_before_any_timing() -> None:
    text_search = scale.TextSearch(_service(SimpleNamespace(lexical=_Lexical("database"))))

    with pytest.raises(RuntimeError, match="did not answer a timed call"):
        text_search.wait_current(time.perf_counter(), lambda message: None)


def test_the_embedded_store_has_one_search_and_reports_none() -> None:
    text_search = scale.TextSearch(_service(SimpleNamespace()))

    text_search.wait_current(time.perf_counter(), lambda message: None)
    text_search.answered()
    assert text_search.report is None
    assert scale_report._text_search_lines(None) == []


def test_the_report_names_the_search_that_answered_and_when_it_was_current() -> None:
    assert scale_report._text_search_lines({"answering": "index", "current_s": 38.25}) == [
        "full text     answered by the daemon's index (current 38.25 s after the store opened)"
    ]


# In a process of its own: a test worker's memory (what earlier tests left its allocator, and
# the peak they reached) is no part of what this checks.
PHASES = """
import json
from graphmem.bench import scale
peaks = scale._Peaks()
held = b"\\x01" * (200 * 1024 * 1024)  # written: 200 MB resident during the first phase only
del held
peaks.end("first")
peaks.end("second")
print(json.dumps(peaks.mb))
"""


def test_each_phases_peak_is_its_own() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PHASES], capture_output=True, text=True, check=True, timeout=120
    )
    mb = json.loads(done.stdout)

    first, second = mb["first"], mb["second"]
    if first is None or second is None:
        pytest.skip("no /proc/self/status here")
    assert first - second > 150


def test_the_report_names_each_phases_peak() -> None:
    lines = scale_report._peak_lines({"import": 1200.5, "index": 2500.0, "measure": 900.0})

    assert lines == [
        "peak RSS      1,200.5 MB importing, 2,500.0 MB loading and building the vector index, "
        "900.0 MB measuring (this process)"
    ]
    assert scale_report._peak_lines({"import": None, "index": None, "measure": None}) == []


def test_the_backlogs_cold_recalls_run_while_its_memories_wait_for_vectors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graphmem.adapters.kuzu_store import KuzuGraphStore

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    waiting: list[int] = []

    def child(
        script: str, *args: str, store_url: str | None = None, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        if script == scale_children.COLD_RECALL_SCRIPT:  # a new process would open the store now
            store = KuzuGraphStore(Path(args[1]), dimension=384)  # after --data-dir
            waiting.append(store.count_pending_embeddings())
            store.close()
        stderr = "graphmem-bench peak-rss-kb 1024\ngraphmem-bench rss-kb 1024\n"
        return subprocess.CompletedProcess([], 0, "", stderr)

    monkeypatch.setattr(scale_children, "_child", child)
    # No list of texts longer than the backlog: the 200 remembers the benchmark times before it
    # are no part of this; 30 are embedded as the 200 are (none waiting at the first recalls).
    monkeypatch.setattr(scale, "synthetic_queries", lambda n, seed=11: synthetic_queries(min(n, 30), seed))

    report = scale.run(100, HashEmbedder(384), queries=10, cold_runs=2, backlog=30)

    assert waiting == [0, 0, 30, 30]  # the cold recalls, then those beside the backlog
    assert report["backlog"]["memories"] == 30 and len(report["backlog"]["runs_s"]) == 2
    assert scale_report._backlog_lines(report["backlog"])[0].startswith(
        "with 30 memories waiting for vectors: "
    )
    assert scale_report._backlog_lines(None) == []
