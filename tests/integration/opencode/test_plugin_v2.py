"""graphmem's OpenCode plugin in OpenCode 2, through a host stand-in (``v2_host.mjs``).

OpenCode 2 (2.3.x) is not installable on the machines these tests run on; the stand-in loads the
same plugin file the OpenCode 1 real-client tests use, calls its ``setup(ctx)`` and each hook with
the shapes OpenCode 2's source defines (the source files and commits are listed in the stand-in),
and prints what each request would send and every request the plugin made to the daemon.

The tests that only need a daemon serving (``module_daemon``, ``served`` with the memories of
``TURNS``) share one for the module (a daemon start is about 2.5 s of CPU); each has a project of
its own (its memories) and a session id of its own (what the daemon keeps of a session: what it
showed, its boot block, what it learned).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.daemons import POLL_S, Daemon, listed, remembered, start_daemon
from support.opencode_db import T0_MS, OpenCodeDB, add_v2_message
from support.opencode_plugin_node import PLUGIN_FILE, remember_over_rpc, run_plugin_in_node

from graphmem.core.keys import shown_key
from graphmem.core.text import content_hash

pytestmark = pytest.mark.integration

HOST = Path(__file__).with_name("v2_host.mjs")
SESSION = "ses_v2main"
SYSTEM = ["You are OpenCode, an interactive coding agent.", "Instructions from: AGENTS.md"]
DIRECTIVE = "Always run ruff format before committing any Python change."
# Five turns; the odd ones ask about something graphmem knows.
TURNS = (
    ("Which port does the staging database listen on?", "The staging database listens on port 5433."),
    ("Write a haiku about autumn leaves.", None),
    (
        "How is the billing service deployed to production?",
        "Billing deploys to production with make release.",
    ),
    ("Write a limerick about a cat.", None),
    (
        "Which queue does the invoice worker consume from?",
        "The invoice worker consumes from the ledger-invoices queue.",
    ),
)


def host(
    data_dir: Path,
    project: Path,
    steps: list[dict[str, Any]],
    timeout_ms: int = 10_000,  # the machine may be busy: what is asserted is where memory goes
    env: dict[str, str] | None = None,
    **sessions: dict[str, str],
) -> Any:
    script = json.dumps({"directory": str(project), "sessions": sessions, "steps": steps})
    if len(script) > 100_000:  # more than one argument may hold: handed over in a file
        held = data_dir.parent / "host-script.json"
        held.write_text(script, "utf-8")
        script = f"@{held}"
    args = [str(HOST), PLUGIN_FILE.as_uri(), script]
    return run_plugin_in_node(args, data_dir, project, timeout_ms=timeout_ms, **(env or {}))


def conversation(upto: int, *, tool_call: bool = False, session: str = SESSION) -> list[dict[str, Any]]:
    """The steps of turn ``upto`` (1-based) of ``session``: the prompt, then the request rebuilt
    from the history."""
    messages: list[dict[str, str]] = []
    for n, (ask, _) in enumerate(TURNS[:upto], 1):
        messages.append({"id": f"msg_u{n}", "role": "user", "text": ask})
        if n < upto:
            messages.append({"id": f"msg_a{n}", "role": "assistant", "text": f"Answer {n}."})
    ask = TURNS[upto - 1][0]
    steps: list[dict[str, Any]] = [
        {"do": "prompt", "sessionID": session, "messageID": f"msg_u{upto}", "text": ask},
        {"do": "context", "sessionID": session, "system": SYSTEM, "messages": messages},
    ]
    if tool_call:  # the agent loop calls the model again after a tool ran, with the same history before it
        steps.append(
            {"do": "tool", "sessionID": session, "tool": "read", "input": {"filePath": "billing.py"}}
        )
        looped = [*messages, {"id": f"msg_a{upto}", "role": "assistant", "text": f"Answer {upto}."}]
        steps.append({"do": "context", "sessionID": session, "system": SYSTEM, "messages": looped})
    return steps


def remember(daemon: Daemon, project: Path, text: str, category: str) -> None:
    remember_over_rpc(daemon.url, project, text, category)


def paths(run: dict[str, Any], path: str) -> list[dict[str, Any]]:
    return [request for request in run["requests"] if request["path"] == path]


def sent(result: dict[str, Any]) -> str:
    """What the request sends, as bytes would compare: its system prompt and messages."""
    return json.dumps([result["system"], result["messages"]])


@pytest.fixture(scope="module")
def module_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    daemon = start_daemon(tmp_path_factory.mktemp("v2") / "data", GRAPHMEM_INGEST__ENABLED="false")
    yield daemon
    daemon.stop()


@pytest.fixture
def served(module_daemon: Daemon, project: Path) -> Daemon:
    """The module's daemon, with the directive and the facts of ``TURNS`` in this test's project."""
    remember(module_daemon, project, DIRECTIVE, "directive")
    for _, fact in TURNS:
        if fact:
            remember(module_daemon, project, fact, "fact")
    return module_daemon


@pytest.fixture
def session(request: pytest.FixtureRequest) -> str:
    """A session id of this test's own, for a test on the module's daemon: its name's start, and
    a digest of the whole name so that two names alike that far stay two sessions."""
    name = request.node.name
    return f"ses_v2{name.removeprefix('test_')[:40]}_{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def test_the_plugin_loads_as_opencode_2_loads_it_and_registers_its_hooks(
    tmp_path: Path, project: Path
) -> None:
    run = host(tmp_path / "data", project, [])

    assert run["loaded"] == {"id": "graphmem", "setup": True, "server": True}
    assert sorted(run["registered"]["session"]) == ["compaction", "context", "prompt"]
    assert run["registered"]["tool"] == ["execute.before"]
    assert run["cleanup"] == "function"


def test_five_turns_keep_every_earlier_byte_with_boot_once_and_recall_in_each_turns_message(
    served: Daemon, project: Path, session: str
) -> None:
    steps = [step for n in range(1, 6) for step in conversation(n, tool_call=n == 3, session=session)]

    run = host(served.data_dir, project, steps)

    calls = run["results"]
    assert len(calls) == 6  # five turns, the third with a tool call
    boot = calls[0]["system"][len(SYSTEM) :]
    assert len(boot) == 1 and DIRECTIVE in boot[0] and boot[0].startswith('<memory source="graphmem">')
    assert all(call["system"] == calls[0]["system"] for call in calls)  # the same bytes all session
    assert len(paths(run, "/plugin/boot")) == 1
    assert len(paths(run, "/plugin/turn")) == 5  # one per user message, none for the tool loop's call
    for before, after in itertools.pairwise(calls):  # every request starts with the previous one
        assert after["messages"][: len(before["messages"])] == before["messages"]
    last = {message["id"]: message["texts"] for message in calls[-1]["messages"]}
    assert [last[f"msg_u{n}"][0] for n in range(1, 6)] == [ask for ask, _ in TURNS]
    # Each memory is recalled once, into the user message of its turn (or of an earlier turn it also
    # answered), and never into the system prompt.
    for n, (_, fact) in enumerate(TURNS, 1):
        if fact:
            shown = [m for m in range(1, 6) if any(fact in text for text in last[f"msg_u{m}"][1:])]
            assert len(shown) == 1 and shown[0] <= n, (n, shown)
            assert all(fact not in text for text in calls[-1]["system"])
    assert any(TURNS[0][1] in text for text in last["msg_u1"][1:])  # type: ignore[operator]
    assert last["msg_u1"][1].startswith('\n\n<memory source="graphmem">')  # a text part of its own
    assert all(len(texts) == 1 for key, texts in last.items() if key.startswith("msg_a"))


def test_a_new_process_replays_the_same_bytes_from_the_journal_with_the_daemon_gone(
    tmp_path: Path, project: Path
) -> None:
    data_dir = tmp_path / "data"
    daemon = start_daemon(data_dir, GRAPHMEM_INGEST__ENABLED="false")
    try:
        remember(daemon, project, DIRECTIVE, "directive")
        remember(daemon, project, TURNS[0][1] or "", "fact")
        first = host(data_dir, project, conversation(1))
    finally:
        daemon.stop()

    replayed = host(data_dir, project, conversation(2))  # OpenCode restarted; no daemon now

    [before], [after] = first["results"], replayed["results"]
    assert after["system"] == before["system"] and DIRECTIVE in before["system"][-1]
    assert after["messages"][:1] == before["messages"] and len(before["messages"][0]["texts"]) == 2
    assert after["messages"][-1]["texts"] == [TURNS[1][0]]  # only the newest went without recall
    assert paths(replayed, "/plugin/boot") == []


def test_a_new_process_tells_a_restarted_daemon_what_the_boot_block_and_earlier_turns_showed(
    tmp_path: Path, project: Path
) -> None:
    data_dir = tmp_path / "data"
    daemon = start_daemon(data_dir, GRAPHMEM_INGEST__ENABLED="false")
    try:
        directive = shown_key(
            remembered(data_dir, project, DIRECTIVE, category="directive"), content_hash(DIRECTIVE)
        )
        fact_text = TURNS[0][1] or ""
        fact = shown_key(remembered(data_dir, project, fact_text, category="fact"), content_hash(fact_text))
        host(data_dir, project, conversation(1))
    finally:
        daemon.stop()
    again = start_daemon(data_dir, GRAPHMEM_INGEST__ENABLED="false")
    try:
        run = host(data_dir, project, conversation(2))  # OpenCode restarted too: a new process
    finally:
        again.stop()

    [turn] = paths(run, "/plugin/turn")
    assert turn["status"] == 200 and turn["body"]["shown"] == [directive, fact]  # the boot block's first


def test_a_message_cut_to_its_limit_inside_an_emoji_still_gets_its_memory(
    served: Daemon, project: Path, session: str
) -> None:
    # The plugin sends a message's first 100,000 UTF-16 units: here the last of them is the first
    # half of the emoji's pair. Sent as it fell, that half was a lone surrogate the daemon refuses.
    kept = TURNS[0][0] + " " + "x" * (99_999 - len(TURNS[0][0]) - 1)
    ask = kept + "\N{ROCKET} and the rest of a long paste"
    steps = [
        {"do": "prompt", "sessionID": session, "messageID": "msg_u1", "text": ask},
        {
            "do": "context",
            "sessionID": session,
            "system": SYSTEM,
            "messages": [{"id": "msg_u1", "role": "user", "text": ask}],
        },
    ]

    run = host(served.data_dir, project, steps)

    [turn] = paths(run, "/plugin/turn")
    assert turn["status"] == 200 and turn["body"]["text"] == kept  # cut before the emoji, whole
    [result] = run["results"]
    texts = result["messages"][0]["texts"]
    assert texts[0] == ask and any(TURNS[0][1] in text for text in texts[1:])  # type: ignore[operator]


def test_a_subagents_session_and_the_title_request_get_nothing(
    served: Daemon, project: Path, session: str
) -> None:
    child = f"{session}child"
    messages = [{"id": "msg_c1", "role": "user", "text": TURNS[0][0]}]
    steps = [
        {"do": "prompt", "sessionID": child, "messageID": "msg_c1", "text": TURNS[0][0]},
        {"do": "context", "sessionID": child, "agent": "explore", "system": SYSTEM, "messages": messages},
        {"do": "title", "sessionID": session, "system": ["You are a title generator."], "messages": messages},
    ]

    run = host(served.data_dir, project, steps, **{child: {"parentID": session}})

    subagent, title = run["results"]
    assert subagent["system"] == SYSTEM and subagent["messages"] == [
        {"id": "msg_c1", "role": "user", "texts": [TURNS[0][0]]}
    ]
    assert title["system"] == ["You are a title generator."] and len(title["messages"][0]["texts"]) == 1
    assert run["requests"] == []


def test_with_no_daemon_every_turn_goes_out_as_it_came(tmp_path: Path, project: Path) -> None:
    steps = [step for n in range(1, 4) for step in conversation(n)]
    steps.append({"do": "event", "type": "session.execution.succeeded", "sessionID": SESSION})

    run = host(tmp_path / "no-daemon", project, steps)

    assert [call["system"] for call in run["results"]] == [SYSTEM] * 3
    assert all(len(m["texts"]) == 1 for call in run["results"] for m in call["messages"])
    assert run["requests"] == []  # no daemon.json: nothing was even tried


def test_a_finished_session_is_handed_to_the_daemon_to_learn_and_compaction_keeps_conventions(
    served: Daemon, project: Path, session: str
) -> None:
    steps = [
        *conversation(1, session=session),
        {"do": "event", "type": "session.execution.succeeded", "sessionID": ""},  # names no session
        {"do": "event", "type": "session.execution.succeeded", "sessionID": session},
        {"do": "compaction", "sessionID": session, "system": ["Summarize the conversation."], "messages": []},
        {"do": "event", "type": "session.compaction.ended", "sessionID": session},
    ]
    folder = served.data_dir / "plugin-journal"
    before = set(folder.iterdir()) if folder.exists() else set()  # the module's other tests' sessions

    run = host(served.data_dir, project, steps)

    ingests = paths(run, "/plugin/ingest")
    assert ingests and all((r["status"], r["body"]["session_id"]) == (202, session) for r in ingests)
    compaction = run["results"][1]
    assert any(DIRECTIVE in text for text in compaction["system"][1:])
    assert sorted(path.name for path in set(folder.iterdir()) - before) == [f"{session}.json"]
    journal = json.loads((folder / f"{session}.json").read_text("utf-8"))
    assert journal["boot"] is None  # picked again on the first call after compaction
    assert journal["boot_shown"] == []  # and what it shows with it


def test_a_daemon_that_never_answers_costs_the_turn_its_memory_not_the_turn(
    tmp_path: Path, project: Path
) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    with socket.socket() as hung:  # accepts connections (the backlog) and never answers
        hung.bind(("127.0.0.1", 0))
        hung.listen(8)
        port = hung.getsockname()[1]
        info = {"url": f"http://127.0.0.1:{port}", "pid": os.getpid()}
        (data_dir / "daemon.json").write_text(json.dumps(info), "utf-8")
        (data_dir / "daemon.token").write_text("secret", "utf-8")

        run = host(data_dir, project, conversation(1), timeout_ms=300)

    [call] = run["results"]
    assert call["system"] == SYSTEM and call["messages"][0]["texts"] == [TURNS[0][0]]
    assert run["requests"] and all(request["status"] == 0 for request in run["requests"])


def test_an_opencode_2_session_is_learned_from_opencode_2s_database_when_its_turn_ends(
    module_daemon: Daemon, tmp_path: Path, project: Path, session: str
) -> None:
    decision = "We decided to use Postgres 16 for billing because of logical replication."
    store = OpenCodeDB(tmp_path / "opencode" / "opencode.db")  # OpenCode 2's tables, from its source
    store.session(str(project), session_id=session)
    add_v2_message(store, session, "user", {"text": decision}, at_ms=T0_MS + 100)
    answer = {"agent": "build", "content": [{"type": "text", "id": "t", "text": "Noted."}]}
    answer["time"] = {"created": T0_MS + 200, "completed": T0_MS + 300}
    add_v2_message(store, session, "assistant", answer, at_ms=T0_MS + 200)
    store.close()
    steps = [{"do": "event", "type": "session.execution.succeeded", "sessionID": session}]

    run = host(module_daemon.data_dir, project, steps, env={"OPENCODE_DB": str(store.path)})

    assert [r["status"] for r in paths(run, "/plugin/ingest")] == [202]
    learned = learned_from(module_daemon, project, session)
    assert any(m["category"] == "decision" and "Postgres 16" in m["text"] for m in learned), learned


def learned_from(daemon: Daemon, project: Path, session: str) -> list[dict[str, Any]]:
    """The memories learned from ``session``, once the daemon's queued ingest stored some (or 90 s)."""
    deadline = time.monotonic() + 90
    while True:
        learned = [m for m in listed(daemon.data_dir, project, limit=50) if m.get("session") == session]
        if learned or time.monotonic() > deadline:
            return learned
        time.sleep(POLL_S)
