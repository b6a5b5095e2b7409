"""Fixtures that run the real Codex CLI against the Responses stand-in (see ``support.codex``).

- ``codex_binary`` (session): the pinned Codex, installed once into ``<repo>/.cache``; fails
  (never skips) when npm is missing or the install fails.
- ``fake_model``: a started :class:`~support.fake_responses.FakeResponses`.
- ``codex``: a fresh :class:`~support.codex.CodexSandbox` whose model is ``fake_model``.
- ``scenario_with_graphmem`` (package): the session of ``support.session_scenario`` played once
  with graphmem installed and serving, for the tests that read it.
- ``decided`` (package): a Codex session that decided something and what graphmem learned from
  it, in a project OpenCode shares, for the tests of the next session (Codex's, OpenCode's).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.codex import (
    DECISION,
    GRAPHMEM_REQUIRED,
    CodexSandbox,
    CodexUnavailable,
    Decided,
    PlayedScenario,
    ensure_codex,
    learned_from,
    play_scenario,
)
from support.daemons import graphmem_cli, remembered, start_daemon
from support.fake_llm import FakeLLM, Text
from support.fake_responses import FakeResponses
from support.opencode import OpenCodeSandbox, ensure_opencode
from support.session_scenario import BOOT_DIRECTIVE, TURNS


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


@pytest.fixture(scope="package")
def scenario_with_graphmem(codex_binary: Path, tmp_path_factory: pytest.TempPathFactory) -> PlayedScenario:
    """The scenario's six turns as one Codex session (``support.session_scenario``: the user's
    directive and the three facts stored first), with ``graphmem install codex`` in the project
    (its MCP server required) and a daemon of its own: what the stand-in recorded. Read by the
    prompt cache's "on" run (``test_prompt_cache.py``) and by the byte-identical prefix of every
    request (``test_memory_in_codex.py``), which played the same session each: about 9 s of CPU."""
    root = tmp_path_factory.mktemp("codex-scenario")
    with FakeResponses() as model:
        codex = CodexSandbox.create(codex_binary, root / "codex", model)
        data_dir = root / "graphmem-data"
        done = graphmem_cli(data_dir, "install", "codex", "--project", str(codex.project))
        assert done.returncode == 0, done.stderr
        daemon = start_daemon(
            data_dir, "--port", "0", GRAPHMEM_INGEST__ENABLED="false", CODEX_HOME=str(codex.codex_home)
        )
        try:
            codex.extra_env.update(
                GRAPHMEM_CONFIG=str(root / "no-such-config.toml"),
                GRAPHMEM_PLUGIN_TIMEOUT_MS="5000",  # a loaded machine: what is asserted is where memory goes
            )
            boot_id = remembered(data_dir, codex.project, BOOT_DIRECTIVE, category="directive")
            facts = {
                turn: remembered(data_dir, codex.project, fact, category="fact")
                for turn, (_, fact) in enumerate(TURNS)
                if fact
            }
            play_scenario(codex, *GRAPHMEM_REQUIRED)
        finally:
            daemon.stop()
        hooks = data_dir / "hooks.log"
        return PlayedScenario(
            list(model.requests),
            list(model.raw),
            boot_id,
            facts,
            hooks.read_text("utf-8") if hooks.exists() else "",
        )


@pytest.fixture(scope="package")
def decided(codex_binary: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Decided]:
    """One project where ``graphmem install`` put graphmem in both Codex and OpenCode, one daemon
    serving both (with the sandboxes' ``CODEX_HOME`` and OpenCode database), and one ``codex exec``
    that said :data:`~support.codex.DECISION`: once its session ended, what graphmem learned from
    it. The daemon serves on while the package's tests start the next session from it: Codex's
    (``test_memory_in_codex.py``), OpenCode's (``test_shared_with_opencode.py``), which ran the
    same deciding session each: a daemon and a Codex turn, about 3 s of CPU."""
    root = tmp_path_factory.mktemp("codex-decided")
    with FakeResponses() as model, FakeLLM() as llm:
        codex = CodexSandbox.create(codex_binary, root / "codex", model)
        opencode = OpenCodeSandbox.create(ensure_opencode(), codex.root, llm)
        assert opencode.project == codex.project
        data_dir = root / "graphmem-data"
        for client in ("codex", "opencode"):
            done = graphmem_cli(data_dir, "install", client, "--project", str(codex.project))
            assert done.returncode == 0, done.stderr
        daemon = start_daemon(
            data_dir,
            "--port",
            "0",
            GRAPHMEM_INGEST__ENABLED="false",
            CODEX_HOME=str(codex.codex_home),
            OPENCODE_DB=str(opencode.db_path),
        )
        settings = {"GRAPHMEM_CONFIG": str(root / "none.toml"), "GRAPHMEM_PLUGIN_TIMEOUT_MS": "5000"}
        codex.extra_env.update(settings)
        opencode.extra_env.update(settings, GRAPHMEM_SERVER__PORT="0")
        try:
            model.script(Text("Noted."))
            run = codex.exec(DECISION)
            learned = learned_from(daemon, codex.project, run.session_id)
            yield Decided(codex, opencode, llm, daemon, run.session_id, learned)
        finally:
            daemon.stop()
