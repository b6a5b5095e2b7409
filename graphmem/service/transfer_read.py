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

BYTE_ORDER_MARK = "\ufeff"


def parse_export(text: str) -> ParsedExport:
    """Every record of the JSONL ``text`` with its line number; problems collected, not raised.
    A byte order mark before the first line (Windows editors save UTF-8 with one) is no content."""
    return parse_lines(_numbered(text, len(BYTE_ORDER_MARK) if text.startswith(BYTE_ORDER_MARK) else 0))


def read_import(text: str, project: str | None) -> ParsedExport:
    """``text``'s records as an import into ``project`` takes them: one line per memory of a
    repository export (a union merge of two may repeat one), its relative records rooted."""
    parsed = parse_export(text)
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


def _numbered(text: str, start: int) -> Iterator[tuple[int, str]]:
    """The lines of ``text`` from ``start`` with their numbers, one at a time; only ``\\n`` ends a
    line (JSON strings may hold other line separators). Never a list of them all: 568,800 lines
    held beside the text and their records took 97 MB."""
    for number in itertools.count(1):
        end = text.find("\n", start)
        if end < 0:
            yield number, text[start:]
            return
        yield number, text[start:end]
        start = end + 1


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
            parsed.entities[i] = (n, e.model_copy(update={"key": key, "project": owned}))
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
