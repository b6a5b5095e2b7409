"""The memories' change feed of a team's store (schema 18): what changed since a reader last looked.

A daemon keeps a full-text index of the memories beside it (``postgres_lexical.py``); the feed
is how it learns what other daemons, CLIs and bots wrote. Every memory row carries a change
number (``changed``, from the sequence ``memory_changes``) and the id of the transaction that
wrote it (``changed_xid``, ``pg_current_xact_id()``), both set by the trigger
``graphmem_memory_changed`` at each insert and at each update of a column the index reads (the
text, category, scope, project, status, branch, creation time and owner: a vector written
leaves them as they were). A deletion leaves a tombstone in ``memory_removals`` (the id, its
change number and transaction), and so does a change of a memory's owner or scope (an
administrator's): who saw it before may no longer.

**Catching up without skipping a late commit.** Sequence values commit out of order: a
transaction that took number 5 may commit after one that took 6 was read. So a reader keeps
a :class:`Position`: the largest number it has read (``cursor``) and the snapshot it read
under (the transactions in flight, ``xip``, and the first not yet begun, ``xmax``, read in the
same statement as the rows), and next asks for the rows numbered past the cursor or written by
a transaction its snapshot did not see (``changed_xid = ANY(xip) OR changed_xid >= xmax``). The
trigger takes the transaction's id before the number, so a number below the cursor was taken
by a transaction begun before that snapshot: committed in it (read), or in flight (asked
again). Each of the three conditions is an index's range.

**Who sees what.** Row-level security limits the rows a role reads to those it may see, and
the tombstones carry the scope and owner the memory had, under the memories' own rule
(``SEEN``): a role learns only of the removal of a memory it saw. The id alone of another's
private memory is never shown. Tombstones are written by the trigger (``SECURITY DEFINER``)
and only read by the team's roles (no policy lets them write one): a writer's psql session
can neither forge a removal nor hide one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from graphmem.adapters.postgres_connection import PostgresConnection
from graphmem.adapters.postgres_rows import MEMORY_RETURN, memory_from_row
from graphmem.core.models import MemoryRecord

FEED_TOKEN_KEY = "change_feed"  # graphmem_meta: this database's feed, new at each migration to 18

# The columns a memory's full-text index entry is made of: an update that changes none of them
# (a vector, a reinforcement count) takes no change number.
INDEXED = ("text", "category", "scope", "project", "status", "branch", "created_at", "owner")
_NEW = ", ".join(f"NEW.{name}" for name in INDEXED)
_OLD = ", ".join(f"OLD.{name}" for name in INDEXED)

CHANGE_FEED_18 = f"""
CREATE SEQUENCE memory_changes;
ALTER TABLE memories ADD COLUMN changed bigint, ADD COLUMN changed_xid xid8;
CREATE INDEX memories_changed ON memories (changed);
CREATE INDEX memories_changed_xid ON memories (changed_xid);
CREATE TABLE memory_removals (
    id text NOT NULL,
    changed bigint NOT NULL,
    changed_xid xid8 NOT NULL,
    scope text NOT NULL,
    owner text
);
CREATE INDEX memory_removals_changed ON memory_removals (changed);
CREATE INDEX memory_removals_changed_xid ON memory_removals (changed_xid);
ALTER TABLE memory_removals ENABLE ROW LEVEL SECURITY;
CREATE POLICY graphmem_seen ON memory_removals FOR SELECT
    USING (scope <> 'global' OR owner IS NULL OR owner = current_user::text);
GRANT SELECT ON memory_removals TO PUBLIC;
DO $migration$ BEGIN
EXECUTE format(
    'CREATE FUNCTION %1$I.graphmem_memory_changed() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER '
    'SET search_path = pg_catalog, pg_temp AS $f$ DECLARE xid xid8; BEGIN '
    'IF TG_OP = ''UPDATE'' AND ({_NEW}) IS NOT DISTINCT FROM ({_OLD}) THEN '
    'NEW.changed := OLD.changed; NEW.changed_xid := OLD.changed_xid; RETURN NEW; END IF; '
    'xid := pg_current_xact_id(); '
    'IF TG_OP = ''DELETE'' OR (TG_OP = ''UPDATE'' '
    'AND (OLD.scope, OLD.owner) IS DISTINCT FROM (NEW.scope, NEW.owner)) THEN '
    'INSERT INTO %1$I.memory_removals (id, changed_xid, changed, scope, owner) '
    'VALUES (OLD.id, xid, nextval(%2$L::regclass), OLD.scope, OLD.owner); END IF; '
    'IF TG_OP = ''DELETE'' THEN RETURN NULL; END IF; '
    'NEW.changed_xid := xid; NEW.changed := nextval(%2$L::regclass); RETURN NEW; END $f$',
    current_schema(), quote_ident(current_schema()) || '.memory_changes');
END $migration$;
CREATE TRIGGER graphmem_memory_changed BEFORE INSERT OR UPDATE ON memories
    FOR EACH ROW EXECUTE FUNCTION graphmem_memory_changed();
CREATE TRIGGER graphmem_memory_removed AFTER DELETE ON memories
    FOR EACH ROW EXECUTE FUNCTION graphmem_memory_changed();
INSERT INTO graphmem_meta (key, value) VALUES ('{FEED_TOKEN_KEY}', gen_random_uuid()::text)
    ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value;
"""
UNDO_CHANGE_FEED_18 = f"""
DELETE FROM graphmem_meta WHERE key = '{FEED_TOKEN_KEY}';
DROP TRIGGER graphmem_memory_removed ON memories;
DROP TRIGGER graphmem_memory_changed ON memories;
DROP FUNCTION graphmem_memory_changed();
DROP TABLE memory_removals;
ALTER TABLE memories DROP COLUMN changed_xid, DROP COLUMN changed;
DROP SEQUENCE memory_changes;
"""


def _since(in_flight: bool) -> str:
    """The statement of ``ChangeFeed.since``; without the in-flight clause when there were none
    (an empty ``= ANY`` let the planner read every memory waiting for its vector instead)."""
    asked = "changed > %(cursor)s OR changed_xid >= %(xmax)s::xid8"
    if in_flight:
        asked += " OR changed_xid = ANY(%(xip)s::xid8[])"
    return (
        f"SELECT id, changed, false FROM memories WHERE {asked} "
        f"UNION ALL SELECT id, changed, true FROM memory_removals WHERE {asked} "
        "UNION ALL SELECT pg_current_snapshot()::text, NULL, NULL"
    )


_POSITION = (
    "SELECT pg_current_snapshot()::text, greatest("
    "(SELECT max(changed) FROM memories), (SELECT max(changed) FROM memory_removals), 0)"
)
# Every memory in the table's own order: one sequential scan, which on a table larger than a
# quarter of the server's buffers reads through a small ring of them. Pages of it in id order
# (an index scan, the heap in random order) read a million memories' 2.6 GB into the buffers,
# and pushed the whole HNSW index out of the team's server's 2 GB: the recalls after read it back.
_EVERYTHING = f"DECLARE graphmem_everything NO SCROLL CURSOR FOR SELECT {MEMORY_RETURN} FROM memories m"


@dataclass(frozen=True, slots=True)
class Position:
    """Where a reader of the feed stands (see the module doc): the largest change number read and
    the snapshot it was read under (its transactions in flight and the first not yet begun)."""

    cursor: int
    xip: tuple[int, ...]
    xmax: int

    @classmethod
    def of(cls, cursor: int, snapshot: str) -> Position:
        """At ``cursor``, read under ``snapshot`` (``pg_snapshot``'s text: ``xmin:xmax:xip,...``)."""
        _, xmax, xip = snapshot.split(":")
        return cls(cursor, tuple(int(x) for x in xip.split(",") if x), int(xmax))

    def dumps(self) -> str:
        return json.dumps({"cursor": self.cursor, "xip": list(self.xip), "xmax": self.xmax})

    @classmethod
    def loads(cls, text: str) -> Position:
        data = json.loads(text)
        return cls(int(data["cursor"]), tuple(int(x) for x in data["xip"]), int(data["xmax"]))


@dataclass(frozen=True, slots=True)
class Changes:
    """What the feed holds past a position: the memories written (ids, as they are now) and
    those removed, and the position after them."""

    written: Sequence[str]
    removed: Sequence[str]
    position: Position

    def __len__(self) -> int:
        return len(self.written) + len(self.removed)


class ChangeFeed:
    """Reads the change feed of the store on ``db`` as its login role sees it."""

    def __init__(self, db: PostgresConnection) -> None:
        self._db = db

    def token(self) -> str | None:
        """What names this database's feed: an index built from another's (a database made again
        under the same name, a migration rolled back and applied again) is built anew."""
        return self._db.get_meta(FEED_TOKEN_KEY)

    @contextmanager
    def everything(self, page: int) -> Iterator[tuple[Iterator[list[MemoryRecord]], Position]]:
        """Every memory the role sees, ``page`` at a time (to be read inside the block), and the
        position they are read at: one ``REPEATABLE READ`` transaction, so every page is of the
        snapshot the position was read under, and none holds a process for long (a million rows
        read at once kept the daemon's other threads from Python for seconds)."""
        with self._db.transaction():
            self._db.run("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            snapshot, top = self._db.rows(_POSITION)[0]
            self._db.run(_EVERYTHING)  # closed with the transaction
            yield self._pages(page), Position.of(int(top), str(snapshot))

    def _pages(self, page: int) -> Iterator[list[MemoryRecord]]:
        while rows := self._db.rows(f"FETCH FORWARD {int(page)} FROM graphmem_everything"):
            yield [memory_from_row(row) for row in rows]

    def since(self, position: Position) -> Changes:
        """What changed past ``position`` (one statement; see the module doc)."""
        rows = self._db.rows(
            _since(bool(position.xip)),
            {"cursor": position.cursor, "xip": [str(x) for x in position.xip], "xmax": str(position.xmax)},
        )
        *found, (snapshot, _, _) = rows
        written = [str(i) for i, _, gone in found if not gone]
        removed = [str(i) for i, _, gone in found if gone]
        cursor = max([position.cursor, *(int(n) for _, n, _ in found)])
        return Changes(written, removed, Position.of(cursor, str(snapshot)))
