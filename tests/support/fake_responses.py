"""A scripted, OpenAI Responses-compatible server that stands in for Codex's model.

Codex CLI talks to it through a ``[model_providers.fake]`` entry with ``wire_api = "responses"``
and ``base_url`` = :attr:`FakeResponses.base_url` (see ``tests/support/codex.py``), served on
``127.0.0.1`` (a free port) by ``support.local_server.LocalServer``.

- ``POST /v1/responses``: the next scripted reply (:class:`~fake_llm.Text`, a
  :class:`~fake_llm.ToolCall` for a function tool, or a :class:`~fake_llm.Fail`), streamed as
  Server-Sent Events the way the Responses API streams (``response.created``,
  ``response.output_item.added``, ``response.output_text.delta``, ``response.output_item.done``,
  ``response.completed`` with ``usage``). An exhausted script answers :data:`EXHAUSTED_TEXT`.
- ``GET /v1/models``: one model, :data:`MODEL_ID`.

Every request body is recorded, as received (``raw``, bytes) and parsed (``requests``), so a test
can compare what the client sent byte for byte. Helpers read what tests assert on:
:func:`input_items`, :func:`texts`, :func:`offered_tools`, :func:`last_user_index`,
:func:`raw_input` (the ``input`` array's bytes as sent) and :func:`common_prefix`.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import deque
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler
from typing import Any

from .fake_llm import Fail, ScriptItem, Text, ToolCall, as_reply
from .local_server import LocalServer

MODEL_ID = "fake-model"
EXHAUSTED_TEXT = "(fake model: script exhausted)"

JSON = dict[str, Any]


def input_items(body: JSON) -> list[JSON]:
    """The ``input`` items of a request (messages, function calls and their outputs)."""
    items = body.get("input") or []
    return [item for item in items if isinstance(item, dict)]


def text_of(item: JSON) -> str:
    """The text of one message item (its ``input_text`` / ``output_text`` parts, joined)."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "\n".join(str(p.get("text", "")) for p in parts if isinstance(p, dict))


def texts(body: JSON, role: str) -> list[str]:
    """The texts of the request's messages of ``role`` (``developer``, ``user``, ``assistant``)."""
    return [text_of(i) for i in input_items(body) if i.get("type") == "message" and i.get("role") == role]


def offered_tools(body: JSON) -> dict[str, list[str]]:
    """The tools offered to the model: ``{namespace or "": [tool names]}``."""
    found: dict[str, list[str]] = {}
    for tool in body.get("tools") or []:
        if tool.get("type") == "namespace":
            found[str(tool.get("name"))] = [str(t.get("name")) for t in tool.get("tools") or []]
        elif tool.get("name"):
            found.setdefault("", []).append(str(tool["name"]))
    return found


def last_user_index(body: JSON) -> int:
    """The index, in ``input``, of the newest message the user typed (not Codex's context items)."""
    items = input_items(body)
    for index in range(len(items) - 1, -1, -1):
        item = items[index]
        if item.get("role") == "user" and not text_of(item).startswith("<environment_context>"):
            return index
    raise AssertionError("the request has no user message")


def raw_input(body: bytes) -> bytes:
    """The serialized ``input`` array of a raw request body, as the client sent it, without its
    closing bracket (so the previous request's is a prefix of the next one's when it kept it)."""
    start = body.index(b'"input":') + len(b'"input":')
    depth = 0
    in_string = escaped = False
    for index in range(start, len(body)):
        char = body[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == 0x5C:  # a backslash escapes the next character
                escaped = True
            elif char == 0x22:  # a quote not escaped ends the string
                in_string = False
            continue
        if char == 0x22:
            in_string = True
        elif char == 0x5B:  # [
            depth += 1
        elif char == 0x5D:  # ]
            depth -= 1
            if depth == 0:
                return body[start:index]
    raise AssertionError("the request has no input array")


def common_prefix(a: bytes, b: bytes) -> int:
    """How many leading bytes ``a`` and ``b`` share."""
    size = min(len(a), len(b))
    for index in range(size):
        if a[index] != b[index]:
            return index
    return size


class FakeResponses:
    """The scripted server. Thread-safe."""

    def __init__(self, script: Iterable[ScriptItem] = ()) -> None:
        self._lock = threading.Lock()
        self._script: deque[Text | ToolCall | Fail] = deque(as_reply(i) for i in script)
        self._ids = itertools.count(1)
        self.requests: list[JSON] = []
        self.raw: list[bytes] = []
        self.exhausted = 0
        # The input tokens each answer reports: a client compacts once they pass its limit.
        self.input_tokens = 10
        self._http = LocalServer(_handler_for(self), "fake-responses")

    def script(self, *items: ScriptItem) -> None:
        with self._lock:
            self._script.extend(as_reply(i) for i in items)

    def reset(self, *items: ScriptItem) -> None:
        """Forget the script and the recorded requests, then script ``items``."""
        with self._lock:
            self._script.clear()
            self._script.extend(as_reply(i) for i in items)
            self.requests.clear()
            self.raw.clear()
            self.exhausted = 0

    def _next(self, raw: bytes, body: JSON) -> Text | ToolCall | Fail:
        with self._lock:
            self.raw.append(raw)
            self.requests.append(body)
            if self._script:
                return self._script.popleft()
            self.exhausted += 1
            return Text(EXHAUSTED_TEXT)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._http.port}/v1"

    def start(self) -> FakeResponses:
        self._http.start()
        return self

    def stop(self) -> None:
        self._http.stop()

    def __enter__(self) -> FakeResponses:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def events(self, reply: Text | ToolCall) -> list[JSON]:
        """The stream of one reply, as Responses API events."""
        number = next(self._ids)
        response_id = f"resp_fake_{number}"
        item: JSON
        if isinstance(reply, Text):
            item = {
                "type": "message",
                "id": f"msg_fake_{number}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
            started = {**item, "status": "in_progress", "content": []}
            middle: list[JSON] = [
                {"type": "response.output_text.delta", "output_index": 0, "content_index": 0,
                 "item_id": item["id"], "delta": reply.text},
            ]  # fmt: skip
        else:
            item = {
                "type": "function_call",
                "id": f"fc_fake_{number}",
                "call_id": f"call_fake_{number}",
                "name": reply.tool,
                "arguments": json.dumps(reply.arguments),
                "status": "completed",
            }
            started, middle = item, []
        usage = {
            "input_tokens": self.input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": self.input_tokens + 5,
        }
        response = {"id": response_id, "object": "response", "model": MODEL_ID}
        return [
            {"type": "response.created", "response": {**response, "status": "in_progress", "output": []}},
            {"type": "response.output_item.added", "output_index": 0, "item": started},
            *middle,
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {
                "type": "response.completed",
                "response": {**response, "status": "completed", "output": [item], "usage": usage},
            },
        ]


def _handler_for(fake: FakeResponses) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # one response per connection, closed at the end

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send_json(self, status: int, payload: JSON) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.split("?")[0].rstrip("/") in ("/v1/models", "/models"):
                model = {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "graphmem-tests"}
                self._send_json(200, {"object": "list", "data": [model]})
            else:
                self._send_json(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            if self.path.split("?")[0].rstrip("/") not in ("/v1/responses", "/responses"):
                self._send_json(404, {"error": {"message": f"no route {self.path}"}})
                return
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw or b"{}")
            except ValueError as exc:
                self._send_json(400, {"error": {"message": f"bad JSON: {exc}"}})
                return
            reply = fake._next(raw, body)
            if isinstance(reply, Fail):
                self._send_json(reply.status, {"error": {"message": reply.message}})
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            for event in fake.events(reply):
                self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()

    return Handler
