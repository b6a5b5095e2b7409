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

import inspect
import io
import typing
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from graphmem.errors import GraphmemError, ImportFileError, InvalidInputError
from graphmem.server.rpc_types import LOCAL_ONLY, VERBS, set_by_path
from graphmem.service.memory import MemoryService


@cache
def signature(method: str) -> tuple[dict[str, TypeAdapter[Any]], TypeAdapter[Any]]:
    """Adapters for the parameters and the result of ``MemoryService.<method>``."""
    function = getattr(MemoryService, method)
    hints = typing.get_type_hints(function)
    params = {
        name: TypeAdapter(hints[name])
        for name in inspect.signature(function).parameters
        if name != "self" and name not in LOCAL_ONLY and not set_by_path(method, name)
    }
    return params, TypeAdapter(hints.get("return", type(None)))


def parse(request: Any) -> tuple[str, dict[str, Any]]:
    """The method and validated arguments of ``{"method": ..., "arguments": {...}}``.

    Raises ``InvalidInputError`` for a request that cannot run (the route answers 400):
    an unknown method, arguments that are not an object, unknown, missing or invalid ones.
    """
    if (
        not isinstance(request, dict)
        or not isinstance(request.get("method"), str)
        or request["method"] not in VERBS
    ):
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
        raise InvalidInputError(f"Unknown argument(s) for {method}: {', '.join(sorted(unknown))}.")
    missing = [name for name in _required(method) if name not in raw]
    if missing:
        raise InvalidInputError(f"{method} needs the argument(s): {', '.join(missing)}.")
    try:
        arguments = {name: params[name].validate_python(value) for name, value in raw.items()}
    except ValidationError as exc:
        raise InvalidInputError(f"Invalid arguments for {method}: {exc.errors()[0]['msg']}.") from None
    return method, arguments


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
