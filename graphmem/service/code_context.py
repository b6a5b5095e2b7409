"""What get_context says about a file or a symbol, from the code graph."""

from __future__ import annotations

import re
from collections.abc import Iterable

from graphmem.core.codegraph import SymbolInfo
from graphmem.core.models import Entity, EntityKind
from graphmem.core.ports import CodeGraph

LIST_LIMIT = 25
# Commits two files must share before "usually changes with" says so (one is chance).
MIN_CO_CHANGES = 2
# Looks like a code name: `apply`, `RefundService.apply`, `pkg::mod::fn`, `src/x.py::A.b`.
SYMBOL_LIKE = re.compile(r"^[A-Za-z_][\w$]*(?:(?:\.|::|#)[A-Za-z_][\w$]*)*$|^[\w./-]+::[\w.$]+$")


# In prose: `backticked` names, Dotted.names with a capital, and calls like apply().
_IN_TEXT = re.compile(
    r"`([A-Za-z_][\w$.:#]*?)(?:\(\))?`|\b([A-Z][\w$]*\.[A-Za-z_][\w$]*(?:\.[A-Za-z_][\w$]*)*)\b|\b([a-z_][\w$]*)\(\)"
)


def symbol_candidates(text: str) -> list[str]:
    """Names in a text that may be code symbols, in order, without repeats."""
    found = [next(g for g in m.groups() if g) for m in _IN_TEXT.finditer(text)]
    return list(dict.fromkeys(name for name in found if len(name) > 2))


def symbol_entity(symbol: SymbolInfo, project: str) -> Entity:
    return Entity(symbol.key, EntityKind.SYMBOL, symbol.qualified_name, project, symbol.signature[:200])


def find_symbol(code: CodeGraph, project: str | None, target: str) -> tuple[SymbolInfo | None, list[str]]:
    """The one symbol ``target`` names, or None and the candidates when it is ambiguous."""
    target = target.strip().strip("`").removesuffix("()")
    if not SYMBOL_LIKE.match(target):
        return None, []
    path = None
    if ("::" in target and "/" in target.split("::", 1)[0]) or target.split("::", 1)[0].count(".") == 1:
        head, _, rest = target.partition("::")
        if rest and "." in head:
            path, target = head, rest
    name = target.replace("::", ".").replace("#", ".")
    found = [s for s in code.find_symbols(project, name, limit=20) if path is None or s.path == path]
    live = [s for s in found if s.deleted_at is None] or found
    exact = [s for s in live if s.qualified_name == name]
    chosen = exact if exact else live
    if len(chosen) == 1:
        return chosen[0], []
    return None, [f"{s.qualified_name} ({s.path})" for s in chosen[:8]]


def _where(symbol: SymbolInfo) -> str:
    return f"{symbol.path}:{symbol.start_line}"


def file_sections(code: CodeGraph, project: str, path: str) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """Sections for a file, and the keys of its symbols (their memories count as the file's)."""
    symbols = [s for s in code.symbols_in(project, path) if s.deleted_at is None]
    sections: list[tuple[str, list[str]]] = []
    if symbols:
        sections.append(
            (
                f"Defines ({len(symbols)})",
                [
                    f"- {s.kind} `{s.qualified_name}` L{s.start_line}–{s.end_line}: {s.signature}"
                    for s in symbols
                ],
            )
        )
    keys = [s.key for s in symbols]
    callers = [
        (other, confidence)
        for other, _, confidence in code.calls(keys, incoming=True, limit=200)
        if other.path != path
    ]
    if callers:
        sections.append(("Called from", _call_lines(callers)))
    imports = code.imports(project, path, incoming=False, limit=LIST_LIMIT)
    if imports:
        sections.append(("Imports", [f"- {item}" for item in imports]))
    imported_by = code.imports(project, path, incoming=True, limit=LIST_LIMIT)
    if imported_by:
        sections.append(("Imported by", [f"- {item}" for item in imported_by]))
    together = [(other, n) for other, n in code.co_changes(project, path, limit=10) if n >= MIN_CO_CHANGES]
    if together:
        sections.append(
            ("Usually changes with", [f"- {other} ({n} commits together)" for other, n in together])
        )
    return sections, keys


def symbol_sections(code: CodeGraph, symbol: SymbolInfo) -> list[tuple[str, list[str]]]:
    head = (
        f"- {symbol.kind} `{symbol.qualified_name}` in {_where(symbol)}–{symbol.end_line}: {symbol.signature}"
    )
    lines = [head]
    if symbol.docstring:
        lines.append(f"  {symbol.docstring.splitlines()[0][:200]}")
    if symbol.deleted_at is not None:
        lines.append(f"  (deleted from the code on {symbol.deleted_at.date().isoformat()})")
    sections: list[tuple[str, list[str]]] = [("Symbol", lines)]
    callers = [
        (other, confidence) for other, _, confidence in code.calls([symbol.key], incoming=True, limit=200)
    ]
    if callers:
        sections.append(("Called by", _call_lines(callers)))
    callees = [
        (other, confidence) for other, _, confidence in code.calls([symbol.key], incoming=False, limit=200)
    ]
    if callees:
        sections.append(("Calls", _call_lines(callees)))
    return sections


def _call_lines(pairs: Iterable[tuple[SymbolInfo, str]]) -> list[str]:
    order = {"self": 0, "import": 1, "same_file": 2, "unique_name": 3, "ambiguous": 4}
    ranked = sorted(pairs, key=lambda p: (order.get(p[1], 9), p[0].path, p[0].start_line))
    return [f"- `{s.qualified_name}` ({_where(s)}) — {confidence}" for s, confidence in ranked[:LIST_LIMIT]]
