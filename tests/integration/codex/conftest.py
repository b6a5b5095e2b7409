"""Fixtures that run the real Codex CLI against the Responses stand-in (see ``support.codex``).

- ``codex_binary`` (session): the pinned Codex, installed once into ``<repo>/.cache``; fails
  (never skips) when npm is missing or the install fails.
- ``fake_model``: a started :class:`~support.fake_responses.FakeResponses`.
- ``codex``: a fresh :class:`~support.codex.CodexSandbox` whose model is ``fake_model``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.codex import CodexSandbox, CodexUnavailable, ensure_codex
from support.fake_responses import FakeResponses


@pytest.fixture(scope="session")
def codex_binary() -> Path:
    """The Codex launcher of the pinned version (installed on first use, then reused)."""
    try:
        return ensure_codex()
    except CodexUnavailable as exc:
        problem = str(exc)
    pytest.fail(f"Codex is unavailable (these tests fail rather than skip): {problem}", pytrace=False)


@pytest.fixture
def fake_model() -> Iterator[FakeResponses]:
    """A scripted OpenAI Responses-compatible server on 127.0.0.1, stopped after the test."""
    with FakeResponses() as model:
        yield model


@pytest.fixture
def codex(codex_binary: Path, fake_model: FakeResponses, tmp_path: Path) -> CodexSandbox:
    """A sandboxed Codex (own HOME and CODEX_HOME, git project) whose model is ``fake_model``."""
    return CodexSandbox.create(codex_binary, tmp_path / "codex", fake_model)
