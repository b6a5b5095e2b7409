"""Who wrote a memory: a session of any client graphmem learns from (OpenCode, Claude Code,
Codex CLI) is the user's own words; anything else keeps its own origin."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from graphmem.core.models import Category, MemoryRecord, Scope, Status
from graphmem.core.provenance import Origin, acts_as_person, is_convention, label, origin_of, proposes

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def record(source: str, category: Category = Category.DIRECTIVE) -> MemoryRecord:
    return MemoryRecord(
        id="mem_0123456789abcdef", text="Run make test before every commit", category=category,
        scope=Scope.PROJECT, project="/p", created_at=NOW, updated_at=NOW, valid_from=NOW, source=source,
    )  # fmt: skip


@pytest.mark.parametrize("source", ["opencode", "claude-code", "codex"])
def test_a_clients_session_is_the_users_own_words(source: str) -> None:
    assert origin_of(source) is Origin.SESSION
    assert acts_as_person(source)
    assert not proposes(source, Category.DIRECTIVE)
    assert is_convention(record(source))
    assert label(record(source)) == "the user's words in a session"


@pytest.mark.parametrize("source", ["claude", "claude-code:x", "codex-cli", "Claude-Code", "mcp"])
def test_a_name_close_to_a_client_is_not_a_session(source: str) -> None:
    assert origin_of(source) is not Origin.SESSION
    assert proposes(source, Category.PREFERENCE)
    assert record(source).status is Status.ACTIVE and not is_convention(record(source))
