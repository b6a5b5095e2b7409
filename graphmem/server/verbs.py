"""The one table of graphmem's verbs: every door into the daemon is derived from it.

A verb is a method of the Memory service (or, for ``status``, of the daemon's ``Runtime``)
declared once here: what it returns and which parameters a call may pass by position, what
calling it does (``Effect``: whether it reads or writes, MCP's read-only, idempotent,
destructive and open-world hints), whether it uses the caller's project and branch when a
call names none (``Binding``), and the doors that expose it:

- ``/rpc`` (``rpc=True``): the CLI's calls through a daemon (``server/remote.py`` binds and
  encodes them, ``server/rpc.py`` validates them from the service's own signature), and
  ``graphmem ui``'s view (``ui=True``: what a view session may call there);
- ``/mcp`` (``tool="name"``): the MCP tool of that name. A tool's annotations combine the
  effects of the verbs it exposes (``tool_effect``), and the daemon's embedder and enricher
  are woken after every call of a verb, or tool, that is not read-only. A tool with no
  function of its own in ``server/tools/`` is made from the service method itself
  (``server/tools/registry.py``): its parameters, docstring and result.

Argument checks are the signatures': a ``/rpc`` call is validated against the service
method's parameters, a tool call against its function's (``registry.ArgumentCheck``).
``server/manifest.json`` is generated from the tools (a test fails until it is).

A new verb is one ``Verb`` here plus its service method (and, for a verb ``/rpc`` serves, its
signature on the Python API's protocol, ``graphmem.api.Memory``: docs/architecture.md's "Where
a change goes"). This module imports nothing but the standard library: the CLI reads it on its
way to a daemon without loading the service.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from enum import Enum
from functools import cache
from typing import Any


@dataclass(frozen=True, slots=True)
class Effect:
    """What calling a verb does, as MCP's tool annotations say it."""

    read_only: bool  # changes nothing: no memory, event, vector, session or file
    idempotent: bool  # calling it twice with the same arguments does what calling it once does
    destructive: bool = False  # may remove what cannot be brought back
    open_world: bool = False  # talks to a system outside graphmem (GitLab)


# How a verb calls its ``progress`` callback; through a daemon each call travels as
# ``{"done": n, "total": m or null}`` (see ``graphmem.server.rpc_stream``) and is replayed.
STEPS = "steps"  # progress(n): n more units done (embedding batches, imported records)
DONE = "done"  # progress(done): units done so far, total unknown (sessions read)
DONE_OF = "done_of"  # progress(done, total): units done so far of the total known so far
PROGRESS_SHAPES = (STEPS, DONE, DONE_OF)

READS = Effect(read_only=True, idempotent=True)
WRITES = Effect(read_only=False, idempotent=False)
IDEMPOTENT_WRITE = Effect(read_only=False, idempotent=True)
FETCHES = Effect(read_only=False, idempotent=True, open_world=True)  # asks GitLab, stores its answer
DESTRUCTIVE = Effect(read_only=False, idempotent=True, destructive=True)


# Who wrote a memory is set by the code path, never by a caller (core/provenance.py): ``/rpc`` is
# the CLI's door, a person's, so these parameters keep the service's defaults (the user).
PROVENANCE = frozenset({"actor", "trust", "origin", "owner"})  # owner: of a session (coordination)
SOURCE_TOO = PROVENANCE | {"source"}  # verbs that also record where a text came from


class Binding(Enum):
    """What a verb uses when a call names no project (or branch), like ``MemoryService``'s."""

    NONE = "none"  # nothing: a call without a project means every project, or none
    PROJECT = "project"  # the caller's project
    BRANCH = "branch"  # the caller's project and the branch its checkout is on


class Owner(Enum):
    """Whose method a verb is."""

    MEMORY = "memory"  # ``MemoryService``
    DAEMON = "daemon"  # the daemon's ``Runtime`` (what only a running daemon knows)


@dataclass(frozen=True, slots=True)
class Verb:
    """One verb and the doors it goes through."""

    name: str  # the method's name
    returns: (
        str  # the return type: "module:Name", "list[module:Name]", "int", "str", "bool", "None" or "dict"
    )
    positional: tuple[str, ...]  # the parameters a call may pass by position, in order
    effect: Effect  # no default: a verb says whether it writes
    binds: Binding = Binding.NONE
    progress: str | None = None  # how its ``progress`` callback is called: one of PROGRESS_SHAPES
    rpc: bool = True  # the CLI calls it through ``/rpc``
    ui: bool = False  # a ``graphmem ui`` view session may call it through ``/rpc``
    tool: str | None = None  # the MCP tool that exposes it
    owner: Owner = Owner.MEMORY
    set_by_path: frozenset[str] = PROVENANCE  # parameters no ``/rpc`` caller sets

    @property
    def writes(self) -> bool:
        """Whether the daemon's embedder and enricher should look again after a call."""
        return not self.effect.read_only

    @property
    def result(self) -> Any:
        """The return type itself; only its own module is imported, on first use."""
        return _resolve(self.returns)


_PLAIN: dict[str, Any] = {"None": type(None), "int": int, "str": str, "bool": bool, "dict": dict[str, Any]}


@cache
def _resolve(declared: str) -> Any:
    if declared.startswith("list[") and declared.endswith("]"):
        return list[_resolve(declared[5:-1])]  # type: ignore[misc]
    if declared in _PLAIN:
        return _PLAIN[declared]
    module, _, name = declared.partition(":")
    return getattr(importlib.import_module(module), name)


_RESULTS = "graphmem.service.results"
_RECORD = "graphmem.core.models:MemoryRecord"
_BUNDLE = "graphmem.core.bundle:ContextBundle"
_SESSIONS = "graphmem.service.coordination"
_ENRICHMENT = "graphmem.core.enrichment"
_EVENT = "graphmem.core.events:MemoryEvent"
_ID = ("memory_id",)
_LINK = ("source", "target", "kind")
_UPDATE = "update_memory"
_EXPORT = "export_memories"
_IMPORT = "import_memories"
_BRANCH, _PROJECT = Binding.BRANCH, Binding.PROJECT

# In the order clients list the tools (the first verb of each tool places it).
# fmt: off
TABLE: tuple[Verb, ...] = (
    Verb("remember", f"{_RESULTS}:RememberResult", ("text",), WRITES, _BRANCH, ui=True, tool="remember",
         set_by_path=SOURCE_TOO),
    Verb("recall", f"{_RESULTS}:RecallResult", ("query",), READS, _BRANCH, ui=True, tool="recall"),
    Verb("get_context", _BUNDLE, ("target",), READS, _BRANCH, ui=True, tool="get_context"),
    Verb("boot_context", _BUNDLE, (), READS, _BRANCH, tool="get_boot_context"),
    Verb("edit", _RECORD, _ID, WRITES, _PROJECT, ui=True, tool=_UPDATE),
    Verb("archive", _RECORD, _ID, WRITES, ui=True, tool=_UPDATE),
    Verb("restore", _RECORD, _ID, WRITES, ui=True, tool=_UPDATE),
    Verb("resolve", _RECORD, _ID, WRITES, ui=True, tool=_UPDATE),
    Verb("unresolve", _RECORD, _ID, WRITES, ui=True, tool=_UPDATE),
    Verb("confirm", _RECORD, _ID, WRITES, ui=True, tool=_UPDATE),
    Verb("link", "graphmem.core.models:Link", _LINK, WRITES, ui=True, tool=_UPDATE),
    Verb("unlink", "None", _LINK, WRITES, ui=True, tool=_UPDATE),
    Verb("undo", _EVENT, ("event_id",), WRITES, ui=True, tool=_UPDATE),
    Verb("history", f"list[{_EVENT}]", _ID, READS, ui=True, tool="get_history"),
    Verb("delete", _RECORD, _ID, DESTRUCTIVE, ui=True, tool="delete_memory"),
    # /rpc's export: the text travels beside the summary (``rpc.run``)
    Verb("export", f"{_RESULTS}:ExportSummary", ("out",), READS, tool=_EXPORT),
    Verb("export_file", "graphmem.service.transfer_files:ExportedFile", ("path",), IDEMPOTENT_WRITE,
         rpc=False, tool=_EXPORT),
    Verb("export_dir", f"{_RESULTS}:RepositoryExport", ("directory",), IDEMPOTENT_WRITE, tool=_EXPORT),
    Verb("import_file", f"{_RESULTS}:ImportSummary", ("path",), IDEMPOTENT_WRITE, _PROJECT, STEPS,
         tool=_IMPORT),
    Verb("import_text", f"{_RESULTS}:ImportSummary", ("text",), IDEMPOTENT_WRITE, progress=STEPS,
         tool=_IMPORT),
    Verb("status", "dict", (), READS, rpc=False, tool="memory_status", owner=Owner.DAEMON),
    Verb("enrich", f"{_ENRICHMENT}:EnrichReport", ("refs",), FETCHES, _PROJECT, DONE_OF,
         tool="enrich_entity"),
    Verb("session_start", f"{_SESSIONS}:AgentSession", ("agent",), WRITES, _PROJECT, tool="session_start"),
    Verb("session_heartbeat", f"{_SESSIONS}:AgentSession", ("session_id",), IDEMPOTENT_WRITE,
         tool="session_heartbeat"),
    Verb("session_end", f"{_SESSIONS}:EndedSession", ("session_id",), WRITES, tool="session_end",
         set_by_path=SOURCE_TOO),
    Verb("active_sessions", f"{_SESSIONS}:ActiveSessions", (), READS, _PROJECT, tool="active_sessions"),
    Verb("claim_item", f"{_SESSIONS}:Claim", ("session_id", "item"), WRITES, tool="claim_item"),
    Verb("release_item", "bool", ("session_id", "item"), IDEMPOTENT_WRITE, tool="release_item"),
    # The CLI's alone (and the view's, ``ui=True``).
    Verb("show", f"{_RESULTS}:MemoryDetail", _ID, READS, ui=True),
    Verb("session_overrides", f"list[{_SESSIONS}:Override]", (), READS),  # a person's audit
    Verb("expand_id", "str", ("prefix",), READS),  # a person's typing: no tool takes a prefix
    Verb("list", f"list[{_RECORD}]", (), READS, _BRANCH, ui=True),
    Verb("select", f"list[{_RECORD}]", (), READS, _PROJECT),
    Verb("reject", _RECORD, _ID, WRITES, ui=True),
    Verb("widen", _RECORD, _ID, WRITES),
    Verb("stats", f"{_RESULTS}:Stats", (), READS, ui=True),
    Verb("review", f"list[{_RESULTS}:ReviewItem]", (), READS, ui=True),
    Verb("export_repository", f"{_RESULTS}:RepositoryFiles", (), READS),
    Verb("embed_pending", "int", ("progress",), IDEMPOTENT_WRITE, progress=STEPS),
    Verb("load_model", "None", (), IDEMPOTENT_WRITE),  # it embeds what is pending
    Verb("reindex", "int", ("progress",), IDEMPOTENT_WRITE, progress=STEPS),
    Verb("bootstrap", f"{_RESULTS}:BootstrapReport", ("path",), WRITES, progress=DONE_OF),
    Verb("gitlab_status", f"{_ENRICHMENT}:GitLabStatus", (), READS),
    Verb("ingest_opencode", f"{_RESULTS}:IngestReport", (), WRITES, progress=DONE),
)
# fmt: on

# Every verb by name. A test adds one here (``monkeypatch.setitem``): every door reads it at
# the time it is built or called.
VERBS: dict[str, Verb] = {each.name: each for each in TABLE}


def verb(name: object) -> Verb | None:
    """The verb of that name, or None."""
    return VERBS.get(name) if isinstance(name, str) else None


def tools() -> dict[str, tuple[Verb, ...]]:
    """Each MCP tool, in the order clients list them, with the verbs it exposes."""
    found: dict[str, list[Verb]] = {}
    for each in VERBS.values():
        if each.tool is not None:
            found.setdefault(each.tool, []).append(each)
    return {name: tuple(exposed) for name, exposed in found.items()}


def tool_effect(exposed: tuple[Verb, ...]) -> Effect:
    """A tool's effect: read-only and idempotent only when each verb it exposes is,
    destructive or open-world when any is."""
    return Effect(
        read_only=all(v.effect.read_only for v in exposed),
        idempotent=all(v.effect.idempotent for v in exposed),
        destructive=any(v.effect.destructive for v in exposed),
        open_world=any(v.effect.open_world for v in exposed),
    )
