"""A request of the wrong shape gets the same short JSON-RPC error from ``/mcp`` over HTTP as
from ``graphmem mcp`` over stdio (``server/mcp_shape.py``): what to send, never a dump of
pydantic's validation errors, an empty "Invalid request parameters" or a 500. Either names
the same server in ``initialize``: graphmem, of its version."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from support.memory_service import in_memory_service

from graphmem.core.timeparse import utc_now
from graphmem.server.daemon_process import DaemonInfo
from graphmem.server.guard import Policy
from graphmem.server.http import build_app
from graphmem.server.proxy import Proxy
from graphmem.server.runtime import Runtime
from graphmem.service.coordination import Coordinator

TOKEN = "t" * 43
HEADERS = {
    "Authorization": f"Bearer {TOKEN}",
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


def _call(**params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}


WRONG = {
    "a batch": ([LIST], "a batch (a JSON array) is not served: send one JSON-RPC 2.0 object per request"),
    "an empty batch": ([], "send one JSON-RPC 2.0 object per request"),
    "a string": ("tools/list", "expected a JSON-RPC 2.0 object"),
    "no jsonrpc": ({"id": 1, "method": "tools/list"}, "expected a JSON-RPC 2.0 object"),
    "an id that is an object": ({**LIST, "id": {}}, "id must be a string or an integer"),
    "no method": ({"jsonrpc": "2.0", "id": 1}, "no method"),
    "params a string": ({**LIST, "params": "x"}, "tools/list params must be an object"),
    "no tool name": (_call(arguments={}), "tools/call needs params.name (a tool name)"),
    "arguments a string": (_call(name="recall", arguments="x"), "params.arguments must be an object"),
    "arguments a list": (_call(name="recall", arguments=["x"]), "params.arguments must be an object"),
}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    memory = in_memory_service(tmp_path_factory.mktemp("mcp-shape") / "data")
    served = memory.serving(Coordinator(utc_now, timedelta(minutes=5)))
    runtime = Runtime(served, log_hint="stderr", resolve_project=lambda p: p, version="t")
    app = build_app(runtime, Policy.build(token=TOKEN, api_key=None, max_bytes=100_000, rate_limit=0))
    with TestClient(app, base_url="http://127.0.0.1:9824", raise_server_exceptions=False) as running:
        yield running
    memory.close()


def _no_daemon(data_dir: Path, timeout: float) -> DaemonInfo:
    raise AssertionError("a request of the wrong shape never reaches the daemon")


@pytest.mark.parametrize(("message", "says"), WRONG.values(), ids=WRONG.keys())
def test_http_answers_a_wrong_request_as_stdio_does(
    client: TestClient, tmp_path: Path, message: Any, says: str
) -> None:
    response = client.post("/mcp", json=message, headers=HEADERS)

    answer = response.json()
    assert says in answer["error"]["message"] and len(response.content) < 300
    assert "validation error" not in response.text.lower()
    # a reply names the request when it can (200, as FastMCP answers its own errors), else 400
    assert response.status_code == (200 if answer["id"] is not None else 400)
    stdio = Proxy(tmp_path, None, "t", 1.0, start=_no_daemon).handle(message)
    assert stdio == answer


def test_initialize_names_graphmem_and_its_version_over_http_as_over_stdio(
    client: TestClient, tmp_path: Path
) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }

    response = client.post("/mcp", json=initialize, headers=HEADERS)

    served = response.json()["result"]["serverInfo"]
    assert served == {"name": "graphmem", "version": "t"}  # the runtime's version, not FastMCP's
    stdio = Proxy(tmp_path, None, "t", 1.0, start=_no_daemon).handle(initialize)
    assert stdio is not None and stdio["result"]["serverInfo"] == served


def test_a_request_of_the_right_shape_still_reaches_fastmcp(client: TestClient) -> None:
    listed = client.post("/mcp", json=LIST, headers=HEADERS)
    assert listed.status_code == 200 and listed.json()["result"]["tools"]
    # no arguments at all is fine: the tool takes none
    called = client.post("/mcp", json=_call(name="memory_status"), headers=HEADERS)
    assert called.status_code == 200 and "result" in called.json(), called.text
    notified = client.post(
        "/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=HEADERS
    )
    assert notified.status_code == 202
    not_json = client.post("/mcp", content=b"{nope", headers=HEADERS)  # FastMCP's parse error
    assert not_json.status_code == 400 and not_json.json()["error"]["code"] == -32700
