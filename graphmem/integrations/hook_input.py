"""What a client's hook command is given on stdin, read as hostile input.

A hook gets one JSON object on stdin (Claude Code's and Codex's hooks both do). It may be
huge (a pasted 1 MB prompt), not JSON, or name things graphmem must not trust (a session id
with ``../``, a transcript path anywhere on the disk). Everything here is bounded and raises
``HookInputError`` with one line saying what is wrong; the hook logs it and adds nothing.

Standard library only: a hook starts on every user turn.
"""

from __future__ import annotations

import json
import re
from typing import IO, Any

# The whole input read at most (a 1 MB prompt fits; JSON escapes may double it).
MAX_INPUT_BYTES = 4_000_000
# What is read past the bound, and dropped, so the client writing it is not left blocked.
MAX_DRAIN_BYTES = 64_000_000
READ_CHUNK_BYTES = 65_536
# The ids the daemon's routes accept: letters, digits, _ and - (a UUID fits; "../" does not).
SESSION_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
MAX_PATH_CHARS = 4096


class HookInputError(ValueError):
    """The hook's input cannot be used; the message says what is wrong with it."""


def read_input(stream: IO[bytes], max_bytes: int = MAX_INPUT_BYTES) -> dict[str, Any]:
    """The JSON object on ``stream``, read up to ``max_bytes`` (the rest is drained and dropped)."""
    data = bytearray()
    while len(data) <= max_bytes:
        chunk = stream.read(READ_CHUNK_BYTES)
        if not chunk:
            break
        data += chunk
    if len(data) > max_bytes:
        drained = 0
        while drained < MAX_DRAIN_BYTES and stream.read(READ_CHUNK_BYTES):
            drained += READ_CHUNK_BYTES
        raise HookInputError(f"the hook's input is over {max_bytes:,} bytes; it was not read")
    try:
        value = json.loads(data.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):
        raise HookInputError(f"the hook's input is not JSON ({len(data):,} bytes)") from None
    if not isinstance(value, dict):
        raise HookInputError(f"the hook's input is JSON {type(value).__name__}, not an object")
    return value


def session_id(value: Any, field: str = "session_id") -> str:
    """The id in the hook's ``field`` (a session's, a turn's), when it is one the daemon accepts
    (letters, digits, ``_``, ``-``)."""
    if not isinstance(value, str) or not SESSION_ID.fullmatch(value):
        shown = repr(value)[:80] if isinstance(value, str) else type(value).__name__
        raise HookInputError(f"{field} {shown} is not an id (1-128 letters, digits, _ or -)")
    return value


def text(value: Any, max_chars: int) -> str:
    """A text field cut to ``max_chars`` (what is not text is ""), each lone surrogate its JSON
    held (half of a UTF-16 pair, escaped alone) made U+FFFD: the daemon refuses a body holding
    one, and the turn would go without its memory."""
    if not isinstance(value, str):
        return ""
    cut = value[:max_chars]
    return cut.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def path_text(value: Any, field: str) -> str | None:
    """An absolute path as the client wrote it (None when absent); not checked on the disk."""
    if value is None or value == "":
        return None
    if (
        not isinstance(value, str)
        or len(value) > MAX_PATH_CHARS
        or "\x00" in value
        or not value.startswith("/")
    ):
        shown = repr(value)[:80] if isinstance(value, str) else type(value).__name__
        raise HookInputError(f"{field} {shown} is not an absolute path")
    return value
