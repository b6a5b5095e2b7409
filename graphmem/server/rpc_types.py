"""The ``/rpc`` verbs: which parameters each takes by position, what it returns, and the JSON.

Declared by the name of each result type (``"module:Name"``), imported only for the verb
being called, from the light result and model modules only, so that the CLI's side
(``graphmem.server.remote``) binds a call, encodes its arguments and decodes the daemon's
answer without importing the Memory service and all it pulls in (the store's ports,
numpy, the ingest and transfer machinery), nor pydantic: a call through a daemon starts
fast. ``MemoryService``'s own signatures stay the reference, and the daemon's side
(``graphmem.server.rpc``) validates and dumps with pydantic from them:
tests/unit/server/test_rpc_types.py holds every declaration equal to the service's type
hints, and every result this module decodes equal to what pydantic makes of the same JSON.
"""

from __future__ import annotations

import dataclasses
import importlib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from functools import cache
from pathlib import PurePath
from typing import Any

from graphmem.errors import StoreError

NONE = type(None)


@dataclass(frozen=True, slots=True)
class Verb:
    """One verb of ``MemoryService`` as the CLI calls it through a daemon."""

    positional: tuple[str, ...]  # the parameters a call may pass by position, in order
    returns: str  # the return type: "module:Name", "list[module:Name]", "int", "bool" or "None"
    progress: str | None = None  # how its ``progress`` callback is called: one of PROGRESS_SHAPES

    @property
    def result(self) -> Any:
        """The return type itself; only its own module is imported, on first use."""
        return _resolve(self.returns)


_PLAIN: dict[str, Any] = {"None": type(None), "int": int, "bool": bool}


@cache
def _resolve(declared: str) -> Any:
    if declared.startswith("list[") and declared.endswith("]"):
        return list[_resolve(declared[5:-1])]  # type: ignore[misc]
    if declared in _PLAIN:
        return _PLAIN[declared]
    module, _, name = declared.partition(":")
    return getattr(importlib.import_module(module), name)


# How a verb calls its ``progress`` callback; through a daemon each call travels as
# ``{"done": n, "total": m or null}`` (see ``graphmem.server.rpc_stream``) and is replayed.
STEPS = "steps"  # progress(n): n more units done (embedding batches, imported records)
DONE = "done"  # progress(done): units done so far, total unknown (sessions read)
DONE_OF = "done_of"  # progress(done, total): units done so far of the total known so far
PROGRESS_SHAPES = (STEPS, DONE, DONE_OF)
NDJSON = "application/x-ndjson"  # the media type of a streamed answer

_MEMORY_ID = ("memory_id",)
_LINK = ("source", "target", "kind")

VERBS: dict[str, Verb] = {
    "remember": Verb(("text",), "graphmem.service.results:RememberResult"),
    "recall": Verb(("query",), "graphmem.service.results:RecallResult"),
    "get_context": Verb(("target",), "graphmem.core.bundle:ContextBundle"),
    "boot_context": Verb((), "graphmem.core.bundle:ContextBundle"),
    "show": Verb(_MEMORY_ID, "graphmem.service.results:MemoryDetail"),
    "list": Verb((), "list[graphmem.core.models:MemoryRecord]"),
    "select": Verb((), "list[graphmem.core.models:MemoryRecord]"),
    "edit": Verb(_MEMORY_ID, "graphmem.core.models:MemoryRecord"),
    "archive": Verb(_MEMORY_ID, "graphmem.core.models:MemoryRecord"),
    "restore": Verb(_MEMORY_ID, "graphmem.core.models:MemoryRecord"),
    "resolve": Verb(_MEMORY_ID, "graphmem.core.models:MemoryRecord"),
    "unresolve": Verb(_MEMORY_ID, "graphmem.core.models:MemoryRecord"),
    "confirm": Verb(_MEMORY_ID, "graphmem.core.models:MemoryRecord"),
    "reject": Verb(_MEMORY_ID, "graphmem.core.models:MemoryRecord"),
    "widen": Verb(_MEMORY_ID, "graphmem.core.models:MemoryRecord"),
    "delete": Verb(_MEMORY_ID, "graphmem.core.models:MemoryRecord"),
    "link": Verb(_LINK, "graphmem.core.models:Link"),
    "unlink": Verb(_LINK, "None"),
    "history": Verb(_MEMORY_ID, "list[graphmem.core.events:MemoryEvent]"),
    "undo": Verb(("event_id",), "graphmem.core.events:MemoryEvent"),
    "stats": Verb((), "graphmem.service.results:Stats"),
    "review": Verb((), "list[graphmem.service.results:ReviewItem]"),
    "import_file": Verb(("path",), "graphmem.service.results:ImportSummary", STEPS),
    "import_text": Verb(("text",), "graphmem.service.results:ImportSummary", STEPS),
    "embed_pending": Verb(("progress",), "int", STEPS),
    "load_model": Verb((), "None"),
    "reindex": Verb(("progress",), "int", STEPS),
    "export": Verb(("out",), "graphmem.service.results:ExportSummary"),  # the text travels beside the summary
    "export_dir": Verb(("directory",), "graphmem.service.results:RepositoryExport"),
    "export_repository": Verb((), "graphmem.service.results:RepositoryFiles"),
    "bootstrap": Verb(("path",), "graphmem.service.results:BootstrapReport", DONE_OF),
    "enrich": Verb(("refs",), "graphmem.core.enrichment:EnrichReport", DONE_OF),
    "gitlab_status": Verb((), "graphmem.core.enrichment:GitLabStatus"),
    "ingest_opencode": Verb((), "graphmem.service.results:IngestReport", DONE),
    "session_start": Verb(("agent",), "graphmem.service.coordination:AgentSession"),
    "session_heartbeat": Verb(("session_id",), "graphmem.service.coordination:AgentSession"),
    "session_end": Verb(("session_id",), "graphmem.service.coordination:EndedSession"),
    "active_sessions": Verb((), "graphmem.service.coordination:ActiveSessions"),
    "claim_item": Verb(("session_id", "item"), "graphmem.service.coordination:Claim"),
    "release_item": Verb(("session_id", "item"), "bool"),
}
# The verbs the CLI may call; ``export`` is special-cased (it writes to a stream).
METHODS = frozenset(VERBS)
# Parameters that cannot cross a process boundary.
LOCAL_ONLY = frozenset({"progress", "out"})
# Who wrote a memory is set by the code path, never by a caller (core/provenance.py): ``/rpc`` is
# the CLI's door, a person's, so these parameters keep the service's defaults (the user).
PROVENANCE = frozenset({"actor", "trust", "origin", "owner"})  # owner: of a session (coordination)
PROVENANCE_OF = {"remember": PROVENANCE | {"source"}, "session_end": PROVENANCE | {"source"}}


def set_by_path(method: str, name: str) -> bool:
    """Whether ``method``'s parameter ``name`` is set by the code path, never by a ``/rpc`` caller."""
    return name in PROVENANCE_OF.get(method, PROVENANCE)


def encode_arguments(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments as JSON values: enums as their values, datetimes as ISO text, paths as
    text, collections as lists, dataclasses as objects. The daemon validates them."""
    return {name: _jsonable(value) for name, value in arguments.items()}


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, Enum):
        return _jsonable(value.value)
    if isinstance(value, str):
        return value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, PurePath):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: _jsonable(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(_jsonable(key)): _jsonable(item) for key, item in value.items()}
    if isinstance(value, typing.Iterable):
        return [_jsonable(item) for item in value]
    raise TypeError(f"{type(value).__name__} cannot be sent to the daemon")


def decode_result(method: str, data: Any) -> Any:
    """The daemon's JSON answer to ``method`` as the verb's own objects (``export``: as is)."""
    if method == "export":
        return data
    try:
        return decode(VERBS[method].result, data)
    except (TypeError, ValueError, KeyError) as exc:
        raise StoreError(
            f"The daemon's answer to {method} does not fit this graphmem ({exc}); a daemon of another "
            "version? Restart it with `graphmem stop` and try again."
        ) from None


def decode(kind: Any, data: Any) -> Any:
    """``data`` (JSON) as a value of ``kind``: the dataclasses, enums, datetimes, collections and
    plain values the verbs return. Raises ``TypeError``/``ValueError`` for what does not fit."""
    origin = typing.get_origin(kind)
    if origin is typing.Union or origin is types.UnionType:
        return _decode_union(typing.get_args(kind), data)
    if kind is Any:
        return data
    if kind is type(None):
        if data is not None:
            raise TypeError(f"expected null, not {type(data).__name__}")
        return None
    if origin is None:
        return _decode_plain(kind, data)
    arguments = typing.get_args(kind)
    if origin in (dict, Mapping):
        key, value = arguments
        return {decode(key, k): decode(value, v) for k, v in _expect(data, dict).items()}
    items = _expect(data, list)
    if origin is list:
        return [decode(arguments[0], item) for item in items]
    if origin is tuple:
        if len(arguments) == 2 and arguments[1] is Ellipsis:
            return tuple(decode(arguments[0], item) for item in items)
        if len(items) != len(arguments):
            raise ValueError(f"expected {len(arguments)} items, not {len(items)}")
        return tuple(decode(a, item) for a, item in zip(arguments, items, strict=True))
    raise TypeError(f"cannot decode {kind}")


def _decode_union(members: tuple[Any, ...], data: Any) -> Any:
    if data is None and type(None) in members:
        return None
    problems = []
    for member in members:
        if member is type(None):
            continue
        try:
            return decode(member, data)
        except (TypeError, ValueError, KeyError) as exc:
            problems.append(str(exc))
    raise ValueError("; ".join(problems))


def _decode_plain(kind: Any, data: Any) -> Any:
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        hints = _field_types(kind)
        values = _expect(data, dict)
        return kind(**{name: decode(hints[name], values[name]) for name in hints if name in values})
    if isinstance(kind, type) and issubclass(kind, Enum):
        return kind(data)
    if kind is datetime:
        return datetime.fromisoformat(_expect(data, str))
    if kind is float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise TypeError(f"expected a number, not {type(data).__name__}")
        return float(data)
    if kind in (str, int, bool):
        return _expect(data, kind)
    raise TypeError(f"cannot decode {kind}")


@cache
def _field_types(kind: type) -> dict[str, Any]:
    """The init fields of a dataclass and their types."""
    hints = typing.get_type_hints(kind)
    return {field.name: hints[field.name] for field in dataclasses.fields(kind) if field.init}


def _expect(data: Any, kind: type) -> Any:
    if not isinstance(data, kind) or (kind is int and isinstance(data, bool)):
        raise TypeError(f"expected {kind.__name__}, not {type(data).__name__}")
    return data
