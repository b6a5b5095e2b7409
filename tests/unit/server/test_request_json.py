"""How the daemon's own routes (``/rpc``, ``/plugin/*``, ``/ui/*``) read a JSON body
(``server/body_json.py``): a field is its own JSON type, nothing pydantic's lax mode makes of
another; a repeated key, NaN, an integer past 64 bits, nesting a parser cannot follow, a query
string or a stray field is a 400 that names it, and nothing runs or is stored."""

from __future__ import annotations

import json
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
DEEP = b"[" * 100_000 + b"]" * 100_000  # 200 kB, within the body limit
TURN = {"session_id": "ses_1", "messages": [{"id": "msg_1", "hash": "h1"}]}


@pytest.fixture
def client(memory_service: MemoryService) -> Iterator[TestClient]:
    runtime = Runtime(memory_service, log_hint="stderr", resolve_project=lambda p: p, version="t")
    app = build_app(runtime, Policy.build(token=TOKEN, api_key=None, max_bytes=1_000_000, rate_limit=0))
    with TestClient(app, base_url="http://127.0.0.1:9824", raise_server_exceptions=False) as running:
        yield running


def post(client: TestClient, route: str, body: bytes | str | dict[str, Any]) -> tuple[int, str]:
    """The status and the error's message (or the whole answer's text) of a POST of ``body``."""
    content = body.encode() if isinstance(body, str) else body if isinstance(body, bytes) else None
    response = client.post(route, headers=HEADERS, content=content, json=None if content else body)
    answer = response.json()
    error = answer.get("error") if isinstance(answer, dict) else None
    message = error.get("message") if isinstance(error, dict) else error
    return response.status_code, str(message) if message is not None else response.text


def rpc_text(method: str, arguments: str) -> str:
    """A ``/rpc`` request as text, its arguments as written (JSON that ``json.dumps`` would not make)."""
    return '{"method": "' + method + '", "arguments": ' + arguments + "}"


def turn(**changes: Any) -> dict[str, Any]:
    return {**TURN, "messages": [{**TURN["messages"][0], **changes}]}


# -- a boolean is true or false, an integer a JSON integer ----------------------------------------


@pytest.mark.parametrize("bare", ["yes", 1, "true", 0.0])
def test_a_plugin_boolean_is_a_json_boolean(client: TestClient, bare: Any) -> None:
    status, message = post(client, "/plugin/turn", turn(bare=bare))

    assert status == 400
    assert message.startswith("Invalid request: messages.0.bare:"), message


@pytest.mark.parametrize("limit", [True, "3", 1.0])
def test_an_rpc_integer_is_a_json_integer(client: TestClient, limit: Any) -> None:
    status, message = post(client, "/rpc", {"method": "recall", "arguments": {"query": "x", "limit": limit}})

    assert status == 400
    assert "Invalid arguments for recall: limit:" in message


@pytest.mark.parametrize("flag", [1, "yes", "true"])
def test_an_rpc_boolean_is_a_json_boolean(client: TestClient, flag: Any) -> None:
    status, message = post(client, "/rpc", {"method": "list", "arguments": {"all_branches": flag}})

    assert status == 400
    assert "Invalid arguments for list: all_branches:" in message


def test_a_ui_integer_is_no_boolean_nor_fraction(client: TestClient) -> None:
    status, message = post(client, "/ui/graph", {"key": "mem_0000000000000000", "limit": 1.0})

    assert status == 400
    assert message == '"limit" must be a whole number or null, not 1.0.'


# -- a repeated key --------------------------------------------------------------------------------


def test_a_repeated_key_in_rpc_is_a_400_and_nothing_is_stored(
    client: TestClient, memory_service: MemoryService
) -> None:
    body = '{"method": "remember", "arguments": {"text": "Deploy on Fridays", "text": "Never deploy"}}'

    status, message = post(client, "/rpc", body)

    assert status == 400
    assert '"arguments" holds the key "text" more than once' in message
    assert memory_service.list(limit=10) == []


@pytest.mark.parametrize(
    ("route", "body"),
    [
        ("/plugin/turn", '{"session_id": "ses_1", "session_id": "ses_2", "messages": '
                         '[{"id": "m", "hash": "h"}]}'),
        ("/plugin/boot", '{"session_id": "ses_1", "session_id": "ses_2"}'),
        ("/ui/graph", '{"key": "mem_0000000000000000", "key": "mem_1111111111111111"}'),
        ("/rpc", '{"method": "stats", "method": "delete", "arguments": {}}'),
    ],
)  # fmt: skip
def test_a_repeated_key_is_a_400_naming_it(client: TestClient, route: str, body: str) -> None:
    status, message = post(client, route, body)

    assert status == 400
    assert "The body holds the key" in message and "more than once" in message


def test_a_repeated_key_deep_in_a_plugin_body_is_named_where_it_is(client: TestClient) -> None:
    body = '{"session_id": "ses_1", "messages": [{"id": "m", "hash": "h", "bare": false, "bare": true}]}'

    status, message = post(client, "/plugin/turn", body)

    assert status == 400
    assert message.startswith('"messages[0]" holds the key "bare" more than once'), message


# -- numbers JSON has not, or no store holds -------------------------------------------------------


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_a_number_json_has_not_is_a_400_naming_the_field(client: TestClient, literal: str) -> None:
    status, message = post(client, "/rpc", rpc_text("recall", '{"query": "x", "limit": ' + literal + "}"))

    assert status == 400
    assert message.startswith(f'"arguments.limit" is {literal}'), message


@pytest.mark.parametrize("literal", ["9" * 5000, str(2**63), str(-(2**63) - 1)])
def test_an_integer_past_64_bits_is_a_400_naming_the_field(client: TestClient, literal: str) -> None:
    status, message = post(client, "/rpc", rpc_text("list", '{"limit": ' + literal + "}"))

    assert status == 400
    assert message.startswith('"arguments.limit" is ') and "64-bit integers" in message, message


def test_an_integer_past_64_bits_on_the_view_is_a_400_naming_the_field(client: TestClient) -> None:
    status, message = post(client, "/ui/context", '{"target": "x", "max_tokens": ' + str(2**63) + "}")

    assert status == 400
    assert message.startswith('"max_tokens" is 9223372036854775808'), message


# -- nesting, emptiness, stray fields, query strings -----------------------------------------------


@pytest.mark.parametrize("route", ["/rpc", "/plugin/boot", "/plugin/turn", "/ui/graph", "/ui/status"])
def test_nesting_100000_deep_is_a_400_saying_so(client: TestClient, route: str) -> None:
    status, message = post(client, route, DEEP)

    assert status == 400
    assert "nests arrays and objects more than 32 deep" in message


def test_nesting_a_parser_follows_but_past_the_limit_is_a_400(client: TestClient) -> None:
    nested = "[" * 500 + "]" * 500  # far below the recursion limit: parsed, then refused
    status, message = post(client, "/rpc", rpc_text("recall", '{"query": ' + nested + "}"))

    assert status == 400
    assert "nests arrays and objects more than 32 deep" in message


@pytest.mark.parametrize("route", ["/rpc", "/plugin/boot", "/ui/home"])
def test_an_empty_body_is_a_400_asking_for_an_object(client: TestClient, route: str) -> None:
    status, message = post(client, route, b"")

    assert status == 400
    assert message == "The body is empty: send a JSON object."


def test_a_stray_field_in_an_rpc_request_is_a_400(client: TestClient, memory_service: MemoryService) -> None:
    body = {"method": "remember", "arguments": {"text": "Use uv"}, "dry_run": True}

    status, message = post(client, "/rpc", body)

    assert status == 400
    assert message.startswith('Unknown field(s) in the request: "dry_run".'), message
    assert memory_service.list(limit=10) == []


def test_a_query_string_is_a_400_and_nothing_runs(client: TestClient, memory_service: MemoryService) -> None:
    body = json.dumps({"method": "remember", "arguments": {"text": "Use uv"}})

    response = client.post("/rpc?dry_run=true", headers=HEADERS, content=body)

    assert response.status_code == 400
    assert "takes no query string" in response.json()["error"]["message"]
    assert memory_service.list(limit=10) == []


def test_a_query_string_on_a_plugin_route_is_a_400(client: TestClient) -> None:
    response = client.post("/plugin/boot?session_id=ses_2", headers=HEADERS, json={"session_id": "ses_1"})

    assert response.status_code == 400
    assert "/plugin/boot takes no query string" in response.json()["error"]
