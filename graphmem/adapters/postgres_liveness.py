"""How long graphmem waits for a PostgreSQL server that went silent: tens of seconds, not the
kernel's TCP retransmission timeout (about 15 minutes).

A network partition (a VPN that dropped, a laptop that changed networks, a firewall that lost
the connection's state) drops the server's packets without closing anything: a statement sent
on a connection made before waits for an answer that never comes. Two bounds, both read from
the connection's libpq parameters, so a URL's own (``?keepalives_idle=30``) win over
:func:`with_tcp_bounds`'s defaults:

- the kernel's: TCP keepalives and ``tcp_user_timeout`` close a connection whose direct peer
  stops answering (about 25 s with the defaults). They cannot see past a proxy, tunnel or
  pooler on the way (an SSH tunnel, a cloud SQL proxy, PgBouncer), which answers for the server;
- graphmem's (:class:`WatchedConnection`): a statement that waited ``keepalives_idle`` seconds
  for its answer has the server asked, on a connection of its own through the same path,
  whether it still answers (:class:`Liveness`); the statement waits on as long as it does, and
  is given up as soon as it does not (the connection is closed, never lent again).

Why not a ``statement_timeout`` (or any deadline on the statement): a partitioned server cannot
tell graphmem that it cancelled anything, and a deadline short enough for a recall (tens of
seconds) would kill a bootstrap's, an import's or an index build's long statements on a server
that is merely busy. A server that answers is never given up on here; one that does not is
given up on whatever the statement.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import MutableMapping
from typing import Any

import psycopg
import psycopg.conninfo
from psycopg import errors as pg_errors
from psycopg.abc import RV, PQGen
from psycopg.rows import TupleRow

log = logging.getLogger(__name__)

# libpq's TCP keepalives: a connection idle this long has its peer probed by the kernel, every
# KEEPALIVES_INTERVAL_S, given up after KEEPALIVES_COUNT probes unanswered; graphmem checks the
# server of a statement waiting this long (see the module doc).
KEEPALIVES_IDLE_S = 10
KEEPALIVES_INTERVAL_S = 5
KEEPALIVES_COUNT = 3
# Data sent but not acknowledged this long closes the connection (the kernel's bound on a
# statement sent into a partition): the keepalives' 10 + 3 x 5 s.
TCP_USER_TIMEOUT_MS = 25_000
# The server checks' own bound when the URL sets connect_timeout=0 (libpq: wait for ever).
CHECK_TIMEOUT_S = 5


def with_tcp_bounds(params: MutableMapping[str, Any]) -> None:
    """Add graphmem's TCP keepalives and ``tcp_user_timeout`` to libpq ``params``, keeping
    whichever of them the URL sets."""
    params.setdefault("keepalives", 1)
    params.setdefault("keepalives_idle", KEEPALIVES_IDLE_S)
    params.setdefault("keepalives_interval", KEEPALIVES_INTERVAL_S)
    params.setdefault("keepalives_count", KEEPALIVES_COUNT)
    params.setdefault("tcp_user_timeout", TCP_USER_TIMEOUT_MS)


def server_tcp_settings(conninfo: str) -> dict[str, str]:
    """The same bounds for the server's end of the connection (its session settings): a client
    that went silent holding a transaction or an advisory lock has its backend ended within
    them, so other daemons do not wait hours (the server's kernel default) for its locks.
    Empty when the URL turns keepalives off (``keepalives=0``)."""
    params = psycopg.conninfo.conninfo_to_dict(conninfo)
    if str(params.get("keepalives", "1")) == "0":
        return {}
    names = {
        "keepalives_idle": "tcp_keepalives_idle",
        "keepalives_interval": "tcp_keepalives_interval",
        "keepalives_count": "tcp_keepalives_count",
        "tcp_user_timeout": "tcp_user_timeout",
    }
    return {server: str(params[client]) for client, server in names.items() if params.get(client) is not None}


class ServerSilent(psycopg.OperationalError):
    """A statement's server stopped answering (see the module doc); its connection is closed."""


class Liveness:
    """Whether the server of one pool's connections still answers: a new connection, made
    through the same path within ``connect_timeout``. One check at a time for all the pool's
    waiting statements, and one that succeeded stands for :attr:`after_s` seconds."""

    def __init__(self, conninfo: str) -> None:
        self._conninfo = conninfo
        params = psycopg.conninfo.conninfo_to_dict(conninfo)
        # keepalives=0 turns graphmem's checks off with the kernel's.
        self.enabled = str(params.get("keepalives", "1")) != "0"
        self.after_s = float(_number(params.get("keepalives_idle"), KEEPALIVES_IDLE_S) or KEEPALIVES_IDLE_S)
        self.timeout_s = _number(params.get("connect_timeout"), CHECK_TIMEOUT_S) or CHECK_TIMEOUT_S
        self._lock = threading.Lock()
        self._answered = -float("inf")  # time.monotonic() of the last check that got an answer

    def answers(self) -> bool:
        """Whether the server answers now: False only when a new connection to it timed out.
        A server that refuses this one (too many clients, shutting down) has answered."""
        with self._lock:
            if time.monotonic() - self._answered < self.after_s:
                return True
            try:
                psycopg.connect(self._conninfo, connect_timeout=self.timeout_s).close()
            except pg_errors.ConnectionTimeout:
                return False
            except psycopg.Error as exc:  # it said no, or the host refused: not silent
                log.debug("the server check was refused: %s", exc)
            self._answered = time.monotonic()
            return True


def _number(value: object, default: int) -> int:
    try:
        return int(str(value)) if value is not None else default
    except ValueError:  # libpq refuses it when connecting, saying why
        return default


class WatchedConnection(psycopg.Connection[TupleRow]):
    """A connection whose waits for its server are bounded by :attr:`liveness` (set by the pool
    that made it; None: waits as psycopg's do)."""

    liveness: Liveness | None = None

    def wait(self, gen: PQGen[RV], interval: float = 0.1, timeout: float | None = None) -> RV:
        watch = self.liveness
        if watch is None or not watch.enabled or timeout is not None:  # psycopg's own bounded waits
            return super().wait(gen, interval, timeout)
        while True:
            try:
                # The generator is left where it waits when this returns early: waited on again.
                return super().wait(gen, interval, watch.after_s)
            except pg_errors._WaitTimeout:
                if watch.answers():
                    continue
            self.pgconn.finish()  # closed: never lent again, the server's backend ended by its keepalives
            raise ServerSilent(
                f"it stopped answering: nothing for {watch.after_s:.0f} s, nor to a new connection "
                f"within {watch.timeout_s} s"
            )
