"""The prompt cache in the real OpenCode client on a busy machine: six turns of one session, the
last five with two CPU-bound processes beside them and the daemon restarted after turn 3; every
request starts with the whole previous one, byte for byte (the plugin's journal replays what it
injected; only the newest turn's recall may be skipped when the daemon is slow).

The first turn is an `opencode run` of its own that waits for the daemon as long as it needs
(10 s), so that the session's boot block and first recall exist: the load, which only tells on
the plugin's default timeout, starts after it. The other five go to one `opencode serve`, sent as
`opencode run --attach` sends them (``OpenCodeServer.send_turn``), as a TUI resuming the
session: one OpenCode process, its plugin loaded once with the plugin's default timeout, which
replays turn 1 from the journal (a plugin that asked the daemon for it again would be caught) and
keeps its state across the restart of the daemon. ``docs/benchmarks.md`` runs it five times in a
row.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.cpu_load import cpu_load
from support.daemons import Daemon, remembered, sandbox_env, start_daemon
from support.fake_llm import FakeLLM, Text, system_prompt
from support.opencode import OpenCodeSandbox

pytestmark = pytest.mark.integration

DIRECTIVE = "Always run ruff format before committing any Python change."
TURNS: tuple[tuple[str, str | None], ...] = (
    ("Which port does the staging database listen on?", "The staging database listens on port 5433."),
    ("Write a haiku about autumn leaves.", None),
    ("How are invoice PDFs rendered?", "Invoice PDFs are rendered with WeasyPrint from Jinja templates."),
    ("Tell me a joke about penguins.", None),
    ("Where do the CI runners cache pip wheels?", "The CI runners cache pip wheels in /var/cache/ci-wheels."),
    ("Summarise what we talked about.", None),
)
RESTART_AFTER_TURN = 3


def graphmem(data_dir: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "graphmem", "--data-dir", str(data_dir), *args],
        env=sandbox_env(data_dir),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def start(data_dir: Path, opencode: OpenCodeSandbox) -> Daemon:
    return start_daemon(
        data_dir, "--port", "0", GRAPHMEM_INGEST__ENABLED="false", OPENCODE_DB=str(opencode.db_path)
    )


@pytest.mark.timeout(1800)
def test_six_turns_under_load_and_a_daemon_restart_keep_every_previous_request(
    opencode: OpenCodeSandbox, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    data_dir = tmp_path / "graphmem-data"
    done = graphmem(data_dir, "install", "opencode", "--project", str(opencode.project))
    assert done.returncode == 0, done.stderr
    opencode.extra_env.update(
        GRAPHMEM_CONFIG=str(tmp_path / "no-such-config.toml"), GRAPHMEM_SERVER__PORT="0"
    )
    daemon = start(data_dir, opencode)
    try:
        for text, category in [(DIRECTIVE, "directive"), *((fact, "fact") for _, fact in TURNS if fact)]:
            remembered(data_dir, opencode.project, text, category=category)
        fake_llm.script(*(Text(f"Answer {i}.") for i in range(len(TURNS))))
        # Turn 1 waits for the daemon as long as it needs, load or not: it is not what the load is for.
        opencode.extra_env["GRAPHMEM_PLUGIN_TIMEOUT_MS"] = "10000"
        opencode.run_turn(TURNS[0][0], timeout=600)
        [listed] = opencode.stored_sessions()
        opencode.extra_env["GRAPHMEM_PLUGIN_TIMEOUT_MS"] = "300"  # read by the server as it starts
        with cpu_load(2), opencode.serve(timeout=600) as server:
            for turn, (ask, _) in enumerate(TURNS[1:], start=2):
                server.send_turn(ask, listed["id"], timeout=600)
                if turn == RESTART_AFTER_TURN:
                    daemon.stop()
                    daemon = start(data_dir, opencode)
            assert server.instances() == 1  # one OpenCode process, its plugin loaded once
    finally:
        daemon.stop()

    requests = fake_llm.requests
    assert len(requests) == len(TURNS)
    first = requests[0]
    assert DIRECTIVE in system_prompt(first)  # the boot block, decided on the first turn
    assert "port 5433" in canonical(first["messages"][-1])  # and the first turn's recall
    kept = [
        canonical(now["messages"][: len(before["messages"])]) == canonical(before["messages"])
        and canonical(now.get("tools")) == canonical(before.get("tools"))
        for before, now in itertools.pairwise(requests)
    ]
    assert kept == [True] * (len(TURNS) - 1)
