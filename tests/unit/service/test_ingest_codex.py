"""Learning from a Codex session file: through the one write door, redacted, with
``source="codex"`` and the session as provenance; once, however often the hooks ask (``Stop``
after every turn, then ``SessionEnd``), and only from Codex's own session folders."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from support.codex_rollout import RolloutWriter

from graphmem.adapters.codex_sessions import CodexSessions
from graphmem.adapters.git import GitToplevel
from graphmem.core.models import Category, MemoryRecord
from graphmem.errors import NotFoundError, SessionStoreError
from graphmem.service.ingest import CODEX, Ingester, IngestOptions
from graphmem.service.memory import MemoryService
from graphmem.service.session_files import SESSION_CLIENTS, SessionFiles

SESSION = "01a232fa-8209-78b3-84e2-a7a583cbad45"
LATER = datetime(2026, 12, 2, tzinfo=UTC)


def ingester(memory: MemoryService, codex_home: Path) -> Ingester:
    return Ingester(
        memory.writer,
        memory.parts.rememberer,
        options=IngestOptions(),
        clock=lambda: LATER,
        sessions=CodexSessions([codex_home / "sessions"]),
        roots=GitToplevel(),
        client=CODEX,
    )


def stored(memory: MemoryService) -> list[MemoryRecord]:
    """What the ingest stored of a Codex session: what it learned and the session's summary."""
    return [m for m in memory.store.all_memories() if m.source in ("codex", "summary:codex")]


@pytest.fixture
def codex_home(tmp_path: Path) -> Path:
    return tmp_path / "codex-home"


def test_a_sessions_decision_is_learned_redacted_with_codex_and_the_session_as_provenance(
    memory_service: MemoryService, codex_home: Path, git_project: str
) -> None:
    rollout = RolloutWriter(codex_home, SESSION, git_project)
    said = rollout.user(
        "We decided to pin PostgreSQL 16; the token is ghp_abcdefghijklmnopqrstuvwxyz0123456789."
    )
    rollout.agent("Understood.")

    report = ingester(memory_service, codex_home).run(db_path=str(rollout.path), session_id=SESSION)

    assert report.sessions_ingested == 1
    decision = next(m for m in stored(memory_service) if m.category is Category.DECISION)
    assert "PostgreSQL 16" in decision.text and "ghp_abcdef" not in decision.text
    assert decision.session == SESSION and decision.origin == said and decision.project == git_project
    assert not any("MySQL" in m.text for m in memory_service.store.all_memories())  # graphmem's own block
    summary = next(m for m in stored(memory_service) if m.category is Category.EVENT)
    assert summary.text.startswith('Codex session "We decided to pin PostgreSQL 16')
    assert summary.source == "summary:codex"  # graphmem's summary of the session, not the user's words


def test_asking_after_every_turn_and_at_the_end_stores_each_memory_once(
    memory_service: MemoryService, codex_home: Path, git_project: str
) -> None:
    rollout = RolloutWriter(codex_home, SESSION, git_project)
    rollout.user("We decided to deploy on Fridays only after the smoke tests pass.")
    learn = ingester(memory_service, codex_home)
    learn.run(db_path=str(rollout.path), session_id=SESSION)  # Stop
    learn.run(db_path=str(rollout.path), session_id=SESSION)  # SessionEnd
    rollout.agent("OK.")
    rollout.user("We decided to keep the cart in Redis.")  # codex exec resume
    learn.run(db_path=str(rollout.path), session_id=SESSION)

    decisions = sorted(m.text for m in stored(memory_service) if m.category is Category.DECISION)
    assert len(decisions) == 2 and "Fridays" in decisions[0] and "Redis" in decisions[1]
    assert len([m for m in stored(memory_service) if m.category is Category.EVENT]) == 1


def test_a_session_file_outside_codexs_folders_or_of_another_session_teaches_nothing(
    memory_service: MemoryService, codex_home: Path, tmp_path: Path, git_project: str
) -> None:
    elsewhere = RolloutWriter(tmp_path / "elsewhere", SESSION, git_project)
    elsewhere.user("We decided to leak this.")
    other = RolloutWriter(codex_home, SESSION, git_project, meta_id="01a232fa-0000-0000-0000-000000000000")
    other.user("We decided to leak this too.")

    with pytest.raises(SessionStoreError, match="outside Codex's session folders"):
        ingester(memory_service, codex_home).run(db_path=str(elsewhere.path), session_id=SESSION)
    with pytest.raises(NotFoundError, match="No session"):
        ingester(memory_service, codex_home).run(db_path=str(other.path), session_id=SESSION)
    assert stored(memory_service) == []


def test_codex_is_one_of_the_clients_whose_session_files_are_learned(
    memory_service: MemoryService, codex_home: Path, git_project: str
) -> None:
    rollout = RolloutWriter(codex_home, SESSION, git_project)
    rollout.user("We decided to ship the cart rewrite behind a flag.")
    files = SessionFiles({CODEX.source: ingester(memory_service, codex_home)})

    assert SESSION_CLIENTS["codex"] is CODEX
    assert files.ingest_session("codex", str(rollout.path), SESSION).sessions_ingested == 1
