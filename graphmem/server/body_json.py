"""The JSON of a request to graphmem's own routes (``/rpc``, ``/plugin/*``, ``/ui/*``,
``/identity``), read in one place: ``read`` (``parse`` for the bytes) is the only parser they use.

Python's ``json`` reads more than JSON, and more than one meaning into some of it. Each of
these is an ``InvalidInputError`` that says where and what to send instead (the routes answer a
400 in their own shape), never a guess:

- a key repeated in one object (``{"text": "a", "text": "b"}``): ``json`` keeps the last copy
  without a word, where another reader (a proxy, a log, a hook) may take the first, so what is
  checked and what is stored could differ; graphmem's clients never repeat one;
- ``NaN``, ``Infinity`` and ``-Infinity``, which RFC 8259 has not, and a number like ``1e400``
  that is infinite as a float;
- an integer beyond 64 bits: no store's INT64 holds it, and ``int()`` raises on 4,300 digits;
- arrays and objects nested past ``MAX_DEPTH`` (32: no route takes more than a few levels, and
  past about a thousand ``json`` raises ``RecursionError``);
- an empty body, and a query string, which no route reads (arguments sent there would be lost).

The body is UTF-8 with no lone surrogate by then: the Guard checked it (``body_text``).
``/mcp`` is FastMCP's to parse, by JSON-RPC's rules, not this module's; but a tool's arguments,
like a ``/rpc`` verb's, are checked by ``validated``: each the JSON type its parameter names,
never what pydantic's lax mode makes of another (``"yes"`` or ``1`` for ``true``).
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio.to_thread
from pydantic import TypeAdapter
from starlette.requests import Request

from graphmem.errors import InvalidInputError

T = TypeVar("T")

# No route's body nests more than four levels (/plugin/turn's messages); 32 leaves room and
# stays far below the depth at which ``json`` raises ``RecursionError``.
MAX_DEPTH = 32
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_INT64_DIGITS = len(str(INT64_MAX))  # a literal with more digits is out of range: never int() it
# A body this small is parsed on the event loop (well under a millisecond); a larger one in a
# worker thread, where it holds up no other request, but waits for a thread when all are busy.
INLINE_BYTES = 64 * 1024
_SHOWN_CHARS = 200  # of a path or a key in a message: a key may be 10,000 characters


@dataclass(frozen=True, slots=True)
class _Refused:
    """What the parser leaves in place of a value no route takes; ``_check`` names where it is."""

    why: str  # follows "<where>": "is NaN, which JSON has not: ..."


def _constant(literal: str) -> _Refused:
    return _Refused(f"is {literal}, which JSON has not: send a value the field takes, or leave it out")


def _float(literal: str) -> float | _Refused:
    value = float(literal)
    if math.isfinite(value):
        return value
    return _Refused(f"is {literal[:40]}, beyond what a 64-bit number holds: send a smaller number")


def _int(literal: str) -> int | _Refused:
    if len(literal) < _INT64_DIGITS:  # the usual case, fast: every literal this short is in range
        return int(literal)
    digits = len(literal.lstrip("-"))
    if digits <= _INT64_DIGITS:
        value = int(literal)
        if INT64_MIN <= value <= INT64_MAX:
            return value
    shown = literal if digits <= 40 else f"an integer of {digits:,} digits"
    return _Refused(
        f"is {shown}, outside the 64-bit integers graphmem takes ({INT64_MIN} to {INT64_MAX}): "
        "send a number in range"
    )


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any] | _Refused:
    found = dict(pairs)
    if len(found) == len(pairs):
        return found
    seen: set[str] = set()
    for repeated, _ in pairs:
        if repeated in seen:
            break
        seen.add(repeated)
    return _Refused(
        f"holds the key {json.dumps(repeated)[:_SHOWN_CHARS]} more than once: readers of JSON differ "
        "on which copy counts, so graphmem takes neither. Send each key once"
    )


def parse(body: bytes, *, empty: dict[str, Any] | None = None) -> Any:
    """The JSON value of ``body``, or ``InvalidInputError`` (see the module's docstring).

    ``empty``: what an empty body stands for; None: an empty body is refused."""
    if not body.strip():
        if empty is not None:
            return empty
        raise InvalidInputError("The body is empty: send a JSON object.")
    try:
        value = json.loads(
            body.decode("utf-8"),
            object_pairs_hook=_object,
            parse_int=_int,
            parse_float=_float,
            parse_constant=_constant,
        )
    except RecursionError:
        raise InvalidInputError(_too_deep()) from None
    except UnicodeDecodeError:  # the Guard refuses it first; a route reached without it still answers
        raise InvalidInputError("The body is not UTF-8: send the JSON body encoded as UTF-8.") from None
    except json.JSONDecodeError as exc:  # its message quotes nothing of the body
        raise InvalidInputError(f"The body is not JSON ({exc}): send a JSON object.") from None
    _check(value)
    return value


async def read(request: Request, *, empty: dict[str, Any] | None = None) -> Any:
    """The JSON of ``request``'s body (``parse``; ``empty``: what an empty body stands for),
    refused with a query string, which no route reads."""
    if request.url.query:
        raise InvalidInputError(
            f"{request.url.path[:_SHOWN_CHARS]} takes no query string: send every argument in the "
            "JSON body, and nothing after the path."
        )
    body = await request.body()
    if len(body) <= INLINE_BYTES:  # the plugin's turns, the CLI's calls: parsed at once
        return parse(body, empty=empty)
    # In a worker thread: 2 MB of small arrays take a second or two to parse and check, which
    # would hold up every other request on the event loop.
    return await anyio.to_thread.run_sync(functools.partial(parse, body, empty=empty))


def validated(adapter: TypeAdapter[T], value: Any) -> T:
    """``value``, read from JSON, validated by ``adapter`` as the JSON it came as, strictly
    (pydantic's ``ValidationError`` when it does not fit).

    pydantic's lax mode takes ``"yes"`` or ``1`` for ``true``, and ``"3"``, ``3.0`` or ``true``
    for ``3``: a call that says something else than it means would run. Strict on Python values
    it would refuse what JSON has no type for (an array for a tuple, text for an enum or a date);
    strict on JSON it takes those, and nothing else than the type names."""
    return adapter.validate_json(json.dumps(value), strict=True)


# Where a value is: its key (or index) and where its container is; None for the body itself.
# Linked, not a tuple per value: a path is spelled out only for the message.
_Place = tuple["_Place | None", str | int] | None


def _check(value: Any) -> None:
    """Raise for a value the parser refused (``_Refused``), or for nesting past ``MAX_DEPTH``."""
    if type(value) is _Refused:
        raise InvalidInputError(f"{_where(None)} {value.why}.")
    pending: list[tuple[Any, _Place, int]] = [(value, None, 1)] if type(value) in (dict, list) else []
    while pending:  # the containers with something in them: where each is, how deep
        item, place, depth = pending.pop()
        for key, child in item.items() if type(item) is dict else enumerate(item):
            kind = type(child)
            if kind is _Refused:
                raise InvalidInputError(f"{_where((place, key))} {child.why}.")
            if kind is dict or kind is list:
                if depth >= MAX_DEPTH:
                    raise InvalidInputError(_too_deep())
                if child:
                    pending.append((child, (place, key), depth + 1))


def _where(place: _Place) -> str:
    """``"messages[0].bare"`` as a message names it; "The body" for the whole of it."""
    parts: list[str] = []
    while place is not None:
        place, key = place
        parts.append(f"[{key}]" if isinstance(key, int) else f".{key[:100]}")
    if not parts:
        return "The body"
    return f'"{"".join(reversed(parts)).lstrip(".")[:_SHOWN_CHARS]}"'


def _too_deep() -> str:
    return (
        f"The body nests arrays and objects more than {MAX_DEPTH} deep: no route takes more than a "
        "few levels. Send the JSON object the route documents."
    )
