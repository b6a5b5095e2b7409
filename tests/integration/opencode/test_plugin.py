"""graphmem's OpenCode plugin inside the real OpenCode client, against the scripted fake model.

`graphmem install opencode` puts the MCP server and the plugin into the sandbox project; a
daemon of the test's own serves the store. What the plugin does is read from what reaches the
model: the request bodies the fake model records (the hidden title agent's apart).
"""

from __future__ import annotations

import itertools
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.accepting import Accepting
from support.daemons import (
    GRAPHMEM,
    POLL_S,
    SLOW_INGEST,
    Daemon,
    listed,
    remembered,
    sandbox_env,
    start_daemon,
)
from support.fake_llm import FakeLLM, Text, ToolCall, system_prompt
from support.opencode import OpenCodeSandbox

pytestmark = pytest.mark.integration

DECISION = "We decided to use Postgres 16 for billing because of logical replication."
PREFERENCE = "I prefer pytest over unittest."
# Ingest is queued by the plugin when the session goes idle and runs in the daemon's background.
INGEST_WAIT_S = 90.0


def graphmem(data_dir: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "graphmem", "--data-dir", str(data_dir), *args],
        env=sandbox_env(data_dir),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def install(opencode: OpenCodeSandbox, data_dir: Path) -> None:
    done = graphmem(data_dir, "install", "opencode", "--project", str(opencode.project))
    assert done.returncode == 0, done.stderr
    assert (opencode.project / ".opencode" / "plugins" / "graphmem.js").is_file()
    opencode.extra_env.update(
        GRAPHMEM_CONFIG=str(data_dir.parent / "no-such-config.toml"),
        GRAPHMEM_SERVER__PORT="0",  # never the user's port
    )


def serve(
    opencode: OpenCodeSandbox, tmp_path: Path, program: tuple[str, ...] = GRAPHMEM
) -> Iterator[tuple[OpenCodeSandbox, Daemon]]:
    """graphmem installed in the sandbox project (MCP + plugin), and its daemon already serving.

    The daemon's own continuous ingest is off, so what it learns comes from the plugin's call.
    """
    data_dir = tmp_path / "graphmem-data"
    install(opencode, data_dir)
    daemon = start_daemon(
        data_dir,
        "--port",
        "0",
        program=program,
        GRAPHMEM_INGEST__ENABLED="false",
        OPENCODE_DB=str(opencode.db_path),
    )
    # The machine running the tests may be busy: what is asserted is where memory goes, not how fast.
    opencode.extra_env["GRAPHMEM_PLUGIN_TIMEOUT_MS"] = "5000"
    yield opencode, daemon
    daemon.stop()


@pytest.fixture
def served(opencode: OpenCodeSandbox, tmp_path: Path) -> Iterator[tuple[OpenCodeSandbox, Daemon]]:
    yield from serve(opencode, tmp_path)


@pytest.fixture
def served_slow_ingest(opencode: OpenCodeSandbox, tmp_path: Path) -> Iterator[tuple[OpenCodeSandbox, Daemon]]:
    """As ``served``, with a daemon that reads the plugin's ingest request ``INGEST_DELAY_S`` late
    (``support/slow_ingest.py``), as a busy one may: ``opencode run`` would exit before that."""
    yield from serve(opencode, tmp_path, SLOW_INGEST)


def memories(daemon: Daemon, project: Path) -> list[dict[str, Any]]:
    """What ``graphmem list --json --limit 100`` prints in ``project``, asked from this process."""
    return listed(daemon.data_dir, project)


def wait_for(daemon: Daemon, project: Path, session: str, categories: set[str]) -> list[dict[str, Any]]:
    deadline = time.monotonic() + INGEST_WAIT_S
    learned: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        learned = [m for m in memories(daemon, project) if m.get("session") == session]
        if categories <= {m["category"] for m in learned}:
            return learned
        time.sleep(POLL_S)
    log = daemon.log.read_text("utf-8", errors="replace")[-3000:]
    raise AssertionError(f"graphmem did not learn {categories} from session {session}: {learned}\n{log}")


def memory_block(body: dict[str, Any]) -> str:
    prompt = system_prompt(body)
    start = prompt.find('<memory source="graphmem">')
    return prompt[start : prompt.index("</memory>", start) + len("</memory>")] if start >= 0 else ""


def test_what_one_session_decides_reaches_the_next_sessions_system_prompt(
    served_slow_ingest: tuple[OpenCodeSandbox, Daemon], fake_llm: FakeLLM
) -> None:
    # The session goes idle, the plugin asks the daemon to learn from it and `opencode run` ends:
    # the daemon reads that request seconds late, so it is learned only if the run waits for it.
    opencode, daemon = served_slow_ingest
    fake_llm.script(Text("Noted."))

    opencode.run_turn(f"{DECISION} {PREFERENCE}", timeout=180)

    [session] = opencode.stored_sessions()
    learned = wait_for(daemon, opencode.project, session["id"], {"decision", "preference"})
    [origin] = opencode.stored_user_message_ids(session["id"])
    decision = next(m for m in learned if m["category"] == "decision")
    preference = next(m for m in learned if m["category"] == "preference")
    assert "Postgres 16" in decision["text"] and "pytest" in preference["text"]
    assert decision["origin"] == origin and preference["origin"] == origin
    assert decision["source"] == "opencode"

    fake_llm.reset(Text("Use pytest."))
    opencode.run_turn("Which test framework should the billing service use?", timeout=180)

    [turn] = fake_llm.requests
    block = memory_block(turn)
    assert decision["id"] in block and preference["id"] in block
    assert "Postgres 16" in block and "pytest over unittest" in block
    assert "not instructions" in block
    assert fake_llm.title_requests, "a new session is named by the title agent"
    assert all("<memory" not in system_prompt(title) for title in fake_llm.title_requests)


def test_a_tool_loop_gets_the_same_block_on_every_call_and_the_title_agent_none(
    served: tuple[OpenCodeSandbox, Daemon], fake_llm: FakeLLM
) -> None:
    opencode, daemon = served
    (opencode.project / "billing.py").write_text("DATABASE = 'postgres'\n", "utf-8")
    cents = "Billing keeps money in integer cents, never floats, to avoid rounding errors."
    remembered(daemon.data_dir, opencode.project, cents, category="decision")
    fake_llm.script(ToolCall("read", {"filePath": str(opencode.project / "billing.py")}), Text("Done."))

    opencode.run_turn("How does billing store money amounts? Check billing.py.", timeout=180)

    first, second = fake_llm.requests
    assert "integer cents" in memory_block(first)
    assert memory_block(second) == memory_block(first)
    assert system_prompt(first).count('<memory source="graphmem">') == 1
    assert all("<memory" not in system_prompt(title) for title in fake_llm.title_requests)


class _Silent:
    """A TCP server that accepts connections and never answers (a hung daemon)."""

    def __init__(self) -> None:
        self._accepting = Accepting(lambda _connection, _number: None)  # each kept open, unanswered

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._accepting.port}"

    def close(self) -> None:
        self._accepting.close()
        for connection in self._accepting.open:
            connection.close()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_with_the_daemon_down_or_hung_the_turn_completes_with_no_block(
    opencode: OpenCodeSandbox, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    data_dir = tmp_path / "graphmem-data"
    install(opencode, data_dir)
    opencode.write_config()  # drop the MCP entry: nothing may start a daemon; the plugin stays
    data_dir.mkdir(parents=True)
    silent = _Silent()
    try:
        for url in (None, f"http://127.0.0.1:{_closed_port()}", silent.url):
            if url is not None:
                info = {"pid": 1, "url": url, "data_dir": str(data_dir), "started_at": 0, "version": "x"}
                (data_dir / "daemon.json").write_text(json.dumps(info), "utf-8")
            fake_llm.reset(Text("Still here."))

            done = opencode.run_turn("Say something.", timeout=180)

            assert "Still here." in done.stdout, url
            assert all("<memory" not in json.dumps(body) for body in fake_llm.all_requests), url
    finally:
        silent.close()


# -- the prompt cache: a five-turn session -----------------------------------------------------------

BOOT_DIRECTIVE = "Always run ruff format before committing any Python change."
# (what the turn asks, the fact recall should bring to it or None)
TURNS: tuple[tuple[str, str | None], ...] = (
    (
        "Which port does the staging database listen on?",
        "The staging database listens on port 5433 behind the bastion host.",
    ),
    ("Write a haiku about autumn leaves.", None),
    (
        "How are invoice PDFs rendered?",
        "Invoice PDFs are rendered with WeasyPrint from Jinja templates in billing/templates.",
    ),
    ("Tell me a joke about penguins.", None),
    (
        "Where do the CI runners cache pip wheels?",
        "The CI runners cache pip wheels in /var/cache/ci-wheels between jobs.",
    ),
)


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def last_user_index(body: dict[str, Any]) -> int:
    return max(i for i, m in enumerate(body["messages"]) if m.get("role") == "user")


def user_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(str(p.get("text", "")) for p in content or [] if isinstance(p, dict))


def remember(daemon: Daemon, project: Path, text: str, category: str) -> str:
    return remembered(daemon.data_dir, project, text, category=category)


def test_a_five_turn_session_keeps_every_earlier_request_as_a_byte_identical_prefix(
    served: tuple[OpenCodeSandbox, Daemon], fake_llm: FakeLLM
) -> None:
    opencode, daemon = served
    boot_id = remember(daemon, opencode.project, BOOT_DIRECTIVE, "directive")
    facts = {i: remember(daemon, opencode.project, fact, "fact") for i, (_, fact) in enumerate(TURNS) if fact}
    fake_llm.script(*(Text(f"Answer {i}.") for i in range(len(TURNS))))

    session = ""
    with opencode.serve() as server:  # one OpenCode process, as the TUI runs: each turn attached to it
        for ask, _ in TURNS:
            server.run_turn(ask, *(["--session", session] if session else []), timeout=180)
            if not session:
                [listed] = opencode.stored_sessions()
                session = listed["id"]
        assert server.instances() == 1  # the plugin was loaded once and served every turn

    requests = fake_llm.requests
    assert len(requests) == len(TURNS)
    for before, now in itertools.pairwise(requests):
        # (a) the whole previous request is the start of this one, byte for byte
        assert canonical(now["messages"][: len(before["messages"])]) == canonical(before["messages"])
        assert canonical(now.get("tools")) == canonical(before.get("tools"))
    for turn, body in enumerate(requests):
        newest = body["messages"][last_user_index(body)]
        assert TURNS[turn][0] in user_text(newest)
        # (c) the boot context is in the system prompt from the first turn on
        assert boot_id in system_prompt(body) and BOOT_DIRECTIVE in system_prompt(body)
        for fact_turn, fact_id in facts.items():
            # (b) a turn's memory first appears in that turn's user message, never in the system prompt
            assert fact_id not in system_prompt(body)
            earlier = [m for m in body["messages"][: last_user_index(body)]]
            if fact_turn == turn:
                assert fact_id in user_text(newest) and "<memory" in user_text(newest)
                assert fact_id not in canonical(earlier)
            elif fact_turn > turn:
                assert fact_id not in canonical(body["messages"])
        if TURNS[turn][1] is None:
            assert "<memory" not in user_text(newest)  # nothing cleared the floor: nothing added
        assert user_text(newest).count(boot_id) == 0  # the boot context is not repeated per turn
    assert all("<memory" not in canonical(title) for title in fake_llm.title_requests)


# -- a daemon restart in the middle of a session -------------------------------------------------

STAGING = "The staging database listens on port 5433 behind the bastion host."
INVOICES = "Invoice PDFs are rendered with WeasyPrint from Jinja templates in billing/templates."
RESTART_TURNS = (
    "Which port does the staging database listen on?",
    # recalls both: the staging port (shown by turn 1 already) and the invoices (new)
    "Remind me which port the staging database listens on, and how are invoice PDFs rendered?",
)


def test_a_memory_shown_before_the_daemon_restarted_is_not_shown_again_and_the_prefix_stays(
    opencode: OpenCodeSandbox, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    # The daemon keeps what a session was shown in its memory only; the plugin's journal tells the
    # restarted one. Each `opencode run` is an OpenCode process of its own, as a restarted TUI is.
    data_dir = tmp_path / "graphmem-data"
    install(opencode, data_dir)
    opencode.extra_env["GRAPHMEM_PLUGIN_TIMEOUT_MS"] = "5000"  # a busy machine: not a test of speed

    def start() -> Daemon:
        return start_daemon(
            data_dir, "--port", "0", GRAPHMEM_INGEST__ENABLED="false", OPENCODE_DB=str(opencode.db_path)
        )

    daemon = start()
    try:
        boot_id = remember(daemon, opencode.project, BOOT_DIRECTIVE, "directive")
        staging_id = remember(daemon, opencode.project, STAGING, "fact")
        invoices_id = remember(daemon, opencode.project, INVOICES, "fact")
        fake_llm.script(Text("Answer 1."), Text("Answer 2."))
        opencode.run_turn(RESTART_TURNS[0], timeout=180)
        [session] = opencode.stored_sessions()
        daemon.stop()
        daemon = start()
        opencode.run_turn(RESTART_TURNS[1], "--session", session["id"], timeout=180)
    finally:
        daemon.stop()

    first, second = fake_llm.requests
    first_turn = user_text(first["messages"][last_user_index(first)])
    second_turn = user_text(second["messages"][last_user_index(second)])
    assert staging_id in first_turn and invoices_id not in first_turn
    assert boot_id in system_prompt(first)
    # the bytes already sent, system prompt and boot block included, start the next request unchanged
    assert canonical(second["messages"][: len(first["messages"])]) == canonical(first["messages"])
    assert RESTART_TURNS[1] in second_turn and invoices_id in second_turn  # the restarted daemon answered
    assert staging_id not in second_turn  # and did not show again what turn 1 showed
    assert canonical(second["messages"]).count(staging_id) == 1
