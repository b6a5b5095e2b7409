"""The memories' vectors in PostgreSQL: the ``embedding`` column, its HNSW index, and the
searches pgvector answers (``nearest``, ``cosine``, asked by ``postgres_vectors.PgVectorIndex``).

A part of ``PostgresGraphStore`` (``postgres_store.py``) over its connection part: the
``MemoryVectors`` port. The column's dimension is the embedding model's, set at open
(``set_dimension``); an import of many memories may put the index off and build it once at its
end (``vector_index_put_off``). The index holds the vectors at half precision (``halfvec``,
schema 12): half the pages of a ``vector`` index, so a search reads fewer and computes cheaper
distances; the cosines a search returns are computed from the stored (single-precision) vectors.
It is in parts (schema 19, ``postgres_vector_parts.py``): the global memories' and those of
parts of the projects', a search asking the global one and its projects' parts, or reading a
project of few memories whole (``READ_WHOLE_MAX``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any

import numpy as np

from graphmem.adapters.postgres_connection import PostgresConnection
from graphmem.adapters.postgres_migrate import SchemaOwner, schema_owner
from graphmem.adapters.postgres_rows import SQL, cosine_of, vector_param
from graphmem.adapters.postgres_schema import SCHEMA_LOCK_KEY
from graphmem.adapters.postgres_vector_parts import (
    ALL_INDEXED,
    GLOBAL,
    PART_OF_NAMES,
    PROJECT_PARTS,
    VECTOR_INDEXES,
    create_index,
    drop_indexes,
    indexed_vector,
)
from graphmem.adapters.record_rows import UNKNOWN_STATUS, memory_text, status_as_read
from graphmem.adapters.visibility_clause import one_of_as_read
from graphmem.core.branches import place
from graphmem.core.ports import StoredVectors, Vector, VectorQuery
from graphmem.errors import StoreConflictError, StoreMismatchError

log = logging.getLogger(__name__)

# The HNSW graph's candidate list is at least this long (pgvector's default ef_search).
EF_SEARCH_MIN = 40
# Rows an import stores at least for the HNSW index to be put off (``vector_index_put_off``):
# building it over 100,000 vectors took 50 s here, inserting them into it one by one 700 s.
BULK_ROWS_MIN = 1000
# Tries of one set_embeddings that met another writer's transaction, and the pause before the
# next (times the try's number): a lost race costs a retry, not the recall that embedded.
SET_EMBEDDINGS_ATTEMPTS = 4
CONFLICT_PAUSE_S = 0.05
# An import that brings more than a REBUILD_RATIO-th of the vectors the HNSW index holds puts
# it off too: inserting a row into the graph costs 1-7 ms (more as it grows), building the whole
# graph about 0.5 ms a row, so building it again is the cheaper up to about 5-13 times the rows.
# A store loaded from several files (an import reads 64 MiB at most) took every file but the
# first row by row: 1,000,000 memories at under 300 a second.
REBUILD_RATIO = 8
# Held (for its session) by an import that put the index off: pg_advisory_lock's key.
BULK_LOCK_KEY = 0x6772_6D69  # "grmi"
# Vectors are derived from their memories' texts: the commit that stores them does not wait for
# the server's disk (``synchronous_commit`` off for that transaction only; a durable commit cost
# a recall after a remember 4-8 ms here). A crash of the server may lose them: their memories are
# then waiting for a vector again, embedded by the next pass as if never embedded. Never inside
# a caller's transaction, whose other writes must stay durable.
UNFLUSHED = "set_config('synchronous_commit', 'off', true) IS NOT NULL"
# Names whose part of the index a store keeps (``parts_of``): a daemon sees a few projects.
KNOWN_PARTS_MAX = 4096
# A project of at most this many memories is searched by reading them whole, not by its part's
# index: pgvector filters an HNSW scan after its walk, so a project that is a small share of its
# part (a new one beside a large one) was searched by visiting many rows for each kept, and often
# stopped at hnsw.max_scan_tuples short of what it asked for (1,000 memories in a part of 150,000:
# 113-131 ms, 87 of 300 searches short, 0.51 of the exact top 100); read whole, 2,000 vectors
# take a few milliseconds and the answer is exact. Counting them costs an index scan of as many
# entries for a larger project.
READ_WHOLE_MAX = 2000
# Projects found to have more are not counted again for this long (seconds): counting cost a
# search in one of the 50,000-memory projects of a million about 1 ms.
LARGE_KEPT_S = 300.0
# maintenance_work_mem for building the index: what its graph needs (each vector, HALF_BYTES a
# dimension, and about HNSW_ROW_OVERHEAD bytes of neighbours), at most this much of the server's
# memory.
HALF_BYTES = 2
HNSW_ROW_OVERHEAD = 1024
BUILD_MEMORY_MAX_KB = 512 * 1024


class PostgresEmbeddings:
    """The vector column and its index (see the module doc)."""

    def __init__(self, db: PostgresConnection, dimension: int, *, analysed: Callable[[], None]) -> None:
        self._db = db
        self.dimension = dimension
        self._analysed = analysed  # after an import's ANALYZE: the text search's statistics are stale
        self._put_off = False  # an import's block dropped the HNSW index and builds it at its end
        self._parts: dict[str, int] = {}  # a project's part of the index (``parts_of``), by name
        # Names of projects of more than READ_WHOLE_MAX memories, and until when not to count them.
        self._large_until: dict[tuple[str, ...], float] = {}

    def set_dimension(self, dimension: int) -> None:
        """Give ``memories.embedding`` the model's dimension and its HNSW index, unless it has
        them (or an import that put the index off is loading: it builds the index at its end)."""
        rows = self._db.rows(
            f"SELECT a.atttypmod, {ALL_INDEXED} FROM pg_attribute a "
            "WHERE a.attrelid = 'memories'::regclass AND a.attname = 'embedding'"
        )
        typmod, indexed = rows[0]
        if typmod == dimension and indexed:
            return
        with self._db.transaction():
            self._db.run("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK_KEY,))
            if (
                typmod == dimension
                and not self._db.rows("SELECT pg_try_advisory_xact_lock(%s)", (BULK_LOCK_KEY,))[0][0]
            ):
                return
            other = self._db.rows(
                "SELECT vector_dims(embedding) FROM memories WHERE embedding IS NOT NULL "
                "AND vector_dims(embedding) <> %s LIMIT 1",
                (dimension,),
            )
            if other:
                raise StoreMismatchError(
                    f"The store at {self._db.where} holds vectors of {other[0][0]} dimensions but the "
                    f"configured model makes {dimension}. Run `graphmem reindex` with the store's "
                    "model configured, or set [embedding] model back."
                )
            owner = schema_owner(self._db, "memories")
            if not owner.may:  # a writer or reader before the owner's first command (docs/team.md)
                raise StoreMismatchError(self._not_ready(owner, typmod, dimension))
            self._db.run(drop_indexes())
            self._db.run(f"ALTER TABLE memories ALTER COLUMN embedding TYPE vector({int(dimension)})")
            self._create_vector_index()

    def _not_ready(self, owner: SchemaOwner, typmod: int, dimension: int) -> str:
        """Why a role that may not change the vector column (``ALTER TABLE``, ``CREATE INDEX``)
        cannot open the store yet: the column has no dimension (``typmod`` -1: a new store) or
        another than the model's ``dimension``, or it has no index; and who fixes it, how."""
        where = f"The store at {self._db.where}"
        owners = f"the role that owns graphmem's tables ({owner.name})"
        fix = f'{owner.runs(self._db, "graphmem stats")} as {owner.name} (docs/team.md, "Setting it up")'
        if typmod < 0:
            return (
                f"{where} is not set up for an embedding model yet: the first command of {owners} "
                f"gives its vector column the model's dimension ({dimension}) and builds its index, "
                f"which {owner.login} may not do. Run {fix} once, then this again."
            )
        if typmod != dimension:
            return (
                f"{where} has its vector column sized for a model of {typmod} dimensions and the "
                f"configured model makes {dimension}; only {owners} may resize it, not {owner.login}. "
                f"Set [embedding] model back, or run {fix} with this model."
            )
        return (
            f"{where} has no vector index (an import or a migration dropped it, for the next open to "
            f"build again), and only {owners} may build it, not {owner.login}. Run {fix} once, then "
            "this again."
        )

    def _create_vector_index(self) -> None:
        """Build the HNSW index's parts (inside a transaction holding ``SCHEMA_LOCK_KEY``), each
        in memory when its graph fits in :data:`BUILD_MEMORY_MAX_KB`: built on disk it takes
        several times longer."""
        vectors = self._db.rows("SELECT count(*) FROM memories WHERE embedding IS NOT NULL")[0][0]
        wanted = min(
            BUILD_MEMORY_MAX_KB, int(vectors) * (self.dimension * HALF_BYTES + HNSW_ROW_OVERHEAD) // 1024
        )
        has = self._db.rows("SELECT setting::bigint FROM pg_settings WHERE name = 'maintenance_work_mem'")
        if wanted > int(has[0][0]):
            self._db.rows("SELECT set_config('maintenance_work_mem', %s, true)", (f"{wanted}kB",))
        # Bounded work, minutes at a million rows: the statement timeout is for hung servers.
        self._db.rows("SELECT set_config('statement_timeout', '0', true)")
        for part in VECTOR_INDEXES:
            self._db.run(create_index(part, int(self.dimension)))

    @contextmanager
    def vector_index_put_off(self, rows: int) -> Iterator[None]:
        """The block stores ``rows`` memories with their vectors (an import): when the HNSW index
        holds fewer than :data:`REBUILD_RATIO` times as many vectors (a new store, or one being
        loaded from several files), it is dropped first and built once at the end, a failed
        block's too, instead of taking each row (see :data:`BULK_ROWS_MIN`).

        While it is off, searches scan the vectors (exact, slower) and other writers go on; a
        store opened meanwhile does not build it (the loading import holds
        :data:`BULK_LOCK_KEY` for its session), but one opened after an import that died does.
        Only the table's owner may drop an index: for any other role nothing is put off. A block
        inside one that put it off (each file of a load of several, ``bench scale``'s) leaves the
        build to that one."""
        if rows < BULK_ROWS_MIN or self._put_off:  # an enclosing block builds it at its end
            yield
            return
        with self._db.session() as holder:
            if holder is None:
                yield  # every connection busy: the import goes on the slow way
                return
            dropped = False
            try:
                with self._db.translated():
                    locked = holder.execute("SELECT pg_try_advisory_lock(%s)", (BULK_LOCK_KEY,)).fetchone()
                    if locked and locked[0]:
                        dropped = self._drop_vector_index(rows)
                self._put_off = dropped
                yield
            finally:
                self._put_off = False
                if dropped:
                    with self._db.transaction():
                        self._db.run("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK_KEY,))
                        self._create_vector_index()
                    # What autovacuum would do a minute later, in the middle of the searches and
                    # writes that follow (remember p50 58-76 ms in bench scale right after
                    # 100,000 were imported): the new rows' visibility and statistics (without
                    # these each new word of a search is counted, postgres_text.py). VACUUM
                    # runs outside a transaction only.
                    self._db.run(
                        "ANALYZE memories" if self._db.in_transaction else "VACUUM (ANALYZE) memories"
                    )
                    self._analysed()

    def _drop_vector_index(self, rows: int) -> bool:
        """Drop the HNSW index if this role owns the table and the index holds fewer than
        :data:`REBUILD_RATIO` times ``rows`` vectors; whether it did."""
        with self._db.transaction():
            self._db.run("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK_KEY,))
            found = self._db.rows(
                f"SELECT {ALL_INDEXED}, pg_has_role(c.relowner, 'USAGE') "
                "FROM pg_class c WHERE c.oid = 'memories'::regclass"
            )
            indexed, owner = found[0]
            if not (indexed and owner):
                return False
            held = self._db.rows("SELECT count(*) FROM memories WHERE embedding IS NOT NULL")[0][0]
            if int(held) >= rows * REBUILD_RATIO:
                return False
            self._db.run(drop_indexes())
        log.info("the vector index is built again after the %d memories are stored", rows)
        return True

    # -- MemoryVectors ---------------------------------------------------------------------------

    def pending_embeddings(self, limit: int) -> list[tuple[str, str]]:
        rows = self._db.rows(
            "SELECT id, text FROM memories WHERE embedding IS NULL ORDER BY seq LIMIT %s", (max(limit, 0),)
        )
        # A text over graphmem's bound (written by hand) is embedded as it is read: cut.
        return [(str(i), memory_text(t, i)) for i, t in rows]

    def count_pending_embeddings(self) -> int:
        # From the partial index ``memories_pending`` (the rows without a vector), not the table.
        return int(self._db.rows("SELECT count(*) FROM memories WHERE embedding IS NULL")[0][0])

    def set_embeddings(self, ids: Sequence[str], vectors: Vector) -> None:
        if len(ids) != len(vectors):
            raise ValueError(f"{len(ids)} ids came with {len(vectors)} vectors")
        # In id order: every process embedding a shared backlog (each recall embeds what is
        # pending, others' memories too) locks the rows in the same order, so two never deadlock;
        # a conflict with another kind of write is tried again, the update being idempotent.
        rows = sorted(
            ({"id": i, "e": vector_param(v)} for i, v in zip(ids, vectors, strict=True)), key=_by_id
        )
        nested = self._db.in_transaction  # then the caller's transaction is the one to retry
        update = "UPDATE memories SET embedding = %(e)s::vector WHERE id = %(id)s"
        if not nested:
            update += f" AND {UNFLUSHED}"
        for attempt in range(1, SET_EMBEDDINGS_ATTEMPTS + 1):
            try:
                # One row is one statement, whole on its own: no BEGIN and COMMIT round trips for
                # a remember's vector (its daemon's write, or the next recall's without one).
                with self._db.transaction() if len(rows) > 1 else nullcontext():
                    self._db.many(update, rows)
                return
            except StoreConflictError:
                if attempt == SET_EMBEDDINGS_ATTEMPTS or nested:
                    raise
                time.sleep(CONFLICT_PAUSE_S * attempt)

    def clear_embeddings(self, dimension: int) -> None:
        # One transaction: a role that may not give the column another dimension (a writer on a
        # team's store, docs/team.md) is refused before any of the team's vectors is gone.
        before, self.dimension = self.dimension, dimension  # the new index is built for it
        try:
            with self._db.transaction():
                self._db.run("UPDATE memories SET embedding = NULL WHERE embedding IS NOT NULL")
                self.set_dimension(dimension)
        except BaseException:
            self.dimension = before
            raise

    def load_vectors(self) -> StoredVectors:
        rows = self._db.rows(
            "SELECT id, project, status, embedding::real[], branch FROM memories "
            "WHERE embedding IS NOT NULL ORDER BY seq"
        )
        if not rows:
            return StoredVectors([], np.zeros((0, self.dimension), np.float32), [], [])
        matrix = np.asarray([row[3] for row in rows], dtype=np.float32)
        return StoredVectors(
            [str(r[0]) for r in rows],
            matrix,
            [place(r[1], r[4]) for r in rows],
            [status_as_read(r[2], r[0]) for r in rows],
        )

    def count_vectors(self) -> int:
        return int(self._db.rows("SELECT count(*) FROM memories WHERE embedding IS NOT NULL")[0][0])

    def embedding_of(self, memory_id: str) -> Vector | None:
        rows = self._db.rows("SELECT embedding::real[] FROM memories WHERE id = %s", (memory_id,))
        if not rows or rows[0][0] is None:
            return None
        return np.asarray(rows[0][0], dtype=np.float32)

    # -- what the vector index (postgres_vectors.py) asks ----------------------------------------

    def nearest(self, query: VectorQuery) -> list[tuple[str, float]]:
        """The ``query.k`` memories ``query`` shows whose vectors are nearest its vector by
        cosine (``VectorQuery``), with their cosine similarity, best first."""
        k = query.k
        if k <= 0:
            return []
        names = tuple(sorted(query.projects))
        # a status graphmem never writes as it is read: archived (visibility_clause.py)
        status, asked = one_of_as_read(SQL, "status", "s", query.statuses, UNKNOWN_STATUS)
        params = {
            "q": vector_param(query.vector),
            "k": k,
            "p": list(names),
            **asked,
            "b": query.branch,
            "few": READ_WHOLE_MAX + 1,
        }
        on_branch = "" if query.all_branches else "AND (branch IS NULL OR branch = %(b)s) "
        shown = f"embedding IS NOT NULL {'' if status is None else f'AND {status} '}{on_branch}"
        # The index's order (half precision: the query cast as its vectors are), the stored
        # vectors' cosines of the k nearest alone.
        order = f"{indexed_vector(int(self.dimension))} <=> %(q)s::vector::halfvec({int(self.dimension)})"
        # A scan of each part the query sees: the global memories', and its projects' parts, each
        # part's predicate a literal (postgres_vector_parts.py). Unless the projects are known to
        # be large, the statement counts their memories first: when they are few (READ_WHOLE_MAX)
        # it reads them whole and the parts' scans never run. The hits are put together here, by
        # the stored vectors' cosines.
        parts = sorted(set(self.parts_of(names).values()))
        counted = bool(parts) and self._large_until.get(names, 0.0) <= time.monotonic()
        are_few = "(SELECT n FROM size) < %(few)s"
        unless_few = f"AND NOT {are_few} " if counted else ""
        scans = [
            f"{GLOBAL.where} AND {shown}ORDER BY {order}",
            *(
                f"{PROJECT_PARTS[n].where} AND project = ANY(%(p)s) AND {shown}{unless_few}ORDER BY {order}"
                for n in parts
            ),
        ]
        size = ""
        if counted:
            size = ", (SELECT n FROM size)"
            scans.append(
                f"project = ANY(%(p)s) AND {shown}AND {are_few} ORDER BY embedding <=> %(q)s::vector"
            )
        union = " UNION ALL ".join(
            f"(SELECT id, embedding FROM memories WHERE {w} LIMIT %(k)s)" for w in scans
        )
        statement = f"SELECT id, 1 - (embedding <=> %(q)s::vector){size} FROM ({union}) AS found"
        if counted:  # a SELECT still, the WITH inside: read again on a dropped connection
            statement = (
                "SELECT * FROM (WITH size AS MATERIALIZED (SELECT count(*) AS n FROM "
                "(SELECT 1 FROM memories WHERE project = ANY(%(p)s) LIMIT %(few)s) AS theirs) "
                f"{statement}) AS counted"
            )
        rows = self._db.rows(
            statement,
            params,
            # Filtered HNSW scans go on until k rows pass the filter or hnsw.max_scan_tuples were
            # visited (pgvector 0.8's iterative scans; docs/team.md); set once per pooled
            # connection, not per search (a round trip each).
            settings={"hnsw.ef_search": str(max(EF_SEARCH_MIN, k)), "hnsw.iterative_scan": "relaxed_order"},
            # Counting, planned for the projects asked: a generic plan, made for no project, read
            # a small one whole by scanning the table (5 s at a million memories).
            planned_each_time=counted,
        )
        if counted and rows and rows[0][2] > READ_WHOLE_MAX:  # not counted again for a while
            if len(self._large_until) >= KNOWN_PARTS_MAX:
                self._large_until.clear()
            self._large_until[names] = time.monotonic() + LARGE_KEPT_S
        found = ((str(row[0]), cosine_of(row[1])) for row in rows)
        hits = sorted(((i, c) for i, c in found if c is not None), key=lambda hit: (-hit[1], hit[0]))
        return hits[:k]

    def parts_of(self, projects: Collection[str]) -> dict[str, int]:
        """The part of the index each of ``projects`` is in (asked of the server the first
        time a name is seen: ``hashtext`` is its own); ``bench scale --small-project`` names its
        project by it."""
        new = sorted(name for name in projects if name not in self._parts)
        if new:
            if len(self._parts) + len(new) > KNOWN_PARTS_MAX:  # a process of many projects
                self._parts.clear()
                new = sorted(projects)
            self._parts.update((str(name), int(part)) for name, part in self._db.rows(PART_OF_NAMES, (new,)))
        return {name: self._parts[name] for name in projects}

    def cosine(self, query: Vector, ids: Collection[str]) -> dict[str, float]:
        """The cosine similarity of ``query`` to each memory of ``ids`` that has a vector."""
        if not ids:
            return {}
        rows = self._db.rows(
            "SELECT id, 1 - (embedding <=> %s::vector) FROM memories "
            "WHERE id = ANY(%s) AND embedding IS NOT NULL",
            (vector_param(query), list(ids)),
        )
        return {str(i): c for i, s in rows if (c := cosine_of(s)) is not None}


def _by_id(row: Mapping[str, Any]) -> str:
    return str(row["id"])
