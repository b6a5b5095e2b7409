"""``graphmem ingest opencode``, run in process against a fresh store and a real OpenCode-shaped database."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from support.opencode_db import T0_MS, OpenCodeDB, tool
from support.stores import KuzuTemplates

from graphmem.adapters.embedders import HashEmbedder
from graphmem.app import open_memory
from graphmem.cli import main
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings

Invoke = Callable[..., Result]


@pytest.fixture
def invoke(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kuzu_templates: KuzuTemplates) -> Invoke:
    """Runs ``graphmem --data-dir DATA ARGS``; the data dir's first command finds an empty store's
    files there, as ``open_memory`` makes them (``KuzuTemplates.lay_out``)."""

    def factory(data_dir: Path | None, *, check_model: bool = True) -> MemoryService:
        if data_dir is not None and not data_dir.exists():
            kuzu_templates.lay_out(data_dir, 256)
        return open_memory(
            load_settings(data_dir=data_dir), embedder=HashEmbedder(256), check_model=check_model
        )

    monkeypatch.setattr(main, "SERVICE_FACTORY", factory)
    monkeypatch.delenv("OPENCODE_DB", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    runner = CliRunner()

    def run(*args: str) -> Result:
        return runner.invoke(main.cli, ["--data-dir", str(tmp_path / "data"), *args])

    return run


@pytest.fixture
def opencode_db(tmp_path: Path, git_project: str) -> Path:
    db = OpenCodeDB(tmp_path / "opencode.db")
    sid = db.session(git_project, title="Refunds")
    db.message(
        sid, "user", [{"type": "text", "text": "Fix the refund rounding in src/app.py"}], at_ms=T0_MS + 1
    )
    db.message(
        sid, "assistant", [tool("edit", {"filePath": f"{git_project}/src/app.py"}, "ok")], at_ms=T0_MS + 2
    )
    db.close()
    return db.path


def test_ingest_opencode_prints_what_it_learned_and_is_idempotent(invoke: Invoke, opencode_db: Path) -> None:
    first = invoke("ingest", "opencode", "--db", str(opencode_db))
    assert first.exit_code == 0, first.output
    assert "1 sessions read: 1 ingested" in first.stdout and "event 1" in first.stdout
    again = invoke("ingest", "opencode", "--db", str(opencode_db), "--json")
    assert again.exit_code == 0, again.output
    report = json.loads(again.stdout)
    assert report["sessions_ingested"] == 0 and report["db_path"] == str(opencode_db)


def test_since_rereads_and_session_targets_one(invoke: Invoke, opencode_db: Path) -> None:
    assert invoke("ingest", "opencode", "--db", str(opencode_db)).exit_code == 0
    since = json.loads(
        invoke("ingest", "opencode", "--db", str(opencode_db), "--since", "2020-01-01", "--json").stdout
    )
    assert since["sessions_read"] == 1 and since["sessions_unchanged"] == 1
    missing = invoke("ingest", "opencode", "--db", str(opencode_db), "--session", "ses_nope")
    assert missing.exit_code == 3 and "No session 'ses_nope'" in missing.output


def test_a_missing_database_is_one_clear_line(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("ingest", "opencode")
    assert result.exit_code == 12
    assert "No OpenCode database at" in result.output and "--db PATH" in result.output


def test_a_bad_since_is_refused(invoke: Invoke, opencode_db: Path) -> None:
    result = invoke("ingest", "opencode", "--db", str(opencode_db), "--since", "yesterday-ish")
    assert result.exit_code == 2 and "Cannot read 'yesterday-ish'" in result.output


def hostile_db(tmp_path: Path, kind: str) -> str:
    """A --db that is no OpenCode database, made in ``tmp_path``."""
    if kind == "fifo":
        os.mkfifo(tmp_path / "fifo.db")
        return str(tmp_path / "fifo.db")
    if kind == "loop":
        (tmp_path / "loop.db").symlink_to(tmp_path / "loop2.db")
        (tmp_path / "loop2.db").symlink_to(tmp_path / "loop.db")
        return str(tmp_path / "loop.db")
    return {"long part": "/" + "a" * 300, "long path": "x" * 20_000, "device": "/dev/zero"}[kind]


@pytest.mark.parametrize(
    ("kind", "code", "says"),
    [
        ("long part", 2, "error: A part of the db_path is over 255 bytes, longer than any file name can be."),
        ("long path", 2, "a path has at most 4,096"),
        ("fifo", 12, "fifo.db (the path given) is a named pipe, not a regular file"),
        ("device", 12, "/dev/zero (the path given) is a character device, not a regular file"),
        ("loop", 12, "Too many levels of symbolic links"),
    ],
)
def test_a_db_that_is_no_database_is_one_clear_line_never_a_traceback(
    invoke: Invoke, tmp_path: Path, kind: str, code: int, says: str
) -> None:
    result = invoke("ingest", "opencode", "--db", hostile_db(tmp_path, kind))

    assert result.exit_code == code, result.output
    assert isinstance(result.exception, SystemExit)  # graphmem's error, not one click caught
    assert says in result.output
