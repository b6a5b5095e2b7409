"""The daemon's /plugin routes over real HTTP: answers, validation (clear 400s), the Guard."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.daemons import Daemon, http, start_daemon

pytestmark = pytest.mark.integration

DECISION = "We decided to use Postgres 16 for billing because of logical replication."


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("proj")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root.resolve()


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory, project: Path) -> Iterator[Daemon]:
    running = start_daemon(tmp_path_factory.mktemp("daemon") / "data", GRAPHMEM_INGEST__ENABLED="false")
    body = {
        "method": "remember",
        "arguments": {"text": DECISION, "category": "decision", "project": str(project)},
    }
    status, _, raw = http(
        "POST", f"{running.url}/rpc", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    assert status == 200 and "result" in json.loads(raw), raw
    yield running
    running.stop()


def post(
    daemon: Daemon, route: str, body: Any, *, token: bool = True, **headers: str
) -> tuple[int, dict[str, Any]]:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    status, _, answer = http(
        "POST", f"{daemon.url}{route}", raw, {"Content-Type": "application/json", **headers}, token=token
    )
    parsed: dict[str, Any] = json.loads(answer)
    return status, parsed


def inject_body(project: Path, **changes: Any) -> dict[str, Any]:
    body = {
        "session_id": "ses_a1",
        "message_id": "msg_a1",
        "directory": str(project),
        "text": "billing database",
    }
    body.update(changes)
    return body


def test_inject_answers_a_block_with_the_projects_decision(daemon: Daemon, project: Path) -> None:
    status, answer = post(daemon, "/plugin/inject", inject_body(project, agent="build"))

    assert status == 200
    assert answer["block"].startswith('<memory source="graphmem">') and DECISION in answer["block"]
    assert len(answer["memory_ids"]) == 1 and answer["took_ms"] >= 0


def test_inject_for_the_title_agent_is_empty(daemon: Daemon, project: Path) -> None:
    status, answer = post(daemon, "/plugin/inject", inject_body(project, agent="title"))

    assert status == 200 and answer["block"] == "" and answer["skipped"] == "title"


def test_inject_leaves_out_what_the_system_prompt_holds(daemon: Daemon, project: Path) -> None:
    body = inject_body(project, session_id="ses_a2", system=f"AGENTS.md: {DECISION}")

    status, answer = post(daemon, "/plugin/inject", body)

    assert status == 200 and answer["block"] == ""


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "The body is not JSON"),
        (b"[1, 2]", "must be a JSON object"),
        ({"message_id": "msg_1"}, "session_id: Field required"),
        ({"session_id": "ses 1; drop", "message_id": "msg_1"}, "session_id: String should match pattern"),
        ({"session_id": "ses_1", "message_id": "msg_1", "extra": 1}, "extra: Extra inputs are not permitted"),
        (
            {"session_id": "ses_1", "message_id": "msg_1", "text": "x" * 100_001},
            "text: String should have at most",
        ),
        (
            {"session_id": "ses_1", "message_id": "msg_1", "files": ["a"] * 21},
            "files: List should have at most",
        ),
        ({"session_id": "ses_1", "message_id": "msg_1", "directory": "src/app"}, "is relative"),
    ],
)
def test_inject_rejects_bad_input_with_a_clear_400(daemon: Daemon, body: Any, message: str) -> None:
    status, answer = post(daemon, "/plugin/inject", body)

    assert status == 400
    assert message in answer["error"]


def test_compaction_answers_the_conventions_and_decisions_to_keep(daemon: Daemon, project: Path) -> None:
    status, answer = post(daemon, "/plugin/compaction", {"session_id": "ses_a1", "directory": str(project)})

    assert status == 200
    [context] = answer["context"]
    assert DECISION in context and "survive compaction" in context


def test_compaction_needs_a_session(daemon: Daemon) -> None:
    status, answer = post(daemon, "/plugin/compaction", {"directory": "/tmp"})

    assert status == 400 and "session_id" in answer["error"]


def test_ingest_is_queued(daemon: Daemon, tmp_path: Path) -> None:
    status, answer = post(daemon, "/plugin/ingest", {"session_id": "ses_unknown"})

    assert status == 202 and answer == {"queued": True, "session_id": "ses_unknown"}


def test_ingest_of_a_database_that_does_not_exist_is_a_400(daemon: Daemon, tmp_path: Path) -> None:
    status, answer = post(
        daemon, "/plugin/ingest", {"session_id": "ses_1", "db_path": str(tmp_path / "no.db")}
    )

    assert status == 400 and "is not an existing file" in answer["error"]


def test_the_routes_need_the_api_key_when_one_is_set(tmp_path: Path, project: Path) -> None:
    secured = start_daemon(
        tmp_path / "data", GRAPHMEM_API_KEY="s3cret-test-key", GRAPHMEM_INGEST__ENABLED="false"
    )
    try:
        for route in ("/plugin/inject", "/plugin/compaction", "/plugin/ingest"):
            status, answer = post(secured, route, inject_body(project), token=False)
            assert status == 401 and "API key" in answer["error"], route

        status, _ = post(
            secured, "/plugin/inject", inject_body(project), Authorization="Bearer s3cret-test-key"
        )

        assert status == 200
    finally:
        secured.stop()


def test_boot_answers_the_same_block_all_session(daemon: Daemon, project: Path) -> None:
    body = {
        "session_id": "ses_b1",
        "directory": str(project),
        "agent": "build",
        "system": "You are opencode.",
    }

    first = post(daemon, "/plugin/boot", body)
    again = post(daemon, "/plugin/boot", {**body, "system": "another prompt"})
    hidden = post(daemon, "/plugin/boot", {**body, "agent": "compaction"})

    assert first[0] == 200 and DECISION in first[1]["block"]
    assert again[1]["block"] == first[1]["block"]
    assert hidden[1] == {"block": "", "memory_ids": [], "shown": [], "skipped": "compaction"}


def turn_body(project: Path, *messages: str, **changes: Any) -> dict[str, Any]:
    body = {
        "session_id": "ses_t1",
        "directory": str(project),
        "agent": "build",
        "messages": [{"id": m, "hash": "h1"} for m in messages],
        "text": "Which port does the billing database listen on?",
    }
    body.update(changes)
    return body


FACT = "The billing database listens on port 5433 behind the bastion host."


def test_turn_gives_the_newest_message_its_block_and_keeps_it(daemon: Daemon, project: Path) -> None:
    remember = {
        "method": "remember",
        "arguments": {"text": FACT, "category": "fact", "project": str(project)},
    }
    assert post(daemon, "/rpc", remember)[0] == 200
    status, first = post(daemon, "/plugin/turn", turn_body(project, "msg_t1"))
    _, later = post(daemon, "/plugin/turn", turn_body(project, "msg_t1", "msg_t2", text="Rename the CSS"))

    assert status == 200 and FACT in first["blocks"]["msg_t1"] and first["new"] is True
    assert DECISION not in first["blocks"]["msg_t1"]  # the boot context's: not repeated per turn
    assert later["blocks"] == {"msg_t1": first["blocks"]["msg_t1"]}
    assert first["memory_ids"] and first["took_ms"] >= 0


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"messages": []}, "messages: List should have at least 1 item"),
        ({"messages": [{"id": "msg 1", "hash": "h"}]}, "messages.0.id: String should match pattern"),
        ({"messages": [{"id": "msg_1"}]}, "messages.0.hash: Field required"),
        ({"messages": [{"id": "msg_1", "hash": "h"}] * 501}, "messages: List should have at most 500"),
        ({"messages": "msg_1"}, "messages: Input should be a valid list"),
        ({"files": ["a"] * 21}, "files: List should have at most"),
        ({"directory": "src/app"}, "is relative"),
    ],
)
def test_turn_rejects_bad_input_with_a_clear_400(
    daemon: Daemon, project: Path, changes: dict[str, Any], message: str
) -> None:
    status, answer = post(daemon, "/plugin/turn", turn_body(project, "msg_1", **changes))

    assert status == 400
    assert message in answer["error"]


def test_turn_for_a_hidden_agent_is_empty(daemon: Daemon, project: Path) -> None:
    status, answer = post(daemon, "/plugin/turn", turn_body(project, "msg_h1", agent="title"))

    assert status == 200 and answer["blocks"] == {} and answer["skipped"] == "title"
