"""Names as a source file writes them → the names graphmem stores, for ``code_parser.py``.

A name is split into segments at ``.`` and ``::`` in every language, and at ``\\`` in PHP
only, where it separates namespaces (``App\\Models\\User``). Elsewhere a backslash starts an
escape inside an identifier: ``\\u0061bc`` is ``abc`` in JavaScript, TypeScript, Java and C#,
and in C and C++ (``\\u00e9``, ``\\U0001F600``). Such a name is stored decoded when each of
its escapes is a character an identifier may hold; otherwise as written (``\\ud83dy``, half
of a UTF-16 pair, which no store accepts decoded, stays those seven characters; and
``a\\u002eb`` does not become the method ``b`` of ``a``).
"""

from __future__ import annotations

import re

# The escapes each language allows in an identifier; a language not listed has none.
_JS_ESCAPE = r"\\u(?:\{(?P<braced>[0-9a-fA-F]+)\}|(?P<four>[0-9a-fA-F]{4}))"
_JAVA_ESCAPE = r"\\u+(?P<four>[0-9a-fA-F]{4})"  # Java allows \uu0061
_C_ESCAPE = r"\\(?:u(?P<four>[0-9a-fA-F]{4})|U(?P<eight>[0-9a-fA-F]{8}))"
_ESCAPES = {
    "javascript": re.compile(_JS_ESCAPE),
    "typescript": re.compile(_JS_ESCAPE),
    "tsx": re.compile(_JS_ESCAPE),
    "java": re.compile(_JAVA_ESCAPE),
    "csharp": re.compile(_C_ESCAPE),
    "c": re.compile(_C_ESCAPE),
    "cpp": re.compile(_C_ESCAPE),
}
_SEPARATORS = re.compile(r"::|\.")
_PHP_SEPARATORS = re.compile(r"::|\\|\.")
_UNICODE_MAX = 0x10FFFF
_SURROGATES = range(0xD800, 0xE000)
_JOINERS = frozenset("$\u200c\u200d")  # in identifiers besides letters, digits and marks


class _IllFormed(Exception):
    """An escape that is no identifier character: the name stays as written."""


def identifier(text: str, language: str) -> str:
    """``text`` with the identifier escapes of ``language`` decoded, when every one of them is
    a character an identifier may hold; else ``text`` as written."""
    escape = _ESCAPES.get(language)
    if escape is None or "\\" not in text:
        return text
    try:
        decoded = escape.sub(_character, text)
    except _IllFormed:
        return text
    return text if "\\" in decoded else decoded  # a backslash no escape explains


def _character(found: re.Match[str]) -> str:
    digits = next(group for group in found.groups() if group is not None)
    code = int(digits, 16) if len(digits.lstrip("0")) <= len("10FFFF") else _UNICODE_MAX + 1
    if code > _UNICODE_MAX or code in _SURROGATES:
        raise _IllFormed
    character = chr(code)
    if character not in _JOINERS and not f"_{character}".isidentifier():
        raise _IllFormed  # a dot, a colon, a NUL or a space would change what the name says
    return character


def segments(name: str, language: str) -> list[str]:
    """The parts of a qualified ``name``: ``a.b``, ``a::b`` and, in PHP, ``a\\b``."""
    separators = _PHP_SEPARATORS if language == "php" else _SEPARATORS
    if "." not in name and ":" not in name and not (language == "php" and "\\" in name):
        return [name.strip()]
    return [part for part in separators.split(name.strip()) if part] or [name]


def last_segment(text: str, language: str) -> str:
    return segments(text, language)[-1].strip()


def receiver_of(text: str, language: str) -> str | None:
    """``a::b`` and ``a.b`` captured whole as a call name: the part before the last separator."""
    parts = segments(text, language)
    return ".".join(parts[:-1]) if len(parts) > 1 else None


def without_generics(text: str) -> str:
    """``Base<T, List<U>>`` → ``Base`` in one pass (stripping innermost pairs took minutes on A<A<...>>)."""
    depths: list[list[str]] = [[]]  # the text outside any pair, then inside each open ``<``
    for piece in re.split(r"([<>])", text):
        if piece == "<":
            depths.append([piece])
        elif piece == ">" and len(depths) > 1:
            depths.pop()
        else:
            depths[-1].append(piece)
    return "".join(piece for depth in depths for piece in depth).strip()
