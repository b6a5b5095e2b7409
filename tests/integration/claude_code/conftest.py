"""Fixtures that run the real Claude Code CLI against the Anthropic-Messages stand-in (see
``support.claude_code``).

- ``claude_binary`` (session): the pinned Claude Code, installed once into ``<repo>/.cache``; fails
  (never skips) when npm is missing or the install fails.
- ``claude``: a fresh :class:`~support.claude_code.ClaudeCodeSandbox` (temp HOME, git project,
  graphmem data dir) whose model is a started :class:`~support.fake_anthropic.FakeAnthropic`
  (``claude.api``); the daemon it started is stopped afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.claude_code import ClaudeCodeSandbox, ensure_claude_code, sandbox
from support.npm_client import ClientUnavailable


@pytest.fixture(scope="session")
def claude_binary() -> Path:
    try:
        return ensure_claude_code()
    except ClientUnavailable as exc:
        problem = str(exc)
    pytest.fail(f"Claude Code is unavailable (these tests fail rather than skip): {problem}", pytrace=False)


@pytest.fixture
def claude(claude_binary: Path, tmp_path: Path) -> Iterator[ClaudeCodeSandbox]:
    with sandbox(claude_binary, tmp_path / "claude") as box:
        yield box
