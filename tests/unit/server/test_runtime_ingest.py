"""The daemon's background ingest: runs on its own, reports in status(), never raises."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from support.opencode_db import T0_MS, OpenCodeDB
from support.stores import KuzuTemplates

from graphmem.adapters.embedders import HashEmbedder
from graphmem.app import open_memory
from graphmem.core.timeparse import utc_now
from graphmem.server.runtime import Runtime
from graphmem.service.coordination import Coordinator
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings

WAIT_S = 30.0  # generous bound for the ingest interval on a loaded machine; not a timing assert


@pytest.fixture
def memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kuzu_templates: KuzuTemplates
) -> Iterator[MemoryService]:
    monkeypatch.setenv("GRAPHMEM_INGEST__INTERVAL_SECONDS", "1")
    kuzu_templates.lay_out(tmp_path / "data", 64)  # an empty store's files, as open_memory makes them
    service = open_memory(load_settings(data_dir=tmp_path / "data"), embedder=HashEmbedder(64))
    yield service
    service.close()


def runtime(memory: MemoryService) -> Runtime:
    return Runtime(
        memory.serving(Coordinator(utc_now, timedelta(minutes=5))),
        log_hint="stderr",
        resolve_project=lambda p: p,
        version="test",
    )


def opencode_db(path: Path, project: str) -> Path:
    db = OpenCodeDB(path)
    sid = db.session(project, title="Background")
    db.turn(sid, "We decided to run the ingest in the background.", "ok", at_ms=T0_MS + 1)
    db.close()
    return path


def test_ingest_once_records_what_it_did(
    memory: MemoryService, tmp_path: Path, git_project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENCODE_DB", str(opencode_db(tmp_path / "oc.db", git_project)))
    state = runtime(memory)
    state.ingest_once()
    view = state.status()["ingest"]
    assert view["enabled"] is True and view["runs"] == 1 and view["last_error"] is None
    assert view["sessions_ingested"] == 1 and view["memories"].get("event") == 1
    assert view["last_run"] is not None


def test_a_database_the_user_named_and_is_missing_is_an_error_not_a_crash(
    memory: MemoryService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENCODE_DB", str(tmp_path / "absent.db"))
    state = runtime(memory)
    state.ingest_once()
    state.ingest_once()
    view = state.status()["ingest"]
    assert view["runs"] == 2 and "No OpenCode database" in view["last_error"]
    assert view["waiting"] is None


def test_no_database_where_opencode_keeps_it_is_waiting_not_an_error(
    memory: MemoryService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("OPENCODE_DB", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "no-opencode-here"))
    state = runtime(memory)
    with caplog.at_level("INFO", logger="graphmem"):
        state.ingest_once()
    view = state.status()["ingest"]
    assert view["last_error"] is None and "No OpenCode database" in view["waiting"]
    assert not [r for r in caplog.records if r.levelname == "WARNING"]


def test_the_worker_ingests_on_its_own(
    memory: MemoryService, tmp_path: Path, git_project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENCODE_DB", str(opencode_db(tmp_path / "oc.db", git_project)))
    # The interval the settings gave (1 s, their least), then a twentieth of it: every run after
    # the first finds nothing new.
    assert memory.ingest_options.interval_seconds == 1
    often = replace(memory.ingest_options, interval_seconds=0.05)
    monkeypatch.setattr(MemoryService, "ingest_options", property(lambda self: often))
    state = runtime(memory)
    state.start_worker()
    try:
        deadline = time.monotonic() + WAIT_S
        while state.ingest.sessions_ingested == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        state.stop_worker()
    assert state.ingest.sessions_ingested == 1
    assert [m.session for m in memory.store.all_memories() if m.source == "opencode"]
