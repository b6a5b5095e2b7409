"""How every tool is registered: from the table of verbs, its call checked, timed and counted,
its errors presented.

A tool's function closes over the runtime it serves, and FastMCP keeps what it learns of a
function (its argument adapter, its wrappers) in caches for the life of the process, keyed on
the function: a function per server would keep every server's runtime, its stores with it,
alive as long as the process, and be parsed again for each. So FastMCP is given one function
per tool for the whole process (``_dispatching``), which finds the server answering the call
(FastMCP's ``get_server``) and calls that server's own function (``ToolServer.calls``).

The tools are the table's (``server/verbs.py``), in its order, each annotated with the
effect of the verbs it exposes. ``ToolRegistry.tool`` takes a tool's own function (its
parameters described for the model, its answer shaped); a tool the table names with no
function of its own is made from the verb's method (``made_from``). Each is wrapped:
graphmem's errors become MCP tool errors whose message says how to fix the call (not logged:
``answered``), unexpected failures are logged (with their traceback, without memory text) and
reported without internals, and a tool that is not read-only tells the runtime it wrote.
``ArgumentCheck`` reads a call's arguments against the tool's parameters before it runs.
"""

from __future__ import annotations

import copy
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
from fastmcp.server.dependencies import get_server
from fastmcp.server.middleware import Middleware, MiddlewareContext
from fastmcp.tools import FunctionTool
from mcp.types import ToolAnnotations
from pydantic import TypeAdapter, ValidationError

from graphmem.api import Memory
from graphmem.errors import GraphmemError, ImportFileError
from graphmem.server import body_json, verbs
from graphmem.server.metrics import Metrics
from graphmem.server.rpc_types import LOCAL_ONLY
from graphmem.server.runtime import Runtime
from graphmem.server.verbs import Binding, Effect, Owner, Verb
from graphmem.service.memory import MemoryService

log = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

MAX_PROBLEMS_SHOWN = 20


def hints(effect: Effect) -> ToolAnnotations:
    """MCP's hints for a tool of this effect."""
    return ToolAnnotations(
        readOnlyHint=effect.read_only,
        destructiveHint=effect.destructive,
        idempotentHint=effect.idempotent,
        openWorldHint=effect.open_world,
    )


class ToolServer(FastMCP):
    """A FastMCP server of graphmem's tools: ``calls`` holds this server's own function of each
    tool (bound to its runtime), which the process's one function of the tool calls. Its
    ``version`` is graphmem's, which ``initialize`` reports (FastMCP's own, by default)."""

    def __init__(self, name: str, *, version: str, instructions: str) -> None:
        super().__init__(name, version=version, instructions=instructions, mask_error_details=True)
        self.calls: dict[str, Callable[..., Any]] = {}


class ToolRegistry:
    """The tools of one FastMCP server, bound to one runtime. A tool's function (``add_*_tools``)
    takes what it uses from here: ``memory``, the service it calls, the ``runtime`` (its clock,
    its coordinator), and the caller's checkout (``project_of``, ``branch_of``)."""

    def __init__(self, mcp: ToolServer, runtime: Runtime) -> None:
        self.mcp = mcp
        self.runtime = runtime
        self._functions: dict[str, Callable[..., Any]] = {}

    def tool(self) -> Callable[[Callable[P, R]], Callable[P, R]]:
        """Take the decorated function as the tool of its name, which the table must declare;
        ``register`` adds it."""

        def take(function: Callable[P, R]) -> Callable[P, R]:
            name = function.__name__
            if name not in verbs.tools():
                raise ValueError(f"No verb of server/verbs.py names the tool {name}: declare it there.")
            self._functions[name] = function
            return function

        return take

    def register(self) -> None:
        """Add the table's tools, in its order (each tool's own function, or one made from its
        verb), and check every call against its tool's parameters before it runs."""
        parameters: dict[str, Parameters] = {}
        for name, exposed in verbs.tools().items():
            function = self._functions.get(name) or made_from(exposed, self.runtime)
            effect = verbs.tool_effect(exposed)
            wrapped = _checked(self.runtime, name)(function)
            if not effect.read_only:
                wrapped = _then(wrapped, self.runtime.written)
            self.mcp.calls[name] = wrapped
            self.mcp.add_tool(_tool(function, name, hints(effect)))
            parameters[name] = Parameters.of(function)
        self.mcp.add_middleware(ArgumentCheck(parameters, self.runtime.metrics))

    @property
    def memory(self) -> MemoryService:
        """The Memory service the tools call: the runtime's."""
        return self.runtime.memory

    def project_of(self, path: str | None) -> str | None:
        """The project a call's ``project`` names (``graphmem mcp`` fills in its working directory)."""
        return self.runtime.resolve_project(path)

    def branch_of(self, path: str | None) -> str | None:
        """The branch the checkout at a call's ``project`` is on (None: the default branch)."""
        return self.runtime.resolve_branch(path)


def made_from(exposed: tuple[Verb, ...], runtime: Runtime) -> Callable[..., Any]:
    """The tool of a verb that has no function of its own: the verb's method, with the
    parameters a caller may set (a bound verb's ``project`` is resolved as the other tools'
    is, its branch is the checkout's), its docstring and its result."""
    if len(exposed) != 1:
        raise ValueError(f"The tool {exposed[0].tool} exposes several verbs: give it a function of its own.")
    [verb] = exposed
    owner: type = MemoryService if verb.owner is Owner.MEMORY else Runtime
    method = getattr(owner, verb.name)
    hints = typing.get_type_hints(method, include_extras=True)
    bound = verb.binds is not Binding.NONE
    parameters = [
        parameter.replace(annotation=hints[parameter.name])
        for parameter in list(inspect.signature(method).parameters.values())[1:]
        if parameter.name not in LOCAL_ONLY
        and parameter.name not in verb.set_by_path
        and not (verb.binds is Binding.BRANCH and parameter.name == "branch")
        and parameter.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    ]
    returns = hints.get("return", type(None))

    def call(**arguments: Any) -> Any:
        target = runtime.memory if verb.owner is Owner.MEMORY else runtime
        if bound:
            path = arguments.get("project")
            arguments["project"] = runtime.resolve_project(path)
            if verb.binds is Binding.BRANCH:
                arguments["branch"] = runtime.resolve_branch(path)
        return getattr(target, verb.name)(**arguments)

    call.__name__ = call.__qualname__ = str(verb.tool)
    call.__doc__ = getattr(Memory, verb.name, method).__doc__  # a verb's doc is the protocol's (api.py)
    call.__signature__ = inspect.Signature(parameters, return_annotation=returns)  # type: ignore[attr-defined]
    call.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": returns}
    return call


def _tool(function: Callable[..., Any], name: str, annotations: ToolAnnotations) -> FunctionTool:
    """The FastMCP tool ``name``, defined by ``function``, calling the process's one function of
    it (``_dispatching``).

    FastMCP parses a function's parameters and answer into JSON schemas (pydantic models, 70 ms
    of CPU for a server's tools), and every server built in one process (a test builds one per
    runtime) defines the same tools: a tool's definition is parsed once, keyed as
    ``Parameters.of`` keys it, and a later server's tool is a copy of it. The copy is what
    FastMCP's own transforms make of a tool (``model_copy``), its schemas copied too, so nothing
    one server does to its tools reaches another's."""
    key = (function.__code__, name)
    parsed = _TOOLS.get(key)
    if parsed is None:
        dispatching = _dispatching(function, name)
        parsed = FunctionTool.from_function(dispatching, name=name, annotations=annotations)
        if parsed.fn is not dispatching:  # FastMCP would inject a parameter: not one of graphmem's tools
            raise ValueError(
                f"The tool {name} takes a parameter FastMCP injects: graphmem's tools take none."
            )
        _TOOLS[key] = parsed
    return _copy(parsed)


def _dispatching(function: Callable[..., Any], name: str) -> Callable[..., Any]:
    """The process's one function of the tool ``name``: ``function``'s parameters, answer and
    docstring (what FastMCP parses), calling the function of the server that answers the call.
    It holds nothing of ``function`` (no ``__wrapped__``): no server's runtime."""
    hints = typing.get_type_hints(function, include_extras=True)  # the module's names resolved
    signature = inspect.signature(function)
    parameters = [
        p.replace(annotation=hints.get(p.name, p.annotation)) for p in signature.parameters.values()
    ]
    returns = hints.get("return", signature.return_annotation)

    def call(*args: Any, **kwargs: Any) -> Any:
        server = get_server()
        if not isinstance(server, ToolServer):
            raise RuntimeError(
                f"The tool {name} was called on a server graphmem did not build ({server.name})."
            )
        return server.calls[name](*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = function.__doc__
    call.__signature__ = signature.replace(parameters=parameters, return_annotation=returns)  # type: ignore[attr-defined]
    call.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": returns}
    return call


def _copy(tool: FunctionTool) -> FunctionTool:
    """``tool`` with schemas, annotations and tags of its own (the same function)."""
    return tool.model_copy(
        update={
            "parameters": copy.deepcopy(tool.parameters),
            "output_schema": copy.deepcopy(tool.output_schema),
            "annotations": tool.annotations.model_copy() if tool.annotations else None,
            "tags": set(tool.tags),
            "meta": copy.deepcopy(tool.meta),
        }
    )


# Each tool's definition as FastMCP parsed it, by the code of its function and its name (as
# ``_PARAMETERS``), calling the process's one function of the tool (``_dispatching``).
_TOOLS: dict[tuple[CodeType, str], FunctionTool] = {}


def answered(message: str) -> ToolError:
    """The tool error answering a call with ``message``, which FastMCP logs at DEBUG (it logs a
    tool error at ERROR by default). A refused call (an invalid argument, an id that names
    nothing) is graphmem's answer to the agent, not a failure of the daemon: a client could
    fill the log with them. An unexpected failure is logged once, by ``_checked``, with its
    traceback, before it is answered."""
    return ToolError(message, log_level=logging.DEBUG)


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
                raise answered(f"{exc}\n{lines}{tail}") from exc
            except GraphmemError as exc:
                outcome = type(exc).__name__
                raise answered(str(exc)) from exc
            except Exception as exc:
                outcome = "internal"
                log.exception("tool %s failed", name)  # the one record of it, with its traceback
                raise answered(
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
        key = (function.__code__, function.__name__)  # the tools made from verbs share one code
        known = _PARAMETERS.get(key)
        if known is not None:
            return known
        hints = typing.get_type_hints(function, include_extras=True)
        signature = inspect.signature(function)
        parameters = _PARAMETERS[key] = cls(
            {name: TypeAdapter(hints[name]) for name in signature.parameters},
            frozenset(n for n, p in signature.parameters.items() if p.default is inspect.Parameter.empty),
        )
        return parameters


# A tool's parameters by the code of its function (one code object per ``def``, whatever the
# closure) and its name: the annotations, hence the adapters, are the same for every server built.
_PARAMETERS: dict[tuple[CodeType, str], Parameters] = {}


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
                raise answered(problem)
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
                body_json.validated(parameters.adapters[key], value)
            except ValidationError as exc:
                error = exc.errors()[0]
                problems.append(f"{key}: {error['msg']} (got {value!r:.60})")
        if problems:
            return f"Invalid arguments for {name}: {'; '.join(problems)}. Fix them and call again."
        return None
