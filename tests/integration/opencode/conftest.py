"""Fixtures that run the real OpenCode CLI against the scripted fake model (see ``support.opencode``).

- ``opencode_binary`` (session): the pinned OpenCode, installed once into ``<repo>/.cache``;
  fails (never skips) when npm is missing or the install fails.
- ``fake_llm``: a started :class:`~support.fake_llm.FakeLLM`; script it with
  ``fake_llm.script(...)`` before running OpenCode, read ``fake_llm.requests`` afterwards.
- ``opencode``: a fresh :class:`~support.opencode.OpenCodeSandbox` (temp HOME + git project whose
  ``opencode.json`` points at ``fake_llm``); ``opencode.add_mcp(name, server)``,
  ``opencode.run_turn(prompt)``, ``opencode.mcp_list()``, ``opencode.run_opencode(args)``; the turns
  of one session in one OpenCode process: ``with opencode.serve() as server: server.run_turn(...)``
  (``opencode run --attach``), or ``server.send_turn(...)`` (the same turn sent from the test's
  process, without a client process); ``server.mcp_status()``.

A module whose tests read one run shares it through a module fixture of its own (its sandbox,
model and daemon built with ``tmp_path_factory``), and so runs on one pytest-xdist worker
(``support/worker_groups.py``): ``test_plugin.py``'s ``recorded``,
``test_graphmem_in_opencode.py``'s ``served``, ``test_harness.py``'s ``said_hi``.
- ``project``: an empty git project (for the tests that load the plugin in Node, with no OpenCode).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.fake_llm import FakeLLM
from support.opencode import OpenCodeSandbox, OpenCodeUnavailable, ensure_opencode


@pytest.fixture(scope="session")
def opencode_binary() -> Path:
    """The OpenCode binary of the pinned version (installed on first use, then reused)."""
    try:
        return ensure_opencode()
    except OpenCodeUnavailable as exc:
        problem = str(exc)
    pytest.fail(f"OpenCode is unavailable (these tests fail rather than skip): {problem}", pytrace=False)


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    """A scripted OpenAI-compatible model server on 127.0.0.1, stopped after the test."""
    with FakeLLM() as llm:
        yield llm


@pytest.fixture
def opencode(opencode_binary: Path, fake_llm: FakeLLM, tmp_path: Path) -> OpenCodeSandbox:
    """A sandboxed OpenCode (own HOME/XDG dirs, git project) whose model is ``fake_llm``."""
    return OpenCodeSandbox.create(opencode_binary, tmp_path / "opencode", fake_llm)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty git project, its path resolved."""
    root = tmp_path / "project"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root.resolve()
