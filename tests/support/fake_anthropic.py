"""A scripted, Anthropic-Messages-compatible server that stands in for Claude's API.

Claude Code talks to it through ``ANTHROPIC_BASE_URL`` (see ``tests/support/claude_code.py``). A
stdlib ``ThreadingHTTPServer`` on ``127.0.0.1``, a free port, in a daemon thread;
``with FakeAnthropic() as api:``.

Endpoints:

- ``POST /v1/messages`` (any query string): the next scripted reply. With ``"stream": true``
  (what Claude Code sends) the answer is Server-Sent Events as the Messages API streams them
  (``message_start``, ``content_block_start`` / ``_delta`` / ``_stop`` per block,
  ``message_delta`` with ``stop_reason`` and ``usage``, ``message_stop``); without it, one
  ``message`` object.
- ``POST /v1/messages/count_tokens``: ``{"input_tokens": <bytes / 4>}``.
- anything else: 404 with an Anthropic-style error.

Requests that offer tools are the agent's turns: each consumes one scripted reply (a
:class:`~fake_llm.Text` or a :class:`~fake_llm.ToolCall`, or a plain string); when the script
is exhausted the answer is :data:`EXHAUSTED_TEXT`. Requests without tools are the client's side
calls (naming the session, classifying...): they get :data:`SIDE_TEXT` and consume nothing.

Every ``/v1/messages`` body is recorded as it arrived, bytes and parsed: :attr:`requests` (the
agent's turns, in order), :attr:`side_requests`, and :attr:`raw` for the bytes of each turn.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import deque
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .fake_llm import Fail, ScriptItem, Text, ToolCall, as_reply
from .local_server import POLL_S

JSON = dict[str, Any]
EXHAUSTED_TEXT = "(fake model: script exhausted)"
SIDE_TEXT = "Fake side answer"


class FakeAnthropic:
    """The stand-in; script it with :meth:`script`, read :attr:`requests` afterwards."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._script: deque[Text | ToolCall | Fail] = deque()
        self._ids = itertools.count(1)
        self.requests: list[JSON] = []
        self.raw: list[bytes] = []
        self.side_requests: list[JSON] = []
        self.other_paths: list[str] = []
        self.exhausted = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.api = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> FakeAnthropic:
        # Polled as every stand-in's (local_server.POLL_S): serve_forever's default, 0.5 s, was a
        # wait of up to half a second at each stop, once per Claude Code sandbox.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": POLL_S}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def script(self, *items: ScriptItem) -> None:
        """Queue replies for the agent's next turns."""
        with self._lock:
            self._script.extend(as_reply(item) for item in items)

    def reply_for(self, body: JSON, raw: bytes) -> Text | ToolCall | Fail:
        with self._lock:
            if not body.get("tools"):
                self.side_requests.append(body)
                return Text(SIDE_TEXT)
            self.requests.append(body)
            self.raw.append(raw)
            if self._script:
                return self._script.popleft()
            self.exhausted += 1
            return Text(EXHAUSTED_TEXT)

    def next_id(self) -> str:
        return f"{next(self._ids):024d}"


def _blocks(reply: Text | ToolCall, ident: str) -> list[JSON]:
    if isinstance(reply, Text):
        return [{"type": "text", "text": reply.text}]
    return [{"type": "tool_use", "id": f"toolu_{ident}", "name": reply.tool, "input": reply.arguments}]


def _events(reply: Text | ToolCall, body: JSON, ident: str) -> Iterable[tuple[str, JSON]]:
    model = str(body.get("model", "claude-fake"))
    usage = {
        "input_tokens": 10,
        "output_tokens": 0,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    message = {
        "id": f"msg_{ident}", "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": usage,
    }  # fmt: skip
    yield "message_start", {"type": "message_start", "message": message}
    for index, block in enumerate(_blocks(reply, ident)):
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": start}
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    stop = "tool_use" if isinstance(reply, ToolCall) else "end_turn"
    yield "message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                            "usage": {"output_tokens": 5}}  # fmt: skip
    yield "message_stop", {"type": "message_stop"}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _json(self, status: int, value: JSON) -> None:
        raw = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self) -> None:
        self.server.api.other_paths.append(f"GET {self.path}")  # type: ignore[attr-defined]
        self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        api: FakeAnthropic = self.server.api  # type: ignore[attr-defined]
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = self.path.split("?", 1)[0]
        if path == "/v1/messages/count_tokens":
            self._json(200, {"input_tokens": max(1, len(raw) // 4)})
            return
        if path != "/v1/messages":
            api.other_paths.append(f"POST {self.path}")
            self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})
            return
        body = json.loads(raw)
        reply = api.reply_for(body, raw)
        if isinstance(reply, Fail):
            self._json(
                reply.status, {"type": "error", "error": {"type": "api_error", "message": reply.message}}
            )
            return
        ident = api.next_id()
        if not body.get("stream"):
            events = list(_events(reply, body, ident))
            message = events[0][1]["message"]
            self._json(
                200,
                {
                    **message,
                    "content": _blocks(reply, ident),
                    "stop_reason": events[-2][1]["delta"]["stop_reason"],
                },
            )
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for name, data in _events(reply, body, ident):
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()
        self.close_connection = True
