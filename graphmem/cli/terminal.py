"""What graphmem prints never drives the terminal it is printed on.

A memory's text, a commit's message, a file's name or a teammate's import can hold control
characters: ESC starts the sequences a terminal acts on (clear the screen, set the window's
title, write the clipboard with OSC 52), BEL ends some, and 0x9B is a CSI on its own. So when
standard output is a terminal, every control character but tab and newline is written as a
visible picture (``␛`` for ESC, ``␇`` for BEL, ``\\x9b`` for a C1 control) instead: on a terminal
output is for reading. A pipe or a file gets the bytes unchanged (an export, the MCP proxy's
messages, JSON read by a program), as ``ls`` and ``git`` do. The JSON graphmem prints escapes
these characters itself (``present.echo_json``), so it reads the same on a terminal and in a file.
"""

from __future__ import annotations

import re
import sys
from typing import Any, TextIO

# C0 controls but tab and newline, DEL, and the C1 controls.
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """``text`` with each control character (but tab and newline) as a visible picture."""
    return CONTROLS.sub(_picture, text)


def _picture(found: re.Match[str]) -> str:
    code = ord(found.group())
    if code < 0x20:
        return chr(0x2400 + code)  # the Control Pictures block: ␀ … ␟
    if code == 0x7F:
        return "\u2421"  # ␡
    return f"\\x{code:02x}"


class VisibleWriter:
    """A text stream that writes what it is given through :func:`visible`."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(visible(text))

    def __getattr__(self, name: str) -> Any:  # flush, encoding, isatty, fileno, buffer, ...
        return getattr(self._stream, name)


def install() -> None:
    """Write this process's standard output through :class:`VisibleWriter` when it is a
    terminal."""
    stdout = sys.stdout
    if stdout is not None and not isinstance(stdout, VisibleWriter) and stdout.isatty():
        sys.stdout = VisibleWriter(stdout)
