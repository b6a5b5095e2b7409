"""A definition's signature and docstring, read from its tree for ``code_parser.py``.

The signature is the definition's header up to its body, on one line, with the keywords of
the declarations that wrap it (``export const X``, ``type X struct``). The docstring is
Python's, or else the block of comments directly above the definition (or above its
wrappers), each line starting its own line: a trailing comment of the statement above is
not one. Both are bounded.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node

    from graphmem.adapters.tree_lineage import Level

SIGNATURE_MAX_CHARS = 200
DOCSTRING_MAX_CHARS = 500
# How many wrappers up a header or its comment is looked for: real code has one or two
# (``export default``, ``template <...>``); a tree nested deeper is no declaration's.
WRAPPERS_MAX = 16

# Nodes that wrap a definition without being one: its comment sits above the wrapper.
_WRAPPERS = frozenset(
    {
        "decorated_definition",
        "export_statement",
        "ambient_declaration",
        "lexical_declaration",
        "variable_declaration",
        "type_declaration",
        "const_declaration",
        "template_declaration",
        "type_definition",
        "declaration",
        "property_declaration",
    }
)
# Siblings between a definition and its comment: decorators, attributes, annotations.
_SKIPPED_ABOVE = frozenset(
    {"decorator", "attribute_item", "attribute_list", "annotation", "marker_annotation", "attribute"}
)
_BODY_TYPES = frozenset({"function_body", "class_body", "enum_class_body"})
_SPACES = re.compile(r"\s+")
_HEADER_END = re.compile(r"\s*(?:\{|:|=>|=|;)\s*$")
_COMMENT_OPENERS = re.compile(r"^\s*(?:/\*+!?|\*+(?!/)|//[/!]?|#+)\s?")
_COMMENT_CLOSER = re.compile(r"\s*\*+/\s*$")
_INDENT = re.compile(rb"[ \t\r\x0b\x0c]*")  # what bytes.strip() strips, but a newline


class Headers:
    """Signatures and docstrings of one file's definitions."""

    def __init__(self, source: bytes, language: str) -> None:
        self.source = source
        self.language = language
        self._text_at: dict[int, int] = {}  # a line's first byte -> its first byte that is not a space

    def signature(self, path: list[Level]) -> str:
        """The header of ``path[-1].node``, the definition at the end of ``path`` (``tree_lineage``)."""
        node = path[-1].node
        body = node.child_by_field_name("body")
        if body is None:
            value = node.child_by_field_name("value")
            body = value.child_by_field_name("body") if value is not None else None
        if body is None:  # grammars without a body field (Kotlin)
            body = next((c for c in node.named_children if c.type in _BODY_TYPES), None)
        start = node.start_byte
        for level in path[-2 : -2 - WRAPPERS_MAX : -1]:
            wrapper = level.node
            if wrapper.type not in _WRAPPERS or wrapper.named_child_count != 1:
                break
            start = wrapper.start_byte  # `export const X`, `type X struct`: the keywords belong to the header
        if body is not None and body.start_byte > node.start_byte:
            header = self._slice(start, body.start_byte)
        else:
            header = self._slice(start, node.end_byte)
            header = header.split("\n", 1)[0].split("{", 1)[0]
        header = _HEADER_END.sub("", _SPACES.sub(" ", header).strip())
        return bounded(header, SIGNATURE_MAX_CHARS)

    def docstring(self, path: list[Level]) -> str | None:
        """Python's docstring of ``path[-1].node``, or the comment block above it."""
        if self.language == "python":
            doc = self._python_docstring(path[-1].node)
            if doc:
                return doc
        return self._comment_above(path)

    def _python_docstring(self, node: Node) -> str | None:
        body = node.child_by_field_name("body")
        if body is None or body.named_child_count == 0:
            return None
        first = body.named_child(0)
        if first is None:
            return None
        if first.type == "expression_statement" and first.named_child_count:
            first = first.named_child(0)
        if first is None or first.type != "string":
            return None
        content = "".join(self._text(c) for c in first.named_children if c.type == "string_content")
        return _clean_doc(content)

    def _comment_above(self, path: list[Level]) -> str | None:
        depth = len(path) - 1  # the anchor's: the definition, or a wrapper the comment is above
        while True:
            if depth == 0 or len(path) - depth > WRAPPERS_MAX:
                return None  # the root, or no declaration's wrapper
            parent = path[depth - 1]
            siblings = parent.before()
            above = next((s for s in siblings if s.type not in _SKIPPED_ABOVE), None)
            if above is not None and "comment" in above.type:
                break
            if above is None and parent.node.type in _WRAPPERS:
                depth -= 1
                continue
            return None
        blocks: list[list[str]] = []
        row = path[depth].node.start_point.row
        comment: Node | None = above
        while (
            comment is not None
            and "comment" in comment.type
            and comment.end_point.row >= row - 1
            and self._starts_line(comment)  # not the trailing comment of the statement above
        ):
            blocks.append(self._text(comment).splitlines())
            row = comment.start_point.row
            comment = next(siblings, None)
        lines = [line for block in reversed(blocks) for line in block]
        return _clean_doc(
            "\n".join(_COMMENT_OPENERS.sub("", _COMMENT_CLOSER.sub("", line)) for line in lines)
        )

    def _starts_line(self, node: Node) -> bool:
        """Whether only spaces are before ``node`` on its line (each line read once a file)."""
        line_start = node.start_byte - node.start_point.column  # a column counts bytes
        text_at = self._text_at.get(line_start)
        if text_at is None:
            found = _INDENT.match(self.source, line_start)
            text_at = self._text_at[line_start] = found.end() if found else line_start
        return node.start_byte <= text_at

    def _text(self, node: Node) -> str:
        return self._slice(node.start_byte, node.end_byte)

    def _slice(self, start: int, end: int) -> str:
        return text_of(self.source, start, end)


def text_of(source: bytes, start: int, end: int) -> str:
    """Source bytes as text: what is not UTF-8, and a NUL (PostgreSQL refuses one in text), as U+FFFD."""
    return source[start:end].decode("utf-8", "replace").replace("\x00", "\ufffd")


def bounded(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _clean_doc(text: str) -> str | None:
    lines = [line.strip() for line in text.strip().splitlines()]
    doc = "\n".join(lines).strip()
    return bounded(doc, DOCSTRING_MAX_CHARS) if doc else None
