"""The MCP tools: a small, sharp surface over the Memory service.

Each tool validates its arguments (types and bounds in the schema, the rest in the
service), calls one service verb, and returns JSON. Errors are MCP tool errors whose
message says how to fix the call; unexpected failures are logged (without memory
text) and reported without internals.
"""

from __future__ import annotations

import functools
import inspect
import io
import logging
import tempfile
import time
import typing
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal, ParamSpec, TypeVar

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.middleware import Middleware, MiddlewareContext
from mcp.types import ToolAnnotations
from pydantic import Field, TypeAdapter, ValidationError

from graphmem.core.models import Category
from graphmem.core.text import MAX_TEXT_CHARS
from graphmem.core.timeparse import parse_since
from graphmem.core.views import hit_view, link_view, memory_view
from graphmem.errors import GraphmemError, ImportFileError, InvalidInputError
from graphmem.server.metrics import Metrics
from graphmem.server.runtime import Runtime

log = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

# Largest export returned inline; bigger ones must go to a file (``path``).
MAX_INLINE_EXPORT_CHARS = 1_000_000
MAX_IMPORT_CHARS = 20_000_000
MAX_PROBLEMS_SHOWN = 20

INSTRUCTIONS = """graphmem is the user's long-term memory across sessions and models.
Call get_boot_context at the start of a session. Before editing, call get_context on the
MR (!123), issue (#45), file or symbol. recall before deciding something or when stuck.
remember decisions (with the why), blockers, procedures that worked, facts, preferences
and directives the user states. Results are JSON."""

CategoryName = Literal[
    "decision", "blocker", "procedure", "fact", "preference", "directive", "event", "plan", "idea",
    "conversation",
]  # fmt: skip
ScopeName = Literal["global", "project"]
LinkKindName = Literal["supersedes", "contradicts", "extends", "related"]
UpdateAction = Literal["edit", "archive", "restore", "resolve", "unresolve", "link", "unlink", "supersede"]

Project = Annotated[
    str | None,
    Field(
        description="Absolute path of the project directory (its git toplevel is the project). "
        "Omit for global memories only; `graphmem mcp` fills in its working directory.",
        max_length=4096,
    ),
]
MemoryId = Annotated[str, Field(description="A memory id such as mem_0123abcd4567ef89.", max_length=64)]
SessionId = Annotated[str, Field(description="The id session_start returned.", max_length=64)]
MaxTokens = Annotated[
    int | None,
    Field(description="Token budget of the bundle (default: [recall] context_max_tokens).", ge=50, le=32_000),
]

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


def _checked(runtime: Runtime, name: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Time the call, count it, and turn graphmem's errors into MCP tool errors."""

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(function)
        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            started = time.perf_counter()
            outcome = "ok"
            try:
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


@dataclass(frozen=True, slots=True)
class Parameters:
    """A tool's parameters, to check a call before it runs."""

    adapters: dict[str, TypeAdapter[Any]]
    required: frozenset[str]

    @classmethod
    def of(cls, function: Callable[..., Any]) -> Parameters:
        hints = typing.get_type_hints(function, include_extras=True)
        signature = inspect.signature(function)
        return cls(
            {name: TypeAdapter(hints[name]) for name in signature.parameters},
            frozenset(n for n, p in signature.parameters.items() if p.default is inspect.Parameter.empty),
        )


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


def build_mcp(runtime: Runtime) -> FastMCP:
    """The FastMCP server with every graphmem tool bound to ``runtime``."""
    mcp = FastMCP("graphmem", instructions=INSTRUCTIONS, mask_error_details=True)
    memory = runtime.memory
    parameters: dict[str, Parameters] = {}

    def tool(annotations: ToolAnnotations) -> Callable[[Callable[P, R]], Callable[P, R]]:
        def register(function: Callable[P, R]) -> Callable[P, R]:
            name = function.__name__
            wrapped = _checked(runtime, name)(function)
            if not annotations.read_only_hint:
                wrapped = _then(wrapped, runtime.written)
            mcp.tool(wrapped, name=name, annotations=annotations)
            parameters[name] = Parameters.of(function)
            return wrapped

        return register

    def project_of(path: str | None) -> str | None:
        return runtime.resolve_project(path)

    # -- memories -------------------------------------------------------------

    @tool(WRITES)
    def remember(
        text: Annotated[
            str,
            Field(
                description="The memory, self-contained: say what and why (e.g. 'We chose Kùzu over "
                "SQLite for the graph store because ...'). Refs like !123, #45 and file paths become links.",
                min_length=1,
                max_length=MAX_TEXT_CHARS,
            ),
        ],
        category: Annotated[CategoryName, Field(description="What kind of knowledge it is.")] = "fact",
        scope: Annotated[
            ScopeName | None,
            Field(
                description="global: every project; project: this project only. Default: project "
                "when a project is given (preferences: global)."
            ),
        ] = None,
        project: Project = None,
        supersedes: Annotated[
            str | None, Field(description="Id of a memory this one replaces (closes it).", max_length=64)
        ] = None,
        session: Annotated[
            str | None, Field(description="Session id to attach the memory to.", max_length=64)
        ] = None,
    ) -> dict[str, Any]:
        """Store a memory: a decision (with the why), blocker, procedure that worked, fact,
        preference or directive worth keeping across sessions. Repeats are stored once;
        a near-duplicate reinforces the existing memory; a newer decision on the same
        subject supersedes the older one."""
        result = memory.remember(
            text, category=category, scope=scope, project=project_of(project), supersedes=supersedes,
            session=session, source="mcp",
        )  # fmt: skip
        return {
            "id": result.memory.id,
            "created": result.created,
            "duplicate_of": result.duplicate_of,
            "superseded": list(result.superseded),
            "entities": [e.name for e in result.entities],
            "memory": memory_view(result.memory, now=runtime.now()),
        }

    @tool(READ_ONLY)
    def recall(
        query: Annotated[
            str,
            Field(
                description="What you want to know, in words ('why did we pick kuzu', '!123 review').",
                min_length=1,
                max_length=MAX_TEXT_CHARS,
            ),
        ],
        limit: Annotated[
            int | None, Field(description="Most hits to return (default: [recall] limit).", ge=1, le=50)
        ] = None,
        categories: Annotated[
            list[CategoryName] | None, Field(description="Only these categories.", max_length=10)
        ] = None,
        since: Annotated[
            str | None,
            Field(
                description="Only memories created since: '30d', '12h', '2w', 'today' or an ISO date.",
                max_length=40,
            ),
        ] = None,
        history: Annotated[bool, Field(description="Include superseded and archived memories.")] = False,
        project: Project = None,
    ) -> dict[str, Any]:
        """Find the memories relevant to a question, best first, each with why it was found.
        Returns an empty list when nothing is relevant. Use before deciding something,
        when stuck, or when the user refers to earlier work."""
        now = runtime.now()
        result = memory.recall(
            query,
            project=project_of(project),
            limit=limit,
            categories=categories,
            since=parse_since(since, now=now) if since else None,
            history=history,
        )
        return {
            "query": result.query,
            "hits": [hit_view(hit, now=now) for hit in result.hits],
            "semantic_ready": result.semantic_ready,
            "took_ms": round(result.took_ms, 1),
        }

    @tool(READ_ONLY)
    def get_context(
        target: Annotated[
            str,
            Field(
                description="An MR (!123 or group/proj!123), issue (#45), epic (&6), a file path, "
                "or a few words.",
                min_length=1,
                max_length=MAX_TEXT_CHARS,
            ),
        ],
        max_tokens: MaxTokens = None,
        project: Project = None,
    ) -> dict[str, Any]:
        """Everything known about an MR, issue, epic, file or subject, grouped by category
        and cut to a token budget. Call it before editing a file or working on an MR/issue.
        `markdown` is ready to read."""
        bundle = memory.get_context(target, project=project_of(project), max_tokens=max_tokens)
        return {**bundle.to_dict(), "markdown": bundle.markdown}

    @tool(READ_ONLY)
    def get_boot_context(max_tokens: MaxTokens = None, project: Project = None) -> dict[str, Any]:
        """What to know at the start of a session: directives and preferences (this project's
        and global), open blockers, recent decisions and procedures, and the other agents
        working on the project now. Call it once when a session starts."""
        resolved = project_of(project)
        bundle = memory.boot_context(project=resolved, max_tokens=max_tokens)
        sessions = runtime.coordinator.active(resolved)
        return {
            **bundle.to_dict(),
            "markdown": bundle.markdown,
            "active_sessions": [s.view() for s in sessions],
        }

    @tool(WRITES)
    def update_memory(
        id: MemoryId,
        action: Annotated[
            UpdateAction,
            Field(
                description="edit: new text/category; archive/restore: hide or bring back; "
                "resolve/unresolve: a blocker; link/unlink: relate to target_id with link_kind; "
                "supersede: this memory replaces target_id."
            ),
        ],
        text: Annotated[
            str | None, Field(description="New text (edit).", min_length=1, max_length=MAX_TEXT_CHARS)
        ] = None,
        category: Annotated[CategoryName | None, Field(description="New category (edit).")] = None,
        target_id: Annotated[
            str | None, Field(description="The other memory (link, unlink, supersede).", max_length=64)
        ] = None,
        link_kind: Annotated[
            LinkKindName, Field(description="How id relates to target_id (link, unlink).")
        ] = "related",
        project: Project = None,
    ) -> dict[str, Any]:
        """Change a memory: edit it, archive or restore it, resolve or reopen a blocker,
        link it to another memory, or mark it as replacing (superseding) another. Every
        change can be undone (restore, unresolve, unlink)."""
        if action == "edit":
            if text is None and category is None:
                raise InvalidInputError("edit needs text or category (or both).")
            record = memory.edit(id, text=text, category=category, project=project_of(project))
            return {"action": action, "memory": memory_view(record, now=runtime.now())}
        if action in ("archive", "restore", "resolve", "unresolve"):
            verb = getattr(memory, action)
            return {"action": action, "memory": memory_view(verb(id), now=runtime.now())}
        if not target_id:
            raise InvalidInputError(f"{action} needs target_id: the id of the other memory.")
        kind = "supersedes" if action == "supersede" else link_kind
        if action == "unlink":
            memory.unlink(id, target_id, kind)
            return {"action": action, "source": id, "target": target_id, "kind": kind}
        link = memory.link(id, target_id, kind)
        return {
            "action": action,
            "link": link_view(link),
            "target": memory_view(memory.show(target_id).memory),
        }

    @tool(DESTRUCTIVE)
    def delete_memory(
        id: MemoryId,
        confirm: Annotated[
            bool, Field(description="Must be true: deletion cannot be undone (archive can).")
        ] = False,
    ) -> dict[str, Any]:
        """Delete a memory for good, with its links. Only when the user asks; prefer
        update_memory(action='archive'), which can be undone."""
        if not confirm:
            raise InvalidInputError(
                "Deleting cannot be undone: call again with confirm=true, or archive it instead "
                "(update_memory with action='archive')."
            )
        return {"deleted": memory_view(memory.delete(id), now=runtime.now())}

    @tool(IDEMPOTENT_WRITE)  # it may write a file (never over an existing one unless asked)
    def export_memories(
        project: Project = None,
        format: Annotated[
            Literal["jsonl", "markdown"],
            Field(description="jsonl: lossless, importable; markdown: for reading."),
        ] = "jsonl",
        path: Annotated[
            str | None,
            Field(
                description="Write to this file (absolute path) instead of returning the text.",
                max_length=4096,
            ),
        ] = None,
        overwrite: Annotated[bool, Field(description="Replace the file at path if it exists.")] = False,
        repository: Annotated[
            bool,
            Field(
                description="Only what the project shares with its team, project-relative (as `graphmem "
                "export --project`); path is then a folder (e.g. <root>/.graphmem) that gets memories.jsonl "
                "and MEMORY.md, and overwrite drops memories the folder has but the store lacks."
            ),
        ] = False,
    ) -> dict[str, Any]:
        """Export memories (this project's and global ones, or all when no project is
        given) with their links and entities, as JSONL (importable) or Markdown."""
        resolved = project_of(project)
        if repository and path is not None:
            folder = _absolute(path)
            done = memory.export_dir(folder, project=resolved, fmt=format, force=overwrite)
            return {
                "path": str(folder),
                "written": list(done.written),
                "unchanged": list(done.unchanged),
                "memories": done.memories,
                "entities": done.entities,
                "links": done.links,
            }
        if path is not None:
            target = _absolute(path)
            if target.exists() and not overwrite:
                raise InvalidInputError(
                    f"{target} exists: pass overwrite=true to replace it, or another path."
                )
            partial = target.with_name(f".{target.name}.partial")
            with partial.open("w", encoding="utf-8") as out:
                summary = memory.export(out, project=resolved, fmt=format, repository=repository)
            partial.replace(target)
            return {"path": str(target), **_export_counts(summary)}
        buffer = io.StringIO()
        summary = memory.export(buffer, project=resolved, fmt=format, repository=repository)
        content = buffer.getvalue()
        if len(content) > MAX_INLINE_EXPORT_CHARS:
            raise InvalidInputError(
                f"The export is {len(content):,} characters, over the {MAX_INLINE_EXPORT_CHARS:,} returned "
                "inline: pass path to write it to a file."
            )
        return {"format": format, "content": content, **_export_counts(summary)}

    @tool(IDEMPOTENT_WRITE)
    def import_memories(
        path: Annotated[
            str | None,
            Field(
                description="A JSONL export file, or a folder holding memories.jsonl such as "
                "<root>/.graphmem (absolute path).",
                max_length=4096,
            ),
        ] = None,
        content: Annotated[
            str | None,
            Field(description="JSONL export text, instead of a path.", max_length=MAX_IMPORT_CHARS),
        ] = None,
        dry_run: Annotated[bool, Field(description="Validate only; import nothing.")] = False,
        project: Project = None,
    ) -> dict[str, Any]:
        """Import a graphmem JSONL export. Every line is validated first: if any is
        invalid nothing is imported and the errors give line numbers. Importing the same
        export twice adds nothing; a memory already present is updated when the export's
        copy is newer (a teammate resolved or superseded it)."""
        if (path is None) == (content is None):
            raise InvalidInputError("Give exactly one of path (a file) or content (JSONL text).")
        resolved = project_of(project)
        if path is not None:
            summary = memory.import_file(_absolute(path), project=resolved, dry_run=dry_run)
        else:
            assert content is not None
            with tempfile.TemporaryDirectory() as scratch:
                file = Path(scratch) / "import.jsonl"
                file.write_text(content, "utf-8")
                summary = memory.import_file(file, project=resolved, dry_run=dry_run)
        return {
            "dry_run": summary.dry_run,
            "records": summary.records,
            "memories_added": summary.memories_added,
            "memories_skipped": summary.memories_skipped,
            "memories_updated": summary.memories_updated,
            "entities": summary.entities,
            "links": summary.links,
        }

    @tool(READ_ONLY)
    def memory_status() -> dict[str, Any]:
        """The memory server's state: counts by category, embedding backlog, whether the
        model is loaded, live sessions, uptime. Use it when a tool misbehaves."""
        return runtime.status()

    @tool(FETCHES)
    def enrich_entity(
        ref: Annotated[
            str,
            Field(
                description="An MR (!123 or group/proj!123), issue (#45), epic (&6 or group&6), "
                "or a GitLab URL of one.",
                min_length=1,
                max_length=2000,
            ),
        ],
        refresh: Annotated[
            bool, Field(description="Fetch again even if it was fetched within the TTL.")
        ] = False,
        project: Project = None,
    ) -> dict[str, Any]:
        """Fetch an MR, issue or epic from GitLab now: title, state, people, labels,
        changed files and symbols, closing issues, epic. Refs in memories are enriched in
        the background anyway; call this when get_context says a ref is not enriched yet
        and you need it now. Fails with a fix-it message when GitLab is not configured."""
        report = memory.enrich([ref], project=project_of(project), refresh=refresh)
        outcome = next((name for name, n in report.counts.items() if n), "fresh")
        return {
            "ref": ref,
            "outcome": outcome,
            "counts": report.counts,
            "problems": report.problems,
            "paused": report.paused,
            "gitlab": runtime.gitlab_status(),
        }

    # -- coordination ---------------------------------------------------------

    @tool(WRITES)
    def session_start(
        agent: Annotated[
            str,
            Field(
                description="Who you are, e.g. 'opencode/build' or a model name.",
                min_length=1,
                max_length=200,
            ),
        ],
        task: Annotated[
            str | None, Field(description="What this session works on, in a few words.", max_length=200)
        ] = None,
        project: Project = None,
    ) -> dict[str, Any]:
        """Announce a working session so other agents on the project see it. Send
        session_heartbeat every few minutes; sessions and claims expire without it."""
        session = runtime.coordinator.start(agent, project_of(project), task)
        return {"session": session.view(), "ttl_seconds": int(runtime.coordinator.ttl.total_seconds())}

    @tool(IDEMPOTENT_WRITE)
    def session_heartbeat(
        session_id: SessionId,
        task: Annotated[str | None, Field(description="Update the task description.", max_length=200)] = None,
    ) -> dict[str, Any]:
        """Keep a session and its claims alive for another TTL."""
        return {"session": runtime.coordinator.heartbeat(session_id, task).view()}

    @tool(WRITES)
    def session_end(
        session_id: SessionId,
        summary: Annotated[
            str | None,
            Field(
                description="What was done, decided and left open; stored as an event memory.",
                max_length=MAX_TEXT_CHARS,
            ),
        ] = None,
    ) -> dict[str, Any]:
        """End a session, release its claims, and store its summary as an event memory."""
        session = runtime.coordinator.end(session_id)
        stored = None
        if summary and summary.strip():
            result = memory.remember(
                summary, category=Category.EVENT, project=session.project, session=session.id, source="mcp"
            )
            stored = result.memory.id
        return {"session": session.view(), "summary_memory_id": stored}

    @tool(READ_ONLY)
    def active_sessions(
        project: Project = None,
        all_projects: Annotated[bool, Field(description="Sessions of every project.")] = False,
    ) -> dict[str, Any]:
        """Other agents working now (on this project, or on all), with what they claim."""
        resolved = None if all_projects else project_of(project)
        coordinator = runtime.coordinator
        return {
            "sessions": [s.view() for s in coordinator.active(resolved)],
            "claims": [c.view() for c in coordinator.claims(resolved)],
        }

    @tool(WRITES)
    def claim_item(
        session_id: SessionId,
        item: Annotated[
            str,
            Field(
                description="What to claim: '!123', '#45', a file path, a task name.",
                min_length=1,
                max_length=200,
            ),
        ],
        ttl_seconds: Annotated[
            int | None, Field(description="Lease length; default the session TTL.", ge=1, le=86_400)
        ] = None,
    ) -> dict[str, Any]:
        """Claim an item exclusively so other agents leave it alone (renewing your own
        claim is fine). Fails, naming the holder, when another live session holds it.
        The claim expires without heartbeats."""
        ttl = timedelta(seconds=ttl_seconds) if ttl_seconds else None
        return {"claim": runtime.coordinator.claim(session_id, item, ttl).view()}

    @tool(IDEMPOTENT_WRITE)
    def release_item(
        session_id: SessionId,
        item: Annotated[str, Field(description="The item claimed.", min_length=1, max_length=200)],
    ) -> dict[str, Any]:
        """Release an item this session claimed."""
        return {"released": runtime.coordinator.release(session_id, item), "item": item}

    mcp.add_middleware(ArgumentCheck(parameters, runtime.metrics))
    return mcp


def _then(function: Callable[P, R], after: Callable[[], None]) -> Callable[P, R]:
    @functools.wraps(function)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return function(*args, **kwargs)
        finally:
            after()

    return call


def _absolute(path: str) -> Path:
    target = Path(path).expanduser()
    if not target.is_absolute():
        raise InvalidInputError(f"{path!r} is relative: give an absolute path (the server has its own cwd).")
    if not target.parent.is_dir():
        raise InvalidInputError(f"The folder {target.parent} does not exist.")
    return target


def _export_counts(summary: Any) -> dict[str, int]:
    return {"memories": summary.memories, "entities": summary.entities, "links": summary.links}
