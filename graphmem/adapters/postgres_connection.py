"""Connections to a PostgreSQL store: a pool, transactions per thread, errors translated.

The connection part of ``PostgresGraphStore`` (``postgres_store.py``, its ``db``): the store's
other parts and the other PostgreSQL adapters (code, GitLab, coordination, migrations) run
their statements through its public methods (``rows``, ``run``, ``many``, ``transaction``,
``then``). Connections come from a ``PostgresPool`` (``postgres_pool.py``: checked before use
when they sat idle, so a server that restarted or failed over costs a reconnect, not an error;
made by the call that needs one, so a server that is down fails a call at once and the first
call after it is back goes through). A connection in steady use is not checked, which cost a
round trip per statement: a read on one the server dropped meanwhile is asked again on
another; a write on one fails with a clear error saying nothing was kept. Each call outside
a transaction takes one in autocommit mode and gives it back. ``transaction`` binds one
connection to the calling thread until the block ends: the calls of that thread inside it are
one PostgreSQL transaction, while other threads (and other daemons) go on with theirs and
see its writes only once it committed. A read may ask for server settings
(``rows(settings=...)``, the HNSW scan's): outside a transaction they are set for the
connection's session and remembered with it, so a connection that has them already costs no
round trip for them. Every SQL statement is a constant; values
are always parameters.

Errors become graphmem's: a server that cannot be reached or refuses the credentials is a
``StoreUnavailableError`` (the pool's), one that is read only a ``StoreError``, each saying which
server (host, port and database, never the password) and what to check; a duplicated key is a
``StoreError``.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import Any

import psycopg
import psycopg.conninfo
from psycopg import errors as pg_errors

from graphmem.adapters.postgres_liveness import ServerSilent, server_tcp_settings, with_tcp_bounds
from graphmem.adapters.postgres_pool import BUSY_WAIT_S, POOL_MAX, PostgresPool, first_line
from graphmem.adapters.postgres_rows import configure_reads
from graphmem.errors import StoreConflictError, StoreError

log = logging.getLogger(__name__)

# A server whose host does not answer (down, or a firewall dropping packets) fails a call
# within this; one whose host refuses the connection (the server stopped) fails it at once.
CONNECT_TIMEOUT_S = 5
# A statement that runs longer than this on a server that answers is cancelled by the server: a
# runaway statement's bound, not a partition's (postgres_liveness.py bounds a server that went
# silent, whatever the statement). Long maintenance lifts it for its own statements (migrations,
# the vector index's build: ``SET LOCAL statement_timeout = 0``).
STATEMENT_TIMEOUT_MS = 120_000


def describe(url: str, *, user: str | None = None) -> str:
    """Where ``url`` points, without its password: ``postgresql://user@host:port/db``; logged in
    as ``user`` instead of its own when given (the URL a message tells another role to use)."""
    try:
        params = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "an unreadable PostgreSQL URL"
    if user is not None:
        params["user"] = user
    login = f"{params['user']}@" if params.get("user") else ""
    port = f":{params['port']}" if params.get("port") else ""
    return f"postgresql://{login}{params.get('host') or 'localhost'}{port}/{params.get('dbname') or ''}"


def conninfo(url: str, *, password: str | None = None, tls: Mapping[str, str | None] | None = None) -> str:
    """The connection string for ``url`` with ``password`` and TLS options (``sslmode``,
    ``sslrootcert``, ``sslcert``, ``sslkey``) added; a clear ``StoreError`` for a bad URL."""
    if not url.startswith(("postgresql://", "postgres://")):
        raise StoreError(
            "The store URL must start with postgresql:// (e.g. postgresql://graphmem@db.internal/graphmem)."
        )
    try:
        params: dict[str, Any] = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        # libpq's message quotes the URL, password and all: it is not repeated.
        raise StoreError(
            "The store URL cannot be read: write it as postgresql://user@host:port/database "
            "(with ?sslmode=... and other libpq options after it, if any)."
        ) from None
    if password:
        params["password"] = password
    for name, value in (tls or {}).items():
        if value:
            params[name] = value
    params.setdefault("connect_timeout", CONNECT_TIMEOUT_S)
    params.setdefault("application_name", "graphmem")
    with_tcp_bounds(params)  # a server gone silent fails a call in tens of seconds (postgres_liveness.py)
    return psycopg.conninfo.make_conninfo(**params)


def session_settings(conninfo: str) -> dict[str, str]:
    """What each new connection sets for its session: the statement timeout, and the server's
    end of the TCP bounds (``server_tcp_settings``)."""
    return {"statement_timeout": str(STATEMENT_TIMEOUT_MS), **server_tcp_settings(conninfo)}


def _configurer(conninfo: str) -> Callable[[psycopg.Connection[Any]], None]:
    names, values = map(list, zip(*session_settings(conninfo).items(), strict=True))

    def configure(conn: psycopg.Connection[Any]) -> None:  # one round trip
        configure_reads(conn)  # what another writer's rows may hold, read within bounds
        conn.execute(
            "SELECT set_config(n, v, false) FROM unnest(%s::text[], %s::text[]) AS s(n, v)", (names, values)
        )

    return configure


# The session settings each pooled connection was given (``rows(settings=...)``).
_session: weakref.WeakKeyDictionary[psycopg.Connection[Any], dict[str, str]] = weakref.WeakKeyDictionary()


class _Bound(threading.local):
    conn: psycopg.Connection[Any] | None = None
    after: list[Callable[[], None]] | None = None


class PostgresConnection:
    """A pool of connections to one PostgreSQL database (see the module doc)."""

    def __init__(
        self,
        url: str,
        *,
        password: str | None = None,
        tls: Mapping[str, str | None] | None = None,
        wait: bool = False,
    ):
        """``wait`` (a daemon's): a server that does not answer yet is waited for, its calls
        failing saying so meanwhile (``open_with``); else it fails here."""
        self.where = describe(url)
        self._conninfo = conninfo(url, password=password, tls=tls)
        self._pool = PostgresPool(self._conninfo, self.where, configure=_configurer(self._conninfo))
        self._bound = _Bound()
        self._closed = False
        self._checks: Callable[[], None] | None = None  # open_with's, until they passed
        self._checking = threading.RLock()
        self._checker: int | None = None  # the thread running them (their own statements pass)
        # A server that refuses this user fails here, clearly; one that is down too, unless waited for.
        self.reached = self._pool.open(wait=wait)

    def where_as(self, role: str) -> str:
        """Where this store is, logged in as ``role`` (``describe``): for a message that says
        which URL runs what this login may not."""
        return describe(self._conninfo, user=role)

    def open_with(self, checks: Callable[[], None]) -> None:
        """Run a store's ``checks`` at open (its schema, its vector column) now; or, when the
        server did not answer at open (``wait``), before the first statement once it does. Until
        they pass each call fails as they do: the server cannot be reached, the schema is old."""
        if self.reached:
            checks()
        else:
            self._checks = checks

    def _checked(self) -> None:
        if self._checks is None:  # the usual case, read without the lock
            return
        with self._checking:
            if self._checks is None or self._checker == threading.get_ident():
                return
            self._checker = threading.get_ident()
            try:
                self._checks()
                self._checks = None
            finally:
                self._checker = None

    def close(self) -> None:
        """Close every pooled connection; later calls fail with a ``StoreError``."""
        if not self._closed:
            self._closed = True
            self._pool.close()

    # -- running SQL ----------------------------------------------------------------

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        if self._closed:
            raise StoreError("The graph store is closed.")
        bound = self._bound.conn
        if bound is not None:
            yield bound
            return
        self._checked()
        conn = self._pool.get()
        if conn is None:
            raise StoreError(
                f"All {POOL_MAX} connections to the PostgreSQL store at {self.where} stayed busy for "
                f"{BUSY_WAIT_S:.0f} s (this process's other calls held them): try again."
            )
        try:
            yield conn
        finally:
            self._pool.put(conn)

    @contextmanager
    def translated(self) -> Iterator[None]:
        """PostgreSQL's errors inside the block raised as graphmem's (see the module doc)."""
        try:
            yield
        except pg_errors.UniqueViolation as exc:
            if exc.diag.constraint_name == "memories_pkey":  # row-level security hid the holder
                taken = (exc.diag.message_detail or "").partition("=(")[2].partition(")")[0]
                which = f"Memory id {taken} is" if taken else "A memory id of this call is"
                raise StoreError(
                    f"{which} taken by a memory you cannot see (another person's global memory, "
                    'docs/team.md "Scopes") or by one stored at the same moment: nothing of this call '
                    "was kept. Importing a teammate's export? Import what the project shares: their "
                    "`graphmem export --project --to .graphmem` (a full export holds their own global "
                    "memories too)."
                ) from None
            raise StoreError(f"Already stored: {first_line(exc)}.") from None
        except pg_errors.ReadOnlySqlTransaction:
            raise StoreError(
                f"The PostgreSQL store at {self.where} is read only (a replica, or a read-only role): "
                "point writers at the primary with a role that may write."
            ) from None
        except pg_errors.InsufficientPrivilege as exc:
            raise StoreError(
                f"The PostgreSQL role may not do this at {self.where}: {first_line(exc)}. "
                "docs/team.md shows the grants of the writer and read-only roles."
            ) from None
        except (pg_errors.DeadlockDetected, pg_errors.SerializationFailure):
            # Two writers locked the same rows in opposite orders: the database rolled this one back.
            raise StoreConflictError(
                f"This call met another writer's at the same moment on the PostgreSQL store at {self.where}: "
                "nothing of it was kept; try again."
            ) from None
        except pg_errors.QueryCanceled:
            raise StoreError(f"A query to the PostgreSQL store at {self.where} took too long.") from None
        except ServerSilent as exc:  # its connection closed; the idle ones too, unasked
            raise self._pool.silent(exc) from None
        except psycopg.OperationalError as exc:
            self._pool.check_idle()  # the other idle connections are likely gone too: closed now
            raise StoreError(
                f"Lost the connection to the PostgreSQL store at {self.where}: {first_line(exc)}. "
                "Nothing of the interrupted call was kept; try again."
            ) from None
        except psycopg.Error as exc:
            raise StoreError(f"The PostgreSQL store failed: {first_line(exc)}.") from None

    def rows(
        self,
        sql: str,
        params: Mapping[str, Any] | Sequence[Any] | None = None,
        *,
        settings: Mapping[str, str] | None = None,
        planned_each_time: bool = False,
    ) -> list[tuple[Any, ...]]:
        """The rows of one statement; ``settings``: server settings it runs under (see the module
        doc); ``planned_each_time``: never prepared, so the server plans it for its parameters'
        values each time (a prepared statement may be run on a generic plan, made for none)."""
        # A read outside a transaction may be asked again (it changes nothing), once per pooled
        # connection the server may have dropped.
        again = POOL_MAX if self._bound.conn is None and sql.startswith("SELECT") else 0
        with self.translated():
            while True:
                try:
                    with self._connection() as conn:
                        if settings:
                            self._apply(conn, settings)
                        return conn.execute(
                            sql, params, prepare=False if planned_each_time else None
                        ).fetchall()
                except (pg_errors.QueryCanceled, ServerSilent):  # asked again, it would wait as long
                    raise
                except psycopg.OperationalError:
                    if again <= 0:
                        raise
                    again -= 1
                    log.info("a pooled connection to %s was dropped; reading again", self.where)
                    self._pool.check_idle()

    def _apply(self, conn: psycopg.Connection[Any], settings: Mapping[str, str]) -> None:
        """Give ``conn`` ``settings``: for the open transaction only, inside one (a rollback
        would undo a session setting unseen); else for its session, once."""
        local = self._bound.conn is not None
        has = {} if local else _session.setdefault(conn, {})
        changed = {name: value for name, value in settings.items() if has.get(name) != value}
        if not changed:
            return
        names, values = list(changed), list(changed.values())
        conn.execute(
            "SELECT set_config(n, v, %s) FROM unnest(%s::text[], %s::text[]) AS s(n, v)",
            (local, names, values),
        )
        has.update(changed)

    def run(self, sql: str, params: Mapping[str, Any] | Sequence[Any] | None = None) -> int:
        """Run one statement; the rows it changed."""
        with self.translated(), self._connection() as conn:
            return conn.execute(sql, params).rowcount

    def many(self, sql: str, rows: Sequence[Mapping[str, Any]]) -> None:
        """Run one statement for each of ``rows``."""
        if not rows:
            return
        with self.translated(), self._connection() as conn:
            if len(rows) == 1:  # a remember's: executemany's pipeline costs twice a plain statement
                conn.execute(sql, rows[0])
                return
            with conn.cursor() as cursor:
                cursor.executemany(sql, rows)

    # -- transactions ------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """The writes inside the block are committed together, once, when it ends (durable
        then), or none of them when it raises; inside an open transaction, part of that one.
        Other threads do not wait: they see the writes once committed (PostgreSQL's MVCC)."""
        if self._bound.conn is not None:
            yield
            return
        with self.translated(), self._connection() as conn:
            self._bound.conn, self._bound.after = conn, []
            try:
                with conn.transaction():
                    yield
            except BaseException:
                self._bound.after = None
                raise
            finally:
                self._bound.conn = None
            actions, self._bound.after = self._bound.after or [], None
        for action in actions:
            action()

    @property
    def in_transaction(self) -> bool:
        """Whether this thread is inside a ``transaction`` block."""
        return self._bound.conn is not None

    def then(self, action: Callable[[], None]) -> None:
        """Run ``action`` now, or after the open transaction of this thread commits."""
        if self._bound.after is None:
            action()
        else:
            self._bound.after.append(action)

    @contextmanager
    def session(self) -> Iterator[psycopg.Connection[Any] | None]:
        """A pooled connection of its own for the block (session-level advisory locks), given
        back at its end with its locks released; None when every connection stays busy."""
        self._checked()
        holder = self._pool.get()
        if holder is None:
            yield None
            return
        try:
            yield holder
        finally:
            with suppress(psycopg.Error):
                holder.execute("SELECT pg_advisory_unlock_all()")
            self._pool.put(holder)

    # -- metadata -----------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        rows = self.rows("SELECT value FROM graphmem_meta WHERE key = %s", (key,))
        return str(rows[0][0]) if rows else None

    def set_meta(self, key: str, value: str) -> None:
        self.run(
            "INSERT INTO graphmem_meta (key, value) VALUES (%s, %s) "
            "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            (key, value),
        )
