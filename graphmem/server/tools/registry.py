"""How every tool is registered: its call checked, timed and counted, its errors presented.

``ToolRegistry.tool`` wraps a plain function: graphmem's errors become MCP tool errors
whose message says how to fix the call, unexpected failures are logged (without memory
text) and reported without internals, and a write tells the runtime it happened.
``ArgumentCheck`` reads a call's arguments against the tool's parameters before it runs.
"""

from __future__ import annotations

import functools
import inspect
import logging
import time
import typing
from collections.abc import Callable
from dataclasses import dataclass
from types import CodeType
from typing import Any, ParamSpec, TypeVar

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.middleware import Middleware, MiddlewareContext
from mcp.types import ToolAnnotations
from pydantic import TypeAdapter, ValidationError

from graphmem.errors import GraphmemError, ImportFileError
from graphmem.server.metrics import Metrics
from graphmem.server.runtime import Runtime

log = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

MAX_PROBLEMS_SHOWN = 20

READ_ONLY = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)
WRITES = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False)
IDEMPOTENT_WRITE = ToolAnnotations(
    readOnlyHint=False, destructiveHint=False, idempotentHint=True, openWorldHint=False
)
# Asks GitLab (the open world) and stores what it says.
FETCHES = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True, openWorldHint=True)
DESTRUCTIVE = ToolAnnotations(
    readOnlyHint=False, destructiveHint=True, idempotentHint=True, openWorldHint=False
)


class ToolRegistry:
    """The tools of one FastMCP server, bound to one runtime."""

    def __init__(self, mcp: FastMCP, runtime: Runtime) -> None:
        self.mcp = mcp
        self.runtime = runtime
        self._parameters: dict[str, Parameters] = {}

    def tool(self, annotations: ToolAnnotations) -> Callable[[Callable[P, R]], Callable[P, R]]:
        """Register the decorated function as the tool of its name, checked and timed."""

        def register(function: Callable[P, R]) -> Callable[P, R]:
            name = function.__name__
            wrapped = _checked(self.runtime, name)(function)
            if not annotations.read_only_hint:
                wrapped = _then(wrapped, self.runtime.written)
            self.mcp.tool(wrapped, name=name, annotations=annotations)
            self._parameters[name] = Parameters.of(function)
            return wrapped

        return register

    def project_of(self, path: str | None) -> str | None:
        """The project a call's ``project`` names (``graphmem mcp`` fills in its working directory)."""
        return self.runtime.resolve_project(path)

    def branch_of(self, path: str | None) -> str | None:
        """The branch the checkout at a call's ``project`` is on (None: the default branch)."""
        return self.runtime.resolve_branch(path)

    def check_arguments(self) -> None:
        """Check every call against its tool's parameters before it runs (after the last tool)."""
        self.mcp.add_middleware(ArgumentCheck(self._parameters, self.runtime.metrics))


def _checked(runtime: Runtime, name: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Time the call, count it, and turn graphmem's errors into MCP tool errors."""

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(function)
        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            started = time.perf_counter()
            outcome = "ok"
            try:
                with runtime.calls.serving():  # the background worker steps aside
                    return function(*args, **kwargs)
            except ImportFileError as exc:
                outcome = type(exc).__name__
                shown = exc.problems[:MAX_PROBLEMS_SHOWN]
                lines = "\n".join(f"line {line}: {problem}" for line, problem in shown)
                more = len(exc.problems) - len(shown)
                tail = f"\n... and {more} more" if more > 0 else ""
                raise ToolError(f"{exc}\n{lines}{tail}") from exc
            except GraphmemError as exc:
                outcome = type(exc).__name__
                raise ToolError(str(exc)) from exc
            except Exception as exc:
                outcome = "internal"
                log.exception("tool %s failed", name)
                raise ToolError(
                    f"graphmem failed inside {name} ({type(exc).__name__}); the daemon's log "
                    f"({runtime.log_hint}) has details. Stored memories are unaffected."
                ) from exc
            finally:
                runtime.metrics.observe_call(name, outcome, time.perf_counter() - started)

        return call

    return decorate


def _then(function: Callable[P, R], after: Callable[[], None]) -> Callable[P, R]:
    @functools.wraps(function)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return function(*args, **kwargs)
        finally:
            after()

    return call


@dataclass(frozen=True, slots=True)
class Parameters:
    """A tool's parameters, to check a call before it runs."""

    adapters: dict[str, TypeAdapter[Any]]
    required: frozenset[str]

    @classmethod
    def of(cls, function: Callable[..., Any]) -> Parameters:
        """The parameters of ``function``, built once per tool definition: every server built in
        one process (a test builds one per runtime) defines the same tools, and pydantic's
        adapters take a while to build."""
        known = _PARAMETERS.get(function.__code__)
        if known is not None:
            return known
        hints = typing.get_type_hints(function, include_extras=True)
        signature = inspect.signature(function)
        parameters = _PARAMETERS[function.__code__] = cls(
            {name: TypeAdapter(hints[name]) for name in signature.parameters},
            frozenset(n for n, p in signature.parameters.items() if p.default is inspect.Parameter.empty),
        )
        return parameters


# A tool's parameters by the code of its function (one code object per ``def``, whatever the
# closure): the annotations, hence the adapters, are the same for every server built.
_PARAMETERS: dict[CodeType, Parameters] = {}


class ArgumentCheck(Middleware):
    """Checks a call's arguments against the tool's parameters and says, in one line
    per problem, what is wrong: unknown names (listing the accepted ones), missing
    ones, wrong types and values out of bounds."""

    def __init__(self, parameters: dict[str, Parameters], metrics: Metrics) -> None:
        self._parameters = parameters
        self._metrics = metrics

    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        name = context.message.name
        arguments = context.message.arguments or {}
        parameters = self._parameters.get(name)
        if parameters is not None:
            problem = self._problem(name, arguments, parameters)
            if problem:
                self._metrics.errors.labels("invalid_arguments").inc()
                raise ToolError(problem)
        return await call_next(context)

    @staticmethod
    def _problem(name: str, arguments: dict[str, Any], parameters: Parameters) -> str | None:
        accepted = list(parameters.adapters)
        unknown = sorted(set(arguments) - set(accepted))
        if unknown:
            return f"Unknown argument(s) for {name}: {', '.join(unknown)}. It accepts: {', '.join(accepted)}."
        missing = sorted(parameters.required - set(arguments))
        if missing:
            return f"{name} needs {', '.join(missing)}."
        problems = []
        for key, value in arguments.items():
            try:
                parameters.adapters[key].validate_python(value)
            except ValidationError as exc:
                error = exc.errors()[0]
                problems.append(f"{key}: {error['msg']} (got {value!r:.60})")
        if problems:
            return f"Invalid arguments for {name}: {'; '.join(problems)}. Fix them and call again."
        return None
