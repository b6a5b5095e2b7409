"""The code graph in Kùzu: files, symbols, and the edges between them.

Writes are bulk: new nodes and every edge go in with ``COPY`` from Arrow tables, one
statement per table, never one per row, unless they are few (``kuzu_code_inserts.py``).
Symbols that memories are about are never deleted: when their code disappears they keep a
``deleted_at``, and when their body changes they get a new ``body_changed_at`` (what makes a
memory "possibly stale"; None while the body is the one the first pass saw). What a pass does
to each symbol is decided in ``core.codegraph.symbol_changes``, as for every store. A symbol
it finds again with every column as stored is left alone, not deleted and copied again: what
points at it stays, as a merge request's ``CHANGES`` link; a changed one that a memory or a
merge request points at is updated in place, any other deleted and copied again.
A symbol or file the store holds under a key the pass stores, but that no pass stored (no
``path``: an imported memory's, a file a merge request changed, named before the code was
scanned), is taken over in place, never copied over (its key would collide): the pass sets
every column, and the memories and merge requests pointing at it stay, as the PostgreSQL and
in-memory code graphs keep an entity's links when its code arrives; an external module the
store holds under another name or project (an edited import's) likewise.
A pass reads what it holds of the symbols of its files as Arrow columns, and which of them a
memory or a merge request points at by those links alone (``_stored_symbols``, ``_pointed_at``).
A pass stores symbols and edges first and the files' content hashes last, so an
interrupted pass is simply done again by the next one; a pass that only adds (a project's first
scan) writes it all in one transaction, which Kùzu checkpoints once rather than after each
``COPY`` (``TOGETHER_MAX_SYMBOLS``). Reads of many symbols or files join
them with the tables or look each up as the tables' sizes say (``kuzu_keyed.py``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from datetime import datetime
from typing import Any

from graphmem.adapters.code_scan_marks import ScanMarks
from graphmem.adapters.kuzu_code_inserts import FILE_TYPES, SYMBOL_TYPES, insert_edges, insert_nodes
from graphmem.adapters.kuzu_connection import FEW_EDGE_KEYS, FEW_NODE_KEYS
from graphmem.adapters.kuzu_keyed import table_sizes
from graphmem.adapters.kuzu_rows import aware, naive_utc
from graphmem.adapters.kuzu_store import KuzuGraphStore
from graphmem.adapters.record_rows import SYMBOL_RETURN, call_from_row, symbol_from_row
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


class KuzuCodeGraph:
    """Code-graph reads and writes over the store's connection."""

    def __init__(self, store: KuzuGraphStore) -> None:
        self._store = store
        self._sizes = table_sizes(store.db)

    # -- reading ----------------------------------------------------------------

    def file_states(self, project: str) -> dict[str, FileState]:
        rows = self._store.db.rows(
            "MATCH (f:File) WHERE f.project = $p AND f.content_hash IS NOT NULL AND f.deleted_at IS NULL "
            "RETURN f.path, f.content_hash, f.size, f.mtime_ns",
            {"p": project},
        )
        parsed = self._store.parses.paths(project) if rows else set()
        # A file without its parse (the parse store deleted) is not scanned: parsed again
        return {r[0]: FileState(r[0], r[1], int(r[2] or 0), int(r[3] or 0)) for r in rows if r[0] in parsed}

    def projects(self) -> set[str]:
        live = "MATCH (f:File) WHERE f.content_hash IS NOT NULL AND f.deleted_at IS NULL"
        return {str(r[0]) for r in self._store.db.rows(f"{live} RETURN DISTINCT f.project")}

    def load_parsed(self, project: str, paths: Collection[str] | None = None) -> dict[str, ParsedFile]:
        return {
            path: parsed_from_json(text) for path, text in self._store.parses.load(project, paths).items()
        }

    def symbols_in(self, project: str, path: str) -> list[SymbolInfo]:
        rows = self._store.db.rows(
            f"MATCH (s:Symbol) WHERE s.project = $p AND s.path = $path RETURN {SYMBOL_RETURN} "
            "ORDER BY s.start_line",
            {"p": project, "path": path},
        )
        return [symbol_from_row(r) for r in rows]

    def find_symbols(self, project: str | None, name: str, limit: int = 10) -> list[SymbolInfo]:
        """Symbols whose qualified name is ``name`` or ends with ``.name``."""
        # A symbol only an entity named (an import, before a pass) has no path: it is no code.
        where = (
            "s.path IS NOT NULL AND "
            "(s.qualified_name = $n OR s.name = $n OR s.qualified_name ENDS WITH $dotted)"
        )
        params: dict[str, Any] = {"n": name, "dotted": f".{name}", "limit": limit}
        if project is not None:
            where += " AND s.project = $p"
            params["p"] = project
        rows = self._store.db.rows(
            f"MATCH (s:Symbol) WHERE {where} RETURN {SYMBOL_RETURN} ORDER BY s.deleted_at IS NOT NULL, s.key "
            "LIMIT $limit",
            params,
        )
        return [symbol_from_row(r) for r in rows]

    def unique_symbols(self, project: str, names: Collection[str]) -> dict[str, SymbolInfo]:
        """name -> the one live symbol of ``project`` with that simple name (names shared by
        several live symbols, or by none, are left out)."""
        if not names:
            return {}
        # UNWIND joins the names on equality (5,000 names: 59 ms); ``s.name IN $names``
        # compared every symbol with every name (1.5 s).
        rows = self._store.db.rows(
            "UNWIND $names AS wanted MATCH (s:Symbol) "
            "WHERE s.name = wanted AND s.project = $p AND s.deleted_at IS NULL AND s.path IS NOT NULL "
            "WITH s.name AS n, count(*) AS c, min(s.key) AS k WHERE c = 1 RETURN n, k",
            {"p": project, "names": sorted(set(names))},
        )
        found = self.symbols([k for _, k in rows])
        return {n: found[k] for n, k in rows if k in found}

    def symbols(self, keys: Collection[str]) -> dict[str, SymbolInfo]:
        if not keys:
            return {}
        rows = self._store.db.keyed_rows(
            f"MATCH (s:Symbol {{key: $key}}) WHERE s.path IS NOT NULL RETURN {SYMBOL_RETURN}",
            keys,
            few=self._sizes.few_keys(["Symbol"], FEW_NODE_KEYS),
        )
        return {r[0]: symbol_from_row(r) for r in rows}

    def calls(
        self, keys: Collection[str], *, incoming: bool, limit: int
    ) -> list[tuple[SymbolInfo, str, str]]:
        """(the other symbol, the given symbol's key, confidence) for calls into or out of ``keys``."""
        if not keys:
            return []
        pattern = (
            "(s:Symbol)-[c:CALLS]->(t:Symbol {key: $key})"
            if incoming
            else "(s:Symbol)<-[c:CALLS]-(t:Symbol {key: $key})"
        )
        rows = self._store.db.keyed_rows(
            f"MATCH {pattern} RETURN {SYMBOL_RETURN}, t.key, c.confidence LIMIT $limit",
            keys,
            {"limit": limit},
            few=self._sizes.few_keys(["Symbol"], FEW_EDGE_KEYS),
        )
        return [call_from_row(r) for r in rows[:limit]]

    def imports(self, project: str, path: str, *, incoming: bool, limit: int) -> list[str]:
        key = file_key(project, path)
        if incoming:
            query = "MATCH (a:File)-[:IMPORTS]->(b:File {key: $k}) RETURN a.path ORDER BY a.path LIMIT $limit"
        else:
            query = (
                "MATCH (b)<-[:IMPORTS]-(a:File {key: $k}) RETURN coalesce(b.path, b.name) "
                "ORDER BY label(b) DESC, b.key LIMIT $limit"
            )
        return [r[0] for r in self._store.db.rows(query, {"k": key, "limit": limit})]

    def co_changes(self, project: str, path: str, limit: int) -> list[tuple[str, int]]:
        rows = self._store.db.rows(
            "MATCH (b:File)-[c:CO_CHANGES]-(a:File {key: $k}) WHERE b.deleted_at IS NULL "
            "RETURN b.path, c.count ORDER BY c.count DESC, b.path LIMIT $limit",
            {"k": file_key(project, path), "limit": limit},
        )
        return [(r[0], int(r[1])) for r in rows]

    def deleted_files(self, keys: Collection[str]) -> dict[str, datetime]:
        if not keys:
            return {}
        rows = self._store.db.keyed_rows(
            "MATCH (f:File {key: $key}) WHERE f.deleted_at IS NOT NULL RETURN f.key, f.deleted_at",
            keys,
            few=self._sizes.few_keys(["File"], FEW_NODE_KEYS),
        )
        return {r[0]: at for r in rows if (at := aware(r[1])) is not None}

    def code_links(self, limit: int) -> list[tuple[str, Entity]]:
        symbols = self._store.db.rows(
            "MATCH (m:Memory)-[:ABOUT]->(s:Symbol) WHERE s.path IS NOT NULL "
            "RETURN m.id, s.key, s.qualified_name, s.project LIMIT $limit",
            {"limit": limit},
        )
        files = self._store.db.rows(
            "MATCH (m:Memory)-[:ABOUT]->(f:File) WHERE f.deleted_at IS NOT NULL "
            "RETURN m.id, f.key, f.name, f.project LIMIT $limit",
            {"limit": max(limit - len(symbols), 0)},
        )
        return [(r[0], Entity(r[1], EntityKind.SYMBOL, r[2] or "", r[3])) for r in symbols] + [
            (r[0], Entity(r[1], EntityKind.FILE, r[2] or "", r[3])) for r in files
        ]

    # -- writing ----------------------------------------------------------------

    def save(self, scan: CodeScan) -> dict[str, int]:
        """Store a pass: symbols and nodes, then every edge of the project, then the file hashes.
        The memories about a moved symbol or file move to its new key (``scan.moves``)."""
        store, project = self._store, scan.project
        at = naive_utc(scan.at)
        assert at is not None
        touched = sorted(set(scan.changed) | set(scan.removed))
        carried: dict[str, int] = {}
        with (
            store.db.lock,
            ThreadPoolExecutor(1, thread_name_prefix="graphmem-parses") as beside,
            ExitStack() as together,
        ):
            # The parses are written beside the symbols (zstd and SQLite, like Kùzu, let go of
            # the interpreter), before the file hashes that say a file was scanned (_save_files).
            parses = beside.submit(
                store.parses.replace,
                project,
                scan.removed,
                ((path, parsed_to_json(parsed)) for path, (parsed, _) in scan.changed.items()),
            )
            stored = self._stored_symbols(project, touched)
            ScanMarks(store, project).started()  # committed first: a pass that fails reads as interrupted
            new_symbols = sum(len(parsed.definitions) for parsed, _ in scan.changed.values())
            if not stored and new_symbols <= TOGETHER_MAX_SYMBOLS:  # a pass that only adds: one commit
                together.enter_context(store.transaction())
            # Joined on the path, as unique_symbols joins names (Kùzu cannot UNWIND [])
            in_touched = "UNWIND $paths AS wanted MATCH (s:Symbol) WHERE s.path = wanted AND s.project = $p "
            linked = self._pointed_at(project, touched, "(:Memory)-[:ABOUT]->") if stored else set()
            change = symbol_changes(scan, stored, linked, at)
            # What points at a symbol besides the code's own edges (stored again below): a changed
            # symbol is updated in place, so its merge requests' links stay too; any other changed
            # one is deleted and copied again.
            pointed = linked | (
                self._pointed_at(project, touched, "(:MergeRequest)-[:CHANGES]->") if stored else set()
            )
            removed = set(change.removed)
            gone = [key for key in stored if key in removed or (key in change.rows and key not in pointed)]
            # Many symbols to delete: every edge first (all copied again below), as a symbol
            # without them is deleted for a third less (48,000 symbols: 1.1 s of CPU against 2.6
            # s with theirs); else only the edges that changed are, at the end (``_store_edges``).
            cleared = len(gone) > EDGES_AGAIN_OVER
            if cleared:
                self._delete_edges(project)
            if gone and len(gone) == len(stored):  # every one: in one statement joined on the paths
                store.db.run(f"{in_touched} DETACH DELETE s", {"p": project, "paths": touched})
            elif gone:
                store.db.keyed_rows(
                    "MATCH (s:Symbol {key: $key}) DETACH DELETE s",
                    gone,
                    few=self._sizes.few_keys(["Symbol"], FEW_NODE_KEYS),
                )
            # memories point at these: update in place, or mark deleted; its memories move to
            # a followed symbol's new key, below
            kept = sorted(change.kept)
            store.db.keyed_rows("MATCH (s:Symbol {key: $key}) SET s.deleted_at = $at", kept, {"at": at})
            self._update_symbols([change.rows[k] for k in sorted(pointed & change.rows.keys())])
            # New to the pass, yet held: an entity only, which no pass gave a path (an import's).
            # The column scanned: 1 ms at 50,000 symbols, where a lookup of each new key took 70.
            fresh = change.rows.keys() - stored.keys()
            held = (
                {r[0] for r in store.db.rows("MATCH (s:Symbol) WHERE s.path IS NULL RETURN s.key")} & fresh
                if fresh
                else set()
            )
            self._take_over_symbols([change.rows[k] for k in sorted(held)])
            copied = [row for key, row in change.rows.items() if key not in pointed and key not in held]
            insert_nodes(store.db, "Symbol", copied, SYMBOL_TYPES)
            for key in sorted(linked & change.followed.keys()):
                carried[key] = len(store.move_about(EntityKind.SYMBOL, key, change.followed[key]))
                store.db.run("MATCH (s:Symbol {key: $k}) DETACH DELETE s", {"k": key})
            carried |= self._save_files(scan, at, parses)
            self._store_edges(scan, cleared=cleared)
            ScanMarks(store, project).done(scan.head)
            self._sizes.forget()  # the pass changed the tables' sizes: reads choose by the new ones
        return {key: n for key, n in carried.items() if n}

    def _stored_symbols(self, project: str, paths: list[str]) -> dict[str, tuple[Any, ...]]:
        """key -> the stored columns (``SYMBOL_COLUMNS``) of ``project``'s symbols in ``paths``.
        Read as Arrow columns, without asking of each whether a memory or a merge request points
        at it (``_pointed_at`` follows those links alone): 48,000 symbols in 0.2-0.3 s of CPU,
        where their rows one by one with those two answers took 0.5-0.6."""
        if not paths:
            return {}
        table = self._store.db.arrow(
            "UNWIND $paths AS wanted MATCH (s:Symbol) WHERE s.path = wanted AND s.project = $p "
            f"RETURN {SYMBOL_RETURN}",
            {"p": project, "paths": paths},
        )
        keys, *columns = (column.to_pylist() for column in table.columns)
        return dict(zip(keys, zip(*columns, strict=True), strict=True))

    def _pointed_at(self, project: str, paths: list[str], pattern: str) -> set[str]:
        """The keys of ``project``'s symbols in ``paths`` that ``pattern`` (a path into the
        symbol: a memory's ``ABOUT``, a merge request's ``CHANGES``) points at."""
        rows = self._store.db.rows(
            f"UNWIND $paths AS wanted MATCH {pattern}(s:Symbol) WHERE s.path = wanted AND s.project = $p "
            "RETURN DISTINCT s.key",
            {"p": project, "paths": paths},
        )
        return {r[0] for r in rows}

    def scanned_head(self, project: str) -> str | None:
        return ScanMarks(self._store, project).head()

    def scan_interrupted(self, project: str) -> bool:
        """True when the last pass stopped before its edges were stored: redo every file."""
        return ScanMarks(self._store, project).interrupted()

    def _save_files(self, scan: CodeScan, at: datetime, parses: Future[None]) -> dict[str, int]:
        store, project = self._store, scan.project
        parses.result()  # stored first: the content hashes below are what says a file was scanned
        keys = [file_key(project, path) for path in scan.changed]
        # key -> path of the files held; no path: no pass stored it (an import's, a merge request's)
        existing = {
            r[0]: r[1] for r in store.db.keyed_rows("MATCH (f:File {key: $key}) RETURN f.key, f.path", keys)
        }
        rows, updated = [], []
        for path, (parsed, state) in scan.changed.items():
            key = file_key(project, path)
            row = {
                "content_hash": state.content_hash,
                "size": state.size,
                "mtime_ns": state.mtime_ns,
                "scanned_at": at,
                "key": key,
                "name": path,
                "project": project,
                "path": path,
                "language": parsed.language,
                "error_count": parsed.error_count,
                "deleted_at": None,
            }
            if key in existing:
                updated.append(row)
            else:
                rows.append({**row, "title": ""})
        taken = [
            {"key": r["key"], "name": r["name"], "project": r["project"], "path": r["path"]}
            for r in updated
            if existing[r["key"]] is None
        ]
        for chunk in _chunks(taken):  # an entity only until now: the pass's name, path and title
            store.db.run(
                "UNWIND $rows AS r MATCH (f:File {key: r.key}) SET f.name = r.name, f.project = r.project, "
                "f.path = r.path, f.title = ''",
                {"rows": chunk},
            )
        for chunk in _chunks(updated):  # its key names the file: its name and path stay
            store.db.run(
                "UNWIND $rows AS r MATCH (f:File {key: r.key}) SET f.content_hash = r.content_hash, "
                "f.size = r.size, f.mtime_ns = r.mtime_ns, f.scanned_at = r.scanned_at, "
                "f.language = r.language, f.error_count = r.error_count, f.deleted_at = NULL",
                {"rows": chunk},
            )
        insert_nodes(store.db, "File", rows, FILE_TYPES)
        carried: dict[str, int] = {}
        for path in scan.removed:
            key = file_key(project, path)
            moved_to = scan.moves.files.get(path)
            if moved_to in scan.changed:  # renamed: its memories are about the new path now
                carried[key] = len(store.move_about(EntityKind.FILE, key, file_key(project, moved_to)))
            remembered = store.db.rows(
                "MATCH (f:File {key: $k}) RETURN EXISTS { MATCH (:Memory)-[:ABOUT]->(f) }", {"k": key}
            )
            if remembered and remembered[0][0]:
                store.db.run(
                    "MATCH (f:File {key: $k}) SET f.deleted_at = $at, f.content_hash = NULL",
                    {"k": key, "at": at},
                )
            else:
                store.db.run("MATCH (f:File {key: $k}) DETACH DELETE f", {"k": key})
        modules: list[dict[str, Any]] = [
            {"key": key, "name": m, "project": project, "title": ""} for key, m in pass_modules(scan).items()
        ]
        # By key, as files: one the store holds with another name or project (an import's) is
        # taken over, never copied over
        held = {
            r[0]: (r[1], r[2])
            for r in store.db.keyed_rows(
                "MATCH (e:ExternalModule {key: $key}) RETURN e.key, e.name, e.project",
                [m["key"] for m in modules],
            )
        }
        taken = [m for m in modules if held.get(m["key"], (m["name"], project)) != (m["name"], project)]
        for chunk in _chunks(taken):
            store.db.run(
                "UNWIND $rows AS r MATCH (e:ExternalModule {key: r.key}) "
                "SET e.name = r.name, e.project = r.project",
                {"rows": chunk},
            )
        insert_nodes(store.db, "ExternalModule", [m for m in modules if m["key"] not in held], {})
        return carried

    def _take_over_symbols(self, rows: list[dict[str, Any]]) -> None:
        """Symbols the store holds that no pass stored (an entity only: a key, a name, a title
        and the memories about it, as an import leaves them), found by this pass (``rows`` as
        ``save`` builds them): every column set in place, so what points at them stays."""
        for chunk in _chunks(rows):
            self._store.db.run(
                "UNWIND $rows AS r MATCH (s:Symbol {key: r.key}) SET s.name = r.name, "
                "s.project = r.project, s.path = r.path, s.qualified_name = r.qualified_name",
                {"rows": [{k: row[k] for k in _SYMBOL_NAMES} for row in chunk]},
            )
        self._update_symbols(rows)

    def _update_symbols(self, rows: list[dict[str, Any]]) -> None:
        """Update symbols that memories are about, found again by a pass (``rows`` as ``save``
        builds them). Its texts are set only where they changed: Kùzu 0.11 updating long
        strings in place fills its pool and can corrupt the column (``kuzu_schema.FILE_PARSE``),
        and a pass that only moved lines (a line added above) leaves them as they were."""
        store = self._store
        texts = {
            r[0]: (r[1], r[2], r[3])
            for r in store.db.keyed_rows(
                "MATCH (s:Symbol {key: $key}) RETURN s.key, s.title, s.signature, s.docstring",
                [row["key"] for row in rows],
            )
        }
        for chunk in _chunks(rows):  # its key names the symbol: its name, path and project stay
            store.db.run(
                "UNWIND $rows AS r MATCH (s:Symbol {key: r.key}) SET s.kind = r.kind, "
                "s.start_line = r.start_line, s.end_line = r.end_line, s.body_hash = r.body_hash, "
                "s.body_changed_at = CAST(r.body_changed_at AS TIMESTAMP), s.deleted_at = NULL",
                {"rows": [{k: row[k] for k in _SYMBOL_PLACE} for row in chunk]},
            )
        rewritten = [
            {
                "key": row["key"],
                "title": row["title"],
                "signature": row["signature"],
                "docstring": row["docstring"],
            }
            for row in rows
            if texts.get(row["key"]) != (row["title"], row["signature"], row["docstring"])
        ]
        for chunk in _chunks(rewritten):
            store.db.run(
                "UNWIND $rows AS r MATCH (s:Symbol {key: r.key}) SET s.title = r.title, "
                "s.signature = r.signature, s.docstring = CAST(r.docstring AS STRING)",
                {"rows": chunk},
            )

    def _delete_edges(self, project: str) -> None:
        """Every code edge of ``project`` (a pass then stores them all again, ``_store_edges``)."""
        for pattern in (
            "(a:File)-[r:CONTAINS]->(:Symbol)",
            "(a:Symbol)-[r:CONTAINS]->(:Symbol)",
            "(a:Symbol)-[r:CALLS]->(:Symbol)",
            "(a:Symbol)-[r:INHERITS]->(:Symbol)",
            "(a:File)-[r:IMPORTS]->()",
        ):
            self._store.db.run(f"MATCH {pattern} WHERE a.project = $p DELETE r", {"p": project})

    def _store_edges(self, scan: CodeScan, *, cleared: bool) -> None:
        """Store the pass's edges, every one of the project: those the store lacks copied, those
        it holds that the pass did not find deleted (all copied when ``cleared``: none are left).
        An all-changed re-scan whose code resolves as before so deletes and copies none."""
        store, project = self._store, scan.project
        for (rel, source, target), pairs in pass_edges(scan).items():
            held: dict[tuple[str, str], str | None] = {}
            if not cleared:
                columns = "a.key, b.key" + (", r.confidence" if rel == "CALLS" else "")
                table = store.db.arrow(
                    f"MATCH (a:{source})-[r:{rel}]->(b:{target}) WHERE a.project = $p RETURN {columns}",
                    {"p": project},
                )
                if table.num_rows:
                    found = [column.to_pylist() for column in table.columns]
                    values = found[2] if rel == "CALLS" else [None] * table.num_rows
                    held = dict(zip(zip(found[0], found[1], strict=True), values, strict=True))
            stale = [{"a": a, "b": b} for (a, b), value in held.items() if pairs.get((a, b), ...) != value]
            for start in range(0, len(stale), UPDATE_CHUNK):
                store.db.run(
                    f"UNWIND $rows AS e MATCH (a:{source} {{key: e.a}})-[r:{rel}]->(b:{target} {{key: e.b}}) "
                    "DELETE r",
                    {"rows": stale[start : start + UPDATE_CHUNK]},
                )
            # Nothing held (a first scan, or every edge deleted): every pair is new, none copied over
            fresh = pairs
            if held:
                fresh = {pair: value for pair, value in pairs.items() if held.get(pair, ...) != value}
            extra = {"confidence": list(fresh.values())} if rel == "CALLS" else None
            insert_edges(store.db, rel, source, target, list(fresh), extra)

    def touch(self, project: str, states: Sequence[FileState]) -> None:
        """Files whose content is unchanged but whose mtime moved: remember the new mtime."""
        for state in states:
            self._store.db.run(
                "MATCH (f:File {key: $k}) SET f.mtime_ns = $m",
                {"k": file_key(project, state.path), "m": state.mtime_ns},
            )

    def replace_co_changes(self, project: str, pairs: dict[tuple[str, str], int]) -> None:
        store = self._store
        with store.db.lock:
            query = "MATCH (a:File)-[r:CO_CHANGES]->(:File) WHERE a.project = $p DELETE r"
            store.db.run(query, {"p": project})
            live = set(self.file_states(project))
            kept = [(a, b, n) for (a, b), n in pairs.items() if a in live and b in live]
            insert_edges(
                store.db,
                "CO_CHANGES",
                "File",
                "File",
                [(file_key(project, a), file_key(project, b)) for a, b, _ in kept],
                {"count": [n for _, _, n in kept]},
            )

    def remove_unused_modules(self, project: str) -> int:
        """Remove ``project``'s external modules that no file imports and no memory is about (a
        renamed project's old graph, once its files went); how many went."""
        store = self._store
        with store.db.lock, store.transaction():
            unused = [
                str(r[0])
                for r in store.db.rows(
                    "MATCH (e:ExternalModule) WHERE e.project = $p "
                    "AND NOT EXISTS { MATCH (:File)-[:IMPORTS]->(e) } "
                    "AND NOT EXISTS { MATCH (:Memory)-[:ABOUT]->(e) } RETURN e.key ORDER BY e.key",
                    {"p": project},
                )
            ]
            store.db.keyed_rows("MATCH (e:ExternalModule {key: $key}) DETACH DELETE e", unused)
        return len(unused)


# What a pass updates of a symbol found again, besides its texts (``_update_symbols``)
_SYMBOL_PLACE = ("key", "kind", "start_line", "end_line", "body_hash", "body_changed_at")
# What a pass sets besides those of a symbol it takes over (``_take_over_symbols``)
_SYMBOL_NAMES = ("key", "name", "project", "path", "qualified_name")
# Rows per ``UNWIND`` update: the pool is watched between statements (``kuzu_connection``)
UPDATE_CHUNK = 500
# Symbols a pass deletes past which it deletes every edge of the project first and copies them
# all again, rather than only those that changed (``_store_edges``)
EDGES_AGAIN_OVER = 2_000
# New symbols up to which a pass that only adds (none of its files' symbols stored: a project's
# first scan) writes in one transaction: Kùzu checkpoints after each ``COPY`` committed on its own
# (seven on the generated repository's first scan, 3,030 files and 48,000 symbols) and once after
# the transaction's commit; one that fails halfway stores none of its code. Its writes held 32 MB
# of the 512 MB pool before the commit; 198,000 symbols with as many calls, 52 MB.
TOGETHER_MAX_SYMBOLS = 200_000


def _chunks(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    return [rows[i : i + UPDATE_CHUNK] for i in range(0, len(rows), UPDATE_CHUNK)]
