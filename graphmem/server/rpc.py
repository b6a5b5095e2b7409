"""The daemon's ``/rpc`` route: the Memory service's verbs for the CLI, over HTTP.

While a daemon owns the store no other process can open it, so the CLI sends its
calls here (see ``graphmem.server.remote``). This is the daemon's side: it validates
arguments and dumps results with pydantic, typed by the service's own signatures. The
CLI's side encodes and decodes with ``graphmem.server.rpc_types``, whose declarations a
test holds equal to those signatures, so both sides get the same objects and the CLI
imports neither the service nor pydantic. graphmem's errors travel by class name and
are raised again on the CLI side.
"""

from __future__ import annotations

import collections.abc
import inspect
import io
import json
import types
import typing
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from graphmem.errors import GraphmemError, ImportFileError, InvalidInputError
from graphmem.server import body_json
from graphmem.server.rpc_types import LOCAL_ONLY, VERBS, set_by_path
from graphmem.service.memory import MemoryService


@cache
def signature(method: str) -> tuple[dict[str, TypeAdapter[Any]], TypeAdapter[Any]]:
    """Adapters for the parameters and the result of ``MemoryService.<method>``."""
    function = getattr(MemoryService, method)
    hints = typing.get_type_hints(function)
    params = {
        name: TypeAdapter(_eager(hints[name]))
        for name in inspect.signature(function).parameters
        if name != "self" and name not in LOCAL_ONLY and not set_by_path(method, name)
    }
    return params, TypeAdapter(hints.get("return", type(None)))


# The fields of a request: what to call, with what, and whether to stream its progress (rpc_stream).
REQUEST_KEYS = frozenset({"method", "arguments", "progress"})
# What pydantic validates lazily, item by item as the verb iterates it.
LAZY_ITERABLES = frozenset({collections.abc.Iterable, collections.abc.Iterator})


def _eager(hint: Any) -> Any:
    """``hint`` with each ``Iterable[X]`` (also inside a union) read as ``tuple[X, ...]``.

    pydantic checks an ``Iterable`` only as it is iterated: a bad item (``"statuses": ["zzz"]``)
    would raise pydantic's ``ValidationError`` inside the verb, a 500. A tuple is checked whole
    in ``parse``, a 400 naming the argument, and the verb still gets the iterable it asks for.
    """
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        return typing.Union[tuple(_eager(member) for member in typing.get_args(hint))]  # noqa: UP007
    if origin in LAZY_ITERABLES:
        (item,) = typing.get_args(hint) or (Any,)
        return tuple[_eager(item), ...]  # type: ignore[misc]
    return hint


def parse(request: Any) -> tuple[str, dict[str, Any]]:
    """The method and validated arguments of ``{"method": ..., "arguments": {...}}``.

    Raises ``InvalidInputError`` for a request that cannot run (the route answers 400):
    an unknown method, arguments that are not an object, unknown, missing or invalid ones.
    """
    if not isinstance(request, dict):
        raise InvalidInputError(
            f"Unknown method: the body is a JSON {_json_kind(request)}; send an object "
            f'{{"method": NAME, "arguments": {{...}}}}, NAME one of: {", ".join(sorted(VERBS))}.'
        )
    stray = sorted(set(request) - REQUEST_KEYS)
    if stray:
        named = ", ".join(json.dumps(key) for key in stray)[:200]
        raise InvalidInputError(
            f"Unknown field(s) in the request: {named}. A request is "
            '{"method": NAME, "arguments": {...}}, with "progress": true to stream the progress.'
        )
    if not isinstance(request.get("method"), str) or request["method"] not in VERBS:
        raise InvalidInputError(f"Unknown method; use one of: {', '.join(sorted(VERBS))}.")
    method: str = request["method"]
    raw = request.get("arguments")
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise InvalidInputError(
            f'"arguments" must be a JSON object of {method}\'s parameters, not {type(raw).__name__}.'
        )
    params, _ = signature(method)
    unknown = set(raw) - set(params)
    if unknown:
        named = ", ".join(sorted(unknown))[:200]  # a name may be 10,000 characters
        raise InvalidInputError(f"Unknown argument(s) for {method}: {named}.")
    missing = [name for name in _required(method) if name not in raw]
    if missing:
        raise InvalidInputError(f"{method} needs the argument(s): {', '.join(missing)}.")
    arguments: dict[str, Any] = {}
    problems = []
    for name, value in raw.items():
        try:
            arguments[name] = body_json.validated(params[name], value)
        except ValidationError as exc:
            problems.append(_problem(name, value, exc))
    if problems:  # each bad argument named, as the MCP tools name theirs
        raise InvalidInputError(
            f"Invalid arguments for {method}: {'; '.join(problems)}. Fix them and call again."
        )
    return method, arguments


def _json_kind(value: Any) -> str:
    """What JSON calls the type of ``value`` (a body that is no object)."""
    kinds = {list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else kinds.get(type(value), type(value).__name__)


def _problem(name: str, value: Any, exc: ValidationError) -> str:
    """``statuses[0]: Input should be 'active', ... (got ['zzz'])``: the argument, the item in it."""
    error = exc.errors()[0]
    where = name + "".join(f"[{part}]" for part in error["loc"] if isinstance(part, int))
    return f"{where}: {error['msg']} (got {value!r:.60})"


@cache
def _required(method: str) -> tuple[str, ...]:
    """The parameters of ``MemoryService.<method>`` that have no default."""
    return tuple(
        name
        for name, parameter in inspect.signature(getattr(MemoryService, method)).parameters.items()
        if name != "self"
        and name not in LOCAL_ONLY
        and not set_by_path(method, name)
        and parameter.default is inspect.Parameter.empty
        and parameter.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    )


def error_answer(exc: GraphmemError) -> dict[str, Any]:
    """``{"error": {"type", "message"[, "problems"]}}``: the CLI raises it again by class name."""
    error: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    if isinstance(exc, ImportFileError):
        error["problems"] = exc.problems
    return {"error": error}


def run(memory: MemoryService, method: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Run a parsed request; ``{"result": ...}``, or the verb's graphmem error as ``{"error": ...}``."""
    _, result = signature(method)
    try:
        if method == "export":
            buffer = io.StringIO()
            summary = memory.export(buffer, **arguments)
            return {
                "result": {"text": buffer.getvalue(), "summary": result.dump_python(summary, mode="json")}
            }
        if method == "import_file":
            arguments["path"] = Path(arguments["path"])
        verb: Callable[..., Any] = getattr(memory, method)
        return {"result": result.dump_python(verb(**arguments), mode="json")}
    except GraphmemError as exc:
        return error_answer(exc)


def call(memory: MemoryService, request: Any) -> dict[str, Any]:
    """Run one request ``{"method": ..., "arguments": {...}}``; the JSON answer."""
    try:
        method, arguments = parse(request)
    except InvalidInputError as exc:
        return error_answer(exc)
    return run(memory, method, arguments)
