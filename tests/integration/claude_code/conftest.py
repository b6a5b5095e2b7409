"""Fixtures that run the real Claude Code CLI against the Anthropic-Messages stand-in (see
``support.claude_code``).

- ``claude_binary`` (session): the pinned Claude Code, installed once into ``<repo>/.cache``; fails
  (never skips) when npm is missing or the install fails.
- ``claude``: a fresh :class:`~support.claude_code.ClaudeCodeSandbox` (temp HOME, git project,
  graphmem data dir) whose model is a started :class:`~support.fake_anthropic.FakeAnthropic`
  (``claude.api``); the daemon it started is stopped afterwards.
- ``scenario_with_graphmem`` (package): the session of ``support.session_scenario`` played once
  with graphmem installed and serving, for the tests that read it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.claude_code import ClaudeCodeSandbox, PlayedScenario, ensure_claude_code, play_scenario, sandbox
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


@pytest.fixture(scope="package")
def scenario_with_graphmem(claude_binary: Path, tmp_path_factory: pytest.TempPathFactory) -> PlayedScenario:
    """The scenario's six turns with graphmem on (``support.claude_code.play_scenario``), as the
    stand-in recorded them; its daemon stopped. Read by the prompt cache's "on" run
    (``test_prompt_cache_share.py``) and by the whole previous request at the start of every
    request (``test_memory_in_claude_code.py``), which played a session each: about 7 s of CPU."""
    with sandbox(claude_binary, tmp_path_factory.mktemp("scenario-on")) as claude:
        return play_scenario(claude, graphmem=True)
