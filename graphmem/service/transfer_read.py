"""An export file read for an import: its lines parsed and validated one by one
(``core/export_format.py``), a union merge's repeated memories kept once, project-relative
records (a repository export's ``.``) re-rooted at the importing project; and what a reader
asks of each memory line: when its copy last changed (``stamp``), which project it is kept
under (``owner``). What the records must satisfy together is ``transfer_checks.py``'s.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime

from graphmem.core.export_format import (
    RELATIVE_ROOT,
    ParsedExport,
    is_relative,
    parse_lines,
    rooted_key,
    rooted_project,
)
from graphmem.core.memory_line import MemoryLine
from graphmem.core.models import Scope
from graphmem.core.timeparse import to_utc
from graphmem.service.file_access import export_lines

BYTE_ORDER_MARK = "\ufeff"


def parse_export(text: str | bytes, name: str = "The export") -> ParsedExport:
    """Every record of the JSONL ``text`` with its line number; problems collected, not raised.
    Bytes (a file's) are decoded a line at a time (``export_lines``: a line that is not UTF-8
    is an ``ImportFileError`` naming ``name``). A byte order mark before the first line (Windows
    editors save UTF-8 with one) is no content."""
    lines = export_lines(text, name) if isinstance(text, bytes) else _numbered(text)
    return parse_lines(_without_byte_order_mark(lines))


def read_import(text: str | bytes, project: str | None, name: str = "The export") -> ParsedExport:
    """``text``'s records as an import into ``project`` takes them: one line per memory of a
    repository export (a union merge of two may repeat one), its relative records rooted."""
    parsed = parse_export(text, name)
    if parsed.header is not None and parsed.header.project == RELATIVE_ROOT:
        _keep_newest(parsed)
    _reroot(parsed, project)
    return parsed


def stamp(line: MemoryLine) -> datetime:
    """When the line's copy of a memory last changed."""
    return to_utc(line.updated_at or line.created_at)


def owner(line: MemoryLine, project: str | None) -> str | None:
    """The project the line's memory is kept under: ``project`` (else the line's) for a project
    memory, none for a global one."""
    return (project or line.project) if line.scope is Scope.PROJECT else None


def _numbered(text: str) -> Iterator[tuple[int, str]]:
    """The lines of ``text`` with their numbers, one at a time; only ``\\n`` ends a line (JSON
    strings may hold other line separators). Never a list of them all: 568,800 lines held beside
    the text and their records took 97 MB."""
    start = 0
    for number in itertools.count(1):
        end = text.find("\n", start)
        if end < 0:
            yield number, text[start:]
            return
        yield number, text[start:end]
        start = end + 1


def _without_byte_order_mark(lines: Iterator[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """``lines``, the first without the byte order mark it starts with, if any."""
    for number, line in lines:
        yield number, line.removeprefix(BYTE_ORDER_MARK) if number == 1 else line


def _keep_newest(parsed: ParsedExport) -> None:
    """One line per memory id: the newest (by ``updated_at``; the later line on a tie)."""
    newest: dict[str, tuple[int, MemoryLine]] = {}
    for number, line in parsed.memories:
        seen = newest.get(line.id)
        if seen is None or stamp(line) >= stamp(seen[1]):
            newest[line.id] = (number, line)
    parsed.memories = sorted(newest.values(), key=lambda item: item[0])


def _reroot(parsed: ParsedExport, project: str | None) -> None:
    """Project-relative keys and projects (``.``) become ``project``'s; without one, problems.
    A record is replaced in its place, and only when it changes: a copy of every record beside
    the records took as much again (``_relative_lines``)."""
    if project is None:
        for number in sorted(_relative_lines(parsed)):
            parsed.problems.append(
                (number, "a project-relative record ('.'): import it inside the project's checkout")
            )
        return
    for i, (n, e) in enumerate(parsed.entities):
        key, owned = rooted_key(e.key, project), rooted_project(e.project, project)
        if (key, owned) != (e.key, e.project):
            parsed.entities[i] = (n, replace(e, key=key, project=owned))
    for i, (n, m) in enumerate(parsed.memories):
        owned, keys = rooted_project(m.project, project), tuple(rooted_key(k, project) for k in m.entities)
        if (owned, keys) != (m.project, m.entities):
            parsed.memories[i] = (n, replace(m, project=owned, entities=keys))


def _relative_lines(parsed: ParsedExport) -> set[int]:
    """The numbers of the lines that hold a project-relative key or project."""
    entities = {n for n, e in parsed.entities if is_relative(e.key) or is_relative(e.project)}
    return entities | {
        n
        for n, m in parsed.memories
        if (m.scope is Scope.PROJECT and is_relative(m.project)) or any(map(is_relative, m.entities))
    }
