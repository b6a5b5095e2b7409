"""Applying and rolling back the PostgreSQL schema's migrations (``graphmem migrate``), and the
check a store makes at open that its schema is the one this graphmem knows.

Each step runs in one transaction holding an advisory lock (``SCHEMA_LOCK_KEY``) and re-reads
the version under it, so that two processes migrating at once apply each step once; a step
that fails leaves the schema at the version before it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from graphmem.adapters.postgres_connection import PostgresConnection
from graphmem.adapters.postgres_schema import (
    MIGRATIONS,
    SCHEMA_LOCK_KEY,
    SCHEMA_VERSION,
    VERSION_TABLE,
    steps,
)
from graphmem.errors import InvalidInputError, StoreMismatchError


@dataclass(frozen=True, slots=True)
class MigrationReport:
    """What ``migrate`` did: the version before and after, and each step as (version, summary, up)."""

    where: str
    before: int
    after: int
    applied: tuple[tuple[int, str, bool], ...]


def schema_version(conn: PostgresConnection) -> int:
    """The schema version of the database (0: no graphmem schema yet)."""
    if not conn.rows("SELECT to_regclass('graphmem_migrations') IS NOT NULL")[0][0]:
        return 0
    return int(conn.rows("SELECT coalesce(max(version), 0) FROM graphmem_migrations")[0][0])


def check_schema(conn: PostgresConnection) -> None:
    """Refuse a database whose schema is missing, older or newer than this graphmem's."""
    version = schema_version(conn)
    if version == SCHEMA_VERSION:
        return
    if version > SCHEMA_VERSION:
        raise StoreMismatchError(
            f"The store at {conn.where} has schema version {version}, newer than this graphmem "
            f"understands ({SCHEMA_VERSION}). Upgrade graphmem, or roll the schema back with "
            f"`graphmem migrate --to {SCHEMA_VERSION}` from the graphmem that applied it."
        )
    what = "has no graphmem schema yet" if version == 0 else f"has schema version {version}"
    raise StoreMismatchError(
        f"The store at {conn.where} {what}; this graphmem needs version {SCHEMA_VERSION}. "
        "Run `graphmem migrate` (with the role that owns the schema) to apply it."
    )


def migrate(
    url: str,
    *,
    target: int | None = None,
    password: str | None = None,
    tls: Mapping[str, str | None] | None = None,
) -> MigrationReport:
    """Take the schema of the database at ``url`` to ``target`` (the newest when None), applying
    or rolling back one migration at a time."""
    goal = SCHEMA_VERSION if target is None else target
    if not 0 <= goal <= SCHEMA_VERSION:
        raise InvalidInputError(
            f"--to must be a schema version from 0 to {SCHEMA_VERSION} (0 removes graphmem's tables)."
        )
    conn = PostgresConnection(url, password=password, tls=tls)
    try:
        with conn.transaction():  # two processes creating it at once would collide
            conn.run("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK_KEY,))
            conn.run(VERSION_TABLE)
        before = schema_version(conn)
        if before > SCHEMA_VERSION:
            check_schema(conn)  # newer than this graphmem: it cannot roll that back
        done: list[tuple[int, str, bool]] = []
        for migration, up in steps(before, goal):
            with conn.transaction():
                conn.run("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK_KEY,))
                current = schema_version(conn)
                if (up and current != migration.version - 1) or (not up and current != migration.version):
                    continue  # another process took this step meanwhile
                conn.run(migration.up if up else migration.down)
                if up:
                    conn.run(
                        "INSERT INTO graphmem_migrations (version, summary) VALUES (%s, %s)",
                        (migration.version, migration.summary),
                    )
                else:
                    conn.run("DELETE FROM graphmem_migrations WHERE version = %s", (migration.version,))
            done.append((migration.version, migration.summary, up))
        return MigrationReport(conn.where, before, schema_version(conn), tuple(done))
    finally:
        conn.close()


__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "MigrationReport", "check_schema", "migrate", "schema_version"]
