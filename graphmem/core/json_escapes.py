"""JSON's ``\\uXXXX`` escapes of UTF-16 surrogates, found in the bytes before a parser reads them.

A ``\\uD800``-style escape without the other half of its pair stands for no character: Python's
``json`` reads it as a lone surrogate, which no UTF-8 text (a stored memory, a database's column)
can hold. The daemon refuses a request body holding one (``server/body_text.py``); text graphmem
reads from elsewhere (a forge's answer) has each mended to U+FFFD before it is parsed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["lone_surrogate_escapes", "mend_lone_surrogates"]

# Cheap test first: most bodies hold no escape of a surrogate at all.
_SURROGATE_ESCAPE_HINT_RE = re.compile(rb"\\u[dD][89a-fA-F]")
# Every escape in order, so "\\\\ud800" (an escaped backslash, then the letters) is no surrogate.
_ESCAPE_RE = re.compile(rb"\\(?:u([0-9a-fA-F]{4})|.)", re.DOTALL)
_HIGH = range(0xD800, 0xDC00)
_LOW = range(0xDC00, 0xE000)
_REPLACEMENT = rb"\ufffd"


def lone_surrogate_escapes(body: bytes) -> Iterator[re.Match[bytes]]:
    """Each ``\\uXXXX`` escape of ``body`` that is a surrogate without its pair, in order."""
    if _SURROGATE_ESCAPE_HINT_RE.search(body) is None:
        return
    high: re.Match[bytes] | None = None  # a high half, waiting for its low half right after it
    for match in _ESCAPE_RE.finditer(body):
        code = int(match.group(1), 16) if match.group(1) else -1
        if high is not None:
            paired = code in _LOW and match.start() == high.end()
            if not paired:
                yield high
            high = None
            if paired:
                continue
        if code in _HIGH:
            high = match
        elif code in _LOW:
            yield match
    if high is not None:
        yield high


def mend_lone_surrogates(body: bytes) -> bytes:
    """``body`` with each lone surrogate's escape replaced by U+FFFD's (``\\ufffd``)."""
    pieces: list[bytes] = []
    start = 0
    for lone in lone_surrogate_escapes(body):
        pieces += [body[start : lone.start()], _REPLACEMENT]
        start = lone.end()
    return body if not pieces else b"".join([*pieces, body[start:]])
