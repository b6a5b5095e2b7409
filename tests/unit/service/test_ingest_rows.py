"""Sessions whose row the store cannot keep (an over-long id, a NUL, no absolute directory): each is
skipped and counted, and the run goes on -- later sessions are learned and the cursor moves past it
(``service/ingest_rows.py``). Real SQLite OpenCode databases, the in-memory store."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from support.opencode_db import T0_MS, OpenCodeDB, text, tool
from support.stores import KuzuTemplates

from graphmem.adapters.embedders import HashEmbedder
from graphmem.adapters.git import GitToplevel
from graphmem.adapters.opencode_sessions import OpenCodeSessions, OpenCodeSessionStore
from graphmem.app import open_memory
from graphmem.core.sessions import SessionRead, SessionRow
from graphmem.core.text import MAX_TEXT_CHARS
from graphmem.core.timeparse import utc_now
from graphmem.server.runtime import Runtime
from graphmem.service.coordination import Coordinator
from graphmem.service.ingest import CURSOR_KEY, Ingester, IngestOptions
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings

LATER = datetime.fromtimestamp(T0_MS / 1000, tz=UTC) + timedelta(days=1)
LONG_ID = "ses_" + "x" * 5000
BAD_IDS = {
    "an id of 5,004 characters": LONG_ID,
    "an id of 604 characters (over what a summary's origin keeps)": "ses_" + "y" * 600,
    "an id with a NUL": "ses_a\x00b",
    "a blank id": "   ",
}
BAD_DIRECTORIES = {
    "no directory": "",
    "a relative directory": "relative/../path",
    "a directory with a NUL": "/tmp/a\x00b",
    "a directory of 6,001 characters": "/" + "d/" * 3000,
    "a directory whose part is over 255 bytes": "/" + "d" * 300,
}
SHOWN_LINE_CHARS = 300  # a report's line about a refused session: never the hostile value whole


@pytest.fixture
def oc(tmp_path: Path) -> Iterator[OpenCodeDB]:
    db = OpenCodeDB(tmp_path / "opencode" / "opencode.db")
    yield db
    db.close()


def ingester(memory: MemoryService) -> Ingester:
    return Ingester(
        memory.writer,
        memory.parts.rememberer,
        options=IngestOptions(),
        clock=lambda: LATER,
        sessions=OpenCodeSessions(),
        roots=GitToplevel(),
    )


def texts(memory: MemoryService) -> list[str]:
    return sorted(m.text for m in memory.store.all_memories())


def bad_session(oc: OpenCodeDB, directory: str, *, session_id: str | None = None, at_ms: int = T0_MS) -> str:
    sid = oc.session(directory, session_id=session_id, at_ms=at_ms)
    oc.turn(sid, "We decided to use Consul for config.", "ok", at_ms=at_ms + 1)
    return sid


def good_session(oc: OpenCodeDB, project: str, at_ms: int = T0_MS + 100) -> str:
    sid = oc.session(project, title="Secrets", at_ms=at_ms)
    oc.turn(sid, "We decided to use Vault for secrets.", "ok", at_ms=at_ms + 1)
    return sid


@pytest.mark.parametrize("session_id", list(BAD_IDS.values()), ids=list(BAD_IDS))
def test_a_session_whose_id_the_store_cannot_keep_is_skipped_and_the_next_one_learned(
    memory_service: MemoryService, oc: OpenCodeDB, git_project: str, session_id: str
) -> None:
    bad_session(oc, git_project, session_id=session_id)
    good = good_session(oc, git_project)

    report = ingester(memory_service).run(db_path=str(oc.path))

    assert report.sessions_skipped == 1 and report.sessions_ingested == 1
    (line,) = report.errors
    assert "skipped" in line and len(line) < SHOWN_LINE_CHARS
    assert "We decided to use Vault for secrets." in texts(memory_service)
    assert not [t for t in texts(memory_service) if "Consul" in t]
    assert memory_service.store.get_meta(CURSOR_KEY) == f"{T0_MS + 100 + 1 + 10 + 2} {good}"


@pytest.mark.parametrize("directory", list(BAD_DIRECTORIES.values()), ids=list(BAD_DIRECTORIES))
def test_a_session_without_a_usable_absolute_directory_is_skipped_never_learned_for_every_project(
    memory_service: MemoryService, oc: OpenCodeDB, git_project: str, directory: str
) -> None:
    bad_session(oc, directory)
    good_session(oc, git_project)

    report = ingester(memory_service).run(db_path=str(oc.path))

    assert report.sessions_skipped == 1 and report.sessions_ingested == 1
    (line,) = report.errors
    assert "skipped" in line and len(line) < SHOWN_LINE_CHARS
    stored = memory_service.store.all_memories()
    assert [m for m in stored if m.project is None] == []  # nothing global: it would show in every project
    assert {m.project for m in stored} == {git_project}


def test_a_bad_session_is_not_read_again_and_the_cursor_passes_it_once_a_later_one_is_learned(
    memory_service: MemoryService, oc: OpenCodeDB, git_project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The explorer's case: `graphmem ingest opencode` failed on every run, its cursor never moved.
    read: list[str] = []
    reading = OpenCodeSessionStore.read

    def counted(store: OpenCodeSessionStore, row: SessionRow) -> SessionRead:
        read.append(row.id)
        return reading(store, row)

    monkeypatch.setattr(OpenCodeSessionStore, "read", counted)
    bad_session(oc, git_project, session_id=LONG_ID)
    alone = ingester(memory_service).run(db_path=str(oc.path))
    assert alone.sessions_skipped == 1 and alone.errors and texts(memory_service) == []
    assert memory_service.store.get_meta(CURSOR_KEY) is None  # an id the store refuses is no position

    good = good_session(oc, git_project)
    then = ingester(memory_service).run(db_path=str(oc.path))
    assert then.sessions_ingested == 1 and then.sessions_skipped == 1
    assert "We decided to use Vault for secrets." in texts(memory_service)
    assert memory_service.store.get_meta(CURSOR_KEY) == f"{T0_MS + 100 + 1 + 10 + 2} {good}"

    again = ingester(memory_service).run(db_path=str(oc.path))
    assert again.sessions_read == 0 and again.errors == []  # past it for good
    assert read == [good]  # its messages were never read: checked on its row alone


def test_a_bad_session_is_logged_once_by_a_long_lived_ingester(
    memory_service: MemoryService, oc: OpenCodeDB, git_project: str, caplog: pytest.LogCaptureFixture
) -> None:
    bad_session(oc, git_project, session_id=LONG_ID)
    daemons = ingester(memory_service)  # the daemon keeps one, and runs it every interval

    with caplog.at_level(logging.DEBUG, logger="graphmem"):
        first, second = (daemons.run(db_path=str(oc.path)) for _ in range(2))

    assert first.sessions_skipped == second.sessions_skipped == 1
    told = [r for r in caplog.records if "skipped" in r.getMessage()]
    assert [r.levelno for r in told] == [logging.INFO, logging.DEBUG]
    assert all(len(r.getMessage()) < SHOWN_LINE_CHARS and "5,004 characters" in r.getMessage() for r in told)


def test_a_session_named_explicitly_whose_row_is_unusable_is_skipped_not_an_error(
    memory_service: MemoryService, oc: OpenCodeDB
) -> None:
    bad_session(oc, "relative/path", session_id="ses_rel")

    report = ingester(memory_service).run(db_path=str(oc.path), session_id="ses_rel")

    assert report.sessions_skipped == 1 and report.sessions_ingested == 0 and texts(memory_service) == []


def test_a_message_whose_id_the_store_cannot_keep_is_left_out_and_said_briefly(
    memory_service: MemoryService, oc: OpenCodeDB, git_project: str
) -> None:
    sid = oc.session(git_project, title="Config")
    asked = oc.message(sid, "user", [text("We decided to use Consul for config.")], at_ms=T0_MS + 1)
    oc.db.execute("UPDATE message SET id = ? WHERE id = ?", ("msg_" + "m" * 5000, asked))
    oc.db.execute("UPDATE part SET message_id = ? WHERE message_id = ?", ("msg_" + "m" * 5000, asked))
    oc.message(sid, "assistant", [text("ok")], at_ms=T0_MS + 10)
    good_session(oc, git_project)

    report = ingester(memory_service).run(db_path=str(oc.path))

    assert report.sessions_ingested == 2  # the session's summary is still written, the next one learned
    (line,) = report.errors
    assert "The origin is 5,004 characters" in line and len(line) < SHOWN_LINE_CHARS
    assert "We decided to use Vault for secrets." in texts(memory_service)


def test_a_title_and_paths_no_store_keeps_whole_are_cleaned_and_the_session_learned(
    memory_service: MemoryService, oc: OpenCodeDB, git_project: str
) -> None:
    sid = oc.session(git_project, title="Con\x00fig " + "T" * 50_000)
    oc.message(
        sid,
        "user",
        [
            text("We decided to use Consul for config."),
            tool("read", {"filePath": f"{git_project}/src/a\x00b.py"}, "x"),
            {"type": "patch", "files": [f"{git_project}/" + "f/" * 3000 + str(i) for i in range(20)]},
        ],
        at_ms=T0_MS + 1,
    )
    oc.message(sid, "assistant", [text("ok")], at_ms=T0_MS + 10)
    good_session(oc, git_project)

    report = ingester(memory_service).run(db_path=str(oc.path))

    assert report.sessions_ingested == 2 and report.errors == []
    (summary,) = [
        m for m in memory_service.list(categories=["event"], project=git_project) if m.session == sid
    ]
    assert summary.text.startswith('OpenCode session "Con fig TTT') and "\x00" not in summary.text
    assert len(summary.text) < MAX_TEXT_CHARS
    assert "We decided to use Consul for config." in texts(memory_service)


@pytest.fixture
def kuzu_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kuzu_templates: KuzuTemplates
) -> Iterator[MemoryService]:
    kuzu_templates.lay_out(tmp_path / "data", 64)  # an empty store's files, as open_memory makes them
    service = open_memory(load_settings(data_dir=tmp_path / "data"), embedder=HashEmbedder(64))
    yield service
    service.close()


def test_the_daemons_background_ingest_skips_the_bad_session_and_learns_the_next(
    kuzu_memory: MemoryService, oc: OpenCodeDB, git_project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENCODE_DB", str(oc.path))
    bad_session(oc, git_project, session_id=LONG_ID)
    good_session(oc, git_project)
    daemon = Runtime(
        kuzu_memory.serving(Coordinator(utc_now, timedelta(minutes=5))),
        log_hint="stderr",
        resolve_project=lambda p: p,
        version="test",
    )

    daemon.ingest_once()

    view = daemon.status()["ingest"]
    assert view["sessions_ingested"] == 1 and "skipped" in view["last_error"]
    assert len(view["last_error"]) < SHOWN_LINE_CHARS
    assert "We decided to use Vault for secrets." in texts(kuzu_memory)
