"""An in-memory :class:`graphmem.core.ports.CodeGraph` beside a ``FakeGraphStore``.

The code graph's files, symbols and external modules are entities of the store (so
memories can be about them, and ``get_entities`` finds them); what only the code graph
reads (paths, hashes, parsed files, edges) it keeps itself. It follows the Kùzu code
graph's rules (``kuzu_code.py``), checked by ``tests/unit/adapters/test_code_graph_contract.py``:
symbols and files that memories are about are marked deleted rather than removed, a
symbol keeps its ``body_changed_at`` while its body hash stays, and a pass is marked
interrupted until its edges are in.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from graphmem.adapters.code_scan_marks import ScanMarks
from graphmem.adapters.fake_store import FakeGraphStore
from graphmem.core.code import ParsedFile
from graphmem.core.codegraph import (
    SYMBOL_COLUMNS,
    CodeScan,
    FileState,
    SymbolInfo,
    file_key,
    module_key,
    pass_edges,
    pass_modules,
    symbol_changes,
)
from graphmem.core.models import Entity, EntityKind


@dataclass(slots=True)
class _File:
    project: str
    path: str
    state: FileState | None  # None once deleted
    parsed: ParsedFile | None
    deleted_at: datetime | None = None


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class FakeCodeGraph:
    """Files, symbols and their edges of every project, in memory (see the module doc)."""

    def __init__(self, store: FakeGraphStore) -> None:
        self._store = store
        self._lock = store.lock
        self._files: dict[str, _File] = {}  # file key -> file
        self._symbols: dict[str, tuple[str, SymbolInfo]] = {}  # symbol key -> (project, symbol)
        self._modules: dict[str, str] = {}  # module key -> module name
        self._contains: set[tuple[str, str]] = set()
        self._calls: dict[tuple[str, str], str] = {}  # (caller, callee) -> confidence
        self._inherits: set[tuple[str, str]] = set()
        self._imports: set[tuple[str, str]] = set()  # (file key, file or module key)
        self._co_changes: dict[tuple[str, str], int] = {}  # (file key, file key) -> count

    # -- reading ----------------------------------------------------------------

    def file_states(self, project: str) -> dict[str, FileState]:
        with self._lock:
            return {
                f.path: f.state
                for f in self._files.values()
                if f.project == project and f.state is not None and f.deleted_at is None
            }

    def projects(self) -> set[str]:
        with self._lock:
            return {f.project for f in self._files.values() if f.state is not None and f.deleted_at is None}

    def load_parsed(self, project: str, paths: Collection[str] | None = None) -> dict[str, ParsedFile]:
        wanted = None if paths is None else set(paths)
        with self._lock:
            return {
                f.path: f.parsed
                for f in self._files.values()
                if f.project == project
                and f.parsed is not None
                and f.deleted_at is None
                and (wanted is None or f.path in wanted)
            }

    def symbols_in(self, project: str, path: str) -> list[SymbolInfo]:
        with self._lock:
            found = [s for p, s in self._symbols.values() if p == project and s.path == path]
        return sorted(found, key=lambda s: (s.start_line, s.key))

    def find_symbols(self, project: str | None, name: str, limit: int = 10) -> list[SymbolInfo]:
        with self._lock:
            found = [
                s
                for p, s in self._symbols.values()
                if (project is None or p == project)
                and (s.qualified_name == name or s.name == name or s.qualified_name.endswith(f".{name}"))
            ]
        return sorted(found, key=lambda s: (s.deleted_at is not None, s.key))[: max(limit, 0)]

    def unique_symbols(self, project: str, names: Collection[str]) -> dict[str, SymbolInfo]:
        wanted = set(names)
        with self._lock:
            live = [
                s
                for p, s in self._symbols.values()
                if p == project and s.deleted_at is None and s.name in wanted
            ]
        counts = Counter(s.name for s in live)
        return {s.name: s for s in live if counts[s.name] == 1}

    def symbols(self, keys: Collection[str]) -> dict[str, SymbolInfo]:
        with self._lock:
            return {key: self._symbols[key][1] for key in keys if key in self._symbols}

    def calls(
        self, keys: Collection[str], *, incoming: bool, limit: int
    ) -> list[tuple[SymbolInfo, str, str]]:
        wanted = set(keys)
        with self._lock:
            found = [
                (self._symbols[other][1], given, confidence)
                for (caller, callee), confidence in sorted(self._calls.items())
                for given, other in [(callee, caller) if incoming else (caller, callee)]
                if given in wanted and other in self._symbols
            ]
        return found[: max(limit, 0)]

    def imports(self, project: str, path: str, *, incoming: bool, limit: int) -> list[str]:
        key = file_key(project, path)
        with self._lock:
            if incoming:
                found = sorted(self._files[a].path for a, b in self._imports if b == key and a in self._files)
            else:
                targets = sorted(
                    (not b.startswith("File:"), b) for a, b in self._imports if a == key and self._known(b)
                )
                found = [self._files[b].path if b in self._files else self._modules[b] for _, b in targets]
        return found[: max(limit, 0)]

    def co_changes(self, project: str, path: str, limit: int) -> list[tuple[str, int]]:
        key = file_key(project, path)
        with self._lock:
            found = [
                (self._files[other].path, count)
                for (a, b), count in self._co_changes.items()
                for other in [b if a == key else a if b == key else ""]
                if other in self._files and self._files[other].deleted_at is None
            ]
        return sorted(found, key=lambda pair: (-pair[1], pair[0]))[: max(limit, 0)]

    def deleted_files(self, keys: Collection[str]) -> dict[str, datetime]:
        with self._lock:
            found = {key: self._files[key].deleted_at for key in keys if key in self._files}
        return {key: at for key, at in found.items() if at is not None}

    def code_links(self, limit: int) -> list[tuple[str, Entity]]:
        with self._lock:
            symbols = [
                Entity(key, EntityKind.SYMBOL, symbol.qualified_name, project)
                for key, (project, symbol) in sorted(self._symbols.items())
            ]
            files = [
                Entity(key, EntityKind.FILE, f.path, f.project)
                for key, f in sorted(self._files.items())
                if f.deleted_at is not None
            ]
        found: list[tuple[str, Entity]] = []
        for entities in (symbols, files):
            about = self._store.memories_about([e.key for e in entities])
            found += [(memory_id, e) for e in entities for memory_id in about.get(e.key, [])]
        return found[: max(limit, 0)]

    def scan_interrupted(self, project: str) -> bool:
        return ScanMarks(self._store, project).interrupted()

    def _known(self, key: str) -> bool:
        return key in self._files or key in self._symbols or key in self._modules

    # -- writing ----------------------------------------------------------------

    def save(self, scan: CodeScan) -> dict[str, int]:
        """Store a pass: symbols, then every edge of the project, then the files' states. The
        memories about a moved symbol or file move to its new key (``scan.moves``)."""
        at, project = _utc(scan.at), scan.project
        touched = set(scan.changed) | set(scan.removed)
        carried: dict[str, int] = {}
        with self._lock:
            old = {k: s for k, (p, s) in self._symbols.items() if p == project and s.path in touched}
            remembered = self._store.remembered(list(old))
            stored = {key: tuple(getattr(s, c) for c in SYMBOL_COLUMNS) for key, s in old.items()}
            change = symbol_changes(scan, stored, remembered, at)
            for key, row in change.rows.items():
                self._symbols[key] = (project, SymbolInfo(key, *(row[c] for c in SYMBOL_COLUMNS)))
                entity = Entity(key, EntityKind.SYMBOL, row["name"], project, row["title"])
                self._store.put_entity(entity, (row["body_hash"], row["body_changed_at"]))
            moved = sorted(remembered & change.followed.keys())  # their memories move to the new key
            for key in moved:
                carried[key] = len(self._store.move_about(EntityKind.SYMBOL, key, change.followed[key]))
            for key in change.kept:
                self._symbols[key] = (project, replace(old[key], deleted_at=at))
            for key in (*change.removed, *moved):
                self._drop_symbol(key)
            ScanMarks(self._store, project).started()
            carried |= self._save_files(scan, at)
            self._replace_edges(scan)
            ScanMarks(self._store, project).done(scan.head)
        return {key: n for key, n in carried.items() if n}

    def scanned_head(self, project: str) -> str | None:
        return ScanMarks(self._store, project).head()

    def _save_files(self, scan: CodeScan, at: datetime) -> dict[str, int]:
        project = scan.project
        carried: dict[str, int] = {}
        for path, (parsed, state) in scan.changed.items():
            key = file_key(project, path)
            if key not in self._files:
                self._store.put_entity(Entity(key, EntityKind.FILE, path, project))
            self._files[key] = _File(project, path, state, parsed)
        for path in scan.removed:
            key = file_key(project, path)
            if key not in self._files:
                continue
            moved_to = scan.moves.files.get(path)
            if moved_to in scan.changed:  # renamed: its memories are about the new path now
                carried[key] = len(self._store.move_about(EntityKind.FILE, key, file_key(project, moved_to)))
            if self._store.is_about(EntityKind.FILE, key):
                self._files[key] = _File(project, path, None, None, at)
            else:
                del self._files[key]
                self._store.remove_entity(EntityKind.FILE, key)
                self._drop_edges(key)
        for key, module in pass_modules(scan).items():
            if key not in self._modules:
                self._modules[key] = module
                self._store.put_entity(Entity(key, EntityKind.EXTERNAL_MODULE, module, project))
        return carried

    def _replace_edges(self, scan: CodeScan) -> None:
        project = scan.project
        mine = {k for k, f in self._files.items() if f.project == project}
        mine |= {k for k, (p, _) in self._symbols.items() if p == project}
        self._contains = {(a, b) for a, b in self._contains if a not in mine}
        self._calls = {pair: c for pair, c in self._calls.items() if pair[0] not in mine}
        self._inherits = {(a, b) for a, b in self._inherits if a not in mine}
        self._imports = {(a, b) for a, b in self._imports if a not in mine}
        held = {"CONTAINS": self._contains, "INHERITS": self._inherits, "IMPORTS": self._imports}
        for (rel, _, _), pairs in pass_edges(scan).items():
            known = {(a, b): c for (a, b), c in pairs.items() if self._known(a) and self._known(b)}
            if rel == "CALLS":
                self._calls.update({pair: c or "" for pair, c in known.items()})
            else:
                held[rel].update(known)

    def _drop_symbol(self, key: str) -> None:
        del self._symbols[key]
        self._store.remove_entity(EntityKind.SYMBOL, key)
        self._drop_edges(key)

    def _drop_edges(self, key: str) -> None:
        self._contains = {pair for pair in self._contains if key not in pair}
        self._calls = {pair: c for pair, c in self._calls.items() if key not in pair}
        self._inherits = {pair for pair in self._inherits if key not in pair}
        self._imports = {pair for pair in self._imports if key not in pair}
        self._co_changes = {pair: n for pair, n in self._co_changes.items() if key not in pair}

    def touch(self, project: str, states: Sequence[FileState]) -> None:
        with self._lock:
            for state in states:
                found = self._files.get(file_key(project, state.path))
                if found is not None and found.state is not None:
                    found.state = replace(found.state, mtime_ns=state.mtime_ns)

    def replace_co_changes(self, project: str, pairs: dict[tuple[str, str], int]) -> None:
        with self._lock:
            self._co_changes = {
                (a, b): n
                for (a, b), n in self._co_changes.items()
                if a in self._files and self._files[a].project != project
            }
            live = set(self.file_states(project))
            for (a, b), count in pairs.items():
                if a in live and b in live:
                    self._co_changes[(file_key(project, a), file_key(project, b))] = count

    def remove_unused_modules(self, project: str) -> int:
        """Remove ``project``'s external modules that no file imports and no memory is about."""
        with self._lock:
            imported = {target for _, target in self._imports}
            unused = sorted(
                key
                for key, name in self._modules.items()
                if key == module_key(project, name)
                and key not in imported
                and not self._store.is_about(EntityKind.EXTERNAL_MODULE, key)
            )
            for key in unused:
                del self._modules[key]
                self._store.remove_entity(EntityKind.EXTERNAL_MODULE, key)
                self._drop_edges(key)
        return len(unused)
