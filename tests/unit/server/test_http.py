"""The daemon's ``/rpc`` route: a call that cannot run is a 400 with a JSON error, never a 500."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from graphmem.server.guard import Policy
from graphmem.server.http import build_app
from graphmem.server.runtime import Runtime
from graphmem.service.memory import MemoryService

TOKEN = "t" * 43
HEADERS = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}


@pytest.fixture
def client(memory_service: MemoryService) -> Iterator[TestClient]:
    runtime = Runtime(
        memory_service,
        log_hint="stderr",
        resolve_project=lambda p: p,
        version="t",
    )
    app = build_app(runtime, Policy.build(token=TOKEN, api_key=None, max_bytes=100_000, rate_limit=0))
    with TestClient(app, base_url="http://127.0.0.1:9824", raise_server_exceptions=False) as running:
        yield running


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"method": "remember", "arguments": 1}, '"arguments" must be a JSON object'),
        ({"method": "remember", "arguments": [1, 2]}, '"arguments" must be a JSON object'),
        ({"method": "remember", "arguments": "text"}, '"arguments" must be a JSON object'),
        ({"method": "remember", "arguments": {}}, "remember needs the argument(s): text"),
        ({"method": "remember"}, "remember needs the argument(s): text"),
        ({"method": "show", "arguments": {}}, "show needs the argument(s)"),
        (
            {"method": "remember", "arguments": {"text": "x", "nope": 1}},
            "Unknown argument(s) for remember: nope",
        ),
        ({"method": "recall", "arguments": {"query": ["a"]}}, "Invalid arguments for recall"),
        ({"method": "list", "arguments": {"statuses": ["zzz"]}}, "Invalid arguments for list: statuses[0]"),
        (
            {"method": "select", "arguments": {"statuses": ["zzz"]}},
            "Invalid arguments for select: statuses[0]",
        ),
        ({"method": "drop_everything"}, "Unknown method"),
        ([1, 2], "Unknown method"),
        ("remember", "Unknown method"),
    ],
)
def test_a_call_that_cannot_run_is_a_400(
    client: TestClient, memory_service: MemoryService, body: Any, says: str
) -> None:
    response = client.post("/rpc", json=body, headers=HEADERS)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "InvalidInputError" and says in error["message"]
    assert memory_service.list(limit=10) == []


def test_a_body_that_is_not_json_is_a_400(client: TestClient) -> None:
    response = client.post("/rpc", content=b"{nope", headers=HEADERS)
    assert response.status_code == 400
    assert response.json()["error"]["message"].startswith("The body is not JSON")


def test_a_valid_call_answers_its_result_and_a_refused_verb_its_error(client: TestClient) -> None:
    done = client.post("/rpc", json={"method": "remember", "arguments": {"text": "Use uv"}}, headers=HEADERS)
    assert done.status_code == 200 and done.json()["result"]["memory"]["id"].startswith("mem_")
    refused = client.post("/rpc", json={"method": "remember", "arguments": {"text": " "}}, headers=HEADERS)
    assert refused.status_code == 200 and refused.json()["error"]["type"] == "InvalidInputError"


@pytest.mark.parametrize(
    ("db_path", "error", "says"),
    [
        ("/" + "a" * 300, "InvalidInputError", "A part of the db_path is over 255 bytes"),
        ("x" * 20_000, "InvalidInputError", "The db_path is 20,000 characters; a path has at most 4,096"),
        ("/tmp/" + "a/" * 3000, "InvalidInputError", "a path has at most 4,096"),
        ("/tmp/a\x00b.db", "InvalidInputError", "The db_path contains a NUL character"),
        (
            "/dev/zero",
            "SessionStoreError",
            "/dev/zero (the path given) is a character device, not a regular file",
        ),
    ],
)
def test_an_ingest_of_a_db_path_that_is_no_database_answers_its_error_not_a_500(
    client: TestClient, db_path: str, error: str, says: str
) -> None:
    body = {"method": "ingest_opencode", "arguments": {"db_path": db_path}}

    response = client.post("/rpc", json=body, headers=HEADERS)

    assert response.status_code == 200, response.text  # a refused verb's answer, which the CLI raises again
    assert response.json()["error"]["type"] == error and says in response.json()["error"]["message"]
