"""When a read of many keys joins them with the tables, and when it looks each key up.

``KuzuConnection.keyed_rows`` looks each key up (its node by the primary key, then that node's
edges) up to ``few`` keys, and above joins them all with the tables in one statement. Kùzu's
join reads the whole tables it joins, so what it costs grows with the store, while a lookup
costs about the same in any store. The fixed thresholds (``FEW_NODE_KEYS``, ``FEW_EDGE_KEYS``)
were measured at 100,000 memories; on the store of a repository right after its bootstrap
(543 memories, 1,984 symbols) they made ``get_context`` of its largest file about 400 lookups:
the incoming calls of its 158 symbols took 90-110 ms of CPU a lookup each and 3.6 ms joined,
the memories about them 55-110 ms against 2 ms, the entities of 40 memories 65 ms against 6 ms.

So a read of several keys joins once the tables it joins hold fewer than ``JOIN_ROWS_PER_KEY``
rows a key (``few_keys``), and never looks more keys up one by one than those thresholds: a
large store reads as it did, and so does a read of one key. A table's size is Kùzu's count of
its nodes (a fraction of a millisecond, whatever the size), kept ``SIZES_KEPT_S``: a size a
little old only picks the slower way.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Iterable

from graphmem.adapters.kuzu_connection import KuzuConnection

__all__ = ["JOIN_ROWS_PER_KEY", "SIZES_KEPT_S", "TableSizes", "table_sizes"]

# Rows of the tables joined that cost about what one key's lookup costs (measured: a join read
# 0.5-2.5 µs a row, a lookup took 0.4-2.4 ms, from 2,000 to 200,000 symbols).
JOIN_ROWS_PER_KEY = 1000
# How long a table's count is trusted.
SIZES_KEPT_S = 30.0


class TableSizes:
    """The node counts of a store's tables, each read at most every ``SIZES_KEPT_S``."""

    def __init__(self, db: KuzuConnection) -> None:
        self._db = db
        self._counts: dict[str, tuple[float, int]] = {}  # table -> (when read, count)

    def rows(self, tables: Iterable[str]) -> int:
        """How many nodes ``tables`` hold together."""
        now = time.monotonic()
        total = 0
        for table in dict.fromkeys(tables):
            kept = self._counts.get(table)
            if kept is None or now - kept[0] > SIZES_KEPT_S:
                found = self._db.rows(f"MATCH (n:{table}) RETURN count(*)")
                kept = (now, int(found[0][0]) if found else 0)
                self._counts[table] = kept
            total += kept[1]
        return total

    def forget(self) -> None:
        """Count the tables again at their next use: a bulk write (a code pass) changed them, and
        a count kept from before it (an empty table during a first pass) would choose joins over
        lookups on a large table for ``SIZES_KEPT_S``."""
        self._counts.clear()

    def few_keys(self, tables: Iterable[str], most: int) -> int:
        """``keyed_rows``' ``few`` for a read joining ``tables``: up to how many keys it looks
        each up (never more than ``most``, the threshold measured at 100,000 memories; one key
        always: its lookup costs what a join of small tables does, and answers as it always did)."""
        return max(1, min(most, self.rows(tables) // JOIN_ROWS_PER_KEY))


_SIZES: weakref.WeakKeyDictionary[KuzuConnection, TableSizes] = weakref.WeakKeyDictionary()
_SIZES_LOCK = threading.Lock()


def table_sizes(db: KuzuConnection) -> TableSizes:
    """The one ``TableSizes`` of the store ``db`` connects to, shared by the store's parts."""
    with _SIZES_LOCK:
        sizes = _SIZES.get(db)
        if sizes is None:
            sizes = _SIZES[db] = TableSizes(db)
        return sizes
