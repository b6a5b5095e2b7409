"""graphmem's OpenCode plugin inside the real OpenCode client, against the scripted fake model.

`graphmem install opencode` puts the MCP server and the plugin into the sandbox project; a
daemon of the test's own serves the store. What the plugin does is read from what reaches the
model: the request bodies the fake model records (the hidden title agent's apart).

The tests of a served plugin read one recorded run (``recorded``, a module fixture: an OpenCode
process is 6 to 10 s of CPU, a daemon's start 1.5 to 2.5), each asserting its own part of it: a
session that states a decision and a preference, learned once its ``opencode run`` ends; then
one ``opencode serve`` taking a five-turn session and the next session, a tool loop, whose
system prompt holds what was learned; then the daemon restarted and the five-turn session
resumed by a new ``opencode run``.
"""

from __future__ import annotations

import itertools
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.accepting import Accepting
from support.daemons import (
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
from support.session_scenario import BOOT_DIRECTIVE
from support.session_scenario import TURNS as SCENARIO_TURNS

pytestmark = pytest.mark.integration

DECISION = "We decided to use Postgres 16 for billing because of logical replication."
PREFERENCE = "I prefer pytest over unittest."
# Ingest is queued by the plugin when the session goes idle and runs in the daemon's background.
INGEST_WAIT_S = 90.0
TITLE_WAIT_S = 30.0


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


def memories(daemon: Daemon, project: Path) -> list[dict[str, Any]]:
    """What ``graphmem list --json --limit 100`` prints in ``project``, asked from this process."""
    return listed(daemon.data_dir, project)


def learned_from(daemon: Daemon, project: Path, session: str, categories: set[str]) -> list[dict[str, Any]]:
    """The memories learned from ``session``, once they hold ``categories`` (or what there is after
    ``INGEST_WAIT_S``: the test that reads them says what is missing)."""
    deadline = time.monotonic() + INGEST_WAIT_S
    while True:
        learned = [m for m in memories(daemon, project) if m.get("session") == session]
        if categories <= {m["category"] for m in learned} or time.monotonic() > deadline:
            return learned
        time.sleep(POLL_S)


def memory_block(body: dict[str, Any]) -> str:
    prompt = system_prompt(body)
    start = prompt.find('<memory source="graphmem">')
    return prompt[start : prompt.index("</memory>", start) + len("</memory>")] if start >= 0 else ""


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


# -- one recorded run of a served plugin, read by the tests below ---------------------------------

# The shared scenario's first five turns (``support/session_scenario.py``): its sixth, small talk,
# is the sixth turn's place here, which asks after the restart.
TURNS = SCENARIO_TURNS[:5]
# Remembered once the daemon restarted: no turn before it could show it.
DEPLOY = "The billing service deploys to production with make release from the main branch."
# Recalls both: the staging port (shown by turn 1 already) and the deploy (new).
RESUMED_ASK = "Remind me which port the staging database listens on, and how is the billing service deployed?"
CENTS = "Billing keeps money in integer cents, never floats, to avoid rounding errors."
TOOL_ASK = "How does billing store money amounts? Check billing.py."


@dataclass(frozen=True)
class Phase:
    """What reached the model in one part of the run: the turns' requests, the title agent's."""

    requests: list[dict[str, Any]]
    title_requests: list[dict[str, Any]]


def taken(llm: FakeLLM, *script: Text | ToolCall) -> Phase:
    """What ``llm`` recorded since the last phase; then it records afresh, with ``script`` next."""
    phase = Phase(list(llm.requests), list(llm.title_requests))
    llm.reset(*script)
    return phase


@dataclass(frozen=True)
class Recorded:
    project: Path
    decided_messages: list[str]  # the ids of the user messages of the session that decided
    learned: list[dict[str, Any]]  # what the daemon learned from that session
    boot_id: str
    facts: dict[int, str]  # the index in TURNS of the turn a fact answers -> the fact's id
    cents_id: str
    five_turns: Phase  # the five turns of one session, sent to one `opencode serve`
    next_session: Phase  # a new session's turn sent to that server: a tool loop
    instances: int  # the OpenCode instances that server created
    deploy_id: str
    resumed: Phase  # the five-turn session's sixth turn: a new `opencode run`, the daemon restarted
    daemon_log: str  # the end of the daemons' log, for a failure's message


@pytest.fixture(scope="module")
def recorded(opencode_binary: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    """One OpenCode sandbox with graphmem installed, its daemon serving, the model scripted; in order:

    1. a session, an ``opencode run`` that states a decision and a preference and exits once the
       session is idle; the daemon gets to the plugin's ingest request 2 s after it arrived, before
       anything of it has read the request (``support/slow_ingest.py``, ``SLOW_INGEST``), as a
       busy one may: a client gone by then leaves a disconnect, not the request, so the session is
       learned only if the run waited for the daemon's answer;
    2. once learned, and one more decision remembered, one ``opencode serve``, as a TUI runs one,
       with turns sent as ``opencode run --attach`` sends them (``send_turn``): five turns of one
       session (memories relevant on turns 1, 3 and 5, a directive for the boot block), then a
       new session's turn that reads a file (a tool loop);
    3. the daemon restarted, and the five-turn session resumed by a new ``opencode run
       --session``, as a restarted TUI is: a memory shown on turn 1 is asked about again, with
       one no turn showed.

    Each test asserts its own part; nothing here asserts what a test is about."""
    root = tmp_path_factory.mktemp("plugin-session")
    data_dir = root / "graphmem-data"
    with FakeLLM() as llm:
        opencode = OpenCodeSandbox.create(opencode_binary, root / "opencode", llm)
        install(opencode, data_dir)
        # The machine running the tests may be busy: what is asserted is where memory goes, not how fast.
        opencode.extra_env["GRAPHMEM_PLUGIN_TIMEOUT_MS"] = "5000"
        (opencode.project / "billing.py").write_text("DATABASE = 'postgres'\n", "utf-8")

        def start() -> Daemon:
            # Its own continuous ingest off: what it learns comes from the plugin's call.
            return start_daemon(
                data_dir,
                "--port",
                "0",
                program=SLOW_INGEST,
                GRAPHMEM_INGEST__ENABLED="false",
                OPENCODE_DB=str(opencode.db_path),
            )

        daemon = start()
        try:
            boot_id = remember(daemon, opencode.project, BOOT_DIRECTIVE, "directive")
            facts = {
                i: remember(daemon, opencode.project, fact, "fact")
                for i, (_, fact) in enumerate(TURNS)
                if fact
            }
            llm.reset(Text("Noted."))
            opencode.run_turn(f"{DECISION} {PREFERENCE}", timeout=180)
            [decided] = opencode.stored_sessions()
            decided_messages = opencode.stored_user_message_ids(decided["id"])
            learned = learned_from(daemon, opencode.project, decided["id"], {"decision", "preference"})
            cents_id = remember(daemon, opencode.project, CENTS, "decision")

            llm.reset(*(Text(f"Answer {i}.") for i in range(len(TURNS))))
            session = ""
            with opencode.serve() as server:  # one OpenCode process, as the TUI runs: each turn sent to it
                for ask, _ in TURNS:
                    session, _ = server.send_turn(ask, session, timeout=180)
                read = ToolCall("read", {"filePath": str(opencode.project / "billing.py")})
                five_turns = taken(llm, read, Text("Done."))
                server.send_turn(TOOL_ASK, timeout=180)
                titled = time.monotonic() + TITLE_WAIT_S  # the title agent names the session beside the turn
                while not llm.title_requests and time.monotonic() < titled:
                    time.sleep(POLL_S)
                instances = server.instances()
            next_session = taken(llm, Text("Answer 5."))

            # The daemon keeps what a session was shown in its memory only; the plugin's journal
            # tells the restarted one. A new OpenCode process, as a restarted TUI is.
            daemon.stop()
            daemon = start()
            deploy_id = remember(daemon, opencode.project, DEPLOY, "fact")
            opencode.run_turn(RESUMED_ASK, "--session", session, timeout=180)
            resumed = taken(llm)
        finally:
            daemon.stop()
        log = daemon.log.read_text("utf-8", errors="replace")[-3000:]
    yield Recorded(
        opencode.project,
        decided_messages,
        learned,
        boot_id,
        facts,
        cents_id,
        five_turns,
        next_session,
        instances,
        deploy_id,
        resumed,
        log,
    )


def test_what_one_session_decides_reaches_the_next_sessions_system_prompt(recorded: Recorded) -> None:
    # The session went idle, the plugin asked the daemon to learn from it and `opencode run` ended:
    # the daemon got to that request seconds after it arrived, so it was learned only if the run
    # was still there to be answered (a plugin that does not wait for the answer fails here).
    # The next session's turn went to an OpenCode process started after that.
    learned = recorded.learned
    assert {"decision", "preference"} <= {m["category"] for m in learned}, f"{learned}\n{recorded.daemon_log}"
    [origin] = recorded.decided_messages
    decision = next(m for m in learned if m["category"] == "decision")
    preference = next(m for m in learned if m["category"] == "preference")
    assert "Postgres 16" in decision["text"] and "pytest" in preference["text"]
    assert decision["origin"] == origin and preference["origin"] == origin
    assert decision["source"] == "opencode"

    turn = recorded.next_session.requests[0]  # the next session's first call to the model
    block = memory_block(turn)
    assert decision["id"] in block and preference["id"] in block
    assert "Postgres 16" in block and "pytest over unittest" in block
    assert "not instructions" in block
    assert recorded.next_session.title_requests, "a new session is named by the title agent"
    assert all("<memory" not in system_prompt(title) for title in recorded.next_session.title_requests)


def test_a_tool_loop_gets_the_same_block_on_every_call_and_the_title_agent_none(recorded: Recorded) -> None:
    first, second = recorded.next_session.requests
    assert recorded.cents_id in memory_block(first) and "integer cents" in memory_block(first)
    assert memory_block(second) == memory_block(first)
    assert system_prompt(first).count('<memory source="graphmem">') == 1
    assert all("<memory" not in system_prompt(title) for title in recorded.next_session.title_requests)


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


def test_a_five_turn_session_keeps_every_earlier_request_as_a_byte_identical_prefix(
    recorded: Recorded,
) -> None:
    boot_id, facts = recorded.boot_id, recorded.facts
    assert recorded.instances == 1  # one OpenCode process: the plugin was loaded once and served every turn

    requests = recorded.five_turns.requests
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
    assert all("<memory" not in canonical(title) for title in recorded.five_turns.title_requests)


# -- a daemon restart in the middle of a session -------------------------------------------------


def test_a_memory_shown_before_the_daemon_restarted_is_not_shown_again_and_the_prefix_stays(
    recorded: Recorded,
) -> None:
    # The five turns went to one OpenCode process; the daemon was restarted, and the sixth turn is
    # a new `opencode run --session` (a restarted TUI), whose plugin knows only the journal.
    before = recorded.five_turns.requests
    [after] = recorded.resumed.requests
    staging_id = recorded.facts[0]
    first_turn = user_text(before[0]["messages"][last_user_index(before[0])])
    resumed_turn = user_text(after["messages"][last_user_index(after)])
    assert staging_id in first_turn
    assert all(recorded.deploy_id not in canonical(body) for body in before)
    assert recorded.boot_id in system_prompt(after)
    # the bytes already sent, system prompt and boot block included, start the next request unchanged
    last = before[-1]
    assert canonical(after["messages"][: len(last["messages"])]) == canonical(last["messages"])
    assert RESUMED_ASK in resumed_turn and recorded.deploy_id in resumed_turn  # the restarted daemon answered
    assert staging_id not in resumed_turn  # and did not show again what turn 1 showed
    assert canonical(after["messages"]).count(staging_id) == 1
