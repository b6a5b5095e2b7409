"""get_context on ``path:line`` and ``path:start-end``: the memories about exactly that code.

The lines are read against the code graph's symbols of the file as last scanned: the
memories about the functions, methods and classes that overlap the lines (the innermost
first) come before those about the file alone, each with why it is there ("commit a1b2c3d
last changed `Session.request` (lines 38–60, around lines 40–52)").
"""

from __future__ import annotations

import re
import stat
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from graphmem.core.codegraph import SymbolInfo
from graphmem.core.models import Entity, Hit, MemoryRecord, Status
from graphmem.core.ports import CodeGraph, GraphStore
from graphmem.errors import InvalidInputError

# ``src/x.py:40``, ``src/x.py:40-52`` (also with an en dash, or ``L40-L52`` as GitHub writes it).
_LINE_TARGET = re.compile(r"^(?P<path>[^\s:]+):L?(?P<start>\d{1,9})(?:\s*[-–]\s*L?(?P<end>\d{1,9}))?$")
# Longest range a target may name: a whole file is asked as the file.
MAX_RANGE_LINES = 100_000
# Symbols listed for a range (the innermost first).
MAX_RANGE_SYMBOLS = 12
GIT_SOURCE = "git:"
# Bytes read at a time when counting a file's lines.
READ_CHUNK_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class LineTarget:
    """A file and a range of its lines, 1-based and inclusive."""

    path: str
    start: int
    end: int

    @property
    def label(self) -> str:
        return f"line {self.start}" if self.start == self.end else f"lines {self.start}–{self.end}"


def parse_line_target(target: str) -> LineTarget | None:
    """The file and lines ``target`` names (``src/x.py:40-52``), or None when it names no lines.

    A range that ends before it starts, starts at 0 or spans over ``MAX_RANGE_LINES`` lines
    is an ``InvalidInputError`` that says how to write it.
    """
    found = _LINE_TARGET.match(target.strip())
    if found is None:
        return None
    start = int(found["start"])
    end = int(found["end"]) if found["end"] else start
    if start < 1 or end < start:
        raise InvalidInputError(
            f"{target!r}: lines are counted from 1 and a range goes up, e.g. src/app.py:40-52."
        )
    if end - start >= MAX_RANGE_LINES:
        raise InvalidInputError(
            f"{target!r} spans over {MAX_RANGE_LINES:,} lines: ask for the file itself instead."
        )
    return LineTarget(found["path"], start, end)


def overlapping(symbols: Sequence[SymbolInfo], lines: LineTarget) -> list[SymbolInfo]:
    """The live symbols that overlap ``lines``, the innermost (shortest) first."""
    around = [
        s for s in symbols if s.deleted_at is None and s.start_line <= lines.end and s.end_line >= lines.start
    ]
    return sorted(around, key=lambda s: (s.end_line - s.start_line, s.start_line, s.key))


def range_section(lines: LineTarget, symbols: Sequence[SymbolInfo]) -> tuple[str, list[str]]:
    """The code section of a range: the symbols around it, or that none is."""
    title = f"{lines.label.capitalize()} of {lines.path}"
    if not symbols:
        return title, ["- no function, method or class of the last scan overlaps these lines"]
    return title, [
        f"- {s.kind} `{s.qualified_name}` L{s.start_line}–{s.end_line}: {s.signature}"
        for s in symbols[:MAX_RANGE_SYMBOLS]
    ]


def count_lines(path: Path, enough: int) -> int | None:
    """How many lines the regular file ``path`` has, counted only up to ``enough`` (a longer file
    answers ``enough``); None when it is no regular file or cannot be read."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # a FIFO would block the read
            return None
        count, last = 0, b"\n"
        with path.open("rb") as file:
            while count < enough and (chunk := file.read(READ_CHUNK_BYTES)):
                count += chunk.count(b"\n")
                last = chunk[-1:]
    except OSError:
        return None
    return min(count + (last != b"\n"), enough)  # a last line without a newline counts too


def past_end_section(lines: LineTarget, name: str, length: int) -> tuple[str, list[str]]:
    """The code section of a range past the end of its file."""
    return f"{lines.label.capitalize()} of {name}", [
        f"- past the end of the file: it has {length:,} line{'' if length == 1 else 's'}"
    ]


def range_hits(
    store: GraphStore,
    code: CodeGraph,
    file: Entity,
    lines: LineTarget,
    *,
    visible: Callable[[MemoryRecord], bool],
    limit: int,
) -> tuple[list[Hit], list[SymbolInfo]]:
    """Memories about the symbols overlapping ``lines`` (innermost symbol first; per symbol
    current, then newest first), then about the file alone; each hit says why (``reason``)."""
    project = file.project or ""
    symbols = overlapping(code.symbols_in(project, file.name), lines)[:MAX_RANGE_SYMBOLS]
    keys = [s.key for s in symbols]
    about = store.memories_about([*keys, file.key])
    wanted = list(dict.fromkeys(i for key in [*keys, file.key] for i in about.get(key, [])))
    records = store.get_memories(wanted)
    hits: list[Hit] = []
    seen: set[str] = set()
    for symbol in symbols:
        group = [records[i] for i in about.get(symbol.key, []) if i in records and i not in seen]
        for record in _ordered(r for r in group if visible(r)):
            seen.add(record.id)
            hits.append(
                Hit(record, 1.0, (), (file.name, symbol.qualified_name), reason=_why(record, symbol, lines))
            )
    rest = [records[i] for i in about.get(file.key, []) if i in records and i not in seen]
    for record in _ordered(r for r in rest if visible(r)):
        hits.append(
            Hit(
                record,
                0.5,
                (),
                (file.name,),
                reason=f"about {file.name}, not linked to a symbol at {lines.label}",
            )
        )
    return hits[:limit], symbols


def _ordered(records: Iterable[MemoryRecord]) -> list[MemoryRecord]:
    found = list(records)
    found.sort(key=lambda r: (r.status is not Status.ACTIVE, -r.created_at.timestamp(), r.id))
    return found


def _why(record: MemoryRecord, symbol: SymbolInfo, lines: LineTarget) -> str:
    span = f"lines {symbol.start_line}–{symbol.end_line}, around {lines.label}"
    if record.source.startswith(GIT_SOURCE):
        sha = record.source.removeprefix(GIT_SOURCE)[:7]
        return f"commit {sha} last changed `{symbol.qualified_name}` ({span})"
    return f"about `{symbol.qualified_name}` ({span})"
