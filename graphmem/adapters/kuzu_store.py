"""Kùzu implementation of :class:`graphmem.core.ports.GraphStore`.

Kùzu allows one process per database directory; a second one fails to take the
lock. This adapter translates that (and every other Kùzu error) into graphmem's
errors, keeps the schema versioned, and serialises access from threads.

The store is composed of parts that each own their state, all given its connection part
(``db``, ``kuzu_connection.py``: the connection, its lock, transactions, errors translated):
entities and ABOUT edges (``kuzu_entities.py``), edges between memories (``kuzu_links.py``),
vectors (``kuzu_vectors.py``), history (``kuzu_events.py``), expiry and
branches (``kuzu_scans.py``). The entity and link parts keep the store's edge cache
(``graph_cache.py``) in step. The memory records, their caches and their full-text index
(``lexical_index.py``) are this module's; the ports of the other parts are delegated to them
(``store_parts.StoreParts``). The code and GitLab graphs run their statements through ``db``.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, Unpack

import kuzu
import numpy as np

from graphmem.adapters.data_dir import locked_message, make_private, write_owner
from graphmem.adapters.graph_cache import GraphCache
from graphmem.adapters.kuzu_connection import KuzuConnection
from graphmem.adapters.kuzu_entities import KuzuEntities
from graphmem.adapters.kuzu_events import KuzuHistory
from graphmem.adapters.kuzu_links import LOOKUP_MAX_IDS, KuzuMemoryLinks
from graphmem.adapters.kuzu_rows import (
    ADD_HASHED,
    CREATE_MEMORY,
    HASH_MEMORY,
    MEMORY_RETURN,
    RECORD_BODIES,
    hash_table,
    hashed_rows,
    memory_from_row,
    memory_params,
    memory_table,
    to_db,
    visibility_clause,
)
from graphmem.adapters.kuzu_scans import KuzuScans
from graphmem.adapters.kuzu_schema import (
    CONTENT_HASHES_IN_KUZU,
    FILL_CONTENT_HASHES,
    GITLAB_TEXT_COLUMNS,
    PARSES_OUT_OF_KUZU,
    SCHEMA_VERSION,
    VECTORS_OUT_OF_KUZU,
    create_schema,
    migrate,
)
from graphmem.adapters.kuzu_vectors import VECTOR_LOG, KuzuVectors, copy_vectors_out
from graphmem.adapters.lexical_index import open_lexical_index, rebuild
from graphmem.adapters.parse_store import PARSES_FILE, ParseStore
from graphmem.adapters.record_rows import check_changes, memory_counts
from graphmem.adapters.store_parts import OnePersonsStore, StoreParts
from graphmem.adapters.vector_log import VectorLog
from graphmem.core.models import MemoryRecord
from graphmem.core.ports import NewText, TextHits, TextMatch, Vector, Visibility
from graphmem.errors import StoreError, StoreLockedError, StoreMismatchError

log = logging.getLogger(__name__)

DB_DIRNAME = "graph.kuzu"
# COPY is much faster than row inserts, but has fixed costs: below this, insert rows.
COPY_MIN_ROWS = 64
# Memories ``all_memories`` reads from Kùzu at once (by their rows' offsets).
ALL_MEMORIES_PAGE = 50_000
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
        if "permission denied" in str(exc).lower():  # the store is whole: it is the access to it
            raise StoreError(
                f"Cannot open the graph store at {path}: {exc}. This user may not read or write "
                f"it: give it back the permissions (`chmod -R u+rwX {data_dir}`, as the user that "
                "owns it), or run graphmem as that user."
            ) from exc
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


class KuzuGraphStore(StoreParts, OnePersonsStore):
    """A graphmem store in ``<data_dir>/graph.kuzu``."""

    def __init__(self, data_dir: Path, *, dimension: int) -> None:
        self.data_dir = data_dir
        self.path = data_dir / DB_DIRNAME
        self.db = KuzuConnection(
            _open_database(data_dir, self.path), committed=self._committed, rolled_back=self._rolled_back
        )
        self._lock = self.db.lock
        self._records: dict[str, MemoryRecord] = {}  # read cache; this process is the only writer
        self._graph = GraphCache(lambda: links.load_edges())  # the edges, kept in memory
        links = KuzuMemoryLinks(self.db, self._graph)
        write_owner(data_dir)
        self.parses = ParseStore(data_dir / PARSES_FILE)  # the files' parses (kuzu_code.py)
        self._init_schema(dimension)
        self.vectors = KuzuVectors(self.db, data_dir / VECTOR_LOG, dimension)
        super().__init__(
            connection=self.db,
            entities=KuzuEntities(self.db, self._graph),
            links=links,
            history=KuzuHistory(self.db),
            scans=KuzuScans(self.db),
            vectors=self.vectors,
        )
        try:
            self._lexical = open_lexical_index(data_dir, self)  # full-text search (adapters/lexical_index.py)
        except BaseException:  # a folder this user may not write, say: the store closed, for another open
            self.vectors.close()
            self.parses.close()
            self.db.close()
            raise
        self._marked: list[str] = []  # ids marked in the lexical journal by the open transaction

    @property
    def dimension(self) -> int:
        return self.vectors.dimension

    # -- lifecycle --------------------------------------------------------------

    def _init_schema(self, dimension: int) -> None:
        if self._stored_version() == str(SCHEMA_VERSION):  # the usual open: nothing to create or migrate
            return
        tables = {row[1] for row in self.db.rows("CALL show_tables() RETURN *")}
        if "Memory" not in tables:
            VectorLog.create(self.data_dir / VECTOR_LOG, dimension)  # no vector of another store
            # One transaction: a process stopped halfway leaves no half schema that the next
            # open would take for a whole one (and a new store opens a fifth sooner: one commit).
            self.db.run_at_once(create_schema(), {"schema_version": str(SCHEMA_VERSION)})
            return
        version = int(self.db.get_meta("schema_version") or 0)
        if version > SCHEMA_VERSION:
            raise StoreMismatchError(
                f"The store at {self.path} has schema version {version}, newer than this "
                f"graphmem understands ({SCHEMA_VERSION}). Upgrade graphmem."
            )
        if version < SCHEMA_VERSION:  # what the steps need to know, read only when there are steps
            indexes = {row[1] for row in self.db.rows("CALL SHOW_INDEXES() RETURN *")}
            columns = {
                table: {row[1] for row in self.db.rows(f"CALL table_info('{table}') RETURN *")}
                for table in ("File", *GITLAB_TEXT_COLUMNS)
            }
            for statement in migrate(version, indexes, columns):
                self.db.run(statement)
        if version < VECTORS_OUT_OF_KUZU:
            copy_vectors_out(self.db, self.data_dir / VECTOR_LOG, dimension)
        if version < PARSES_OUT_OF_KUZU:
            self._move_parses_out()
        if version < CONTENT_HASHES_IN_KUZU:  # again from the start if an open was cut short
            for statement in FILL_CONTENT_HASHES:
                self.db.run(statement)
        if version < SCHEMA_VERSION:
            self.db.set_meta("schema_version", str(SCHEMA_VERSION))

    def _stored_version(self) -> str | None:
        """The store's schema version as stored, None when it has none or no ``Meta`` table (a
        new store: then ``_init_schema`` looks at its tables). Read first, alone: the open of a
        current store asks Kùzu nothing else about its schema (``show_tables``: 0.8 ms of CPU)."""
        try:
            return self.db.get_meta("schema_version")
        except StoreError:  # no Meta table
            return None

    def _move_parses_out(self) -> None:
        """Move ``FileParse``'s rows to the parse store, then drop the table (version 12;
        a move cut short is done again at the next open: the parse store replaces)."""
        if "FileParse" not in {row[1] for row in self.db.rows("CALL show_tables() RETURN *")}:
            return
        projects = [row[0] for row in self.db.rows("MATCH (f:FileParse) RETURN DISTINCT f.project")]
        for project in projects:
            rows = self.db.rows(
                "MATCH (f:FileParse) WHERE f.project = $p RETURN f.path, f.parsed", {"p": project}
            )
            self.parses.replace(project, (), ((path, parsed) for path, parsed in rows))
        self.db.run("DROP TABLE FileParse")

    def close(self) -> None:
        with self._lock:
            try:
                self.vectors.close()
                if _size(_log_of(self.path)) > CLOSE_CHECKPOINT_BYTES:
                    self.db.run("CHECKPOINT")
                else:  # Kùzu checkpoints at close, whatever the log's size, unless told not to
                    self.db.run("CALL force_checkpoint_on_close=false")
            except (StoreError, OSError) as exc:  # what was acknowledged is in the log already
                log.warning("Closing the graph store: %s", exc)
            finally:
                self.parses.close()
                try:
                    self._lexical.close()
                except StoreError as exc:  # its commit failed: the journal keeps the ids for the next open
                    log.warning("%s", exc)
                finally:
                    self.db.close()

    # -- transactions (kuzu_connection.py) ------------------------------------------

    def _mark(self, ids: Iterable[str], changes: Mapping[str, object] | None = None) -> None:
        """Note ``ids`` in the full-text index's journal before the store changes them."""
        ids = list(ids)
        self._lexical.mark(ids, changes)
        if self.db.in_transaction:
            self._marked.extend(ids)

    def _committed(self) -> None:
        self._marked.clear()

    def _rolled_back(self) -> None:
        self._records.clear()  # may hold records read inside the transaction
        self.vectors.forget_pending()  # may hold ids written inside it
        self._graph.reset()
        marked, self._marked = self._marked, []
        self._lexical.refresh(marked)  # as the store holds them: unchanged

    # -- memories ---------------------------------------------------------------

    def add_memories(self, records: Sequence[MemoryRecord], vectors: Vector | None = None) -> None:
        if not records:
            return
        with self._lock, self.db.transaction():  # the memories with their ids in their hashes' nodes
            self._mark(r.id for r in records)
            if len(records) < COPY_MIN_ROWS:
                with self.db.translated():
                    self._insert_rows(records, embedded=vectors is not None)
            else:
                self.db.bulk("COPY Memory FROM $t", memory_table(records, embedded=vectors is not None))
                self._add_hashed(records)
            ids = [r.id for r in records]
            self.vectors.now_pending(ids)
            if vectors is not None:  # once the memories are in (kuzu_vectors.py)
                self.db.then(partial(self._put_vectors, ids, vectors))
            self.db.then(partial(self._lexical.add, records))

    def _add_hashed(self, records: Sequence[MemoryRecord]) -> None:
        """The ids of bulk-loaded memories in their content hashes' nodes: the new hashes by COPY,
        those stored already (an import maps its duplicates onto them: few) by MERGE. One MERGE
        of every hash cost a third more CPU than the rest of a bulk load (at 100,000 memories);
        the join and the COPY, a tenth."""
        rows = hashed_rows(records)
        query = "MATCH (h:ContentHash {key: $key}) RETURN h.key"
        stored = {row[0] for row in self.db.keyed_rows(query, [r["k"] for r in rows])}
        self.db.copy("ContentHash", hash_table([r for r in rows if r["k"] not in stored]))
        if stored:
            self.db.run(ADD_HASHED, {"rows": [r for r in rows if r["k"] in stored]})

    def _insert_rows(self, records: Sequence[MemoryRecord], *, embedded: bool = False) -> None:
        for record in records:
            params = memory_params(record)
            params["embedding"] = None  # the vector log holds vectors (kuzu_vectors.py)
            params["embedded"] = embedded  # so the records read back need no change (_as_embedded)
            self.db.write(CREATE_MEMORY, params)

    def get_memories(self, ids: Collection[str]) -> dict[str, MemoryRecord]:
        if not ids:
            return {}
        with self._lock:
            found = {i: self._records[i] for i in dict.fromkeys(ids) if i in self._records}
            missing = [i for i in dict.fromkeys(ids) if i not in found]
            if len(missing) > LOOKUP_MAX_IDS:  # an import's ids: mostly new
                missing = self._stored(missing)
            # Each record by its primary key (0.3 ms each at 100,000 memories, half of them
            # on a second connection): a join would read every memory's columns (below).
            query = f"MATCH (m:Memory {{id: $key}}) RETURN {MEMORY_RETURN}"
            found.update(self._read(self.db.keyed_rows(query, missing, few=len(missing))))
            return found

    def _stored(self, ids: Sequence[str]) -> list[str]:
        """Which of ``ids`` the store holds, in one join on the ids alone. Kùzu 0.11 builds a
        join's hash table from the whole ``Memory`` table with every column returned: with a
        memory's columns it filled the 512 MB pool at 943,016 memories (an import asking for the
        300,000 ids of its file); its ids alone take a tenth of that."""
        rows = self.db.rows("UNWIND $keys AS wanted MATCH (m:Memory {id: wanted}) RETURN m.id", {"keys": ids})
        return [row[0] for row in rows]

    def _read(self, rows: Iterable[Sequence[Any]]) -> dict[str, MemoryRecord]:
        """The records of memory rows, kept in the read cache (oldest dropped first)."""
        records: dict[str, MemoryRecord] = {}
        for row in rows:
            record = self.vectors.as_embedded(memory_from_row(row))
            records[record.id] = self._records[record.id] = record
        while len(self._records) > RECORD_CACHE_SIZE:
            self._records.pop(next(iter(self._records)))
        return records

    def find_by_hash(self, content_hash: str) -> list[MemoryRecord]:
        """The memories with ``content_hash``: the ids its node holds (``kuzu_schema.CONTENT_HASH``)."""
        return self.find_by_hashes([content_hash]).get(content_hash, [])

    def find_by_hashes(self, content_hashes: Collection[str]) -> dict[str, list[MemoryRecord]]:
        """The memories of each hash asked (an import's): a few hashes' nodes by primary key, many
        by one join on the ``ContentHash`` table (``KuzuConnection.keyed_rows``)."""
        with self._lock:
            rows = self.db.keyed_rows(
                "MATCH (h:ContentHash {key: $key}) RETURN h.key, h.ids", sorted(set(content_hashes))
            )
            ids = {content_hash: sorted(group) for content_hash, group in rows}
            records = self.get_memories([i for group in ids.values() for i in group])
            found = {h: [records[i] for i in group if i in records] for h, group in ids.items()}
            return {h: group for h, group in found.items() if group}

    def _unhash(self, memory_id: str, content_hash: str) -> None:
        """Take ``memory_id`` out of its content hash's node (the node goes with its last id)."""
        rows = self.db.rows("MATCH (h:ContentHash {key: $h}) RETURN h.ids", {"h": content_hash})
        rest = [i for i in (rows[0][0] if rows else ()) if i != memory_id]
        if rest:
            self.db.run("MATCH (h:ContentHash {key: $h}) SET h.ids = $ids", {"h": content_hash, "ids": rest})
        elif rows:
            self.db.run("MATCH (h:ContentHash {key: $h}) DELETE h", {"h": content_hash})

    def update_memory(self, memory_id: str, changes: Mapping[str, object]) -> None:
        check_changes(changes)
        changes = dict(changes)
        if "embedding" in changes:  # in the vector log (kuzu_vectors.py)
            vector = changes.pop("embedding")
            with self._lock:
                if vector is None:
                    self.vectors.drop(memory_id, pending=True)
                else:
                    self.set_embeddings([memory_id], np.asarray([vector], np.float32))
            if not changes:
                return
        sets = ", ".join(f"m.{name} = ${name}" for name in changes)
        params: dict[str, Any] = {name: to_db(value) for name, value in changes.items()}
        params["id"] = memory_id
        rehashed = "content_hash" in changes  # its id moves to the new hash's node, at once
        together = rehashed or "updated_at" in changes  # its edges' bodies with it
        with self._lock, self.db.transaction() if together else nullcontext():
            record = self.get_memories([memory_id]).get(memory_id) if rehashed else None
            self._mark([memory_id], changes)
            if "updated_at" in changes:  # written or confirmed later: against the bodies of now
                self.db.run(RECORD_BODIES, {"id": memory_id, "at": params["updated_at"]})
            self.db.run(f"MATCH (m:Memory {{id: $id}}) SET {sets}", params)
            if record is not None:
                self._unhash(memory_id, record.content_hash)
                self.db.run(HASH_MEMORY, {"id": memory_id, "content_hash": params["content_hash"]})
            self._records.pop(memory_id, None)
            self.db.then(partial(self._lexical.set_fields, memory_id, changes))  # reads the record back

    def replace_text(self, memory_id: str, **new: Unpack[NewText]) -> None:
        """Give a memory new text; its RELATES and NEXT edges stay, its ABOUT edges become ``entities``.

        The node is deleted and created again in one transaction: after an in-place
        update of the full-text-indexed column, Kùzu 0.11.3 fails every later COPY
        into the table (duplicated primary key), even after reopening.
        """
        with self.db.transaction():
            record = self.get_memories([memory_id]).get(memory_id)
            self._records.pop(memory_id, None)
            self.vectors.drop(memory_id, pending=False)  # the old text's; the new text is pending
            if record is None:
                return
            links = self.links([memory_id])
            nexts = [
                (r[0], r[1])
                for r in self.db.rows(
                    "MATCH (a:Memory)-[:NEXT]->(b:Memory) WHERE a.id = $id OR b.id = $id RETURN a.id, b.id",
                    {"id": memory_id},
                )
            ]
            updated = replace(
                record,
                text=new["text"],
                content_hash=new["content_hash"],
                updated_at=new["updated_at"],
                embedded=False,
            )
            entities = new["entities"]
            if entities:
                self.upsert_entities(entities)
            self._mark([memory_id])
            self.db.run("MATCH (m:Memory {id: $id}) DETACH DELETE m", {"id": memory_id})
            self._unhash(memory_id, record.content_hash)
            self.db.then(partial(self._graph.memory_removed, memory_id))
            with self._lock, self.db.translated():
                self._insert_rows([updated])
                self.vectors.now_pending([memory_id])
            if links:
                self.add_links(links)
            if nexts:
                self.add_next(nexts)
            if entities:
                self.link_about([(memory_id, entity) for entity in entities])
            self.db.then(partial(self._lexical.add, [updated]))

    def delete_memory(self, memory_id: str) -> None:
        with self._lock, self.db.transaction():  # the memory with its id in its hash's node
            record = self.get_memories([memory_id]).get(memory_id)
            self._mark([memory_id])
            self.db.run("MATCH (m:Memory {id: $id}) DETACH DELETE m", {"id": memory_id})
            if record is not None:
                self._unhash(memory_id, record.content_hash)
            self._records.pop(memory_id, None)
            self.vectors.drop(memory_id, pending=False)
            self.db.then(partial(self._lexical.remove, [memory_id]))
            self.db.then(partial(self._graph.memory_removed, memory_id))

    def list_memories(self, visibility: Visibility, *, limit: int, offset: int = 0) -> list[MemoryRecord]:
        where, params = visibility_clause(visibility)
        # Kùzu 0.11's ``ORDER BY ... SKIP`` far past the rows that match reads out of bounds: the
        # process died (SIGSEGV) at an offset of 10,000 over one memory. So a page past the end
        # is known empty from a count, and Kùzu is only asked to skip rows it has (a few deleted
        # between the count and the page are skipped past safely: 10 over 200,000 were).
        if (
            offset > 0
            and offset >= self.db.rows(f"MATCH (m:Memory) WHERE {where} RETURN count(*)", params)[0][0]
        ):
            return []
        params.update(limit=limit, offset=offset)
        rows = self.db.rows(
            f"MATCH (m:Memory) WHERE {where} RETURN {MEMORY_RETURN} "
            "ORDER BY m.created_at DESC, m.id SKIP $offset LIMIT $limit",
            params,
        )
        return [self.vectors.as_embedded(memory_from_row(row)) for row in rows]

    def all_memories(self, project: str | None = None) -> Iterable[MemoryRecord]:
        """Read a page of rows at a time (``ALL_MEMORIES_PAGE``) and sorted here: Kùzu 0.11 sorts
        in its buffer pool, and one ``ORDER BY`` of every memory's columns filled the 512 MB
        pool at 1,000,000 memories ("Unable to allocate memory"), so that the full-text
        index's rebuild at open, ``reindex`` and ``export`` failed there."""
        where = " AND m.project = $p" if project is not None else ""
        given = {"p": project} if project is not None else {}
        query = (
            "MATCH (m:Memory) WHERE offset(id(m)) >= $first AND offset(id(m)) < $stop"
            f"{where} RETURN {MEMORY_RETURN}"
        )
        with self._lock:
            top = self.db.rows("MATCH (m:Memory) RETURN max(offset(id(m)))")[0][0]
            records = [
                self.vectors.as_embedded(memory_from_row(row))
                for first in range(0, -1 if top is None else top + 1, ALL_MEMORIES_PAGE)
                for row in self.db.rows(query, {**given, "first": first, "stop": first + ALL_MEMORIES_PAGE})
            ]
        records.sort(key=lambda record: (record.created_at, record.id))  # as ORDER BY m.created_at, m.id
        return records

    def count_memories(self) -> dict[tuple[str, str, str], int]:
        rows = self.db.rows(
            "MATCH (m:Memory) RETURN m.category, m.scope, m.project IS NOT NULL, m.status, count(*)"
        )
        return memory_counts(rows)

    def projects(self) -> dict[str, datetime]:
        rows = self.db.rows(
            "MATCH (m:Memory) WHERE m.project IS NOT NULL RETURN m.project, min(m.created_at)"
        )
        return {str(project): made.replace(tzinfo=UTC) for project, made in rows}  # stored naive, UTC

    def total_memories(self) -> int:
        # Kùzu answers an unfiltered count from the table's row count (1 ms at 100,000 where
        # the grouped count above read three columns: 20-130 ms).
        return int(self.db.rows("MATCH (m:Memory) RETURN count(*)")[0][0])

    def last_in_session(self, session: str) -> str | None:
        rows = self.db.rows(
            "MATCH (m:Memory) WHERE m.session = $s "
            "RETURN m.id ORDER BY m.created_at DESC, m.seq DESC LIMIT 1",
            {"s": session},
        )
        return rows[0][0] if rows else None

    @property  # -- search ----------------------------------------------------------
    def full_text_search(self) -> None:
        return None  # one search: the index written with the memories

    def search_text(
        self, query: str, visibility: Visibility, limit: int, *, phrase: str | None = None
    ) -> TextHits:
        with self._lock:
            return self._lexical.search(query, visibility, limit, phrase)

    def text_matches(
        self, query: str, visibility: Visibility, limit: int, *, holding: Sequence[Collection[str]] = ()
    ) -> list[TextMatch]:
        with self._lock:
            return self._lexical.matches(query, visibility, limit, holding)

    def rebuild_text_index(self) -> int:  # graphmem reindex: index every memory's text again
        with self._lock:
            return rebuild(self._lexical, self)

    # -- vectors (kept by kuzu_vectors.py) -------------------------------------------

    def pending_embeddings(self, limit: int) -> list[tuple[str, str]]:
        with self._lock:
            while True:  # fewer than ``limit`` only when no more wait (the port's word)
                wanted = self.vectors.pending(limit)
                found = self.get_memories(wanted)
                gone = [i for i in wanted if i not in found]  # their write was rolled back
                if not gone:
                    return [(memory_id, found[memory_id].text) for memory_id in wanted]
                self.vectors.not_pending(gone)

    def count_pending_embeddings(self) -> int:
        with self._lock:
            return self.vectors.count_pending(self.total_memories())

    def set_embeddings(self, ids: Sequence[str], vectors: Vector) -> None:
        with self._lock:
            found = self.get_memories(ids)  # a vector of no memory is not kept
            rows = [i for i, memory_id in enumerate(ids) if memory_id in found]
            # Inside a transaction, once it commits: a memory it wrote is gone if it rolls back.
            self.db.then(
                partial(self._put_vectors, [ids[i] for i in rows], np.asarray(vectors, np.float32)[rows])
            )

    def _put_vectors(self, ids: Sequence[str], vectors: Vector) -> None:
        self.vectors.put(ids, vectors)
        for memory_id in ids:
            self._records.pop(memory_id, None)  # read again: now embedded

    def clear_embeddings(self, dimension: int) -> None:
        with self._lock:
            self._records.clear()
            self.vectors.clear(dimension)
        self.rebuild_text_index()  # `graphmem reindex` rebuilds every derived index
