"""The connections of a PostgreSQL store: at most :data:`POOL_MAX`, each made by the call that
needs it, kept for the next call, checked before use when it sat idle, and never waited for
while the server is down.

A call takes the connection given back last; with none idle and fewer than :data:`POOL_MAX`
open, it connects itself, in its own thread, at once. So while the server is down a call
fails within libpq's ``connect_timeout`` (at once when the server's host refuses), with a
``StoreUnavailableError`` naming the server and what to check; and the first call after the
server is back makes the first new connection and goes through. The pool says once in the log
that the server cannot be reached, and once that it is reached again.

A server that goes silent under a connection (a network partition: nothing refuses, nothing
answers) is given up on within tens of seconds (``postgres_liveness.py``): the call waiting
fails with a ``StoreUnavailableError`` saying so, that connection is closed and the idle ones,
which went the same way, are closed unasked (checking each would wait as long again).

Why not ``psycopg_pool.ConnectionPool``: it makes connections on a worker thread of its own,
which after a failed attempt tries again 1, 2, 4, ... s later (up to its
``reconnect_timeout``), while callers wait in its queue. With the server stopped each call
waited out its whole timeout (30 s); once the server was back, calls kept failing with "all 8
connections were busy" until the pending attempt's delay ran out (16 to 94 s, measured). Its
``check`` cannot fail a call early either: a connection failing it is discarded and the call
waits on.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import pq
from psycopg.pq import TransactionStatus

from graphmem.adapters.postgres_liveness import Liveness, ServerSilent, WatchedConnection
from graphmem.errors import StoreError, StoreUnavailableError

log = logging.getLogger(__name__)

POOL_MAX = 8
# A connection idle in the pool longer than this is checked (a round trip) before it is used.
CHECK_IDLE_S = 5.0
# An idle connection unused this long is closed (the newest one is kept): the server's slots back.
MAX_IDLE_S = 600.0
# A connection this old is closed when given back (a failover's new address is then used).
MAX_AGE_S = 3600.0
# How long a call waits for one of POOL_MAX connections that other calls of this process hold.
BUSY_WAIT_S = 30.0


def first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message, without its final full stop."""
    text = str(exc).strip().splitlines()
    return text[0].rstrip(".") if text else type(exc).__name__


def check(conn: psycopg.Connection[Any]) -> None:
    """A round trip on ``conn`` (an empty statement); a ``psycopg.Error`` when it is gone."""
    conn.execute("")


class _NoAnswer(Exception):
    """The server does not answer at all (its reason): a daemon's store waits for it."""


@dataclass(frozen=True)
class _Idle:
    conn: psycopg.Connection[Any]
    returned: float  # time.monotonic() when given back


class PostgresPool:
    """Connections to one PostgreSQL database (see the module doc)."""

    def __init__(
        self,
        conninfo: str,
        where: str,
        *,
        configure: Callable[[psycopg.Connection[Any]], None],
        size: int = POOL_MAX,
    ) -> None:
        self.where = where  # the server, without the password (``describe``)
        self.size = size
        self._conninfo = conninfo
        self._configure = configure
        self._cond = threading.Condition()
        self._idle: list[_Idle] = []  # the last given back last
        self._open = 0  # connections open or being made, lent or idle
        self._born: weakref.WeakKeyDictionary[psycopg.Connection[Any], float] = weakref.WeakKeyDictionary()
        self._closed = False
        self._down: str | None = None  # why the server cannot be reached, while it cannot
        self._liveness = Liveness(conninfo)

    def open(self, *, wait: bool = False) -> bool:
        """Make the first connection, kept idle: a ``StoreUnavailableError`` saying why when the
        server cannot be reached or refuses this user (not logged: the caller shows it). With
        ``wait`` (a daemon's), a server that does not answer at all (down, starting, or the
        network to it) is logged once as an outage and False returned: calls fail saying so
        until it answers; one that answers and refuses (user, password, database) still raises."""
        with self._cond:
            self._open += 1
        try:
            conn = self._connect(at_open=True, wait=wait)
        except _NoAnswer as exc:
            self._went(str(exc))
            return False
        self.put(conn)
        return True

    def get(self, timeout: float = BUSY_WAIT_S) -> psycopg.Connection[Any] | None:
        """A connection for the caller alone until :meth:`put`; None when all :attr:`size` stayed
        busy for ``timeout`` seconds. Raises ``StoreUnavailableError`` when none can be made."""
        deadline = time.monotonic() + timeout
        while True:
            with self._cond:
                if self._closed:
                    raise StoreError("The graph store is closed.")
                idle = self._idle.pop() if self._idle else None
                if idle is None:
                    if self._open >= self.size:
                        left = deadline - time.monotonic()
                        if left <= 0:
                            return None
                        self._cond.wait(left)
                        continue
                    self._open += 1
            if idle is None:
                return self._connect()
            if time.monotonic() - idle.returned <= CHECK_IDLE_S:
                return idle.conn
            try:
                check(idle.conn)
            except ServerSilent as exc:  # the others went the same way: closed unasked
                self._discard(idle.conn)
                raise self.silent(exc) from None
            except psycopg.Error:  # the server restarted, failed over or is down: the next one
                self._discard(idle.conn)
                continue
            self._reached()
            return idle.conn

    def put(self, conn: psycopg.Connection[Any]) -> None:
        """Give back a connection :meth:`get` lent: kept for the next call, or closed when it is
        broken, inside a transaction, too old, or the pool is closed."""
        now = time.monotonic()
        usable = (
            not conn.closed
            and not conn.broken
            and conn.info.transaction_status == TransactionStatus.IDLE
            and now - self._born.get(conn, now) < MAX_AGE_S
        )
        stale: list[psycopg.Connection[Any]] = []
        with self._cond:
            if usable and not self._closed:
                self._idle.append(_Idle(conn, now))
                while len(self._idle) > 1 and now - self._idle[0].returned > MAX_IDLE_S:
                    stale.append(self._idle.pop(0).conn)
                    self._open -= 1
            else:
                stale.append(conn)
                self._open -= 1
            self._cond.notify()
        for old in stale:
            old.close()

    def check_idle(self) -> None:
        """Check every idle connection now, closing those the server dropped (one was found
        dropped: the others likely are too)."""
        with self._cond:
            idle, self._idle = self._idle, []
        for number, entry in enumerate(idle):
            try:
                check(entry.conn)
            except ServerSilent:  # the others went the same way: closed unasked
                for gone in idle[number:]:
                    self._discard(gone.conn)
                return
            except psycopg.Error:
                self._discard(entry.conn)
            else:
                self.put(entry.conn)

    def silent(self, exc: ServerSilent) -> StoreUnavailableError:
        """The error of a call whose connection's server went silent (``exc``): the idle
        connections are closed unasked (they went the same way), the outage logged once."""
        with self._cond:
            idle, self._idle = self._idle, []
            self._open -= len(idle)
            self._cond.notify_all()
        for entry in idle:
            entry.conn.close()
        reason = first_line(exc)
        self._went(reason)
        return StoreUnavailableError(
            f"The PostgreSQL store at {self.where} cannot be reached: {reason}. Check that the "
            "server runs and that this machine reaches it (network, VPN, firewall, a proxy or "
            "tunnel on the way). If the call was a write, look whether it was kept once the server "
            "is back; the next call after that goes through."
        )

    def counts(self) -> tuple[int, int]:
        """How many connections are open (lent, idle or being made), and how many are idle."""
        with self._cond:
            return self._open, len(self._idle)

    def close(self) -> None:
        """Close the idle connections; those lent are closed when given back. Later calls fail."""
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self._open -= len(idle)
            self._cond.notify_all()
        for entry in idle:
            entry.conn.close()

    # -- making connections -------------------------------------------------------------

    def _connect(self, *, at_open: bool = False, wait: bool = False) -> psycopg.Connection[Any]:
        """A new connection, its slot counted already (given back when none can be made).
        ``wait``: ``_NoAnswer`` when the server does not answer at all (``open``)."""
        try:
            conn = WatchedConnection.connect(self._conninfo, autocommit=True)
            conn.liveness = self._liveness
            try:
                self._configure(conn)
            except BaseException:
                conn.close()
                raise
        except psycopg.Error as exc:
            self._release()
            if wait and not _answers(self._conninfo):
                raise _NoAnswer(first_line(exc)) from None
            raise self._unavailable(exc, at_open=at_open) from None
        except BaseException:
            self._release()
            raise
        self._born[conn] = time.monotonic()
        self._reached()
        return conn

    def _release(self) -> None:
        with self._cond:
            self._open -= 1
            self._cond.notify()

    def _discard(self, conn: psycopg.Connection[Any]) -> None:
        conn.close()
        self._release()

    def _unavailable(self, exc: psycopg.Error, *, at_open: bool) -> StoreUnavailableError:
        reason = first_line(exc)
        if at_open:
            return StoreUnavailableError(
                f"Cannot connect to the PostgreSQL store at {self.where}: {reason}. Check that the "
                "server runs and is reachable, and the user, password and TLS settings ([store] in "
                "the config file, or GRAPHMEM_STORE_URL and GRAPHMEM_STORE_PASSWORD)."
            )
        self._went(reason)
        return StoreUnavailableError(
            f"The PostgreSQL store at {self.where} cannot be reached: {reason}. Check that the "
            "server runs and that this machine reaches it (host, port, firewall), and the user, "
            "password and TLS settings ([store] in the config file, or GRAPHMEM_STORE_URL and "
            "GRAPHMEM_STORE_PASSWORD). Calls fail at once until it is back; the first call after "
            "that goes through."
        )

    def _went(self, reason: str) -> None:
        """The server cannot be reached: said once, until it is reached again."""
        with self._cond:
            went, self._down = self._down is None, reason
        if went:
            log.error(
                "the PostgreSQL store at %s cannot be reached (%s): calls fail until it is back",
                self.where,
                reason,
            )

    def _reached(self) -> None:
        if self._down is None:  # the usual case, read without the lock
            return
        with self._cond:
            was, self._down = self._down, None
        if was is not None:
            log.warning("the PostgreSQL store at %s is reachable again", self.where)


def _answers(conninfo: str) -> bool:
    """Whether a server answers at ``conninfo`` at all, even to refuse this user (libpq's
    ``PQping``: within ``connect_timeout``, holding the GIL, so only for a daemon's start)."""
    return pq.PGconn.ping(conninfo.encode()) not in (pq.Ping.NO_RESPONSE, pq.Ping.REJECT)
