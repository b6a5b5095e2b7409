"""The ``/rpc`` verbs and their JSON: the table's (``server/verbs.py``) that ``/rpc`` serves.

Each declares its result type by name (``"module:Name"``), imported only for the verb
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
import types
import typing
from collections.abc import Iterator, Mapping
from datetime import datetime
from enum import Enum
from functools import cache
from pathlib import PurePath
from typing import Any

from graphmem.core.text import ensure_utf8
from graphmem.errors import StoreError
from graphmem.server import verbs
from graphmem.server.verbs import DONE as DONE
from graphmem.server.verbs import DONE_OF as DONE_OF
from graphmem.server.verbs import PROGRESS_SHAPES as PROGRESS_SHAPES
from graphmem.server.verbs import STEPS as STEPS
from graphmem.server.verbs import Verb

NONE = type(None)
NDJSON = "application/x-ndjson"  # the media type of a streamed answer


class _RpcVerbs(Mapping[str, Verb]):
    """The verbs of the table (``server/verbs.py``) that ``/rpc`` serves, read at each use."""

    def __getitem__(self, name: str) -> Verb:
        found = verbs.VERBS[name]
        if not found.rpc:
            raise KeyError(name)
        return found

    def __iter__(self) -> Iterator[str]:
        return (name for name, found in verbs.VERBS.items() if found.rpc)

    def __len__(self) -> int:
        return sum(1 for found in verbs.VERBS.values() if found.rpc)


VERBS: Mapping[str, Verb] = _RpcVerbs()
# Parameters that cannot cross a process boundary.
LOCAL_ONLY = frozenset({"progress", "out"})


def set_by_path(method: str, name: str) -> bool:
    """Whether ``method``'s parameter ``name`` is set by the code path, never by a ``/rpc`` caller."""
    return name in verbs.VERBS[method].set_by_path


def encode_arguments(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments as JSON values: enums as their values, datetimes as ISO text, paths as
    text, collections as lists, dataclasses as objects. The daemon validates them.

    Text that is not UTF-8 (bytes of a file name or of a caller's string that UTF-8 cannot
    read, held as lone surrogates) is the ``InvalidInputError`` the service raises for it,
    naming the argument: JSON cannot carry it, and the daemon's guard would refuse the whole
    body. The CLI refuses such a command-line argument before this, whether a daemon runs or
    not (``cli/main.py:refuse_undecodable``)."""
    encoded = {name: _jsonable(value) for name, value in arguments.items()}
    for name, value in encoded.items():
        _ensure_utf8(value, f"The {name}")
    return encoded


def _ensure_utf8(value: Any, what: str) -> None:
    if isinstance(value, str):
        ensure_utf8(value, what=what)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _ensure_utf8(item, f"{what}[{index}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            _ensure_utf8(key, what)
            _ensure_utf8(item, what)


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
