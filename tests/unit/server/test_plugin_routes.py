"""The OpenCode plugin's routes (``/plugin/*``) in process on the in-memory store: what each
answers, and that a bad body is a 400 saying what is wrong, never a 500 or a traceback.
The same routes over real HTTP beside a real daemon: tests/integration/opencode/test_plugin_routes.py."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from graphmem.errors import InvalidInputError, StoreError
from graphmem.server import plugin_routes
from graphmem.server.guard import Policy
from graphmem.server.http import build_app
from graphmem.server.runtime import Runtime
from graphmem.service.memory import MemoryService

TOKEN = "t" * 43
HEADERS = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
DIRECTIVE = "Never push directly to main; open a merge request"


@pytest.fixture
def project(tmp_path: Path) -> str:
    root = tmp_path / "shop"
    root.mkdir()
    return str(root)


@pytest.fixture
def client(memory_service: MemoryService, project: str) -> Iterator[TestClient]:
    memory_service.remember(DIRECTIVE, category="directive", project=project)
    runtime = Runtime(
        memory_service, log_hint="stderr", resolve_project=lambda p: p,
        version="t",
    )  # fmt: skip
    app = build_app(runtime, Policy.build(token=TOKEN, api_key=None, max_bytes=1_000_000, rate_limit=0))
    with TestClient(app, base_url="http://127.0.0.1:9824", raise_server_exceptions=False) as running:
        yield running


def post(client: TestClient, route: str, body: Any) -> tuple[int, dict[str, Any]]:
    content = body if isinstance(body, bytes) else None
    response = client.post(route, headers=HEADERS, content=content, json=None if content else body)
    answer: dict[str, Any] = response.json()
    return response.status_code, answer


def test_boot_answers_the_projects_directives_as_a_block(client: TestClient, project: str) -> None:
    status, answer = post(client, "/plugin/boot", {"session_id": "ses_1", "directory": project})

    assert status == 200
    assert DIRECTIVE in answer["block"]
    assert len(answer["memory_ids"]) == 1


def test_boot_is_the_same_block_all_session(
    client: TestClient, project: str, memory_service: MemoryService
) -> None:
    _, first = post(client, "/plugin/boot", {"session_id": "ses_1", "directory": project})
    memory_service.remember("Run the linters before every commit", category="directive", project=project)

    _, again = post(client, "/plugin/boot", {"session_id": "ses_1", "directory": project})

    assert again["block"] == first["block"]


def test_opencodes_hidden_agents_get_no_block(client: TestClient, project: str) -> None:
    status, answer = post(
        client, "/plugin/boot", {"session_id": "ses_1", "directory": project, "agent": "title"}
    )

    assert status == 200
    assert answer == {"block": "", "memory_ids": [], "shown": [], "skipped": "title"}


def test_a_removed_directory_is_no_project_and_no_error(client: TestClient, tmp_path: Path) -> None:
    status, answer = post(
        client, "/plugin/boot", {"session_id": "ses_1", "directory": str(tmp_path / "gone")}
    )

    assert status == 200
    assert DIRECTIVE not in answer["block"]


def test_a_relative_directory_is_a_400_asking_for_an_absolute_one(client: TestClient) -> None:
    status, answer = post(client, "/plugin/boot", {"session_id": "ses_1", "directory": "shop"})

    assert status == 400
    assert "is relative: send OpenCode's absolute project directory" in answer["error"]


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"{not json", "The body is not JSON"),
        ([1, 2], "The body must be a JSON object"),
        ({"session_id": "ses 1"}, "Invalid request: session_id:"),
        ({"session_id": "ses_1", "colour": "red"}, "Invalid request: colour:"),
        ({}, "Invalid request: session_id:"),
    ],
)
def test_a_bad_boot_body_is_a_400_saying_what_is_wrong(client: TestClient, body: Any, says: str) -> None:
    status, answer = post(client, "/plugin/boot", body)

    assert status == 400
    assert answer["error"].startswith(says), answer


def test_a_turn_names_at_least_one_message(client: TestClient, project: str) -> None:
    status, answer = post(
        client, "/plugin/turn", {"session_id": "ses_1", "directory": project, "messages": []}
    )

    assert status == 400
    assert answer["error"].startswith("Invalid request: messages:")


def test_a_turn_answers_blocks_for_its_messages(client: TestClient, project: str) -> None:
    body = {
        "session_id": "ses_1",
        "directory": project,
        "messages": [{"id": "msg_1", "hash": "h1"}],
        "text": "may I push to main",
    }

    status, answer = post(client, "/plugin/turn", body)

    assert status == 200
    assert set(answer) == {"blocks", "memory_ids", "shown", "new", "took_ms"}


def test_compaction_keeps_the_projects_directives(client: TestClient, project: str) -> None:
    status, answer = post(client, "/plugin/compaction", {"session_id": "ses_1", "directory": project})

    assert status == 200
    assert len(answer["context"]) == 1 and DIRECTIVE in answer["context"][0]


def test_an_ingest_is_queued_and_answered_at_once(client: TestClient) -> None:
    status, answer = post(client, "/plugin/ingest", {"session_id": "ses_1"})

    assert status == 202
    assert answer == {"queued": True, "session_id": "ses_1"}


def test_an_ingest_of_a_database_that_is_no_file_is_a_400(client: TestClient, tmp_path: Path) -> None:
    status, answer = post(
        client, "/plugin/ingest", {"session_id": "ses_1", "db_path": str(tmp_path / "none.db")}
    )

    assert status == 400
    # the ingest's own check (Ingester.locate), as /rpc and the command line say it
    assert answer["error"].startswith(f"No OpenCode database at {tmp_path / 'none.db'} (the path given)")
    assert "is not an existing file" in answer["error"]


@pytest.mark.parametrize(
    ("kind", "says"),
    [
        (
            "folder",
            "folder.db (the path given) is a directory, not a regular file: OpenCode's database is one",
        ),
        ("fifo", "fifo.db (the path given) is a named pipe, not a regular file"),
        ("device", "/dev/zero (the path given) is a character device, not a regular file"),
        ("loop", "loop.db (the path given): Too many levels of symbolic links"),
    ],
)
def test_an_ingest_of_a_database_that_is_no_regular_file_is_a_400_saying_so(
    client: TestClient, tmp_path: Path, kind: str, says: str
) -> None:
    made = {"folder": tmp_path / "folder.db", "fifo": tmp_path / "fifo.db", "loop": tmp_path / "loop.db"}
    if kind == "folder":
        made[kind].mkdir()
    elif kind == "fifo":
        os.mkfifo(made[kind])
    elif kind == "loop":
        made[kind].symlink_to(tmp_path / "loop2.db")
        (tmp_path / "loop2.db").symlink_to(made[kind])
    db_path = str(made.get(kind, "/dev/zero"))

    status, answer = post(client, "/plugin/ingest", {"session_id": "ses_1", "db_path": db_path})

    assert status == 400, answer
    assert says in answer["error"]


@pytest.mark.parametrize(
    ("raised", "status", "said"),
    [
        (
            StoreError("The graph store is closed: open the memory again."),
            500,
            "StoreError: The graph store is closed: open the memory again.",
        ),
        (InvalidInputError("The project must be a path."), 400, "The project must be a path."),
    ],
    ids=["store-failure-500", "refused-input-400"],
)
def test_an_error_of_the_service_is_answered_with_its_status_never_a_traceback(
    client: TestClient,
    project: str,
    memory_service: MemoryService,
    monkeypatch: pytest.MonkeyPatch,
    raised: Exception,
    status: int,
    said: str,
) -> None:
    """A store's failure is the daemon's (500); an input the service refuses is the call's to fix (400)."""

    def failing(*args: object, **kwargs: object) -> None:
        raise raised

    monkeypatch.setattr(memory_service, "list", failing)

    answered, answer = post(client, "/plugin/boot", {"session_id": "ses_2", "directory": project})

    assert (answered, answer) == (status, {"error": said})


@pytest.fixture
def claude_projects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Claude Code's sessions folder, as the daemon's environment names it."""
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    folder = tmp_path / "claude" / "projects" / "-home-me-shop"
    folder.mkdir(parents=True)
    return folder


@pytest.fixture
def codex_sessions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Codex's sessions folder (one day's), as the daemon's environment names it."""
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    folder = tmp_path / "codex-home" / "sessions" / "2026" / "12" / "01"
    folder.mkdir(parents=True)
    return folder


def test_a_claude_code_ingest_names_its_transcript(client: TestClient, claude_projects: Path) -> None:
    status, answer = post(client, "/plugin/ingest", {"client": "claude-code", "session_id": "s-1"})
    assert status == 400
    assert answer["error"] == "A claude-code ingest names its session_id and transcript_path."

    missing = str(claude_projects / "s-1.jsonl")
    body = {"client": "claude-code", "session_id": "s-1", "transcript_path": missing}
    status, answer = post(client, "/plugin/ingest", body)
    assert status == 400 and "is not an existing file" in answer["error"]

    Path(missing).write_text("{}\n")
    status, answer = post(client, "/plugin/ingest", body)
    assert status == 202 and answer == {"queued": True, "session_id": "s-1"}


def test_a_transcript_that_is_no_regular_file_is_named_so(client: TestClient, claude_projects: Path) -> None:
    fifo = claude_projects / "s-2.jsonl"
    os.mkfifo(fifo)
    body = {"client": "claude-code", "session_id": "s-2", "transcript_path": str(fifo)}

    status, answer = post(client, "/plugin/ingest", body)

    assert status == 400
    assert answer["error"] == (
        f"transcript_path {str(fifo)!r} is not a regular file: send the absolute path of the "
        "session's transcript."
    )


def test_an_ingest_of_another_sessions_claude_code_transcript_is_a_400_not_queued(
    client: TestClient, claude_projects: Path
) -> None:
    other = claude_projects / "s-2.jsonl"
    other.write_text("{}\n")

    body = {"client": "claude-code", "session_id": "s-1", "transcript_path": str(other)}

    status, answer = post(client, "/plugin/ingest", body)

    assert status == 400
    assert "is not the transcript of session 's-1'" in answer["error"]
    assert answer["error"].endswith("send the session's own transcript_path.")


def test_an_ingest_of_a_transcript_outside_claude_codes_sessions_is_a_400(
    client: TestClient, claude_projects: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere" / "s-1.jsonl"
    elsewhere.parent.mkdir()
    elsewhere.write_text("{}\n")

    body = {"client": "claude-code", "session_id": "s-1", "transcript_path": str(elsewhere)}

    status, answer = post(client, "/plugin/ingest", body)

    assert status == 400
    assert "is outside Claude Code's sessions" in answer["error"] and "CLAUDE_CONFIG_DIR" in answer["error"]


def test_an_ingest_of_another_sessions_codex_file_is_a_400_and_its_own_is_queued(
    client: TestClient, codex_sessions: Path
) -> None:
    rollout = codex_sessions / "rollout-2026-12-01T19-00-00-s-2.jsonl"
    rollout.write_text("{}\n")
    body = {"client": "codex", "session_id": "s-1", "transcript_path": str(rollout)}

    status, answer = post(client, "/plugin/ingest", body)
    assert status == 400
    assert "is not the session file of Codex session 's-1'" in answer["error"]

    status, answer = post(client, "/plugin/ingest", {**body, "session_id": "s-2"})
    assert status == 202 and answer == {"queued": True, "session_id": "s-2"}


def test_an_ingest_of_an_unknown_client_is_a_400(client: TestClient) -> None:
    status, answer = post(client, "/plugin/ingest", {"client": "cursor", "session_id": "s-1"})
    assert status == 400 and answer["error"].startswith("Invalid request: client:")


@pytest.mark.parametrize("route", [route.path for route in plugin_routes.ROUTES])
def test_each_declared_route_is_served_and_checks_its_body(client: TestClient, route: str) -> None:
    status, answer = post(client, route, b"[1]")

    assert status == 400 and answer == {"error": "The body must be a JSON object."}


def test_the_hidden_agents_get_nothing_from_each_route_that_makes_blocks(
    client: TestClient, project: str
) -> None:
    bodies = {
        "/plugin/boot": {"session_id": "ses_1"},
        "/plugin/turn": {"session_id": "ses_1", "messages": [{"id": "msg_1", "hash": "h1"}]},
        "/plugin/inject": {"session_id": "ses_1", "message_id": "msg_1"},
    }
    skipping = {route.path for route in plugin_routes.ROUTES if route.skipped is not None}

    assert skipping == set(bodies)
    for path, body in bodies.items():
        status, answer = post(client, path, {**body, "directory": project, "agent": "summary"})
        assert status == 200 and answer["skipped"] == "summary" and answer["memory_ids"] == []


LONG_PART = "/" + "a" * 300  # one part over NAME_MAX (255 bytes): the system's lookups raise ENAMETOOLONG
MESSAGES = [{"id": "m1", "hash": "h"}]


@pytest.mark.parametrize(
    ("route", "body"),
    [
        ("/plugin/boot", {"session_id": "ses_1", "directory": LONG_PART}),
        ("/plugin/compaction", {"session_id": "ses_1", "directory": LONG_PART}),
        ("/plugin/inject", {"session_id": "ses_1", "message_id": "m1", "directory": LONG_PART}),
        ("/plugin/turn", {"session_id": "ses_1", "messages": MESSAGES, "directory": LONG_PART}),
        ("/plugin/ingest", {"session_id": "ses_1", "db_path": LONG_PART}),
        ("/plugin/ingest", {"client": "claude-code", "session_id": "s-1", "transcript_path": LONG_PART}),
    ],
)
def test_a_path_part_over_255_bytes_is_the_400_every_surface_gives(
    client: TestClient, route: str, body: dict[str, Any]
) -> None:
    status, answer = post(client, route, body)

    assert status == 400, answer
    assert "over 255 bytes, longer than any file name can be" in answer["error"]


def test_a_restarted_daemon_leaves_out_what_the_turn_names_as_shown(
    memory_service: MemoryService, project: str
) -> None:
    fact = memory_service.remember(
        "The staging database listens on port 5433.", category="fact", project=project
    ).memory
    ask = {
        "session_id": "ses_1",
        "directory": project,
        "text": "Which port does the staging database listen on?",
    }

    def daemon() -> TestClient:  # a new app: a daemon that knows no earlier block of the session
        runtime = Runtime(memory_service, log_hint="stderr", resolve_project=lambda p: p, version="t")
        app = build_app(runtime, Policy.build(token=TOKEN, api_key=None, max_bytes=1_000_000, rate_limit=0))
        return TestClient(app, base_url="http://127.0.0.1:9824", raise_server_exceptions=False)

    with daemon() as first:
        _, before = post(first, "/plugin/turn", {**ask, "messages": [{"id": "msg_1", "hash": "h1"}]})
    two = [{"id": "msg_1", "hash": "h1"}, {"id": "msg_2", "hash": "h2"}]
    with daemon() as restarted:
        _, told = post(restarted, "/plugin/turn", {**ask, "messages": two, "shown": before["shown"]})
    with daemon() as untold:
        _, repeated = post(untold, "/plugin/turn", {**ask, "messages": two})

    assert before["memory_ids"] == [fact.id] and before["shown"][0].startswith(f"{fact.id}:")
    assert "msg_2" not in told["blocks"]
    assert fact.id in repeated["blocks"]["msg_2"]


def test_a_turn_naming_something_else_than_a_memory_as_shown_is_a_400(
    client: TestClient, project: str
) -> None:
    body = {
        "session_id": "ses_1",
        "directory": project,
        "messages": [{"id": "m", "hash": "h"}],
        "shown": ["../x"],
    }

    status, answer = post(client, "/plugin/turn", body)

    assert status == 400 and "shown" in answer["error"]


@pytest.mark.parametrize(("count", "status"), [(2000, 200), (2001, 400)])
def test_a_turn_names_at_most_2000_memories_as_shown(
    client: TestClient, project: str, count: int, status: int
) -> None:
    # The OpenCode plugin and the Claude Code and Codex hooks send their records through this one body.
    body = {
        "session_id": "ses_1",
        "directory": project,
        "messages": [{"id": "m", "hash": "h"}],
        "shown": [f"mem_{n:016x}:{'a' * 12}" for n in range(count)],
    }

    answered, answer = post(client, "/plugin/turn", body)

    assert answered == status, answer


def test_an_unknown_field_with_a_huge_name_is_a_400_quoting_only_its_start(client: TestClient) -> None:
    status, answer = post(client, "/plugin/boot", {"session_id": "ses_1", "x" * 10_000: 1})

    assert status == 400
    assert answer["error"].startswith("Invalid request: xxx") and "Extra inputs" in answer["error"]
    assert len(answer["error"]) < 400
