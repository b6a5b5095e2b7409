"""Hostile input through the real Codex CLI: a 1 MB prompt goes through every hook (boot, recall,
learning) bounded, with no traceback anywhere, and what it teaches is stored once."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.codex import CodexSandbox
from support.daemons import POLL_S, Daemon, graphmem_cli, listed, start_daemon
from support.fake_llm import Text
from support.fake_responses import FakeResponses, texts

pytestmark = pytest.mark.integration

INGEST_WAIT_S = 90.0


@pytest.fixture
def served(codex: CodexSandbox, tmp_path: Path) -> Iterator[tuple[CodexSandbox, Daemon]]:
    data_dir = tmp_path / "graphmem-data"
    done = graphmem_cli(data_dir, "install", "codex", "--project", str(codex.project))
    assert done.returncode == 0, done.stderr
    daemon = start_daemon(
        data_dir, "--port", "0", GRAPHMEM_INGEST__ENABLED="false", CODEX_HOME=str(codex.codex_home)
    )
    codex.extra_env.update(GRAPHMEM_CONFIG=str(tmp_path / "none.toml"), GRAPHMEM_PLUGIN_TIMEOUT_MS="5000")
    yield codex, daemon
    daemon.stop()


def test_a_one_megabyte_prompt_is_bounded_in_every_hook_and_learned_once(
    served: tuple[CodexSandbox, Daemon], fake_model: FakeResponses
) -> None:
    codex, daemon = served
    # 1 MB (Codex itself takes at most 1,048,576 characters)
    prompt = "We decided to shard the billing tables by tenant." + " padding" * 124_990
    fake_model.script(Text("Noted."), Text("Still noted."))

    run = codex.exec(prompt)
    codex.exec("Anything else?", resume=run.session_id)  # Stop and SessionEnd ask again

    assert texts(fake_model.requests[0], "user")[-1] == prompt  # Codex sent it whole
    deadline = time.monotonic() + INGEST_WAIT_S
    learned: list[dict[str, object]] = []
    while time.monotonic() < deadline and not learned:
        memories = listed(daemon.data_dir, codex.project)
        learned = [m for m in memories if m.get("session") == run.session_id and m["category"] == "decision"]
        if not learned:
            time.sleep(POLL_S)
    [decision] = learned  # once, though four hooks asked
    assert "shard the billing tables" in str(decision["text"]) and len(str(decision["text"])) < 20_000
    logs = (
        (daemon.data_dir / "hooks.log").read_text("utf-8") if (daemon.data_dir / "hooks.log").exists() else ""
    )
    logs += daemon.log.read_text("utf-8", errors="replace")
    assert "Traceback" not in logs
    assert "Traceback" not in run.stderr
