"""Kùzu implementation of :class:`graphmem.core.ports.GraphStore`.

Kùzu allows one process per database directory; a second one fails to take the
lock. This adapter translates that (and every other Kùzu error) into graphmem's
errors, keeps the schema versioned, and serialises access from threads. The store
is made of parts: the connection (``kuzu_connection.py``), entities and ABOUT edges
(``kuzu_entities.py``), edges between memories (``kuzu_links.py``); memory records,
their full-text search and vectors are here.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import replace
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

import kuzu
import numpy as np

from graphmem.adapters.data_dir import locked_message, make_private, write_owner
from graphmem.adapters.graph_cache import GraphCache
from graphmem.adapters.kuzu_branches import KuzuBranches
from graphmem.adapters.kuzu_entities import KuzuEntities
from graphmem.adapters.kuzu_events import KuzuHistory
from graphmem.adapters.kuzu_expiry import KuzuExpiry
from graphmem.adapters.kuzu_links import KuzuMemoryLinks
from graphmem.adapters.kuzu_rows import (
    ADD_LINK,
    ADD_LINKS,
    CREATE_MEMORY,
    MEMORY_RETURN,
    memory_from_row,
    memory_params,
    memory_table,
    naive_utc,
    to_db,
    visibility_clause,
)
from graphmem.adapters.kuzu_schema import (
    GITLAB_TEXT_COLUMNS,
    MEMORY_COLUMNS,
    PARSES_OUT_OF_KUZU,
    SCHEMA_VERSION,
    VECTORS_OUT_OF_KUZU,
    create_schema,
    migrate,
)
from graphmem.adapters.kuzu_vectors import VECTOR_LOG, KuzuVectors
from graphmem.adapters.lexical_index import open_lexical_index, rebuild
from graphmem.adapters.parse_store import PARSES_FILE, ParseStore
from graphmem.adapters.vector_log import VectorLog
from graphmem.core.models import Entity, Link, MemoryRecord
from graphmem.core.ports import TextHits, TextMatch, Vector, Visibility
from graphmem.errors import StoreError, StoreLockedError, StoreMismatchError

log = logging.getLogger(__name__)

DB_DIRNAME = "graph.kuzu"
# COPY is much faster than row inserts, but has fixed costs: below this, insert rows.
COPY_MIN_ROWS = 64
# Above this many ids, one query of them all beats separate primary-key lookups.
LOOKUP_MAX_IDS = 200
# Memory records kept in memory after a read (oldest dropped first).
RECORD_CACHE_SIZE = 20_000
# Kùzu's page cache (its default is 80% of the machine's memory, kept once read): the
# serving process stays small, and a bulk COPY spills beyond it to disk.
BUFFER_POOL_BYTES = 512 * 1024 * 1024
# Kùzu writes its log into the database file (a checkpoint) when the log passes this size
# after a commit. A checkpoint needs buffer pool memory for what the log changed: Kùzu's
# own 16 MB needed more than the pool at 100,000 memories, and then every write failed.
# A checkpoint also has a fixed cost (0.35 s at 100,000 memories), so not much smaller.
CHECKPOINT_LOG_BYTES = 4 * 1024 * 1024
# At close the log is written into the database when it is larger than this: the next
# process then need not replay it (time and memory at its start); a smaller one is
# replayed faster than a checkpoint takes.
CLOSE_CHECKPOINT_BYTES = 1024 * 1024
# The pool a left log is replayed and checkpointed with, at open (``_checkpoint_left_log``).
RECOVERY_POOL_BYTES = 2 * 1024 * 1024 * 1024


def _open_database(data_dir: Path, path: Path) -> kuzu.Database:
    try:
        make_private(data_dir)
    except OSError as exc:
        raise StoreError(f"Cannot create the data dir {data_dir}: {exc.strerror}.") from exc
    try:
        if _size(_log_of(path)) > CLOSE_CHECKPOINT_BYTES:
            _checkpoint_left_log(path)
        return kuzu.Database(
            str(path), buffer_pool_size=BUFFER_POOL_BYTES, checkpoint_threshold=CHECKPOINT_LOG_BYTES
        )
    except RuntimeError as exc:
        if "lock" in str(exc).lower():
            raise StoreLockedError(locked_message(data_dir, path)) from exc
        raise StoreError(
            f"Cannot open the graph store at {path}: {exc}. If it was copied "
            "or damaged, restore it from an export (`graphmem import`)."
        ) from exc


def _checkpoint_left_log(path: Path) -> None:
    """Write into the database the log a process left (killed, or unable to checkpoint it),
    with a pool large enough for what it replays: replayed into the usual pool, a log of
    updates could fill it again, and then no checkpoint ever succeeds (a 2.5 MB log of code
    graph updates: 700 MB to replay, its checkpoint failed at 512 MB and took 2.2 s at 1 GB)."""
    log.info("Writing the log the last process left into the graph store at %s.", path)
    db = kuzu.Database(str(path), buffer_pool_size=RECOVERY_POOL_BYTES)  # a lock error goes up
    try:
        conn = kuzu.Connection(db)
        conn.execute("CHECKPOINT")
        conn.close()
    except RuntimeError as exc:  # the store still opens: its log is replayed as before
        log.warning("Could not write the log left behind into the graph store: %s", exc)
    finally:
        db.close()


def _log_of(path: Path) -> Path:
    return path.with_name(f"{path.name}.wal")


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


class KuzuGraphStore(KuzuEntities, KuzuMemoryLinks, KuzuVectors, KuzuHistory, KuzuExpiry, KuzuBranches):
    """A graphmem store in ``<data_dir>/graph.kuzu``."""

    def __init__(self, data_dir: Path, *, dimension: int) -> None:
        self.data_dir = data_dir
        self.path = data_dir / DB_DIRNAME
        self.dimension = dimension
        super().__init__(_open_database(data_dir, self.path))
        self._records: dict[str, MemoryRecord] = {}  # read cache; this process is the only writer
        self._pending: dict[str, None] | None = None  # memories without a vector (kuzu_vectors.py)
        self._hashes: dict[str, set[str]] | None = None
        self._graph = GraphCache(self._load_graph)
        write_owner(data_dir)
        self.parses = ParseStore(data_dir / PARSES_FILE)  # the files' parses (kuzu_code.py)
        self._init_schema()
        self._vectors = VectorLog(data_dir / VECTOR_LOG, dimension)
        self._lexical = open_lexical_index(data_dir, self)  # full-text search (adapters/lexical_index.py)
        self._marked: list[str] = []  # ids marked in the lexical journal by the open transaction

    # -- lifecycle --------------------------------------------------------------

    def _init_schema(self) -> None:
        tables = {row[1] for row in self._rows("CALL show_tables() RETURN *")}
        if "Memory" not in tables:
            for statement in create_schema():
                self._run(statement)
            VectorLog.create(self.data_dir / VECTOR_LOG, self.dimension)  # no vector of another store
            self.set_meta("schema_version", str(SCHEMA_VERSION))
            return
        version = int(self.get_meta("schema_version") or 0)
        if version > SCHEMA_VERSION:
            raise StoreMismatchError(
                f"The store at {self.path} has schema version {version}, newer than this "
                f"graphmem understands ({SCHEMA_VERSION}). Upgrade graphmem."
            )
        if version < SCHEMA_VERSION:  # what the steps need to know, read only when there are steps
            indexes = {row[1] for row in self._rows("CALL SHOW_INDEXES() RETURN *")}
            columns = {
                table: {row[1] for row in self._rows(f"CALL table_info('{table}') RETURN *")}
                for table in ("File", *GITLAB_TEXT_COLUMNS)
            }
            for statement in migrate(version, indexes, columns):
                self._run(statement)
        if version < VECTORS_OUT_OF_KUZU:
            self.copy_vectors_out(self.data_dir / VECTOR_LOG)
        if version < PARSES_OUT_OF_KUZU:
            self._move_parses_out()
        if version < SCHEMA_VERSION:
            self.set_meta("schema_version", str(SCHEMA_VERSION))

    def _move_parses_out(self) -> None:
        """Move ``FileParse``'s rows to the parse store, then drop the table (version 12;
        a move cut short is done again at the next open: the parse store replaces)."""
        if "FileParse" not in {row[1] for row in self._rows("CALL show_tables() RETURN *")}:
            return
        projects = [row[0] for row in self._rows("MATCH (f:FileParse) RETURN DISTINCT f.project")]
        for project in projects:
            rows = self._rows(
                "MATCH (f:FileParse) WHERE f.project = $p RETURN f.path, f.parsed", {"p": project}
            )
            self.parses.replace(project, (), ((path, parsed) for path, parsed in rows))
        self._run("DROP TABLE FileParse")

    def close(self) -> None:
        with self._lock:
            try:
                self._vectors.close()
                if _size(_log_of(self.path)) > CLOSE_CHECKPOINT_BYTES:
                    self._run("CHECKPOINT")
            except (StoreError, OSError) as exc:  # what was acknowledged is in the log already
                log.warning("Closing the graph store: %s", exc)
            finally:
                self.parses.close()
                self._lexical.close()
                self._close_connection()

    # -- transactions (``transaction`` itself is in kuzu_connection.py) ------------

    def _mark(self, ids: Iterable[str], changes: Mapping[str, object] | None = None) -> None:
        """Note ``ids`` in the full-text index's journal before the store changes them."""
        ids = list(ids)
        self._lexical.mark(ids, changes)
        if self._after_commit is not None:
            self._marked.extend(ids)

    def _committed(self) -> None:
        self._marked.clear()

    def _rolled_back(self) -> None:
        self._records.clear()  # may hold records read inside the transaction
        self._hashes = None
        self._pending = None  # may hold ids written inside it
        self._graph = GraphCache(self._load_graph)
        marked, self._marked = self._marked, []
        self._lexical.refresh(marked)  # as the store holds them: unchanged

    # -- memories ---------------------------------------------------------------

    def add_memories(self, records: Sequence[MemoryRecord], vectors: Vector | None = None) -> None:
        if not records:
            return
        few = len(records) < COPY_MIN_ROWS
        with self._lock, self.transaction() if few else nullcontext():
            self._mark(r.id for r in records)
            if few:
                with self._translated():
                    self._insert_rows(records, embedded=vectors is not None)
            else:
                self._bulk("COPY Memory FROM $t", memory_table(records, embedded=vectors is not None))
            ids = [r.id for r in records]
            self._now_pending(ids)
            if vectors is not None:  # once the memories are in (kuzu_vectors.py)
                self._then(partial(self._put_vectors, ids, vectors))
            self._hashes_changed((), ((r.content_hash, r.id) for r in records))
            self._then(partial(self._lexical.add, records))

    def _insert_rows(self, records: Sequence[MemoryRecord], *, embedded: bool = False) -> None:
        for record in records:
            params = memory_params(record)
            params["embedding"] = None  # the vector log holds vectors (kuzu_vectors.py)
            params["embedded"] = embedded  # so the records read back need no change (_as_embedded)
            self._write(CREATE_MEMORY, params)

    def get_memories(self, ids: Collection[str]) -> dict[str, MemoryRecord]:
        if not ids:
            return {}
        with self._lock:
            found = {i: self._records[i] for i in dict.fromkeys(ids) if i in self._records}
            missing = [i for i in dict.fromkeys(ids) if i not in found]
            # Many ids joined on the primary key (20,000 in 0.1 s at 120,000 memories, where
            # ``WHERE m.id IN $ids`` took 1.9 s for 2,000), a few one lookup each.
            query = f"MATCH (m:Memory {{id: $key}}) RETURN {MEMORY_RETURN}"
            for row in self.keyed_rows(query, missing, few=LOOKUP_MAX_IDS):
                record = self._as_embedded(memory_from_row(row))
                found[record.id] = self._records[record.id] = record
            while len(self._records) > RECORD_CACHE_SIZE:
                self._records.pop(next(iter(self._records)))
            return found

    def find_by_hash(self, content_hash: str) -> list[MemoryRecord]:
        with self._lock:
            ids = self._hash_index().get(content_hash, set())
            return list(self.get_memories(sorted(ids)).values())

    def find_by_hashes(self, content_hashes: Collection[str]) -> dict[str, list[MemoryRecord]]:
        with self._lock:
            index = self._hash_index()
            ids = {h: sorted(index[h]) for h in set(content_hashes) if index.get(h)}
            records = self.get_memories([i for group in ids.values() for i in group])
            found = {h: [records[i] for i in group if i in records] for h, group in ids.items()}
            return {h: group for h, group in found.items() if group}

    def _hash_index(self) -> dict[str, set[str]]:
        """content hash → memory ids, loaded once (a column scan), then kept by our own writes."""
        if self._hashes is None:
            hashes: dict[str, set[str]] = defaultdict(set)
            for content_hash, memory_id in self._rows("MATCH (m:Memory) RETURN m.content_hash, m.id"):
                hashes[content_hash].add(memory_id)
            self._hashes = hashes
        return self._hashes

    def _hashes_changed(self, removed: Iterable[tuple[str, str]], added: Iterable[tuple[str, str]]) -> None:
        if self._hashes is None:
            return
        for content_hash, memory_id in removed:
            self._hashes.get(content_hash, set()).discard(memory_id)
        for content_hash, memory_id in added:
            self._hashes.setdefault(content_hash, set()).add(memory_id)

    def update_memory(self, memory_id: str, changes: Mapping[str, object]) -> None:
        unknown = set(changes) - set(MEMORY_COLUMNS)
        if unknown:
            raise ValueError(f"unknown memory fields: {sorted(unknown)}")
        if "text" in changes:
            raise ValueError("change a memory's text with replace_text")
        changes = dict(changes)
        if "embedding" in changes:  # in the vector log (kuzu_vectors.py)
            vector = changes.pop("embedding")
            with self._lock:
                if vector is None:
                    self._drop_vector(memory_id, pending=True)
                else:
                    self.set_embeddings([memory_id], np.asarray([vector], np.float32))
            if not changes:
                return
        sets = ", ".join(f"m.{name} = ${name}" for name in changes)
        params: dict[str, Any] = {name: to_db(value) for name, value in changes.items()}
        params["id"] = memory_id
        with self._lock:
            self._mark([memory_id], changes)
            self._run(f"MATCH (m:Memory {{id: $id}}) SET {sets}", params)
            self._records.pop(memory_id, None)
            self._then(partial(self._lexical.set_fields, memory_id, changes))  # reads the record back

    def replace_text(
        self,
        memory_id: str,
        *,
        text: str,
        content_hash: str,
        updated_at: datetime,
        entities: Sequence[Entity],
    ) -> None:
        """Give a memory new text; its RELATES and NEXT edges stay, its ABOUT edges become ``entities``.

        The node is deleted and created again in one transaction: after an in-place
        update of the full-text-indexed column, Kùzu 0.11.3 fails every later COPY
        into the table (duplicated primary key), even after reopening.
        """
        with self.transaction():
            record = self.get_memories([memory_id]).get(memory_id)
            self._records.pop(memory_id, None)
            self._drop_vector(memory_id, pending=False)  # the old text's; the new text is pending
            if record is None:
                return
            links = self.links([memory_id])
            nexts = [
                (r[0], r[1])
                for r in self._rows(
                    "MATCH (a:Memory)-[:NEXT]->(b:Memory) WHERE a.id = $id OR b.id = $id RETURN a.id, b.id",
                    {"id": memory_id},
                )
            ]
            updated = replace(
                record, text=text, content_hash=content_hash, updated_at=updated_at, embedded=False
            )
            if entities:
                self.upsert_entities(entities)
            self._mark([memory_id])
            self._run("MATCH (m:Memory {id: $id}) DETACH DELETE m", {"id": memory_id})
            self._then(partial(self._graph.memory_removed, memory_id))
            with self._lock, self._translated():
                self._insert_rows([updated])
                self._now_pending([memory_id])
            if links:
                self.add_links(links)
            if nexts:
                self.add_next(nexts)
            if entities:
                self.link_about([(memory_id, entity) for entity in entities])
            self._hashes_changed([(record.content_hash, memory_id)], [(content_hash, memory_id)])
            self._then(partial(self._lexical.add, [updated]))

    def delete_memory(self, memory_id: str) -> None:
        with self._lock:
            record = self.get_memories([memory_id]).get(memory_id)
            self._mark([memory_id])
            self._run("MATCH (m:Memory {id: $id}) DETACH DELETE m", {"id": memory_id})
            self._records.pop(memory_id, None)
            self._drop_vector(memory_id, pending=False)
            if record is not None:
                self._hashes_changed([(record.content_hash, memory_id)], ())
            self._then(partial(self._lexical.remove, [memory_id]))
            self._then(partial(self._graph.memory_removed, memory_id))

    def list_memories(self, visibility: Visibility, *, limit: int, offset: int = 0) -> list[MemoryRecord]:
        where, params = visibility_clause(visibility)
        params.update(limit=limit, offset=offset)
        rows = self._rows(
            f"MATCH (m:Memory) WHERE {where} RETURN {MEMORY_RETURN} "
            "ORDER BY m.created_at DESC, m.id SKIP $offset LIMIT $limit",
            params,
        )
        return [self._as_embedded(memory_from_row(row)) for row in rows]

    def all_memories(self, project: str | None = None) -> Iterable[MemoryRecord]:
        where = "m.project = $p" if project is not None else "true"
        rows = self._rows(
            f"MATCH (m:Memory) WHERE {where} RETURN {MEMORY_RETURN} ORDER BY m.created_at, m.id",
            {"p": project} if project is not None else {},
        )
        return [self._as_embedded(memory_from_row(row)) for row in rows]

    def count_memories(self) -> dict[tuple[str, str, str], int]:
        rows = self._rows("MATCH (m:Memory) RETURN m.category, m.scope, m.status, count(*)")
        return {(row[0], row[1], row[2]): int(row[3]) for row in rows}

    def total_memories(self) -> int:
        # Kùzu answers an unfiltered count from the table's row count (1 ms at 100,000 where
        # the grouped count above read three columns: 20-130 ms).
        return int(self._rows("MATCH (m:Memory) RETURN count(*)")[0][0])

    def last_in_session(self, session: str) -> str | None:
        rows = self._rows(
            "MATCH (m:Memory) WHERE m.session = $s "
            "RETURN m.id ORDER BY m.created_at DESC, m.seq DESC LIMIT 1",
            {"s": session},
        )
        return rows[0][0] if rows else None

    def search_text(  # -- search ----------------------------------------------------
        self, query: str, visibility: Visibility, limit: int, *, phrase: str | None = None
    ) -> TextHits:
        with self._lock:
            return self._lexical.search(query, visibility, limit, phrase)

    def text_matches(self, query: str, visibility: Visibility, limit: int) -> list[TextMatch]:
        with self._lock:
            return self._lexical.matches(query, visibility, limit)

    def rebuild_text_index(self) -> int:  # graphmem reindex: index every memory's text again
        with self._lock:
            return rebuild(self._lexical, self)

    def clear_embeddings(self, dimension: int) -> None:
        super().clear_embeddings(dimension)
        self.rebuild_text_index()  # `graphmem reindex` rebuilds every derived index

    # -- RELATES edges (the other edge methods are in kuzu_links.py) ---------------

    def add_links(self, links: Sequence[Link]) -> None:
        rows = [
            {"s": link.source, "t": link.target, "k": link.kind.value, "c": naive_utc(link.created_at)}
            for link in links
        ]
        many = len(rows) > LOOKUP_MAX_IDS  # UNWIND's MERGE costs ~0.1 s however few; one each ~2 ms
        with self._lock, self._translated():
            for params in [{"rows": rows}] if many else rows:
                self._write(ADD_LINKS if many else ADD_LINK, params)

        def cache() -> None:
            for link in links:
                self._graph.related_added(link.source, link.target, link.kind.value)

        self._then(cache)
