"""The code graph (``core.ports.CodeGraph``) in a team's PostgreSQL store.

Files, symbols and external modules are rows of ``entities`` (so memories can be about them)
with their details in ``code_files`` and ``code_symbols``; CONTAINS, CALLS, INHERITS and
IMPORTS are rows of ``code_edges`` (``kind``, ``source``, ``target``), co-changes rows of
``co_changes``; every one of them goes with its entity (foreign keys). The rules are the Kùzu
code graph's (``kuzu_code.py``), held by ``tests/unit/adapters/test_code_graph_contract.py``:
a symbol or file a memory is about (anyone's: ``remembered`` sees past row-level security) is
marked deleted rather than removed, one the store held before any pass (an entity only: an
import's) is taken over with the rows a pass writes, a symbol keeps its ``body_changed_at``
while its body hash stays, memories follow a moved symbol or file, and a pass is marked
interrupted until its edges are in. A pass is one transaction: another daemon
sees the project's code before it or after it, never half of it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime

from graphmem.adapters.code_scan_marks import ScanMarks
from graphmem.adapters.postgres_rows import utc
from graphmem.adapters.postgres_store import PostgresGraphStore
from graphmem.adapters.record_rows import SYMBOL_FIELDS, SYMBOL_RETURN, call_from_row, symbol_from_row
from graphmem.core.code import ParsedFile, parsed_from_json, parsed_to_json
from graphmem.core.codegraph import (
    CodeScan,
    FileState,
    SymbolInfo,
    file_key,
    pass_edges,
    pass_modules,
    symbol_changes,
)
from graphmem.core.models import Entity, EntityKind

_INSERT_SYMBOL = (
    f"INSERT INTO code_symbols (project, {', '.join(SYMBOL_FIELDS)}) VALUES (%(project)s, "
    + ", ".join(f"%({c})s" for c in SYMBOL_FIELDS)
    + ") ON CONFLICT (key) DO UPDATE SET "
    + ", ".join(f"{c} = EXCLUDED.{c}" for c in SYMBOL_FIELDS if c != "key")
)
_BODY_CHANGED_AT = SYMBOL_FIELDS.index("body_changed_at")  # in a row of SYMBOL_RETURN; deleted_at next
_INSERT_ENTITY = (
    "INSERT INTO entities (key, kind, name, project, title) VALUES (%(key)s, %(kind)s, %(name)s, "
    "%(project)s, %(title)s) ON CONFLICT (key) DO UPDATE SET name = EXCLUDED.name, title = EXCLUDED.title, "
    "project = EXCLUDED.project, owner = NULL"  # the checkout's code is the team's (schema 15)
)


class PostgresCodeGraph:
    """Code-graph reads and writes over the PostgreSQL store's connections."""

    def __init__(self, store: PostgresGraphStore) -> None:
        self._store = store

    # -- reading ----------------------------------------------------------------

    def file_states(self, project: str) -> dict[str, FileState]:
        rows = self._store.db.rows(
            "SELECT path, content_hash, size, mtime_ns FROM code_files "
            "WHERE project = %s AND deleted_at IS NULL AND content_hash IS NOT NULL",
            (project,),
        )
        return {r[0]: FileState(r[0], r[1], int(r[2] or 0), int(r[3] or 0)) for r in rows}

    def projects(self) -> set[str]:
        # One probe of the (project, path) index a project, not a read of every file
        rows = self._store.db.rows(
            "SELECT project FROM (WITH RECURSIVE names(project) AS ("
            " (SELECT project FROM code_files WHERE deleted_at IS NULL AND content_hash IS NOT NULL"
            " ORDER BY project LIMIT 1)"
            " UNION ALL SELECT (SELECT f.project FROM code_files f WHERE f.project > names.project"
            " AND f.deleted_at IS NULL AND f.content_hash IS NOT NULL ORDER BY f.project LIMIT 1)"
            " FROM names WHERE names.project IS NOT NULL"
            ") SELECT project FROM names WHERE project IS NOT NULL) n"
        )
        return {str(r[0]) for r in rows}

    def load_parsed(self, project: str, paths: Collection[str] | None = None) -> dict[str, ParsedFile]:
        where = "" if paths is None else "AND path = ANY(%(paths)s)"
        rows = self._store.db.rows(
            "SELECT path, parsed FROM code_files WHERE project = %(p)s AND deleted_at IS NULL "
            f"AND parsed IS NOT NULL {where}",
            {"p": project, "paths": list(paths or ())},
        )
        return {r[0]: parsed_from_json(r[1]) for r in rows}

    def symbols_in(self, project: str, path: str) -> list[SymbolInfo]:
        rows = self._store.db.rows(
            f"SELECT {SYMBOL_RETURN} FROM code_symbols s WHERE s.project = %s AND s.path = %s "
            "ORDER BY s.start_line, s.key",
            (project, path),
        )
        return [symbol_from_row(r) for r in rows]

    def find_symbols(self, project: str | None, name: str, limit: int = 10) -> list[SymbolInfo]:
        if limit <= 0:
            return []
        rows = self._store.db.rows(
            f"SELECT {SYMBOL_RETURN} FROM code_symbols s WHERE (%(p)s::text IS NULL OR s.project = %(p)s) "
            "AND (s.qualified_name = %(n)s OR s.name = %(n)s "
            "OR right(s.qualified_name, length(%(n)s) + 1) = '.' || %(n)s) "
            "ORDER BY s.deleted_at IS NOT NULL, s.key LIMIT %(limit)s",
            {"p": project, "n": name, "limit": limit},
        )
        return [symbol_from_row(r) for r in rows]

    def unique_symbols(self, project: str, names: Collection[str]) -> dict[str, SymbolInfo]:
        if not names:
            return {}
        rows = self._store.db.rows(
            f"SELECT {SYMBOL_RETURN} FROM code_symbols s WHERE s.project = %(p)s AND s.deleted_at IS NULL "
            "AND s.name = ANY(%(names)s) AND s.name IN (SELECT name FROM code_symbols "
            "WHERE project = %(p)s AND deleted_at IS NULL AND name = ANY(%(names)s) "
            "GROUP BY name HAVING count(*) = 1)",
            {"p": project, "names": list(names)},
        )
        return {r[3]: symbol_from_row(r) for r in rows}

    def symbols(self, keys: Collection[str]) -> dict[str, SymbolInfo]:
        if not keys:
            return {}
        rows = self._store.db.rows(
            f"SELECT {SYMBOL_RETURN} FROM code_symbols s WHERE s.key = ANY(%s)", (list(keys),)
        )
        return {r[0]: symbol_from_row(r) for r in rows}

    def calls(
        self, keys: Collection[str], *, incoming: bool, limit: int
    ) -> list[tuple[SymbolInfo, str, str]]:
        if not keys or limit <= 0:
            return []
        given, other = ("target", "source") if incoming else ("source", "target")
        rows = self._store.db.rows(
            f"SELECT {SYMBOL_RETURN}, e.{given}, e.confidence FROM code_edges e "
            f"JOIN code_symbols s ON s.key = e.{other} WHERE e.kind = 'calls' AND e.{given} = ANY(%s) "
            "ORDER BY e.source, e.target LIMIT %s",
            (list(keys), limit),
        )
        return [call_from_row(r) for r in rows]

    def imports(self, project: str, path: str, *, incoming: bool, limit: int) -> list[str]:
        if limit <= 0:
            return []
        key = file_key(project, path)
        if incoming:
            rows = self._store.db.rows(
                "SELECT f.path FROM code_edges e JOIN code_files f ON f.key = e.source "
                "WHERE e.kind = 'imports' AND e.target = %s ORDER BY f.path LIMIT %s",
                (key, limit),
            )
        else:
            rows = self._store.db.rows(
                "SELECT coalesce(f.path, n.name) FROM code_edges e JOIN entities n ON n.key = e.target "
                "LEFT JOIN code_files f ON f.key = e.target WHERE e.kind = 'imports' AND e.source = %s "
                "ORDER BY f.key IS NULL, e.target LIMIT %s",
                (key, limit),
            )
        return [str(r[0]) for r in rows]

    def co_changes(self, project: str, path: str, limit: int) -> list[tuple[str, int]]:
        if limit <= 0:
            return []
        rows = self._store.db.rows(
            "SELECT f.path, c.count FROM co_changes c JOIN code_files f "
            "ON f.key = CASE WHEN c.a = %(k)s THEN c.b ELSE c.a END "
            "WHERE (c.a = %(k)s OR c.b = %(k)s) AND f.deleted_at IS NULL "
            "ORDER BY c.count DESC, f.path LIMIT %(limit)s",
            {"k": file_key(project, path), "limit": limit},
        )
        return [(str(r[0]), int(r[1])) for r in rows]

    def deleted_files(self, keys: Collection[str]) -> dict[str, datetime]:
        if not keys:
            return {}
        rows = self._store.db.rows(
            "SELECT key, deleted_at FROM code_files WHERE key = ANY(%s) AND deleted_at IS NOT NULL",
            (list(keys),),
        )
        return {r[0]: at for r in rows if (at := utc(r[1])) is not None}

    def code_links(self, limit: int) -> list[tuple[str, Entity]]:
        if limit <= 0:
            return []
        rows = self._store.db.rows(
            "(SELECT a.memory_id, s.key, s.qualified_name, s.project, 0 AS kind FROM about a "
            "JOIN code_symbols s ON s.key = a.entity_key) UNION ALL "
            "(SELECT a.memory_id, f.key, f.path, f.project, 1 FROM about a "
            "JOIN code_files f ON f.key = a.entity_key WHERE f.deleted_at IS NOT NULL) "
            "ORDER BY 5, 2, 1 LIMIT %s",
            (limit,),
        )
        kinds = (EntityKind.SYMBOL, EntityKind.FILE)
        return [(str(r[0]), Entity(r[1], kinds[r[4]], r[2] or "", r[3])) for r in rows]

    def scanned_head(self, project: str) -> str | None:
        return ScanMarks(self._store, project).head()

    def scan_interrupted(self, project: str) -> bool:
        """True when the last pass stopped before its edges were stored: redo every file."""
        return ScanMarks(self._store, project).interrupted()

    # -- writing ----------------------------------------------------------------

    def save(self, scan: CodeScan) -> dict[str, int]:
        """Store a pass, in one transaction: symbols, files and modules, then every edge of the
        project. The memories about a moved symbol or file move to its new key (``scan.moves``)."""
        store, project, at = self._store, scan.project, utc(scan.at)
        assert at is not None
        touched = sorted(set(scan.changed) | set(scan.removed))
        carried: dict[str, int] = {}
        with store.transaction():
            found = {
                r[0]: (*r[1:_BODY_CHANGED_AT], utc(r[_BODY_CHANGED_AT]), utc(r[_BODY_CHANGED_AT + 1]))
                for r in store.db.rows(
                    f"SELECT {SYMBOL_RETURN} FROM code_symbols s WHERE s.project = %s AND s.path = ANY(%s)",
                    (project, touched),
                )
            }
            remembered = store.remembered(list(found))  # anyone's memories: see remembered
            change = symbol_changes(scan, found, remembered, at)
            store.db.run("DELETE FROM entities WHERE key = ANY(%s)", (change.removed,))  # details, edges
            store.db.run("UPDATE code_symbols SET deleted_at = %s WHERE key = ANY(%s)", (at, change.kept))
            ScanMarks(store, project).started()
            # Those whose every column is the same are not written again (nor their entities)
            rows = sorted(change.rows.values(), key=lambda row: str(row["key"]))
            store.db.many(
                _INSERT_ENTITY,
                [
                    {
                        "key": r["key"],
                        "kind": EntityKind.SYMBOL.value,
                        "name": r["name"],
                        "project": project,
                        "title": r["title"],
                    }
                    for r in rows
                ],
            )
            store.db.many(_INSERT_SYMBOL, rows)
            for key in sorted(change.followed):
                if key in remembered:
                    carried[key] = len(store.move_about(EntityKind.SYMBOL, key, change.followed[key]))
            # every memory's links moved (another person's too: graphmem_move_about); any left
            # keep the old key, marked deleted
            hidden = store.remembered([key for key in change.followed if key in remembered])
            store.db.run("UPDATE code_symbols SET deleted_at = %s WHERE key = ANY(%s)", (at, sorted(hidden)))
            store.db.run(
                "DELETE FROM entities WHERE key = ANY(%s)", (sorted(change.followed.keys() - hidden),)
            )
            carried |= self._save_files(scan, at)
            self._replace_edges(scan)
            ScanMarks(store, project).done(scan.head)
        return {key: n for key, n in carried.items() if n}

    def _save_files(self, scan: CodeScan, at: datetime | None) -> dict[str, int]:
        store, project = self._store, scan.project
        files = [
            {
                "key": file_key(project, path),
                "kind": EntityKind.FILE.value,
                "name": path,
                "project": project,
                "title": "",
                "path": path,
                "language": parsed.language,
                "content_hash": state.content_hash,
                "size": state.size,
                "mtime_ns": state.mtime_ns,
                "error_count": parsed.error_count,
                "parsed": parsed_to_json(parsed),
                "scanned_at": at,
            }
            for path, (parsed, state) in sorted(scan.changed.items())
        ]
        store.db.many(_INSERT_ENTITY, files)
        columns = ("project", "path", "language", "content_hash", "size", "mtime_ns", "error_count", "parsed")
        store.db.many(
            f"INSERT INTO code_files (key, {', '.join(columns)}, scanned_at, deleted_at) VALUES (%(key)s, "
            + ", ".join(f"%({c})s" for c in columns)
            + ", %(scanned_at)s, NULL) ON CONFLICT (key) DO UPDATE SET "
            + ", ".join(f"{c} = EXCLUDED.{c}" for c in (*columns, "scanned_at", "deleted_at")),
            files,
        )
        carried: dict[str, int] = {}
        for path in scan.removed:
            moved_to = scan.moves.files.get(path)
            if moved_to in scan.changed:  # renamed: its memories are about the new path now
                key = file_key(project, path)
                carried[key] = len(store.move_about(EntityKind.FILE, key, file_key(project, moved_to)))
        if scan.removed:
            self._remove_files(sorted(file_key(project, path) for path in scan.removed), at)
        store.db.many(  # one held under another name or project (an edited import's) is taken over
            "INSERT INTO entities (key, kind, name, project, title) VALUES (%(key)s, %(kind)s, %(name)s, "
            "%(project)s, '') ON CONFLICT (key) DO UPDATE SET name = EXCLUDED.name, "
            "project = EXCLUDED.project, owner = NULL "
            "WHERE (entities.name, entities.project, entities.owner) "
            "IS DISTINCT FROM (EXCLUDED.name, EXCLUDED.project, NULL)",
            [
                {"key": key, "kind": EntityKind.EXTERNAL_MODULE.value, "name": m, "project": project}
                for key, m in pass_modules(scan).items()
            ],
        )
        return carried

    def _remove_files(self, keys: list[str], at: datetime | None) -> None:
        """Files that left the code: kept, marked deleted, while any memory is about them (anyone's:
        row-level security hides another person's from ``move_about``), else removed."""
        store = self._store
        kept = store.remembered(keys)
        store.db.run(
            "UPDATE code_files SET deleted_at = %s, content_hash = NULL, parsed = NULL WHERE key = ANY(%s)",
            (at, sorted(kept)),
        )
        edges = {"k": sorted(kept)}  # a deleted file keeps no edge
        store.db.run("DELETE FROM code_edges WHERE source = ANY(%(k)s) OR target = ANY(%(k)s)", edges)
        store.db.run("DELETE FROM co_changes WHERE a = ANY(%(k)s) OR b = ANY(%(k)s)", edges)
        store.db.run(
            "DELETE FROM entities WHERE key = ANY(%s) AND kind = %s",
            ([k for k in keys if k not in kept], EntityKind.FILE.value),
        )

    def _replace_edges(self, scan: CodeScan) -> None:
        store, project = self._store, scan.project
        store.db.run("DELETE FROM code_edges WHERE project = %s", (project,))
        unique = {
            (rel.lower(), a, b): confidence
            for (rel, _, _), pairs in pass_edges(scan).items()
            for (a, b), confidence in pairs.items()
        }
        store.db.many(
            "INSERT INTO code_edges (kind, source, target, project, confidence) "
            "SELECT %(kind)s, a.key, b.key, %(p)s, %(c)s FROM entities a, entities b "
            "WHERE a.key = %(a)s AND b.key = %(b)s ON CONFLICT DO NOTHING",
            [{"kind": k, "a": a, "b": b, "p": project, "c": c} for (k, a, b), c in sorted(unique.items())],
        )

    def touch(self, project: str, states: Sequence[FileState]) -> None:
        """Files whose content is unchanged but whose mtime moved: remember the new mtime."""
        self._store.db.many(
            "UPDATE code_files SET mtime_ns = %(m)s WHERE key = %(k)s",
            [{"k": file_key(project, s.path), "m": s.mtime_ns} for s in states],
        )

    def replace_co_changes(self, project: str, pairs: dict[tuple[str, str], int]) -> None:
        store = self._store
        with store.transaction():
            store.db.run("DELETE FROM co_changes WHERE project = %s", (project,))
            live = set(self.file_states(project))
            store.db.many(
                "INSERT INTO co_changes (a, b, project, count) VALUES (%(a)s, %(b)s, %(p)s, %(n)s) "
                "ON CONFLICT (a, b) DO UPDATE SET count = EXCLUDED.count",
                [
                    {"a": file_key(project, a), "b": file_key(project, b), "p": project, "n": n}
                    for (a, b), n in sorted(pairs.items())
                    if a in live and b in live
                ],
            )

    def remove_unused_modules(self, project: str) -> int:
        """Remove ``project``'s external modules that no file imports and no memory is about,
        anyone's (``remembered``: row-level security hides another person's); how many went."""
        store = self._store
        with store.transaction():
            candidates = [
                str(r[0])
                for r in store.db.rows(
                    "SELECT e.key FROM entities e WHERE e.kind = %s AND e.project = %s AND NOT EXISTS "
                    "(SELECT FROM code_edges c WHERE c.kind = 'imports' AND c.target = e.key) "
                    "ORDER BY e.key",
                    (EntityKind.EXTERNAL_MODULE.value, project),
                )
            ]
            unused = sorted(set(candidates) - store.remembered(candidates))  # locks them: see remembered
            store.db.run(
                "DELETE FROM entities WHERE key = ANY(%s) AND kind = %s",
                (unused, EntityKind.EXTERNAL_MODULE.value),
            )
        return len(unused)
