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
from graphmem.adapters.postgres_vector_parts import INDEXED_SINCE, drop_indexes
from graphmem.errors import InvalidInputError, StoreError, StoreMismatchError


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


@dataclass(frozen=True, slots=True)
class SchemaOwner:
    """Who changes graphmem's schema on a team's store (docs/team.md, "Setting it up"): the role
    that owns ``table`` (``of``: "owns graphmem's tables"), or, before the first migration made
    it, the database's owner ("owns the database"), who applies the schema; ``login``: the role
    logged in, and whether it ``may`` act as the owner (a member of it or a superuser; with no
    table yet, a role that may create tables in the schema)."""

    name: str
    of: str
    login: str
    may: bool

    def runs(self, conn: PostgresConnection, command: str) -> str:
        """``command`` (a ``graphmem`` command line) as the owner runs it, for a message: with
        the store's URL logged in as the owner."""
        return f"`GRAPHMEM_STORE_URL={conn.where_as(self.name)} {command}`"

    def refused(self, conn: PostgresConnection, what: str, command: str) -> str:
        """The end of a message refusing ``what`` to ``login``: who may, and ``command`` as they
        run it."""
        return (
            f"only the role that {self.of} ({self.name}) may {what}, not {self.login}: run "
            f'{self.runs(conn, command)} as {self.name} (docs/team.md, "Setting it up").'
        )


def schema_owner(conn: PostgresConnection, table: str = "graphmem_migrations") -> SchemaOwner:
    """Who owns ``table``, or the database while it does not exist (see ``SchemaOwner``)."""
    name, made, login, may = conn.rows(
        "SELECT pg_get_userbyid(coalesce(c.relowner, d.datdba)), c.oid IS NOT NULL, current_user::text, "
        "CASE WHEN c.oid IS NULL THEN coalesce(has_schema_privilege(current_schema(), 'CREATE'), false) "
        "ELSE pg_has_role(c.relowner, 'USAGE') END "
        "FROM pg_database d LEFT JOIN pg_class c ON c.oid = to_regclass(%s) "
        "WHERE d.datname = current_database()",
        (table,),
    )[0]
    of = "owns graphmem's tables" if made else "owns the database"
    return SchemaOwner(str(name), of, str(login), bool(may))


def check_schema(conn: PostgresConnection) -> None:
    """Refuse a database whose schema is missing, older or newer than this graphmem's."""
    version = schema_version(conn)
    if version == SCHEMA_VERSION:
        return
    if version > SCHEMA_VERSION:
        applied, forged = migrated_versions(conn)
        # A migration writes its version after every one before it: one past a gap was written by hand.
        by_hand = (
            f" graphmem_migrations lacks version {applied + 1}: if no graphmem applied version "
            f"{forged[-1]}, its row was written by hand, and the role that owns the schema removes it "
            f"(`DELETE FROM graphmem_migrations WHERE version > {applied}`)."
            if forged
            else ""
        )
        raise StoreMismatchError(
            f"The store at {conn.where} has schema version {version}, newer than this graphmem "
            f"understands ({SCHEMA_VERSION}). Upgrade graphmem, or roll the schema back with "
            f"`graphmem migrate --to {SCHEMA_VERSION}` from the graphmem that applied it." + by_hand
        )
    what = "has no graphmem schema yet" if version == 0 else f"has schema version {version}"
    owner = schema_owner(conn)
    if not owner.may:  # a writer or reader before the owner migrated: say who migrates, and how
        raise StoreMismatchError(
            f"The store at {conn.where} {what}; this graphmem needs version {SCHEMA_VERSION}, and "
            + owner.refused(conn, "apply it" if version == 0 else "migrate it", "graphmem migrate")
        )
    raise StoreMismatchError(
        f"The store at {conn.where} {what}; this graphmem needs version {SCHEMA_VERSION}. "
        "Run `graphmem migrate` (with the role that owns the schema) to apply it."
    )


def migrated_versions(conn: PostgresConnection) -> tuple[int, list[int]]:
    """The version the migrations reached (the last of the unbroken run from 1: each writes its
    row after every one before it) and the versions past a gap, which no migration wrote."""
    held = {int(row[0]) for row in conn.rows("SELECT version FROM graphmem_migrations WHERE version > 0")}
    applied = next(v for v in range(1, len(held) + 2) if v not in held) - 1
    return applied, sorted(v for v in held if v > applied)


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
        before = schema_version(conn)
        if before > SCHEMA_VERSION:
            check_schema(conn)  # newer than this graphmem: it cannot roll that back
        todo = steps(before, goal)
        if todo:  # a schema up to date is no one's to change: a writer's migrate says so too
            owner = schema_owner(conn)
            if not owner.may:
                command = "graphmem migrate" if target is None else f"graphmem migrate --to {target}"
                state = "has no graphmem schema yet" if before == 0 else f"is at schema version {before}"
                what = "apply it" if before == 0 else "migrate it"
                raise StoreError(
                    f"The store at {conn.where} {state}, and " + owner.refused(conn, what, command)
                )
            with conn.transaction():  # two processes creating it at once would collide
                conn.run("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK_KEY,))
                conn.run(VERSION_TABLE)
        done: list[tuple[int, str, bool]] = []
        for migration, up in todo:
            with conn.transaction():
                conn.run("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK_KEY,))
                current = schema_version(conn)
                if (up and current != migration.version - 1) or (not up and current != migration.version):
                    continue  # another process took this step meanwhile
                if not up and goal < INDEXED_SINCE:  # the index goes: none is built again on the way
                    conn.run(drop_indexes())
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


__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "MigrationReport",
    "SchemaOwner",
    "check_schema",
    "migrate",
    "migrated_versions",
    "schema_owner",
    "schema_version",
]
