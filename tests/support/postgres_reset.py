"""How a database the tests' PostgreSQL server lent is emptied for the next test
(``PostgresServer.give_back`` in ``support/postgres.py``): what a fresh copy of its template
holds, read once, and put back; the database lent again only when it then reads as that copy
(:data:`FINGERPRINT`), else dropped.

The connection that empties a database is kept while the database is in the pool: a
connection's start and its statements planned again cost the server more than the rest of a
reset. A test that ended every connection to its database (as a server dropping them would)
ended that one too: the reset makes another and goes on, where the database used to be dropped
and a new copy made for a later test (dropping a database and copying its template each wait
for the server's checkpoints).
"""

from __future__ import annotations

from typing import Any

import psycopg

# What a database is, as far as a test could tell it from a fresh copy of its template besides
# its rows: its schemas, extensions, relations (with owners, grants, options, row security and
# the planner's row and page counts, which graphmem's text search reads), columns, indexes,
# constraints, policies, triggers, rules, views, functions, types, statistics objects, the
# number of column and extended statistics gathered, sequences' positions, its settings and
# grants, and the cluster-wide objects a test could add for it. Compared as one digest.
FINGERPRINT = """
WITH ns AS (
    SELECT oid, nspname, nspowner, nspacl FROM pg_namespace
    WHERE nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')
      AND nspname !~ '^pg_(toast_)?temp_'
), rel AS (
    SELECT c.* FROM pg_class c JOIN ns ON ns.oid = c.relnamespace
), facts(fact) AS (
    SELECT format('schema %s %s %s', nspname, nspowner::regrole, nspacl) FROM ns
    UNION ALL SELECT format('extension %s %s %s', extname, extversion, extnamespace::regnamespace)
        FROM pg_extension
    UNION ALL SELECT format('relation %s %s %s %s %s %s %s %s %s %s %s %s', relnamespace::regnamespace,
            relname, relkind, relowner::regrole, relacl, reloptions, relrowsecurity,
            relforcerowsecurity, relpersistence, reltuples, relpages, relallvisible)
        FROM rel
    UNION ALL SELECT format('column %s %s %s %s %s %s %s %s', a.attrelid::regclass, a.attname,
            format_type(a.atttypid, a.atttypmod), a.attnotnull, pg_get_expr(d.adbin, d.adrelid),
            a.attidentity, a.attgenerated, a.attacl)
        FROM pg_attribute a JOIN rel ON rel.oid = a.attrelid
        LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE a.attnum > 0 AND NOT a.attisdropped
    UNION ALL SELECT format('index %s', pg_get_indexdef(i.indexrelid))
        FROM pg_index i JOIN rel ON rel.oid = i.indexrelid
    UNION ALL SELECT format('constraint %s %s %s', c.conrelid::regclass, c.conname,
            pg_get_constraintdef(c.oid))
        FROM pg_constraint c JOIN ns ON ns.oid = c.connamespace
    UNION ALL SELECT format('policy %s %s %s %s %s %s %s %s', schemaname, tablename, policyname,
            permissive, roles, cmd, qual, with_check)
        FROM pg_policies
    UNION ALL SELECT format('trigger %s', pg_get_triggerdef(t.oid))
        FROM pg_trigger t JOIN rel ON rel.oid = t.tgrelid WHERE NOT t.tgisinternal
    UNION ALL SELECT format('rule %s %s %s', schemaname, tablename, definition) FROM pg_rules
    UNION ALL SELECT format('view %s %s', oid::regclass, pg_get_viewdef(oid))
        FROM rel WHERE relkind IN ('v', 'm')
    UNION ALL SELECT format('function %s %s %s %s %s', p.oid::regprocedure, p.proowner::regrole, p.proacl,
            md5(p.prosrc), p.proconfig)
        FROM pg_proc p JOIN ns ON ns.oid = p.pronamespace
    UNION ALL SELECT format('type %s %s %s', t.oid::regtype, t.typowner::regrole, t.typacl)
        FROM pg_type t JOIN ns ON ns.oid = t.typnamespace
    UNION ALL SELECT format('statistics object %s', pg_get_statisticsobjdef(s.oid))
        FROM pg_statistic_ext s JOIN ns ON ns.oid = s.stxnamespace
    UNION ALL SELECT format('column statistics %s', count(*))
        FROM pg_statistic s JOIN rel ON rel.oid = s.starelid
    UNION ALL SELECT format('extended statistics %s', count(*))
        FROM pg_statistic_ext_data d JOIN pg_statistic_ext s ON s.oid = d.stxoid
        JOIN ns ON ns.oid = s.stxnamespace
    UNION ALL SELECT format('sequence %s %s %s', schemaname, sequencename, last_value) FROM pg_sequences
    UNION ALL SELECT format('settings %s %s', setrole, setconfig) FROM pg_db_role_setting
        WHERE setdatabase IN (0, (SELECT oid FROM pg_database WHERE datname = current_database()))
    UNION ALL SELECT format('database %s %s %s %s', datacl, datconnlimit, datallowconn, datistemplate)
        FROM pg_database WHERE datname = current_database()
    UNION ALL SELECT format('default privileges %s %s %s %s', defaclrole::regrole, defaclnamespace,
            defaclobjtype, defaclacl)
        FROM pg_default_acl
    UNION ALL SELECT format('large objects %s', count(*)) FROM pg_largeobject_metadata
    UNION ALL SELECT format('event triggers %s', count(*)) FROM pg_event_trigger
    UNION ALL SELECT format('publications %s', count(*)) FROM pg_publication
)
SELECT md5(string_agg(fact, E'\\n' ORDER BY fact)) FROM facts
"""

# The user tables, indexes and column types of a database.
TABLES = """
SELECT c.oid::regclass::text, pg_relation_size(c.oid) > 0 FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname !~ '^pg_' ORDER BY 1
"""
INDEXES = """
SELECT i.indexrelid::regclass::text FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname !~ '^pg_'
  AND NOT EXISTS (SELECT FROM pg_constraint k WHERE k.conindid = i.indexrelid)
"""
RELATION_STATS = """
SELECT n.nspname, c.relname, c.relpages, c.reltuples, c.relallvisible FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'i', 'm') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname !~ '^pg_'
"""
COLUMN_TYPES = """
SELECT a.attrelid::regclass::text, quote_ident(a.attname), format_type(a.atttypid, a.atttypmod)
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname !~ '^pg_' AND a.attnum > 0 AND NOT a.attisdropped
"""


class Reset:
    """How a copy of one template is emptied for the next test: what a fresh copy holds (its
    fingerprint, the rows of its tables that have some, its indexes, column types and the
    planner's counts of its relations), read once from a fresh copy (:meth:`of`)."""

    def __init__(
        self,
        fingerprint: str,
        rows: dict[str, bytes],
        indexes: frozenset[str],
        types: dict[tuple[str, str], str],
        stats: dict[tuple[str, str], tuple[int, float, int]],
        sequences: dict[str, int | None],
    ) -> None:
        self.fingerprint = fingerprint
        self.rows = rows  # table -> its rows (COPY's binary format), for the tables that have some
        self.indexes = indexes
        self.types = types
        # (schema, relation) -> (pages, tuples, pages all visible): a TRUNCATE sets them to
        # "never counted" (-1 tuples), a fresh copy has its template's
        self.stats = stats
        # sequence -> its last value (None: never read), restarted or set back where a test
        # moved one that a TRUNCATE did not restart (a default read by an insert that failed)
        self.sequences = sequences
        # database -> the connection that empties it, kept while it is in the pool: a
        # connection's start, and its statements planned again, cost the server more than
        # the rest of a reset
        self._kept: dict[str, psycopg.Connection[Any]] = {}

    @classmethod
    def of(cls, url: str) -> Reset:
        with psycopg.connect(url, autocommit=True, connect_timeout=30) as conn:
            rows = {}
            for table, _ in conn.execute(TABLES).fetchall():
                if conn.execute(f"SELECT EXISTS (SELECT FROM {table})").fetchone() != (True,):
                    continue
                data = bytearray()
                with conn.cursor().copy(f"COPY {table} TO STDOUT (FORMAT binary)") as copy:
                    for block in copy:
                        data += block
                rows[table] = bytes(data)
            indexes = frozenset(name for (name,) in conn.execute(INDEXES).fetchall())
            types = {(t, c): kind for t, c, kind in conn.execute(COLUMN_TYPES).fetchall()}
            stats, sequences = _relation_stats(conn), _sequences(conn)
            return cls(_fingerprint(conn), rows, indexes, types, stats, sequences)

    def reset(self, url: str) -> bool:
        """Make the database at ``url`` as a fresh copy was (:meth:`_empty`). True when it then
        reads as a fresh copy; else it is left to be dropped. A kept connection the test ended
        (with every connection to its database) is replaced by a new one."""
        try:
            conn = self._kept.get(url)
            if conn is not None:
                try:
                    self._empty(conn)
                except psycopg.OperationalError:
                    if not (conn.closed or conn.broken):
                        raise
                    self.forget(url)
                    conn = None
            if conn is None:
                conn = self._kept[url] = psycopg.connect(url, autocommit=True, connect_timeout=30)
                self._empty(conn)
            if _fingerprint(conn) == self.fingerprint:
                return True
        except psycopg.Error:
            pass
        self.forget(url)
        return False

    def _empty(self, conn: psycopg.Connection[Any]) -> None:
        """End the database's other connections, empty the tables written to (sequences
        restarted), undo what a store's open adds (the vector column's dimension and its
        index), put the template's rows back, forget the planner's statistics."""
        conn.execute(  # not waited for: the TRUNCATE below waits for their locks
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        with conn.transaction():
            # The tables written to (a table never written has no pages), and those whose rows
            # are put back: the others are as empty as the template's
            tables = [
                table for table, pages in conn.execute(TABLES).fetchall() if pages or table in self.rows
            ]
            if tables:
                conn.execute(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE")
            for (index,) in conn.execute(INDEXES).fetchall():
                if index not in self.indexes:
                    conn.execute(f"DROP INDEX {index}")
            for table, column, kind in conn.execute(COLUMN_TYPES).fetchall():
                wanted = self.types.get((table, column), kind)
                if wanted != kind:
                    conn.execute(f"ALTER TABLE {table} ALTER COLUMN {column} TYPE {wanted}")
            for table, data in self.rows.items():
                with conn.cursor().copy(f"COPY {table} FROM STDIN (FORMAT binary)") as copy:
                    copy.write(data)
            for sequence, value in _sequences(conn).items():
                wanted = self.sequences.get(sequence, value)
                if wanted is None and value is not None:
                    conn.execute(f"ALTER SEQUENCE {sequence} RESTART")
                elif wanted != value:
                    conn.execute("SELECT setval(%s::regclass, %s)", (sequence, wanted))
            conn.execute(
                "DELETE FROM pg_statistic WHERE starelid IN (SELECT c.oid FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname !~ '^pg_' "
                "AND n.nspname <> 'information_schema')"
            )
            conn.execute("DELETE FROM pg_statistic_ext_data")
            now = _relation_stats(conn)
            changed = [(*key, *value) for key, value in self.stats.items() if now.get(key) != value]
            if changed:
                conn.execute(
                    "SELECT pg_restore_relation_stats('schemaname', n, 'relname', r, "
                    "'relpages', p, 'reltuples', t, 'relallvisible', a) "
                    "FROM unnest(%s::text[], %s::text[], %s::int[], %s::real[], %s::int[]) "
                    "AS v(n, r, p, t, a)",
                    [list(column) for column in zip(*changed, strict=True)],
                )
        conn.execute("SELECT pg_stat_reset()")

    def forget(self, url: str) -> None:
        """Close the connection kept to the database at ``url`` (before it is dropped)."""
        conn = self._kept.pop(url, None)
        if conn is not None:
            conn.close()

    def close(self) -> None:
        for url in list(self._kept):
            self.forget(url)


def _relation_stats(conn: psycopg.Connection[Any]) -> dict[tuple[str, str], tuple[int, float, int]]:
    return {(n, r): (int(p), float(t), int(a)) for n, r, p, t, a in conn.execute(RELATION_STATS).fetchall()}


def _sequences(conn: psycopg.Connection[Any]) -> dict[str, int | None]:
    return {
        name: value
        for name, value in conn.execute(
            "SELECT format('%I.%I', schemaname, sequencename), last_value FROM pg_sequences"
        ).fetchall()
    }


def _fingerprint(conn: psycopg.Connection[Any]) -> str:
    found = conn.execute(FINGERPRINT).fetchone()
    assert found is not None
    return str(found[0])
