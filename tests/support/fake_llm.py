"""A scripted, OpenAI-compatible chat-completions server that stands in for a real model.

OpenCode talks to it through its ``@ai-sdk/openai-compatible`` provider (see
``tests/support/opencode.py``). It is a stdlib ``ThreadingHTTPServer`` on ``127.0.0.1``, a free
port, running in a daemon thread; ``start()``/``stop()`` or ``with FakeLLM() as llm:``.

Endpoints (under ``/v1``, the ``baseURL`` to configure):

- ``GET /v1/models``: one model, ``MODEL_ID``.
- ``POST /v1/chat/completions``: answers with the next scripted reply. With ``"stream": true``
  (what OpenCode sends) the answer is Server-Sent Events: ``data: {chat.completion.chunk}``
  lines, a final chunk with ``finish_reason`` (``stop`` or ``tool_calls``) and ``usage``, then
  ``data: [DONE]``. Without it, one ``chat.completion`` JSON object.

The script is a queue of replies, each a :class:`Text`, a :class:`ToolCall` or a :class:`Fail`
(an HTTP error status, for clients' error paths) (or the plain
forms ``"text"``, ``{"text": ...}``, ``{"tool": "stand_echo", "arguments": {...}}``). Every
model request that is not a title request consumes one reply. After a tool-call reply, OpenCode
runs the tool and sends a new request whose messages end with the ``role: "tool"`` message
carrying the result; that request gets the next reply (usually the closing text). When the
script is exhausted the server answers :data:`EXHAUSTED_TEXT` and counts the request in
``exhausted``, so a test can tell "the model was asked more than the script planned".

OpenCode's hidden ``title`` agent also calls the model, to name the session. Its requests are
recognised by :func:`is_title_request` (no tools offered, and the system prompt contains
OpenCode's title-agent prompt, :data:`TITLE_MARKER`, or a user message starts with
:data:`TITLE_USER_MARKER`), get :data:`TITLE_TEXT`, do not consume the script, and are recorded
in ``title_requests`` instead of ``requests``.

Every request body is recorded as parsed JSON: ``requests`` (model turns, in order),
``title_requests`` and ``all_requests`` (both kinds, in arrival order). Helpers read the
parts tests assert on: :func:`system_prompt`, :func:`tool_messages`, :func:`offered_tools`.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from support.local_server import POLL_S

MODEL_ID = "fake-model"
TITLE_TEXT = "Fake session title"
EXHAUSTED_TEXT = "(fake model: script exhausted)"
# OpenCode 1.18's hidden `title` agent: the start of its system prompt ("You are a title generator.
# You output ONLY a thread title. ...") and of the user message it puts before the conversation.
TITLE_MARKER = "You are a title generator"
TITLE_USER_MARKER = "Generate a title for this conversation"

JSON = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Text:
    """A reply that is plain assistant text."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A reply that asks the client to call ``tool`` (the name the client offered) with ``arguments``."""

    tool: str
    arguments: JSON = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Fail:
    """A reply that is an HTTP error: ``status`` with an OpenAI-style ``{"error": {"message": ...}}`` body."""

    status: int
    message: str = "scripted failure"


Reply = Text | ToolCall
ScriptItem = Reply | Fail | str | JSON


def as_reply(item: ScriptItem) -> Reply | Fail:
    """One script item in any accepted form, as a :class:`Text`, :class:`ToolCall` or :class:`Fail`."""
    if isinstance(item, Text | ToolCall | Fail):
        return item
    if isinstance(item, str):
        return Text(item)
    if "tool" in item:
        return ToolCall(str(item["tool"]), dict(item.get("arguments") or {}))
    if "text" in item:
        return Text(str(item["text"]))
    raise ValueError(f"not a script item: {item!r}")


def _text_of(content: Any) -> str:
    """The text of a message ``content``: a string, or a list of ``{"type": "text", "text": ...}`` parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def system_prompt(body: JSON) -> str:
    """All ``system`` messages of a request, joined by newlines."""
    messages = body.get("messages", [])
    return "\n".join(_text_of(m.get("content")) for m in messages if m.get("role") == "system")


def tool_messages(body: JSON) -> list[JSON]:
    """The ``role: "tool"`` messages of a request (tool results the client sent back to the model)."""
    return [m for m in body.get("messages", []) if m.get("role") == "tool"]


def offered_tools(body: JSON) -> list[str]:
    """The names of the function tools offered to the model in a request."""
    return [t["function"]["name"] for t in body.get("tools") or [] if t.get("type") == "function"]


def is_title_request(body: JSON) -> bool:
    """Whether a request comes from OpenCode's hidden ``title`` agent.

    Such a request offers no tools, and either its system prompt contains :data:`TITLE_MARKER`
    (plugins may add system text before or after it) or a user message starts with
    :data:`TITLE_USER_MARKER`. A normal turn offers the agent's tools and its system prompt is
    the agent prompt ("You are opencode, ...") plus environment and instructions.
    """
    if body.get("tools"):
        return False
    if TITLE_MARKER in system_prompt(body):
        return True
    return any(
        m.get("role") == "user" and _text_of(m.get("content")).lstrip().startswith(TITLE_USER_MARKER)
        for m in body.get("messages", [])
    )


class FakeLLM:
    """The scripted server. Thread-safe: OpenCode may send requests concurrently (title + turn)."""

    def __init__(self, script: Iterable[ScriptItem] = ()) -> None:
        self._lock = threading.Lock()
        self._script: deque[Reply | Fail] = deque(as_reply(i) for i in script)
        self._ids = itertools.count(1)
        self.requests: list[JSON] = []
        self.title_requests: list[JSON] = []
        self.all_requests: list[JSON] = []
        self.exhausted = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- script -------------------------------------------------------------------------------

    def script(self, *items: ScriptItem) -> None:
        """Append replies to the script."""
        with self._lock:
            self._script.extend(as_reply(i) for i in items)

    def reset(self, *items: ScriptItem) -> None:
        """Forget the script and the recorded requests, then script ``items``."""
        with self._lock:
            self._script.clear()
            self._script.extend(as_reply(i) for i in items)
            self.requests.clear()
            self.title_requests.clear()
            self.all_requests.clear()
            self.exhausted = 0

    @property
    def remaining(self) -> int:
        """How many scripted replies have not been used."""
        with self._lock:
            return len(self._script)

    def _next_reply(self, body: JSON) -> Reply | Fail:
        with self._lock:
            self.all_requests.append(body)
            if is_title_request(body):
                self.title_requests.append(body)
                return Text(TITLE_TEXT)
            self.requests.append(body)
            if self._script:
                return self._script.popleft()
            self.exhausted += 1
            return Text(EXHAUSTED_TEXT)

    # -- lifecycle ----------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("FakeLLM is not started")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL (ends in ``/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FakeLLM:
        if self._server is not None:
            return self
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": POLL_S}, name="fake-llm", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- wire format --------------------------------------------------------------------------

    def _completion_id(self) -> str:
        with self._lock:
            return f"chatcmpl-fake-{next(self._ids)}"

    def chunks(self, reply: Reply, model: str) -> Iterator[JSON]:
        """The ``chat.completion.chunk`` objects of a streamed reply."""
        cid, created = self._completion_id(), int(time.time())

        def chunk(delta: JSON, finish: str | None = None, usage: JSON | None = None) -> JSON:
            out: JSON = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            if usage is not None:
                out["usage"] = usage
            return out

        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        if isinstance(reply, Text):
            yield chunk({"role": "assistant", "content": ""})
            yield chunk({"content": reply.text})
            yield chunk({}, "stop", usage)
        else:
            call_id = f"call_fake_{cid.rsplit('-', 1)[-1]}"
            yield chunk(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": reply.tool, "arguments": ""},
                        }
                    ],
                }
            )
            arguments = json.dumps(reply.arguments)
            yield chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]})
            yield chunk({}, "tool_calls", usage)

    def completion(self, reply: Reply, model: str) -> JSON:
        """The ``chat.completion`` object of a non-streamed reply."""
        cid = self._completion_id()
        message: JSON
        if isinstance(reply, Text):
            message, finish = {"role": "assistant", "content": reply.text}, "stop"
        else:
            call = {
                "id": f"call_fake_{cid.rsplit('-', 1)[-1]}",
                "type": "function",
                "function": {"name": reply.tool, "arguments": json.dumps(reply.arguments)},
            }
            message, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
        return {
            "id": cid,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }


def _handler_for(llm: FakeLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # HTTP/1.0: one response per connection, closed at the end (simple for SSE, no chunking).
        protocol_version = "HTTP/1.0"

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
            if self.path.rstrip("/") in ("/v1/models", "/models"):
                model = {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "graphmem-tests"}
                self._send_json(200, {"object": "list", "data": [model]})
            else:
                self._send_json(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                self._send_json(404, {"error": {"message": f"no route {self.path}"}})
                return
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError as exc:
                self._send_json(400, {"error": {"message": f"bad JSON: {exc}"}})
                return
            reply = llm._next_reply(body)
            if isinstance(reply, Fail):
                self._send_json(reply.status, {"error": {"message": reply.message}})
                return
            model = str(body.get("model") or MODEL_ID)
            if not body.get("stream"):
                self._send_json(200, llm.completion(reply, model))
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            for chunk in llm.chunks(reply, model):
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()

    return Handler
