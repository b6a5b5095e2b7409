"""``/rpc`` with ``"progress": true``: the verb's progress as NDJSON lines, then its answer;
bounded, and a client that leaves does not stop the verb."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from starlette.testclient import TestClient

from graphmem.errors import InvalidInputError, NotFoundError
from graphmem.server.guard import Policy
from graphmem.server.http import build_app
from graphmem.server.rpc_stream import ProgressRelay, ProgressStream, wants_progress
from graphmem.server.rpc_types import DONE, DONE_OF, STEPS
from graphmem.server.runtime import Runtime
from graphmem.service.memory import MemoryService

TOKEN = "t" * 43
HEADERS = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
FILES = 120  # bootstrap reports every 50 files and at the last one


@pytest.fixture
def runtime(memory_service: MemoryService) -> Runtime:
    return Runtime(
        memory_service,
        log_hint="the test's log",
        resolve_project=lambda p: p,
        version="t",
    )


@pytest.fixture
def client(runtime: Runtime) -> Iterator[TestClient]:
    app = build_app(runtime, Policy.build(token=TOKEN, api_key=None, max_bytes=100_000, rate_limit=0))
    with TestClient(app, base_url="http://127.0.0.1:9824", raise_server_exceptions=False) as running:
        yield running


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    for n in range(FILES):
        (root / "src" / f"m{n:03}.py").write_text(f"def f{n}() -> int:\n    return {n}\n", "utf-8")
    return root


def streamed(client: TestClient, body: dict[str, Any], **headers: str) -> tuple[int, str, list[Any]]:
    with client.stream("POST", "/rpc", json=body, headers={**HEADERS, **headers}) as response:
        lines = [json.loads(line) for line in response.iter_lines() if line]
        return response.status_code, response.headers.get("content-type", ""), lines


# -- the relay --------------------------------------------------------------------


def test_the_relay_keeps_only_the_latest_progress_in_each_shape() -> None:
    steps = ProgressRelay(STEPS)
    assert steps.take() is None  # nothing reported yet
    report = steps.callback()
    assert report is not None
    for _ in range(10_000):
        report(3)
    assert steps.take() == {"done": 30_000, "total": None}  # summed, one value whatever the rate
    assert steps.take() is None  # unchanged since
    report(2)
    assert steps.take() == {"done": 30_002, "total": None}

    done_of = ProgressRelay(DONE_OF)
    report = done_of.callback()
    assert report is not None
    report(50, 120)
    report(100, 120)
    assert done_of.take() == {"done": 100, "total": 120}

    done = ProgressRelay(DONE)
    report = done.callback()
    assert report is not None
    report(7)
    assert done.take() == {"done": 7, "total": None}


def test_a_verb_without_progress_gets_no_callback_and_an_unknown_shape_is_refused() -> None:
    assert ProgressRelay(None).callback() is None
    with pytest.raises(ValueError, match="unknown progress shape"):
        ProgressRelay("percent")


@pytest.mark.parametrize(
    ("request_body", "wanted"),
    [({"method": "x"}, False), ({"progress": False}, False), ({"progress": True}, True), ([1], False)],
)
def test_progress_is_asked_with_true(request_body: Any, wanted: bool) -> None:
    assert wants_progress(request_body) is wanted


@pytest.mark.parametrize("value", ["yes", 1, None, {"on": True}])
def test_progress_that_is_not_a_boolean_is_refused(value: Any) -> None:
    with pytest.raises(InvalidInputError, match='"progress" must be true'):
        wants_progress({"progress": value})


# -- the route --------------------------------------------------------------------


def test_a_bootstrap_that_asks_streams_its_progress_then_its_report(
    client: TestClient, repository: Path
) -> None:
    body = {"method": "bootstrap", "arguments": {"path": str(repository), "history": 0}, "progress": True}
    status, media, lines = streamed(client, body)
    assert (status, media) == (200, "application/x-ndjson")
    *events, last = lines
    assert events and all(set(event) == {"progress"} for event in events)
    progress = [event["progress"] for event in events]
    assert all(p["total"] == FILES for p in progress)
    assert [p["done"] for p in progress] == sorted(p["done"] for p in progress)
    assert progress[-1]["done"] == FILES  # what the verb reported last always arrives
    assert last["result"]["files"] == FILES and last["result"]["parsed"] == FILES


def test_a_call_that_does_not_ask_gets_the_plain_answer(client: TestClient, repository: Path) -> None:
    body = {"method": "bootstrap", "arguments": {"path": str(repository), "history": 0}}
    response = client.post("/rpc", json=body, headers=HEADERS)
    assert response.headers["content-type"] == "application/json"
    assert response.json()["result"]["files"] == FILES


def test_a_verb_without_progress_streams_its_answer_alone(client: TestClient) -> None:
    body = {"method": "remember", "arguments": {"text": "Release with make release"}, "progress": True}
    status, _, lines = streamed(client, body)
    assert status == 200 and len(lines) == 1 and lines[0]["result"]["memory"]["id"].startswith("mem_")


def test_a_verb_error_is_the_last_line(client: TestClient, tmp_path: Path) -> None:
    body = {"method": "bootstrap", "arguments": {"path": str(tmp_path / "nope")}, "progress": True}
    status, _, lines = streamed(client, body)
    assert status == 200 and lines == [
        {"error": {"type": "InvalidInputError", "message": lines[0]["error"]["message"]}}
    ]
    assert "is not a directory" in lines[0]["error"]["message"]


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"method": "bootstrap", "arguments": {"path": "."}, "progress": "yes"}, '"progress" must be true'),
        ({"method": "bootstrap", "arguments": {}, "progress": True}, "bootstrap needs the argument(s): path"),
        ({"method": "reindex", "arguments": {"progress": True}}, "Unknown argument(s) for reindex: progress"),
    ],
)
def test_a_streamed_call_that_cannot_run_is_a_plain_400(client: TestClient, body: Any, says: str) -> None:
    response = client.post("/rpc", json=body, headers=HEADERS)
    assert response.status_code == 400 and response.headers["content-type"] == "application/json"
    assert says in response.json()["error"]["message"]


def test_the_guard_applies_to_a_streamed_call(client: TestClient) -> None:
    body = {"method": "reindex", "progress": True}
    assert client.post("/rpc", json=body, headers={"Content-Type": "application/json"}).status_code == 401
    refused = client.post("/rpc", json=body, headers={**HEADERS, "Origin": "https://evil.example"})
    assert refused.status_code == 403


def test_a_streamed_write_wakes_the_embedder(client: TestClient, runtime: Runtime, repository: Path) -> None:
    runtime._wake.clear()
    body = {"method": "bootstrap", "arguments": {"path": str(repository), "history": 0}, "progress": True}
    streamed(client, body)
    assert runtime._wake.is_set()


# -- a client that leaves, a verb that fails ----------------------------------------


def run_stream(stream: ProgressStream, send: Any) -> None:
    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    anyio.run(stream, {"type": "http"}, receive, send)


def test_a_client_that_leaves_does_not_stop_the_verb() -> None:
    relay = ProgressRelay(STEPS)
    report = relay.callback()
    assert report is not None
    stored: list[int] = []
    gone = threading.Event()

    def job() -> dict[str, Any]:
        report(1)
        gone.wait(10)  # the client leaves while the verb is still at work
        for n in range(1000):
            report(1)
            stored.append(n)
        return {"result": len(stored)}

    sent: list[Any] = []

    async def send(message: Any) -> None:
        if message["type"] == "http.response.body":
            gone.set()
            raise OSError("the client hung up")
        sent.append(message)

    run_stream(ProgressStream(job, relay, log_hint="log"), send)
    assert len(stored) == 1000  # the verb ran to its end
    assert [m["type"] for m in sent] == ["http.response.start"]  # nothing more was sent


def test_an_internal_failure_is_an_error_line_that_points_at_the_log() -> None:
    def job() -> dict[str, Any]:
        raise RuntimeError("secret internals")

    sent: list[Any] = []

    async def send(message: Any) -> None:
        sent.append(message)

    run_stream(ProgressStream(job, ProgressRelay(None), log_hint="/data/daemon.log"), send)
    last = json.loads(sent[-1]["body"])
    assert last["error"]["type"] == "GraphmemError"
    assert "/data/daemon.log" in last["error"]["message"] and "secret" not in last["error"]["message"]
    assert sent[-1]["more_body"] is False


def test_a_graphmem_error_escaping_the_job_keeps_its_type() -> None:
    def job() -> dict[str, Any]:
        raise NotFoundError("No memory with id mem_x.")

    sent: list[Any] = []

    async def send(message: Any) -> None:
        sent.append(message)

    run_stream(ProgressStream(job, ProgressRelay(None), log_hint="log"), send)
    error = {"type": "NotFoundError", "message": "No memory with id mem_x."}
    assert json.loads(sent[-1]["body"]) == {"error": error}
