"""Markdown (and, roughly, reStructuredText) read line by line into blocks.

``read_blocks`` gives headings, fenced code, list items and paragraphs, each with the
headings it sits under, and inline markup removed (links keep their text, code spans
stay as written). It reads what people write in READMEs and agent instructions, not
the whole CommonMark grammar; every pattern stays linear on hostile input (long lines,
unclosed brackets), and nothing raises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_LINE_CHARS = 5_000  # Markdown's line regexes stay linear on minified or generated lines
MAX_BLOCK_CHARS = 5_000  # a paragraph is cut here before inline markup is removed


@dataclass(frozen=True, slots=True)
class Block:
    """One block of a document, with the headings it sits under."""

    kind: str  # "title", "heading", "code", "item" or "paragraph"
    text: str
    level: int = 0  # a heading's level; an item's indent
    lang: str = ""  # a code block's info string
    section: tuple[str, ...] = ()  # enclosing headings, outermost first, without the title


_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*([^`\s{]*)")
# The closing #s are taken off after (``_atx_text``): matched here, after a lazy text, every
# space of a long run was tried as their start (0.65 s a 5,000-character line).
_ATX_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*))?$")
_UNDERLINE_RE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_RST_UNDERLINE_RE = re.compile(r"^([=\-~^\"'`#*+])\1{2,}[ \t]*$")
_RULER_RE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_ITEM_RE = re.compile(r"^([ \t]*)(?:[-*+]|\d{1,9}[.)])[ \t]+(.*)$")
_STOPS = (".", "!", "?", ":", ";", ",")


def read_blocks(text: str, *, rst: bool = False, line_sentences: bool = False) -> list[Block]:
    """Headings, fenced code, list items and paragraphs of Markdown (or, roughly, reStructuredText).

    A level-1 first heading is the document's title: a "title" block, in no block's
    section. With ``line_sentences``, a paragraph line that starts with a capital after
    a line without final punctuation starts a new sentence (rules written one per line).
    """
    lines = text.splitlines()
    blocks: list[Block] = []
    stack: list[tuple[int, str]] = []  # open headings: (level, text)
    pending: list[str] = []
    item_indent = -1  # >= 0 while ``pending`` holds a list item
    title_open = False  # the title is stack[0]

    def section() -> tuple[str, ...]:
        return tuple(name for _, name in stack[1 if title_open else 0 :])

    def flush() -> None:
        nonlocal item_indent
        if pending:
            kind = "item" if item_indent >= 0 else "paragraph"
            raw = " ".join(pending)[:MAX_BLOCK_CHARS]
            blocks.append(Block(kind, _inline(raw), max(item_indent, 0), section=section()))
        pending.clear()
        item_indent = -1

    def heading(level: int, raw: str) -> None:
        nonlocal title_open
        flush()
        name = _inline(raw[:MAX_BLOCK_CHARS])
        if not name:
            return
        is_title = not stack and level == 1
        if level == 1:
            title_open = is_title
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, name))
        kind = "title" if is_title else "heading"
        blocks.append(Block(kind, name, level, section=() if is_title else section()))

    index = 0
    while index < len(lines):
        line = lines[index][:MAX_LINE_CHARS]
        index += 1
        fence = None if rst else _FENCE_RE.match(line)
        if fence is not None:
            flush()
            marker, body = fence.group(1), []
            while index < len(lines) and not lines[index].strip().startswith(marker):
                body.append(lines[index])
                index += 1
            index += 1
            blocks.append(Block("code", "\n".join(body), lang=fence.group(2).lower(), section=section()))
            continue
        stripped = line.strip()
        underline = (_RST_UNDERLINE_RE if rst else _UNDERLINE_RE).match(line)
        if underline is not None and len(pending) == 1 and item_indent < 0:
            text_line = pending.pop()
            heading(1 if stripped[0] in "=#" else 2, text_line)
            continue
        if not stripped or (rst and stripped.startswith("..")):
            flush()
            continue
        atx = None if rst else _ATX_RE.match(line)
        if atx is not None:
            heading(len(atx.group(1)), _atx_text(atx.group(2) or ""))
        elif _RULER_RE.match(line) or underline is not None:
            flush()
        elif (item := _ITEM_RE.match(line)) is not None:
            flush()
            item_indent = len(item.group(1).expandtabs(4))
            pending.append(item.group(2))
        elif item_indent >= 0:
            pending.append(stripped)
        elif line_sentences and pending and stripped[0].isupper() and not pending[-1].endswith(_STOPS):
            pending[-1] += "."
            pending.append(stripped)
        elif stripped.startswith(("|", "<")):
            flush()  # tables and HTML
        else:
            pending.append(stripped.lstrip("> ").strip() if stripped.startswith(">") else stripped)
    flush()
    return blocks


def _atx_text(raw: str) -> str:
    """An ATX heading's text without its closing sequence (``## Install ##``: the #s after a space)."""
    text = raw.rstrip(" \t")
    opened = text.rstrip("#")
    if opened != text and (not opened or opened[-1] in " \t"):
        return opened.rstrip(" \t")
    return text


# Inline patterns never scan past the next opening character, so a paragraph full of
# unclosed "[", "*" or "<" stays linear.
_INLINE_CODE_RE = re.compile(r"(`+)([^`]+)\1")
_IMAGE_RE = re.compile(r"!\[[^\[\]]*\](?:\([^()\s]*\)|\[[^\[\]]*\])")
_LINK_RE = re.compile(r"\[([^\[\]]*)\]\([^()\s]*\)|\[([^\[\]]*)\]\[[^\[\]]*\]")
_AUTOLINK_RE = re.compile(r"<((?:https?|mailto):[^<>\s]+)>")
_TAG_RE = re.compile(r"</?[A-Za-z][^<>]*>")
_STRONG_RE = re.compile(r"\*\*([^*]+)\*\*|(?<![\w*])\*([^\s*](?:[^*]*[^\s*])?)\*(?![\w*])")
_TASK_RE = re.compile(r"^\[[ xX]\]\s+")
_SPACE_RE = re.compile(r"\s+")


def _inline(text: str) -> str:
    """Markdown inline markup removed (links keep their text), code spans kept as written."""
    parts: list[str] = []
    position = 0
    for code in _INLINE_CODE_RE.finditer(text):
        parts.append(_plain(text[position : code.start()]))
        parts.append(f"`{code.group(2).strip()}`")
        position = code.end()
    parts.append(_plain(text[position:]))
    return _TASK_RE.sub("", _SPACE_RE.sub(" ", "".join(parts)).strip())


def _plain(text: str) -> str:
    text = _IMAGE_RE.sub("", text)
    text = _LINK_RE.sub(lambda m: m.group(1) or m.group(2), text)
    text = _AUTOLINK_RE.sub(r"\1", text)
    text = _TAG_RE.sub("", text)
    return _STRONG_RE.sub(lambda m: m.group(1) or m.group(2), text)
