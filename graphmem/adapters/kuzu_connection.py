"""The connection under graphmem's Kùzu store: running statements, and the store's meta.

``KuzuConnection`` translates every Kùzu error into graphmem's, keeps one connection
with its prepared statements, and serialises access from threads with one re-entrant
lock. It is the connection part of ``KuzuGraphStore`` (``kuzu_store.py``, its ``db``): the
store's other parts (``kuzu_entities.py``, ``kuzu_links.py``, ``kuzu_vectors.py``,
``kuzu_events.py``, ...) are given it, and the code and GitLab graphs run their statements
through it (``rows``, ``keyed_rows``, ``run``, ``copy``, ``copy_edges``, ``transaction``).
"""

from __future__ import annotations

import importlib.util  # noqa: F401  kuzu's COPY FROM arrow needs it imported
import logging
import re
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

import kuzu

from graphmem.errors import StoreError

if TYPE_CHECKING:  # imported by the bulk writes and reads that need it: a recall does not
    import pyarrow as pa

log = logging.getLogger(__name__)

# Kùzu 0.11 deprecates separate prepare + execute, but preparing on every call
# cost ~0.8 ms per query here; the prepared statements are kept (see _execute).
warnings.filterwarnings("ignore", message="The use of separate prepare", category=DeprecationWarning)

# Kùzu 0.11 keeps in its buffer pool what the writes since the last checkpoint replaced,
# and that grows faster than the writes: single-row updates of a 4 KB string held 25 MB
# after 100, 171 MB after 400 and filled the 512 MB pool at 721 (of 100-byte strings at
# 16,310), and every write failed after. Kùzu checkpoints on its own only when its log
# passes a size, which those updates do not reach in time. So every ``POOL_CHECK_WRITES``
# committed writes the store reads how much of the pool is in use (``CALL bm_info()``,
# 0.3 ms) and checkpoints when it grew by ``POOL_CHECKPOINT_BYTES`` since the last one (or
# since the connection's first write: an open that only reads never asks).
POOL_CHECK_WRITES = 16
POOL_CHECKPOINT_BYTES = 128 * 1024 * 1024
# Prepared statements kept per connection (query texts are few and fixed).
PREPARED_CACHE_SIZE = 256
# Keys up to which one primary-key lookup each beats one UNWIND join of them all (``keyed_rows``),
# measured at 100,000 memories: a node costs about 0.3 ms a lookup and the join about 10 ms;
# walking edges from a node about 1 ms a lookup, where the join hashes the whole edge table
# (50-350 ms, growing with the store).
FEW_NODE_KEYS = 32
FEW_EDGE_KEYS = 200
# Keys from which ``keyed_rows`` reads half of them on a second connection at once: a
# lookup costs 0.3-0.8 ms at 100,000 memories, handing half to a thread about 0.05 ms.
SPLIT_MIN_KEYS = 2
# Threads a write of a few rows runs on (a statement with parameters, no ``UNWIND``, that
# creates, merges or matches a node by its key: ``_BY_KEY``; and a transaction's ``COMMIT``
# when no bulk load ran in it): Kùzu hands even a one-row statement to its worker
# threads, and at a million memories a ``remember``'s write took
# 11.6-14.5 ms with the machine's two threads against 2.2-5.0 ms on one (load 15, median of
# 60, alternating runs; 1.6-2.2 against 2.7-2.9 ms of CPU). A read of one node by its
# primary key (``keyed_rows``) too: 0.47-0.53 against 0.59-0.69 ms. Other reads, bulk loads,
# DDL, scans and writes over rows of a parameter list keep every thread.
FEW_ROWS_THREADS = 1
_WRITES = re.compile(r"\b(CREATE|MERGE|SET|DELETE|REMOVE|DROP|ALTER|COPY)\b", re.IGNORECASE)
_UNWIND = re.compile(r"\bUNWIND\b", re.IGNORECASE)  # a write over the rows of a parameter list
# A write of one node by its key: it creates or merges one, or matches one by its key parameter
# (not a scan: ``MATCH (s:Symbol) WHERE s.project = $p DETACH DELETE s`` keeps every thread).
_BY_KEY = re.compile(r"^\s*(CREATE|MERGE)\b|\{\s*(key|id)\s*:\s*\$", re.IGNORECASE)
_KEY_PARAMETER = re.compile(r"\$key\b")  # ``keyed_rows``' parameter, not ``$keys`` or ``$key_x``


# A store-wide setting written (``set_meta``, ``run_at_once``).
SET_META = "MERGE (m:Meta {key: $k}) SET m.value = $v"


class KuzuConnection:
    """One connection to an open Kùzu database, its lock and its prepared statements.

    ``committed`` runs when a transaction commits (before its ``then`` actions), and
    ``rolled_back`` when one rolls back: the store forgets what its caches hold then."""

    def __init__(
        self,
        db: kuzu.Database,
        *,
        committed: Callable[[], None] = lambda: None,
        rolled_back: Callable[[], None] = lambda: None,
    ) -> None:
        self._db = db
        self._committed = committed
        self._rolled_back = rolled_back
        self._conn = kuzu.Connection(db)
        self._lock = threading.RLock()
        self._prepared: dict[str, Any] = {}
        # While a transaction is open: what to do once it commits (None: no transaction).
        self._after_commit: list[Callable[[], None]] | None = None
        self._failed = False  # a statement failed inside the open transaction: Kùzu rolled it back
        # The open transaction's first write, held until a second statement needs Kùzu's
        # transaction (then ``_begin``) or the block ends: alone, it runs in Kùzu's own
        # auto-commit, one call where BEGIN, the write and COMMIT are three (0.9 ms a
        # ``remember`` at 100,000 memories). None: nothing held, or the transaction has begun.
        self._held: tuple[str, Mapping[str, Any] | None] | None = None
        self._begun = False
        # A second connection, and the thread it reads on: ``keyed_rows`` reads half of its
        # keys there while this one reads the other half (made at the first such read).
        self._side: tuple[kuzu.Connection, dict[str, Any], ThreadPoolExecutor] | None = None
        self._writes = 0  # committed write statements since the pool was last looked at
        # The pool in use after the last checkpoint, or before the first write (None: none yet),
        # read then rather than at open: 0.2-0.4 ms of CPU an open that only reads never spends.
        self._pool_base: int | None = None
        self._all_threads = self._threads_now = self._threads_set()
        self._keyed = False  # the statements run read one node by its key each (``_by_key``)
        self._bulk_in_transaction = False  # a bulk load ran in the open transaction: its COMMIT uses all

    def close(self) -> None:
        """Close the connections and the database."""
        with self._lock:
            if self._side is not None:
                side, _, thread = self._side
                thread.shutdown()
                side.close()
            self._conn.close()
            self._db.close()

    # -- low level --------------------------------------------------------------

    @contextmanager
    def translated(self) -> Iterator[None]:
        """Kùzu's errors inside the block raised as ``StoreError`` (a transaction's first
        error fails the whole transaction)."""
        try:
            yield
        except RuntimeError as exc:
            if self._after_commit is not None:
                self._failed = True  # Kùzu ends a transaction at its first error
            raise StoreError(f"The graph store failed: {exc}") from exc

    def _check_open(self) -> None:
        if self._failed:  # Kùzu is in auto-commit now: the transaction's later writes must not land
            raise StoreError("The graph store failed earlier in this transaction; nothing of it was kept.")

    def write(self, query: str, params: Mapping[str, Any] | None) -> None:
        """Run a write whose result nobody reads (the caller holds ``lock``, inside ``translated``);
        the first of a transaction is held (``_held``)."""
        self._check_open()
        if self._after_commit is not None and not self._begun and self._held is None:
            self._held = (query, params)  # counted in ``_writes`` when it runs
            return
        self._execute(query, params)

    def _threads_set(self) -> int:
        rows: Any = self._conn.execute("CALL current_setting('threads') RETURN *")  # one result
        return int(rows.get_all()[0][0])

    def _threads(self, few_rows: bool) -> None:
        """Run the next statement on one thread (``few_rows``, see ``FEW_ROWS_THREADS``) or on all."""
        wanted = FEW_ROWS_THREADS if few_rows else self._all_threads
        if wanted != self._threads_now:
            self._conn.set_max_threads_for_exec(wanted)
            self._threads_now = wanted

    def _pool_used(self) -> int:
        rows: Any = self._conn.execute("CALL bm_info() RETURN mem_usage")  # one statement: one result
        used: int = rows.get_all()[0][0]
        return used

    def _count_write(self) -> None:
        """Count a write statement about to run (``_watch_pool``); before the first, read the pool's base."""
        if self._pool_base is None:
            self._pool_base = self._pool_used()
        self._writes += 1

    def _watch_pool(self) -> None:
        """Checkpoint when the writes since the last checkpoint hold too much of Kùzu's pool
        (see ``POOL_CHECK_WRITES``). Not inside a transaction: after it commits."""
        if self._writes < POOL_CHECK_WRITES or self._after_commit is not None or self._pool_base is None:
            return
        self._writes = 0
        try:
            if self._pool_used() - self._pool_base > POOL_CHECKPOINT_BYTES:
                self._threads(few_rows=False)
                self._conn.execute("CHECKPOINT")
                self._pool_base = self._pool_used()
        except RuntimeError as exc:  # what was written is committed: the next check tries again
            log.warning("The graph store could not checkpoint its log: %s", exc)

    def _begin(self) -> None:
        """Begin the open transaction in Kùzu, with the write it held, before any other statement."""
        if self._after_commit is None or self._begun:
            return
        self._conn.execute("BEGIN TRANSACTION")
        self._begun = True
        held, self._held = self._held, None
        if held is not None:
            self._execute(*held)

    def _execute(self, query: str, params: Mapping[str, Any] | None) -> Any:
        """Run ``query`` with a prepared statement, prepared once per query text (inside
        ``_by_key``, on one thread as a write of a few rows)."""
        self._check_open()
        self._begin()
        write = _WRITES.search(query) is not None
        if write:
            self._count_write()
        few_rows = (
            write and bool(params) and _UNWIND.search(query) is None and _BY_KEY.search(query) is not None
        )
        self._threads(few_rows=self._keyed or few_rows)
        if not params:
            return self._conn.execute(query)
        return self._conn.execute(_prepared(self._conn, self._prepared, query), dict(params))

    def bulk(self, query: str, data: pa.Table) -> None:
        """Run a ``COPY ... FROM $t`` of ``data`` (not prepared: the table differs every time)."""
        with self._lock, self.translated():
            self._check_open()
            self._begin()
            self._threads(few_rows=False)
            self._bulk_in_transaction = self._after_commit is not None
            self._count_write()
            self._conn.execute(query, {"t": data})
            self._watch_pool()

    def run(self, query: str, params: Mapping[str, Any] | None = None) -> None:
        """Run a statement whose result nobody reads."""
        with self._lock, self.translated():
            self.write(query, params)
            self._watch_pool()

    def rows(self, query: str, params: Mapping[str, Any] | None = None) -> list[list[Any]]:
        """The rows of one statement."""
        with self._lock, self.translated():
            result = self._execute(query, params)
            assert not isinstance(result, list)
            rows: list[list[Any]] = result.get_all()
            self._watch_pool()
            return rows

    def keyed_rows(
        self,
        query: str,
        keys: Iterable[str],
        params: Mapping[str, Any] | None = None,
        *,
        few: int = FEW_NODE_KEYS,
    ) -> list[list[Any]]:
        """The rows of ``query`` for each of ``keys`` (each key once, in order; unknown ones
        find nothing). ``query`` matches one node by its primary key ``$key``, as in
        ``MATCH (f:File {key: $key})``.

        Up to ``few`` keys it runs once per key; above, once for them all, as ``UNWIND $keys
        AS wanted`` then ``query`` on ``wanted``: a hash join, whose table Kùzu 0.11 builds
        from every row of the node's table with the columns ``query`` returns (return few,
        short columns of a large table). ``WHERE f.key IN $keys`` instead compares every row
        of the table with every key (5,000 symbol keys among 20,000 symbols: 1.0 s against 34 ms).
        """
        wanted = list(dict.fromkeys(keys))
        given = dict(params or {})
        with self._lock:
            if len(wanted) > few:
                joined = _KEY_PARAMETER.sub("wanted", query)
                return self.rows(f"UNWIND $keys AS wanted {joined}", {**given, "keys": wanted})
            if len(wanted) < SPLIT_MIN_KEYS or self._after_commit is not None or _WRITES.search(query):
                # Inside a transaction only this connection sees its writes; and Kùzu takes
                # one write transaction at a time.
                with self._by_key():
                    return [row for key in wanted for row in self.rows(query, {**given, "key": key})]
            half = len(wanted) // 2
            later = self._side_reads(query, [{**given, "key": key} for key in wanted[half:]])
            try:
                with self._by_key():
                    first = [row for key in wanted[:half] for row in self.rows(query, {**given, "key": key})]
            finally:
                later.exception()  # waits: the second connection is done before the lock goes
            with self.translated():
                return first + later.result()

    @contextmanager
    def _by_key(self) -> Iterator[None]:
        """The statements inside read one node by its primary key each (``keyed_rows``): one thread."""
        self._keyed = True
        try:
            yield
        finally:
            self._keyed = False

    def _side_reads(self, query: str, each: list[dict[str, Any]]) -> Future[list[list[Any]]]:
        """The rows of ``query`` for each of ``each``, read on the second connection's thread
        (Kùzu lets go of Python's lock while it runs a query: both read at once)."""
        self._check_open()
        if self._side is None:
            side = kuzu.Connection(self._db)
            side.set_max_threads_for_exec(FEW_ROWS_THREADS)  # it reads one node by its key at a time
            self._side = (side, {}, ThreadPoolExecutor(1, "graphmem-kuzu-read"))
        side, prepared, thread = self._side

        def read() -> list[list[Any]]:
            statement = _prepared(side, prepared, query)
            rows: list[list[Any]] = []
            for params in each:
                result: Any = side.execute(statement, params)  # one statement: one result
                rows += result.get_all()
            return rows

        return thread.submit(read)

    # -- transactions -----------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """The writes inside the block are committed together, once, when it ends (durable
        then), or none of them when it raises; inside an open transaction it is part of that
        one. It holds the store's lock: other threads' store calls wait till it ends. What
        the writes change in memory (``then``) happens after the commit."""
        with self._lock:
            if self._after_commit is not None:
                yield
                return
            self._after_commit, self._failed, self._begun, self._held = [], False, False, None
            try:
                yield
                if self._failed:
                    raise StoreError("The graph store failed inside a transaction; nothing of it was kept.")
                held, self._held = self._held, None
                with self.translated():
                    if self._begun:
                        self._threads(few_rows=not self._bulk_in_transaction)
                        self._conn.execute("COMMIT")
                    elif held is not None:  # the only write: Kùzu commits it on its own
                        self._begun = True  # it runs now, not held again
                        self._execute(*held)
            except BaseException:
                self._after_commit, self._held, self._bulk_in_transaction = None, None, False
                if self._begun and not self._failed:
                    self._rollback()
                self._failed = self._begun = False
                self._rolled_back()
                raise
            actions, self._after_commit, self._begun = self._after_commit, None, False
            self._bulk_in_transaction = False
            self._watch_pool()
            self._committed()
            for action in actions:
                action()

    def run_at_once(self, statements: Iterable[str], meta: Mapping[str, str]) -> None:
        """Run ``statements`` (a new store's schema) and set ``meta`` (``set_meta``) in one
        transaction of their own: all of it or, when a statement fails or the process stops,
        none. Not inside another transaction; the store's commit and rollback hooks do not run."""
        with self._lock:
            if self._after_commit is not None:
                raise RuntimeError("run_at_once inside a transaction")
            with self.translated():
                self._conn.execute("BEGIN TRANSACTION")
                try:
                    for statement in statements:
                        self._conn.execute(statement)
                    for key, value in meta.items():
                        self._conn.execute(SET_META, {"k": key, "v": value})
                except BaseException:
                    self._rollback()
                    raise
                self._conn.execute("COMMIT")

    def _rollback(self) -> None:
        with suppress(RuntimeError):  # Kùzu already ended it (a failed COMMIT)
            self._conn.execute("ROLLBACK")

    def then(self, action: Callable[[], None]) -> None:
        """Run ``action`` (keeping an in-memory copy in step) now, or after the open transaction commits."""
        if self._after_commit is None:
            action()
        else:
            self._after_commit.append(action)

    @property
    def in_transaction(self) -> bool:
        """Whether a ``transaction`` block is open."""
        return self._after_commit is not None

    @property
    def lock(self) -> threading.RLock:
        """The lock every call holds: a caller holding it makes several calls one step."""
        return self._lock

    # -- bulk loads and reads -----------------------------------------------------

    def arrow(self, query: str, params: Mapping[str, Any]) -> pa.Table:
        """The rows of one statement as a pyarrow table."""
        with self._lock, self.translated():
            result = self._execute(query, params)
            table: pa.Table = result.get_as_arrow()
            return table

    def copy(self, table: str, data: pa.Table | None) -> None:
        """Bulk-load ``data`` (columns in the table's order) into a node table."""
        if data is None or data.num_rows == 0:
            return
        self.bulk(f"COPY {table} FROM $t", data)

    def copy_edges(
        self,
        rel: str,
        source: str,
        target: str,
        pairs: Sequence[tuple[str, str]],
        columns: Mapping[str, Sequence[Any]] | None = None,
    ) -> None:
        """Bulk-load edges ``source key -> target key`` (plus property ``columns``)."""
        if not pairs:
            return
        import pyarrow as pa

        data = {"from": [a for a, _ in pairs], "to": [b for _, b in pairs], **(columns or {})}
        self.bulk(f"COPY {rel} FROM $t (from='{source}', to='{target}')", pa.table(data))

    # -- metadata ---------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        rows = self.rows("MATCH (m:Meta {key: $k}) RETURN m.value", {"k": key})
        return rows[0][0] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        self.run(SET_META, {"k": key, "v": value})


def _prepared(conn: kuzu.Connection, prepared: dict[str, Any], query: str) -> Any:
    """``query`` prepared on ``conn``, once per query text (kept in ``prepared``)."""
    statement = prepared.get(query)
    if statement is None:
        statement = conn.prepare(query)
        if not statement.is_success():
            raise StoreError(f"The graph store rejected a query: {statement.get_error_message()}")
        if len(prepared) >= PREPARED_CACHE_SIZE:
            prepared.pop(next(iter(prepared)))
        prepared[query] = statement
    return statement
