"""What get_context says about a file or a symbol, from the code graph."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from graphmem.core.codegraph import SymbolInfo
from graphmem.core.models import Entity, EntityKind
from graphmem.core.ports import CodeGraph

# Edges read for a section: all of them in practice; the bundle cuts what does not fit ("…N more").
ALL_EDGES = 500
# A signature in "Defines" is cut here: the names and where they are matter more.
MAX_SIGNATURE_CHARS = 72
# In "Defines", top-level classes first, then functions, then the rest (constants...).
DEFINES_ORDER = {"class": 0, "function": 1}
# Of a caller's calls into the file, the first few named.
MAX_CALLEES_NAMED = 3
# How sure a call edge is, most certain first (``core/codegraph.py``'s resolution tiers).
CONFIDENCE_ORDER = {"self": 0, "import": 1, "same_file": 2, "unique_name": 3, "ambiguous": 4}
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
    """Sections for a file — what it defines (top-level first), what it imports, what imports
    it, what usually changes with it, and who calls its symbols from elsewhere — each whole
    (the bundle cuts them with "…N more"); and the keys of its symbols (their memories count as
    the file's)."""
    symbols = [s for s in code.symbols_in(project, path) if s.deleted_at is None]
    sections: list[tuple[str, list[str]]] = []
    if symbols:
        members = Counter(s.qualified_name.rsplit(".", 1)[0] for s in symbols if "." in s.qualified_name)
        # Top-level classes and functions first (what the file is for), then its other names,
        # then the members of its classes.
        ordered = sorted(
            symbols,
            key=lambda s: ("." in s.qualified_name, DEFINES_ORDER.get(s.kind, 2), s.start_line),
        )
        sections.append((f"Defines ({len(symbols)})", [_defines(s, members) for s in ordered]))
    imports = list(dict.fromkeys(code.imports(project, path, incoming=False, limit=ALL_EDGES)))
    if imports:
        sections.append((f"Imports ({len(imports)})", [f"- {item}" for item in imports]))
    imported_by = list(dict.fromkeys(code.imports(project, path, incoming=True, limit=ALL_EDGES)))
    if imported_by:
        sections.append((f"Imported by ({len(imported_by)})", [f"- {item}" for item in imported_by]))
    together = [(other, n) for other, n in code.co_changes(project, path, limit=10) if n >= MIN_CO_CHANGES]
    if together:
        sections.append(
            ("Usually changes with", [f"- {other} ({n} commits together)" for other, n in together])
        )
    keys = [s.key for s in symbols]
    callers = [
        (other, callee, confidence)
        for other, callee, confidence in code.calls(keys, incoming=True, limit=ALL_EDGES)
        if other.path != path
    ]
    if callers:
        names = {s.key: s.qualified_name for s in symbols}
        lines = _caller_lines(callers, names)
        sections.append((f"Called from ({len(lines)} elsewhere)", lines))
    return sections, keys


def _defines(symbol: SymbolInfo, members: Counter[str]) -> str:
    """One definition: a class with how many members it has, a function with its signature."""
    where = f"L{symbol.start_line}–{symbol.end_line}"
    count = members.get(symbol.qualified_name, 0)
    if count:
        return f"- {symbol.kind} `{symbol.qualified_name}` {where} ({count} members)"
    signature = " ".join(symbol.signature.split())
    if symbol.kind in {"function", "method"} and signature:
        cut = (
            signature if len(signature) <= MAX_SIGNATURE_CHARS else signature[: MAX_SIGNATURE_CHARS - 1] + "…"
        )
        return f"- {symbol.kind} `{symbol.qualified_name}` {where}: {cut}"
    return f"- {symbol.kind} `{symbol.qualified_name}` {where}"


def _caller_lines(calls: Iterable[tuple[SymbolInfo, str, str]], names: dict[str, str]) -> list[str]:
    """One line per caller (most certain first), naming what it calls here."""
    by_caller: dict[str, tuple[SymbolInfo, list[str], int]] = {}
    for caller, callee, confidence in calls:
        rank = CONFIDENCE_ORDER.get(confidence, 9)
        found = by_caller.setdefault(caller.key, (caller, [], rank))
        callee_name = names.get(callee, callee.rsplit("::", 1)[-1])
        if callee_name not in found[1]:
            found[1].append(callee_name)
        if rank < found[2]:
            by_caller[caller.key] = (caller, found[1], rank)
    # The most certain first; of those, the ones that use most of the file.
    ranked = sorted(by_caller.values(), key=lambda c: (c[2], -len(c[1]), c[0].path, c[0].start_line))
    return [
        f"- `{caller.qualified_name}` ({_where(caller)}) calls "
        + ", ".join(f"`{name}`" for name in called[:MAX_CALLEES_NAMED])
        + (f" and {len(called) - MAX_CALLEES_NAMED} more" if len(called) > MAX_CALLEES_NAMED else "")
        for caller, called, _ in ranked
    ]


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
        (other, confidence)
        for other, _, confidence in code.calls([symbol.key], incoming=True, limit=ALL_EDGES)
    ]
    if callers:
        sections.append((f"Called by ({len(_distinct(callers))})", _call_lines(callers)))
    callees = [
        (other, confidence)
        for other, _, confidence in code.calls([symbol.key], incoming=False, limit=ALL_EDGES)
    ]
    if callees:
        sections.append((f"Calls ({len(_distinct(callees))})", _call_lines(callees)))
    return sections


def _distinct(pairs: Iterable[tuple[SymbolInfo, str]]) -> list[tuple[SymbolInfo, str]]:
    """One pair per symbol: its most certain edge."""
    best: dict[str, tuple[SymbolInfo, str]] = {}
    for symbol, confidence in pairs:
        held = best.get(symbol.key)
        if held is None or CONFIDENCE_ORDER.get(confidence, 9) < CONFIDENCE_ORDER.get(held[1], 9):
            best[symbol.key] = (symbol, confidence)
    return list(best.values())


def _call_lines(pairs: Iterable[tuple[SymbolInfo, str]]) -> list[str]:
    ranked = sorted(
        _distinct(pairs), key=lambda p: (CONFIDENCE_ORDER.get(p[1], 9), p[0].path, p[0].start_line)
    )
    return [f"- `{s.qualified_name}` ({_where(s)}) — {confidence}" for s, confidence in ranked]
