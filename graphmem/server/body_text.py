"""What a request body's text must be before any route parses it: UTF-8, and no lone surrogate.

JSON is UTF-8 text. Bytes that are not (``\\xff``, a surrogate encoded as three bytes) and a
``\\uD800``-style escape without the other half of its UTF-16 pair stand for no character.
Left to the routes, each meets them its own way: FastMCP's parser says "Parse error: unexpected
end of hex escape", ``/rpc`` "The body is not JSON", and Python's ``json`` lets the half through to
code that fails on it (a 500 on ``/ui/graph``). ``problem`` names what is wrong, where, and how to send
it instead; the guard (``server/guard.py``) answers it with a 400 before any route runs.
"""

from __future__ import annotations

from graphmem.core.json_escapes import lone_surrogate_escapes


def problem(body: bytes) -> str | None:
    """Why ``body`` is not UTF-8 text free of lone surrogates, or None when it is."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _not_utf8(body, exc.start)
    lone = next(lone_surrogate_escapes(body), None)
    if lone is None:
        return None
    offset, escape = lone.start(), lone.group(0).decode("ascii")
    return (
        f"The request body holds a lone surrogate: the JSON escape {escape} at byte {offset} is half "
        "of a UTF-16 pair with no other half, and stands for no character. Send the text as UTF-8, "
        "with a character beyond U+FFFF escaped as both halves of its pair (U+1F600 is "
        "\\ud83d\\ude00) or not escaped at all."
    )


def _not_utf8(body: bytes, offset: int) -> str:
    first, second = body[offset], body[offset + 1 : offset + 2]
    if first == 0xED and second and 0xA0 <= second[0] <= 0xBF:  # a surrogate encoded as UTF-8
        shown = " ".join(f"0x{byte:02x}" for byte in body[offset : offset + 3])
        return (
            f"The request body is not valid UTF-8: the bytes at byte {offset} ({shown}) encode a lone "
            "UTF-16 surrogate, which is no character. Send the JSON body as UTF-8, where a character "
            "beyond U+FFFF is its own four bytes."
        )
    return (
        f"The request body is not valid UTF-8: byte {offset} (0x{first:02x}) starts no character "
        "there. Send the JSON body encoded as UTF-8."
    )
