"""Human output says where each memory came from (``show`` and ``recall``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import Result

from graphmem.cli import main, present
from graphmem.cli.present import provenance
from graphmem.core.models import Category, Hit, LoginRole, MemoryRecord, Scope, Trust
from graphmem.service.results import MemoryDetail, RecallResult, Stats

Invoke = Callable[..., Result]  # the ``invoke`` fixture of conftest.py
NOW = datetime(2026, 5, 1, tzinfo=UTC)


def record(source: str, session: str | None = None, origin: str | None = None) -> MemoryRecord:
    return MemoryRecord(
        "mem_0123456789abcdef", "text", Category.FACT, Scope.GLOBAL, None, NOW, NOW, NOW,
        source=source, session=session, origin=origin,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("memory", "said"),
    [
        (record("user"), "the user"),
        (record("mcp", session="ses_1"), "an agent (session ses_1)"),
        (
            record("opencode", session="ses_ab", origin="msg_9"),
            "the user's words in OpenCode session ses_ab, message msg_9",
        ),
        (
            record("claude-code", session="c-7", origin="u-2"),
            "the user's words in Claude Code session c-7, message u-2",
        ),
        (record("codex", session="rollout-9"), "the user's words in Codex session rollout-9"),
        (record("bootstrap:pyproject.toml#fact:python"), "the repository's pyproject.toml"),
        (record("git:0123456789abcdef0123"), "commit 0123456"),
        (record("import:team.jsonl"), "an import of team.jsonl"),
        (record("gitlab:!12"), "GitLab !12"),
        (record("import"), "an import"),
    ],
)
def test_each_source_is_said_in_words(memory: MemoryRecord, said: str) -> None:
    assert provenance(memory) == said


def test_show_and_recall_say_where_a_memory_came_from(invoke: Invoke, tmp_path: Path) -> None:
    assert main.SERVICE_FACTORY is not None  # conftest.py's: the data dir's in-memory store
    memory = main.SERVICE_FACTORY(tmp_path / "data")
    try:
        learned = memory.remember(
            "The refund job runs nightly at 02:00", source="opencode", session="ses_ab", origin="msg_9"
        ).memory.id
    finally:
        memory.close()
    typed = invoke("remember", "The refund queue is drained by hand on Fridays").stdout.strip()

    shown = invoke("show", learned).stdout
    found = invoke("recall", "refund job nightly", "--plan", "lexical").stdout

    assert "from the user's words in OpenCode session ses_ab, message msg_9" in shown
    assert f"{learned} · global · just now · from the user's words in OpenCode session ses_ab" in found
    assert "from the user" in invoke("show", typed).stdout


STALE = "possibly stale: RefundService.apply changed on 2026-04-30"


def test_recall_show_and_list_lines_say_a_memory_may_be_stale(capsys: pytest.CaptureFixture[str]) -> None:
    memory = replace(record("user"), stale=STALE)

    assert STALE in present.hit_details(Hit(memory, 0.5, ()), now=NOW)
    present.memory_lines([memory], now=NOW)
    listed = capsys.readouterr().out
    present.detail(MemoryDetail(memory, (), ()), now=NOW)
    shown = capsys.readouterr().out

    assert f"({STALE})" in listed
    assert f"note: {STALE}" in shown


def test_stats_give_the_share_of_stale_memories(capsys: pytest.CaptureFixture[str]) -> None:
    found = Stats(5, {"fact": 5}, {"active": 3, "resolved": 1, "archived": 1}, {}, {}, 0, "/d", "m", stale=1)

    present.stats(found)

    assert "possibly stale: 1 of 4 current memories (25.0%)" in capsys.readouterr().out
    assert present.stats_json(found)["stale_share"] == 0.25


def test_stats_say_a_read_only_role_and_whose_global_memories_it_sees(
    capsys: pytest.CaptureFixture[str],
) -> None:
    found = Stats(0, {}, {}, {}, {}, 0, "/d", "m", role=LoginRole("review_bot", False, False))

    present.stats(found)

    assert capsys.readouterr().out.splitlines()[-1] == (
        "role: review_bot (read-only; global memories: review_bot's own)"
    )
    assert present.stats_json(found)["role"] == {"name": "review_bot", "writes": False, "sees_all": False}


@pytest.mark.parametrize("ready", [True, False])
def test_recall_says_when_search_by_meaning_is_incomplete_and_why(
    ready: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    present.hits(RecallResult("q", "hybrid", [], semantic_ready=ready), now=NOW)

    stderr = capsys.readouterr().err
    if ready:
        assert stderr == ""
    else:  # not only the model: memories waiting for their vectors (a bootstrap's) say so too
        assert "waiting for their vectors" in stderr and "the model loading" in stderr


def test_a_low_trust_memory_says_so_wherever_it_is_shown(capsys: pytest.CaptureFixture[str]) -> None:
    low = replace(record("opencode", session="ses_ab"), trust=Trust.LOW)

    present.detail(MemoryDetail(low, (), ()), now=NOW)
    present.memory_lines([low], now=NOW)
    present.hits(RecallResult("q", "hybrid", [Hit(low, 1.0, ())]), now=NOW)

    shown = capsys.readouterr().out.splitlines()
    assert [line for line in shown if "low trust" in line] == [shown[2], shown[3], shown[5]]
