"""What one MCP request must look like, said in the same words on both of graphmem's MCP doors:
``graphmem mcp`` over stdio (``proxy.Proxy.handle``) and ``/mcp`` over HTTP (``http.CheckedMcp``,
in front of FastMCP, whose own answer to a request of the wrong shape is a dump of pydantic's
validation errors or an empty "Invalid request parameters").

Only the standard library is imported here: the stdio proxy starts with every client.
"""

from __future__ import annotations

from typing import Any

INVALID_REQUEST = -32600
INVALID_PARAMS = -32602


def problem(message: Any) -> tuple[int, str] | None:
    """The JSON-RPC error code and sentence that answer ``message`` (parsed JSON), or None when
    its shape is one graphmem serves. A notification (no ``id``) is only checked for being a
    JSON-RPC 2.0 object: nothing answers it."""
    if isinstance(message, list):
        return INVALID_REQUEST, (
            "Invalid request: a batch (a JSON array) is not served: send one JSON-RPC 2.0 object per request."
        )
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return INVALID_REQUEST, 'Invalid request: expected a JSON-RPC 2.0 object ({"jsonrpc": "2.0", ...}).'
    if "id" not in message:
        return None
    if request_id(message) is None:
        return INVALID_REQUEST, "Invalid request: id must be a string or an integer."
    method = message.get("method")
    if not isinstance(method, str):
        return INVALID_REQUEST, "Invalid request: no method (a string such as tools/call)."
    params = message.get("params")
    if params is not None and not isinstance(params, dict):
        return INVALID_PARAMS, f"{method} params must be an object."
    if method == "tools/call":
        if params is None or not isinstance(params.get("name"), str):
            return INVALID_PARAMS, "tools/call needs params.name (a tool name)."
        arguments = params.get("arguments")
        if arguments is not None and not isinstance(arguments, dict):
            return (
                INVALID_PARAMS,
                "tools/call params.arguments must be an object (the tool's arguments by name).",
            )
    return None


def request_id(message: Any) -> str | int | None:
    """``message``'s id when it is one a reply may carry (a string or an integer), else None."""
    found = message.get("id") if isinstance(message, dict) else None
    return found if isinstance(found, str | int) and not isinstance(found, bool) else None
