"""Two clients in one project share one daemon and one store: what a Codex session decided is
learned when it ends and reaches OpenCode's next session in the same project, with no tool call.

Both real clients (``@openai/codex@0.169.0``, ``opencode-ai@1.18.33``) run in one sandbox: the
same project directory, each with its model stand-in, both installed by ``graphmem install``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.codex import CodexSandbox
from support.daemons import POLL_S, Daemon, graphmem_cli, listed, start_daemon
from support.fake_llm import FakeLLM, Text
from support.opencode import OpenCodeSandbox, ensure_opencode

pytestmark = pytest.mark.integration

INGEST_WAIT_S = 90.0
DECISION = "We decided to use Postgres 16 for billing because of logical replication."


@pytest.fixture
def both(
    codex: CodexSandbox, tmp_path: Path
) -> Iterator[tuple[CodexSandbox, OpenCodeSandbox, FakeLLM, Daemon]]:
    with FakeLLM() as llm:
        opencode = OpenCodeSandbox.create(ensure_opencode(), codex.root, llm)
        assert opencode.project == codex.project
        data_dir = tmp_path / "graphmem-data"
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
        settings = {"GRAPHMEM_CONFIG": str(tmp_path / "none.toml"), "GRAPHMEM_PLUGIN_TIMEOUT_MS": "5000"}
        codex.extra_env.update(settings)
        opencode.extra_env.update(settings, GRAPHMEM_SERVER__PORT="0")
        try:
            yield codex, opencode, llm, daemon
        finally:
            daemon.stop()


def test_what_a_codex_session_decided_reaches_opencodes_next_session(
    both: tuple[CodexSandbox, OpenCodeSandbox, FakeLLM, Daemon], fake_model: object
) -> None:
    codex, opencode, llm, daemon = both
    run = codex.exec(DECISION)

    deadline = time.monotonic() + INGEST_WAIT_S
    decision: dict[str, object] | None = None
    while time.monotonic() < deadline and decision is None:
        found = [m for m in listed(daemon.data_dir, codex.project) if m.get("session") == run.session_id]
        decision = next((m for m in found if m["category"] == "decision"), None)
        if decision is None:
            time.sleep(POLL_S)
    assert decision is not None and decision["source"] == "codex"

    llm.script(Text("Postgres 16."))
    opencode.run_turn("Which database should the billing service use?", timeout=180)

    [request] = llm.requests
    assert str(decision["id"]) in json.dumps(request)  # in OpenCode's prompt, with no tool call
