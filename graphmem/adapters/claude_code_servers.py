"""``mcpServers`` in Claude Code's server files, even when the file is Claude Code's 100 MB state.

``~/.claude.json`` (global scope) is not a config people write: Claude Code keeps its state
there, every project's prompt history with the text pasted into it, and rewrites the file itself
(``JSON.stringify(config, null, 2)``: strict JSON). Users report it at 2 to 100 MB, so the bound
of a hand-written config (1 MiB) made ``install``/``uninstall --global`` refuse it. It is read up
to ``MAX_STATE_FILE_BYTES`` instead; a project's ``.mcp.json``, which a cloned repository
controls, keeps the bound of every client config (``client_files.MAX_CLIENT_FILE_BYTES``).

The text editor (``jsonc``) reads a character at a time in Python: fine for kilobytes, not for
100 MB (such a file once took it 12 GB of memory). So it is given a skeleton: the document with
every top-level value but ``mcpServers``'s cut out (each replaced by ``0``), found by the
``json`` module's C scanner, which also checks that each value it skips is JSON (the objects it
builds are dropped as soon as they are made). The edit is made on the skeleton, then each value
is put back where it was, byte for byte: only ``mcpServers`` changes. Measured with
``python -m graphmem install|uninstall claude-code --global`` on a file as Claude Code writes it,
111 MB of history with an emoji in it (so a string of 4-byte characters): 1.4 to 2.2 s and 1.2 GB
at most (the text before, after, and the copy that puts a value back); 103 MB of ASCII: 0.7 to
1.2 s and 0.33 GB. ``doctor`` reads it in 0.4 to 0.6 s.

A file that is not strict JSON (comments, trailing commas: a ``.mcp.json`` written by hand) is
edited whole, as any client config, when it is at most ``MAX_CLIENT_FILE_BYTES`` long; a larger
one is refused with its line and column. The skeleton has the same bound (``TooLarge``): a
hostile file of millions of keys, or a ``mcpServers`` of megabytes, is not what Claude Code keeps.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from graphmem.adapters import jsonc
from graphmem.adapters.client_files import MAX_CLIENT_FILE_BYTES
from graphmem.errors import InvalidInputError

# Claude Code's state as users report it (2 to 100 MB), with room to grow; past it the file is not
# what Claude Code keeps, and editing it would cost over 3 GB of memory (4-byte characters).
MAX_STATE_FILE_BYTES = 256 * 1024 * 1024
SERVERS = "mcpServers"
_CUT = "0"  # what a cut value is in the skeleton: the shortest JSON value
_BLANK = re.compile(r"[ \t\n\r]*")
_BOM = "\ufeff"


def _dropped(_: Any) -> None:
    return None  # a value the skeleton cuts: checked, never kept


# Checks that a value is JSON and finds its end, keeping nothing of it.
_SKIPPER = json.JSONDecoder(object_pairs_hook=_dropped, parse_float=_dropped, parse_int=_dropped)


class TooLarge(InvalidInputError):
    """What the text editor would be given (``mcpServers`` and the top-level keys) is over
    ``MAX_CLIENT_FILE_BYTES``."""


@dataclass(frozen=True, slots=True)
class _Member:
    """A top-level member: its key and where its value is in the text."""

    key: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class _Skeleton:
    """The document with each top-level value but ``mcpServers``'s replaced by ``_CUT``."""

    text: str
    cuts: tuple[_Member, ...]  # in the original text, in order


def value(text: str, where: Sequence[str]) -> Any:
    """The value at ``where`` (``("mcpServers", ...)``), or None; ``InvalidInputError`` saying the
    line and column when the text is not JSON, ``TooLarge``."""
    return jsonc.get_value(_editable(text)[0], where)


def edited(text: str, edit: Callable[[str], str]) -> str:
    """``text`` after ``edit`` (a ``jsonc`` edit of ``mcpServers``), every other top-level value
    as it was; ``InvalidInputError`` (line and column) when the text is not JSON, ``TooLarge``."""
    editable, skeleton = _editable(text)
    after = edit(editable)
    if skeleton is None:
        return after
    if after == editable:
        return text
    return _restored(text, skeleton, after)


def _editable(text: str) -> tuple[str, _Skeleton | None]:
    """What ``jsonc`` is given: the skeleton (and it), or a small file that is not strict JSON whole."""
    try:
        skeleton = _skeleton(text)
    except json.JSONDecodeError as exc:
        if len(text) <= MAX_CLIENT_FILE_BYTES:
            return text, None  # JSON with comments, or not JSON: jsonc says which, and where
        raise InvalidInputError(f"line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    return skeleton.text, skeleton


def _skeleton(text: str) -> _Skeleton:
    """``TooLarge`` as soon as what is kept of the text is over the bound."""
    pieces: list[str] = []
    cursor = kept = 0
    cuts: list[_Member] = []
    for member in _members(text):
        if member.key != SERVERS:
            pieces += [text[cursor : member.start], _CUT]
            kept += member.start - cursor + len(_CUT)
            cuts.append(member)
            cursor = member.end
        if kept + member.end - cursor > MAX_CLIENT_FILE_BYTES:
            raise TooLarge(
                f"its mcpServers and top-level keys take over {MAX_CLIENT_FILE_BYTES // (1024 * 1024)} "
                "MiB, far more than Claude Code keeps there"
            )
    pieces.append(text[cursor:])
    return _Skeleton("".join(pieces), tuple(cuts))


def _restored(original: str, skeleton: _Skeleton, after: str) -> str:
    """The edited skeleton ``after`` with each cut value put back (the edit touched none of them)."""
    try:
        cuts = [member for member in _members(after) if member.key != SERVERS]  # all read here
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"the edit left no JSON ({exc})") from None  # never: it writes JSON
    if [m.key for m in cuts] != [m.key for m in skeleton.cuts] or any(
        after[m.start : m.end] != _CUT for m in cuts
    ):
        raise InvalidInputError("the edit changed more than mcpServers")  # never: it edits that alone
    pieces: list[str] = []
    cursor = 0
    for cut, kept in zip(cuts, skeleton.cuts, strict=True):
        pieces += [after[cursor : cut.start], original[kept.start : kept.end]]
        cursor = cut.end
    pieces.append(after[cursor:])
    return "".join(pieces)


def _members(text: str) -> Iterator[_Member]:
    """Each member of the top-level object, its value checked and skipped at C speed;
    ``json.JSONDecodeError`` when the text is not strict JSON (comments, trailing commas)."""
    i = _blank(text, 1 if text.startswith(_BOM) else 0)
    _expect(text, i, "{", "the document's '{'")
    first = True
    i = _blank(text, i + 1)
    while not text.startswith("}", i) or not first:
        _expect(text, i, '"', "a property name in double quotes")
        # the C scanner's own string reader (typeshed leaves it out)
        key, i = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
        i = _blank(text, i)
        _expect(text, i, ":", "':' after the property name")
        start = _blank(text, i + 1)
        try:
            end = _SKIPPER.raw_decode(text, start)[1]
        except RecursionError:
            raise json.JSONDecodeError("nested too deep", text, start) from None
        yield _Member(key, start, end)
        first = False
        i = _blank(text, end)
        if not text.startswith(",", i):
            break
        i = _blank(text, i + 1)
    _expect(text, i, "}", "',' or '}' after the property")
    if _blank(text, i + 1) != len(text):
        raise json.JSONDecodeError("unexpected text after the end of the document", text, i + 1)


def _blank(text: str, i: int) -> int:
    match = _BLANK.match(text, i)
    return i if match is None else match.end()


def _expect(text: str, i: int, char: str, what: str) -> None:
    if not text.startswith(char, i):
        raise json.JSONDecodeError(f"expected {what}", text, i)
