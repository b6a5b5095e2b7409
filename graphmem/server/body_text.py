"""What a request body's text must be before any route parses it: UTF-8, and no lone surrogate.

JSON is UTF-8 text. Bytes that are not (``\\xff``, a surrogate encoded as three bytes) and a
``\\uD800``-style escape without the other half of its UTF-16 pair stand for no character.
Left to the routes, each meets them its own way: FastMCP's parser says "Parse error: unexpected
end of hex escape", ``/rpc`` "Body is not JSON.", and Python's ``json`` lets the half through to
code that fails on it (a 500 on ``/ui/graph``). ``problem`` names what is wrong, where, and how to send
it instead; the guard (``server/guard.py``) answers it with a 400 before any route runs.
"""

from __future__ import annotations

import re

# Cheap test first: most bodies hold no escape of a surrogate at all.
_SURROGATE_ESCAPE_HINT_RE = re.compile(rb"\\u[dD][89a-fA-F]")
# Every escape in order, so "\\\\ud800" (an escaped backslash, then the letters) is no surrogate.
_ESCAPE_RE = re.compile(rb"\\(?:u([0-9a-fA-F]{4})|.)", re.DOTALL)
HIGH_SURROGATES = range(0xD800, 0xDC00)
LOW_SURROGATES = range(0xDC00, 0xE000)


def problem(body: bytes) -> str | None:
    """Why ``body`` is not UTF-8 text free of lone surrogates, or None when it is."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _not_utf8(body, exc.start)
    if _SURROGATE_ESCAPE_HINT_RE.search(body) is None:
        return None
    lone = _lone_surrogate_escape(body)
    if lone is None:
        return None
    offset, escape = lone
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


def _lone_surrogate_escape(body: bytes) -> tuple[int, str] | None:
    """The offset and text of the first ``\\uXXXX`` escape of a surrogate without its pair."""
    high: re.Match[bytes] | None = None  # a high half, waiting for its low half right after it
    for match in _ESCAPE_RE.finditer(body):
        code = int(match.group(1), 16) if match.group(1) else -1
        if high is not None:
            if code in LOW_SURROGATES and match.start() == high.end():
                high = None
                continue
            break
        if code in HIGH_SURROGATES:
            high = match
        elif code in LOW_SURROGATES:
            return match.start(), match.group(0).decode("ascii")
    return None if high is None else (high.start(), high.group(0).decode("ascii"))
