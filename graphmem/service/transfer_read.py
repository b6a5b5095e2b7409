"""An export file read for an import: its lines parsed and validated one by one
(``core/export_format.py``), a union merge's repeated memories kept once, project-relative
records (a repository export's ``.``) re-rooted at the importing project; and what a reader
asks of each memory line: when its copy last changed (``stamp``), which project it is kept
under (``owner``). What the records must satisfy together is ``transfer_checks.py``'s.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from graphmem.core.export_format import (
    RELATIVE_ROOT,
    MemoryLine,
    ParsedExport,
    is_relative,
    parse_lines,
    rooted_key,
    rooted_project,
)
from graphmem.core.models import Scope
from graphmem.core.timeparse import to_utc

BYTE_ORDER_MARK = "\ufeff"


def parse_export(text: str) -> ParsedExport:
    """Every record of the JSONL ``text`` with its line number; problems collected, not raised.
    A byte order mark before the first line (Windows editors save UTF-8 with one) is no content."""
    return parse_lines(_numbered(text.removeprefix(BYTE_ORDER_MARK)))


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


def _numbered(text: str) -> Iterator[tuple[int, str]]:
    """The lines of ``text`` with their numbers; only ``\\n`` ends a line (JSON strings may hold
    other line separators)."""
    return enumerate(text.split("\n"), start=1)


def _keep_newest(parsed: ParsedExport) -> None:
    """One line per memory id: the newest (by ``updated_at``; the later line on a tie)."""
    newest: dict[str, tuple[int, MemoryLine]] = {}
    for number, line in parsed.memories:
        seen = newest.get(line.id)
        if seen is None or stamp(line) >= stamp(seen[1]):
            newest[line.id] = (number, line)
    parsed.memories = sorted(newest.values(), key=lambda item: item[0])


def _reroot(parsed: ParsedExport, project: str | None) -> None:
    """Project-relative keys and projects (``.``) become ``project``'s; without one, problems."""
    if project is None:
        numbered = [(n, e.key) for n, e in parsed.entities] + [(n, e.project) for n, e in parsed.entities]
        numbered += [(n, m.project) for n, m in parsed.memories if m.scope is Scope.PROJECT]
        numbered += [(n, key) for n, m in parsed.memories for key in m.entities]
        for number in sorted({n for n, value in numbered if is_relative(value)}):
            parsed.problems.append(
                (number, "a project-relative record ('.'): import it inside the project's checkout")
            )
        return
    parsed.entities = [
        (
            n,
            e.model_copy(
                update={"key": rooted_key(e.key, project), "project": rooted_project(e.project, project)}
            ),
        )
        for n, e in parsed.entities
    ]
    parsed.memories = [
        (
            n,
            m.model_copy(
                update={
                    "project": rooted_project(m.project, project),
                    "entities": [rooted_key(k, project) for k in m.entities],
                }
            ),
        )
        for n, m in parsed.memories
    ]
