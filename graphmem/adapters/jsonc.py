"""Edit JSONC text (JSON with ``//`` and ``/* */`` comments and trailing commas) in place.

People write OpenCode's config by hand. Loading it and dumping it again would drop
their comments and formatting, so these functions find a member by its key path and
return the text with only that member set or removed: every other character stays as
it was. Pure functions over strings; no I/O. Invalid text raises ``InvalidInputError``
saying the line and column, which the caller prefixes with the file's name.

Inserting a member and then removing it gives back the original text (with one
exception: an empty object that received the member comes back as ``{}``).
``adapters/opencode_config.py`` sets and removes ``mcp.graphmem``; ``claude_code_config.py``
``mcpServers.graphmem`` and its item of each ``hooks.<Event>`` array.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from graphmem.errors import InvalidInputError

DEFAULT_INDENT = "  "
# An array of scalars stays on one line up to this many characters, indent included.
INLINE_ARRAY_CHARS = 100
# Deeper nesting than this is no config file; the limit keeps recursion bounded.
MAX_DEPTH = 256

_NUMBER_RE = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_STRING_RE = re.compile(r'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"')
_LITERAL_RE = re.compile(r"true|false|null")
_WORD_RE = re.compile(r"[A-Za-z0-9_$.+-]+")
_WHITESPACE = " \t\r\n"
_PUNCTUATION = "{}[]:,"
_BOM = "\ufeff"
_KEY_LINE_RE = re.compile(r"^([ \t]+)\"", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # one of _PUNCTUATION, "string", "number", "literal", "comment"
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Node:
    """A value in the text: its kind, its span, and its members or items."""

    kind: str  # "object", "array", "string", "number" or "literal"
    start: int
    end: int
    members: tuple[Member, ...] = ()
    items: tuple[Node, ...] = ()


@dataclass(frozen=True, slots=True)
class Member:
    """``"key": value`` in an object; ``comma`` is the offset of the comma after it, if any."""

    key: str
    start: int
    value: Node
    comma: int | None

    @property
    def end(self) -> int:
        return self.value.end


@dataclass(frozen=True, slots=True)
class _Edit:
    offset: int
    length: int
    content: str


def _fail(text: str, offset: int, reason: str) -> InvalidInputError:
    """The error at ``offset``, with its 1-based line and column."""
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return InvalidInputError(f"line {line}, column {column}: {reason}")


# -- reading ----------------------------------------------------------------------


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    i = 1 if text.startswith(_BOM) else 0
    size = len(text)
    while i < size:
        char = text[i]
        if char in _WHITESPACE:
            i += 1
        elif char in _PUNCTUATION:
            tokens.append(_Token(char, i, i + 1))
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = size if end < 0 else end - (text[end - 1] == "\r")
            tokens.append(_Token("comment", i, end))
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise _fail(text, i, "a /* comment is never closed with */")
            tokens.append(_Token("comment", i, end + 2))
            i = end + 2
        elif char == '"':
            match = _STRING_RE.match(text, i)
            if match is None:
                raise _fail(
                    text, i, "invalid string: unclosed, or with a bad escape or a raw control character"
                )
            tokens.append(_Token("string", i, match.end()))
            i = match.end()
        else:
            i = _scalar(text, i, tokens)
    return tokens


def _scalar(text: str, i: int, tokens: list[_Token]) -> int:
    word = _WORD_RE.match(text, i)
    if word is None:
        raise _fail(text, i, f"unexpected character {text[i]!r}")
    for kind, pattern in (("number", _NUMBER_RE), ("literal", _LITERAL_RE)):
        match = pattern.fullmatch(text, i, word.end())
        if match is not None:
            tokens.append(_Token(kind, i, word.end()))
            return word.end()
    reason = "not a number, true, false or null (strings need double quotes)"
    raise _fail(text, i, f"unexpected {word.group()!r}: {reason}")


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        tokens = _tokenize(text)
        self.comments = [t for t in tokens if t.kind == "comment"]
        self.tokens = [t for t in tokens if t.kind != "comment"]
        self.index = 0
        self.root = self._document()

    def _document(self) -> Node | None:
        if not self.tokens:
            return None
        root = self.value(0)
        if self.index < len(self.tokens):
            raise _fail(
                self.text, self.tokens[self.index].start, "unexpected text after the end of the document"
            )
        return root

    def peek(self) -> _Token | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def expect(self, kinds: str, what: str) -> _Token:
        token = self.peek()
        if token is None:
            raise _fail(self.text, len(self.text), f"unexpected end of text: expected {what}")
        if token.kind not in kinds.split():
            found = self.text[token.start : token.end][:20]
            raise _fail(self.text, token.start, f"expected {what}, found {found!r}")
        self.index += 1
        return token

    def value(self, depth: int) -> Node:
        token = self.expect("{ [ string number literal", "a value")
        if depth > MAX_DEPTH:
            raise _fail(self.text, token.start, f"nested more than {MAX_DEPTH} levels deep")
        if token.kind == "{":
            return self.object(token, depth)
        if token.kind == "[":
            return self.array(token, depth)
        return Node(token.kind, token.start, token.end)

    def object(self, opening: _Token, depth: int) -> Node:
        members: list[Member] = []
        while True:
            token = self.expect("string }", "a property name in double quotes or '}'")
            if token.kind == "}":
                return Node("object", opening.start, token.end, members=tuple(members))
            key = json.loads(self.text[token.start : token.end])
            self.expect(":", "':' after the property name")
            value = self.value(depth + 1)
            after = self.expect(", }", "',' or '}' after the property")
            comma = after.start if after.kind == "," else None
            members.append(Member(key, token.start, value, comma))
            if after.kind == "}":
                return Node("object", opening.start, after.end, members=tuple(members))

    def array(self, opening: _Token, depth: int) -> Node:
        items: list[Node] = []
        while True:
            token = self.peek()
            if token is not None and token.kind == "]":
                self.index += 1
                return Node("array", opening.start, token.end, items=tuple(items))
            items.append(self.value(depth + 1))
            after = self.expect(", ]", "',' or ']' after the item")
            if after.kind == "]":
                return Node("array", opening.start, after.end, items=tuple(items))


def _decode(text: str, node: Node) -> Any:
    """The Python value of ``node`` (for duplicate keys the last one wins, as in JavaScript)."""
    if node.kind == "object":
        return {member.key: _decode(text, member.value) for member in node.members}
    if node.kind == "array":
        return [_decode(text, item) for item in node.items]
    return json.loads(text[node.start : node.end])


def _member(node: Node, key: str) -> Member | None:
    found = [member for member in node.members if member.key == key]
    return found[-1] if found else None


def _root_object(text: str, root: Node) -> Node:
    if root.kind != "object":
        raise _fail(text, root.start, "the top level must be an object ({ ... })")
    return root


def get_value(text: str, path: Sequence[str]) -> Any:
    """The value at ``path`` (object keys from the top; ``()`` is the whole document), or None."""
    root = _Parser(text).root  # None when the text holds only blanks and comments
    if root is None:
        return None
    node = _root_object(text, root)
    for key in path:
        member = _member(node, key) if node.kind == "object" else None
        if member is None:
            return None
        node = member.value
    return _decode(text, node)


# -- layout -----------------------------------------------------------------------


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _line_start(text: str, offset: int) -> int:
    return text.rfind("\n", 0, offset) + 1


def _line_indent(text: str, offset: int) -> str:
    start = _line_start(text, offset)
    line = text[start:offset]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _first_on_line(text: str, offset: int) -> bool:
    return not text[_line_start(text, offset) : offset].strip(" \t\ufeff")


def _indent_unit(text: str) -> str:
    """The document's indentation step: a tab, or the smallest indent of a line starting with a key."""
    indents = [match.group(1) for match in _KEY_LINE_RE.finditer(text)]
    if any(indent.startswith("\t") for indent in indents):
        return "\t"
    return min(indents, key=len) if indents else DEFAULT_INDENT


def _render(value: Any, indent: str, unit: str, newline: str) -> str:
    """``value`` as JSON, one member per line, continuation lines starting with ``indent``.

    Arrays of scalars that fit stay on one line, as people write ``"command": ["x", "mcp"]``.
    """
    if isinstance(value, dict) and value:
        inner = indent + unit
        members = [_render_member(str(k), v, inner, unit, newline) for k, v in value.items()]
        return "{" + "".join(f"{newline}{inner}{m}," for m in members)[:-1] + f"{newline}{indent}}}"
    if isinstance(value, list) and value:
        compact = json.dumps(value, ensure_ascii=False)
        scalars = not any(isinstance(item, dict | list) for item in value)
        if scalars and len(indent) + len(compact) <= INLINE_ARRAY_CHARS:
            return compact
        inner = indent + unit
        items = [_render(item, inner, unit, newline) for item in value]
        return "[" + "".join(f"{newline}{inner}{item}," for item in items)[:-1] + f"{newline}{indent}]"
    return json.dumps(value, ensure_ascii=False)


def _render_member(key: str, value: Any, indent: str, unit: str, newline: str) -> str:
    return f"{json.dumps(key, ensure_ascii=False)}: {_render(value, indent, unit, newline)}"


def _render_compact(key: str, value: Any) -> str:
    return f"{json.dumps(key, ensure_ascii=False)}: {json.dumps(value, ensure_ascii=False)}"


def _is_multiline(text: str, node: Node) -> bool:
    """Members go one per line (True) or on the line of the braces (False); empty objects open up."""
    if not node.members:
        return True
    return "\n" in text[node.start : node.members[0].start]


def _comments_within(parser: _Parser, start: int, end: int) -> list[_Token]:
    return [c for c in parser.comments if start <= c.start and c.end <= end]


def _skip_trailing(text: str, offset: int, parser: _Parser) -> int:
    """Past the blanks and same-line comments after ``offset``; blanks only when a newline follows."""
    comments = {c.start: c for c in parser.comments}
    end = i = offset
    while True:
        while i < len(text) and text[i] in " \t":
            i += 1
        comment = comments.get(i)
        if comment is None or "\n" in text[comment.start : comment.end]:
            break
        i = end = comment.end
    at_line_end = i == len(text) or text.startswith(("\n", "\r\n"), i)
    return i if at_line_end else end


def _apply(text: str, edits: Sequence[_Edit]) -> str:
    pieces: list[str] = []
    cursor = 0
    for edit in sorted(edits, key=lambda e: e.offset):
        pieces += [text[cursor : edit.offset], edit.content]
        cursor = edit.offset + edit.length
    pieces.append(text[cursor:])
    return "".join(pieces)


# -- editing ----------------------------------------------------------------------


def _nested(path: Sequence[str], value: Any) -> Any:
    for key in reversed(path):
        value = {key: value}
    return value


def _insert(text: str, parser: _Parser, node: Node, key: str, value: Any) -> list[_Edit]:
    """Edits that add ``key: value`` as the last member of the object ``node``."""
    newline, unit = _newline(text), _indent_unit(text)
    outer = _line_indent(text, node.start)
    if not node.members:
        inner = outer + unit
        member = _render_member(key, value, inner, unit, newline)
        comments = _comments_within(parser, node.start, node.end)
        if not comments:
            inner_span = node.end - 1 - (node.start + 1)
            return [_Edit(node.start + 1, inner_span, newline + inner + member + newline + outer)]
        last = comments[-1].end
        closing = "" if "\n" in text[last : node.end] else newline + outer
        return [_Edit(last, 0, newline + inner + member + closing)]
    last_member = node.members[-1]
    if not _is_multiline(text, node):
        if last_member.comma is not None:
            return [_Edit(last_member.comma + 1, 0, " " + _render_compact(key, value) + ",")]
        return [_Edit(last_member.end, 0, ", " + _render_compact(key, value))]
    inner = _line_indent(text, last_member.start) if _first_on_line(text, last_member.start) else outer + unit
    member = _render_member(key, value, inner, unit, newline)
    edits: list[_Edit] = []
    if last_member.comma is not None:
        anchor, suffix = last_member.comma + 1, ","
    else:
        anchor, suffix = last_member.end, ""
        edits.append(_Edit(anchor, 0, ","))
    edits.append(_Edit(_skip_trailing(text, anchor, parser), 0, newline + inner + member + suffix))
    return edits


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON, whatever the key order (Python alone has ``True == 1 == 1.0``)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def set_value(text: str, path: Sequence[str], value: Any) -> str:
    """``text`` with the member at ``path`` set to ``value``, creating missing objects on the way.

    The text is returned unchanged when the member already holds an equal value,
    whatever its formatting. An empty document becomes ``{"path": ...}``.
    """
    if not path:
        raise ValueError("set_value needs a key path")
    parser = _Parser(text)
    root = parser.root
    if root is None:
        newline = _newline(text)
        document = _render(_nested(path, value), "", DEFAULT_INDENT, newline) + newline
        return document if not text.strip() else text.rstrip() + newline + document
    node = _root_object(text, root)
    for depth, key in enumerate(path):
        member = _member(node, key)
        if member is None:
            return _apply(text, _insert(text, parser, node, key, _nested(path[depth + 1 :], value)))
        if depth == len(path) - 1:
            if _same(_decode(text, member.value), value):
                return text
            if _is_multiline(text, node):
                rendered = _render(
                    value, _line_indent(text, member.start), _indent_unit(text), _newline(text)
                )
            else:
                rendered = json.dumps(value, ensure_ascii=False)
            span = member.value.end - member.value.start
            return _apply(text, [_Edit(member.value.start, span, rendered)])
        if member.value.kind != "object":
            raise _fail(text, member.value.start, f"{key!r} must be an object to hold {path[depth + 1]!r}")
        node = member.value
    raise AssertionError("unreachable")


def _removal(text: str, parser: _Parser, node: Node, index: int) -> list[_Edit]:
    """Edits that take the member at ``index`` out of the object ``node``, with its comma and line."""
    members = node.members
    member = members[index]
    if _is_multiline(text, node) and _first_on_line(text, member.start):
        start = _line_start(text, member.start)
        if start > 0:  # take the newline before the member's line as well
            start -= 2 if text[start - 2 : start] == "\r\n" else 1
        end = member.comma + 1 if member.comma is not None else member.end
        edits = [_Edit(start, _skip_trailing(text, end, parser) - start, "")]
        previous_comma = members[index - 1].comma if index > 0 else None
        if member.comma is None and previous_comma is not None:
            edits.append(_Edit(previous_comma, 1, ""))
        return edits
    if index > 0:
        return [_Edit(members[index - 1].end, member.end - members[index - 1].end, "")]
    if len(members) > 1:
        return [_Edit(member.start, members[1].start - member.start, "")]
    end = member.comma + 1 if member.comma is not None else member.end
    return [_Edit(member.start, end - member.start, "")]


def _object_at(text: str, parser: _Parser, path: Sequence[str]) -> Node | None:
    root = parser.root
    if root is None:
        return None
    node = _root_object(text, root)
    for key in path:
        member = _member(node, key)
        if member is None or member.value.kind != "object":
            return None
        node = member.value
    return node


def remove_value(text: str, path: Sequence[str]) -> str:
    """``text`` without the member at ``path`` (every member with that key), or unchanged.

    An object left with no members and no comments is removed from its parent too; the
    top level is closed up to ``{}``.
    """
    if not path:
        raise ValueError("remove_value needs a key path")
    *parents, key = path
    removed = False
    while True:
        parser = _Parser(text)
        node = _object_at(text, parser, parents)
        indexes = [i for i, member in enumerate(node.members) if member.key == key] if node else []
        if node is None or not indexes:
            break
        text = _apply(text, _removal(text, parser, node, indexes[-1]))
        removed = True
    return _close_up(text, parents) if removed else text


def _close_up(text: str, path: Sequence[str]) -> str:
    """Remove the object at ``path`` if nothing is left in it (close up the top level to ``{}``)."""
    parser = _Parser(text)
    node = _object_at(text, parser, path)
    if node is None or node.members or _comments_within(parser, node.start, node.end):
        return text
    if not path:
        return _apply(text, [_Edit(node.start + 1, node.end - node.start - 2, "")])
    *parents, key = path
    parent = _object_at(text, parser, parents)
    assert parent is not None  # it holds ``node``
    index = max(i for i, member in enumerate(parent.members) if member.key == key)
    return _close_up(_apply(text, _removal(text, parser, parent, index)), parents)


# -- items of an array --------------------------------------------------------------
# ``adapters/claude_code_config.py`` keeps its hook in an array of the user's own groups (or in a
# group's own array): it adds, replaces and removes its item only, so every other keeps its bytes.


def _array_at(text: str, parser: _Parser, path: Sequence[str | int]) -> Node:
    """The array at ``path``: object keys, and the index of an item (``("hooks", "Stop", 0, "hooks")``)."""
    node = parser.root
    for step in path:
        if node is None:
            break
        if isinstance(step, int):
            node = node.items[step] if node.kind == "array" and 0 <= step < len(node.items) else None
        else:
            member = _member(node, step) if node.kind == "object" else None
            node = member.value if member is not None else None
    if node is None or node.kind != "array":
        raise ValueError(f"no array at {'.'.join(map(str, path))}")
    return node


def _comma_after(parser: _Parser, item: Node) -> int | None:
    following = [t for t in parser.tokens if t.start >= item.end]
    return following[0].start if following and following[0].kind == "," else None


def _item_text(text: str, array: Node, value: Any, beside: Node | None) -> tuple[str, str]:
    """``value`` rendered as an item of ``array`` (beside the item ``beside``), and its indent."""
    unit, newline = _indent_unit(text), _newline(text)
    if beside is not None and _first_on_line(text, beside.start):
        indent = _line_indent(text, beside.start)
    else:
        indent = _line_indent(text, array.start) + unit
    return _render(value, indent, unit, newline), indent


def append_item(text: str, path: Sequence[str | int], value: Any) -> str:
    """``text`` with ``value`` added as the last item of the array at ``path`` (it must exist)."""
    parser = _Parser(text)
    array = _array_at(text, parser, path)
    newline = _newline(text)
    if not array.items:
        rendered, indent = _item_text(text, array, value, None)
        outer = _line_indent(text, array.start)
        return _apply(
            text,
            [
                _Edit(
                    array.start + 1,
                    array.end - array.start - 2,
                    newline + indent + rendered + newline + outer,
                )
            ],
        )
    last = array.items[-1]
    comma = _comma_after(parser, last)
    if "\n" not in text[array.start : array.items[0].start]:  # the items are on the line of the brackets
        rendered = json.dumps(value, ensure_ascii=False)
        return _apply(
            text,
            [_Edit(comma + 1, 0, f" {rendered},")]
            if comma is not None
            else [_Edit(last.end, 0, f", {rendered}")],
        )
    rendered, indent = _item_text(text, array, value, last)
    edits = [] if comma is not None else [_Edit(last.end, 0, ",")]
    anchor = comma + 1 if comma is not None else last.end
    edits.append(
        _Edit(
            _skip_trailing(text, anchor, parser),
            0,
            newline + indent + rendered + ("," if comma is not None else ""),
        )
    )
    return _apply(text, edits)


def replace_item(text: str, path: Sequence[str | int], index: int, value: Any) -> str:
    """``text`` with the item ``index`` of the array at ``path`` set to ``value`` (others untouched)."""
    parser = _Parser(text)
    array = _array_at(text, parser, path)
    item = array.items[index]
    if _same(_decode(text, item), value):
        return text
    multiline = "\n" in text[array.start : array.items[0].start]
    rendered = _item_text(text, array, value, item)[0] if multiline else json.dumps(value, ensure_ascii=False)
    return _apply(text, [_Edit(item.start, item.end - item.start, rendered)])


def remove_item(text: str, path: Sequence[str | int], index: int) -> str:
    """``text`` without the item ``index`` of the array at ``path``, with its comma and its line."""
    parser = _Parser(text)
    array = _array_at(text, parser, path)
    items = array.items
    item = items[index]
    comma = _comma_after(parser, item)
    if len(items) == 1 and not _comments_within(parser, array.start, array.end):
        return _apply(text, [_Edit(array.start + 1, array.end - array.start - 2, "")])  # closed up: []
    if "\n" in text[array.start : items[0].start] and _first_on_line(text, item.start):
        start = _line_start(text, item.start)
        start -= 2 if text[start - 2 : start] == "\r\n" else 1
        end = comma + 1 if comma is not None else item.end
        edits = [_Edit(start, _skip_trailing(text, end, parser) - start, "")]
        previous = _comma_after(parser, items[index - 1]) if index > 0 else None
        if comma is None and previous is not None:
            edits.append(_Edit(previous, 1, ""))
        return _apply(text, edits)
    if index > 0:
        return _apply(text, [_Edit(items[index - 1].end, item.end - items[index - 1].end, "")])
    if len(items) > 1:
        return _apply(text, [_Edit(item.start, items[1].start - item.start, "")])
    end = comma + 1 if comma is not None else item.end
    return _apply(text, [_Edit(item.start, end - item.start, "")])
