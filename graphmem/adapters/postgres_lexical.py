"""A team's store's full-text search answered by an index beside the daemon (``LexicalIndex``).

At a million memories PostgreSQL's own full-text search (``postgres_text.py``) took 34 ms of a
recall's 35; the embedded store answers the same from a tantivy index in a few. So a daemon on
a team's store keeps one too: ``LexicalIndex`` over the store as its ``Source``, in a folder of
its data folder named for the database and the role (two never share one; the role's, since
row-level security decides which memories it holds), kept in step by the database's change feed
(``postgres_feed.py``): before each search one indexed statement asks what changed since the
last, and the memories written are read and indexed, those removed dropped.

Nothing a user sees waits for it. The index is built in the background at the first open (and
again whenever it is not known to be of this database at the feed's position: a folder left by
a crash, a database made again); until it is current, and while a large catch-up (an import)
is applied in the background, the database's own search answers, so a result never misses a
memory. A second process on the same machine and database (a CLI beside the daemon) cannot
take tantivy's writer lock: it searches the database. The position is saved beside the index
when it closes, and the file removed when it opens: an index a crash left is built again.

A search's hits' cosines to a recall's vector are read by their ids in one statement
(``search_text_near``'s contract). A recall asks its words without the vector, while its query is
embedded, and their cosines apart once it is (``PostgresGraphStore.cosines_with_words``).
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import time
from collections.abc import Collection, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from graphmem.adapters.lexical_index import INDEX_VERSION, LexicalIndex
from graphmem.adapters.postgres_feed import ChangeFeed, Changes, Position
from graphmem.adapters.postgres_rows import cosine_of, vector_param
from graphmem.core.models import MemoryRecord
from graphmem.core.ports import TextHits, TextMatch, Vector, Visibility
from graphmem.errors import StoreError, StoreUnavailableError

if TYPE_CHECKING:
    from graphmem.adapters.postgres_store import PostgresGraphStore

log = logging.getLogger(__name__)

DIRNAME = "team-text"  # in the daemon's data folder: one index per database and role
POSITION = "feed-position.json"  # beside the index: its token and position, while it is closed
# Changes past which a search does not apply them itself: they are applied (and committed) in
# the background while the database answers (an import, a daemon that was off for long).
CATCH_UP_MAX = 500
PAGE = 250  # memories read and indexed at a time by a build or a catch-up
# A build or large catch-up pauses after each page three times as long as the page took, and
# then until no search was asked for QUIET_S, but no longer than QUIET_MAX_S in all: the daemon's
# calls are served first, and under a steady stream of them the build still ends.
PAUSE_RATIO = 3.0
QUIET_S = 0.25
QUIET_MAX_S = 2.0
RETRY_S = 60.0  # after a failed build, the next search starts another only this much later


class _Closed(Exception):
    """The store closed while its index was built."""


def index_folder(data_dir: Path, where: str) -> Path:
    """The folder of the index of the store ``where`` (``postgresql://role@host:port/db``)."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", where.rsplit("/", 1)[-1])[:40] or "db"
    key = hashlib.sha256(where.encode("utf-8")).hexdigest()[:16]
    return data_dir / DIRNAME / f"{name}-{key}" / f"v{INDEX_VERSION}"


class PostgresLexical:
    """The full-text index of a team's store beside one process (see the module doc): each
    search method answers None when the index is not the one to ask (not current, or another
    process holds it), and the store then asks the database."""

    def __init__(self, store: PostgresGraphStore, data_dir: Path, *, background: bool = True) -> None:
        """``background``: built on a thread (a daemon's); else here (a test's)."""
        self._store = store
        self._feed = ChangeFeed(store.db)
        self._background = background
        self._lock = threading.Lock()  # the position, and the catch-up of one search at a time
        self._position: Position | None = None  # None: not built (or not known current)
        self._working: threading.Thread | None = None  # a build or large catch-up under way
        self._failed_at = -RETRY_S
        self._asked = -QUIET_S  # when a search last asked (``_pause``)
        self._closing = threading.Event()  # set by close: a build's pauses end at once
        self.folder = index_folder(data_dir, store.where)
        self._index: LexicalIndex | None = None
        self._saved: str | None = None
        try:
            self._index = LexicalIndex(self.folder, store)
        except StoreError as exc:  # another process's (its writer lock), or unreadable
            log.info(
                "The full-text index at %s is not this process's: searching the database (%s).",
                self.folder,
                exc,
            )
            return
        saved = self.folder / POSITION
        if saved.exists():  # trusted only until the index is written to again: a crash leaves none
            self._saved = saved.read_text("utf-8")
            saved.unlink()
        self._start()

    @property
    def answering(self) -> str:
        """Which search answers now: ``"index"`` or ``"database"`` (``graphmem stats``)."""
        current = self._index is not None and self._position is not None and self._working is None
        return "index" if current else "database"

    def settle(self) -> None:
        """Wait for a build or catch-up under way to end (a test's, a benchmark's)."""
        working = self._working
        if working is not None:
            working.join()

    # -- searches ----------------------------------------------------------------------------

    def search_text_near(
        self, query: str, visibility: Visibility, limit: int, vector: Vector | None, phrase: str | None
    ) -> tuple[TextHits, dict[str, float]] | None:
        index = self._current()
        if index is None:
            return None
        hits = index.search(query, visibility, limit, phrase)
        if vector is None or not hits:
            return hits, {}
        rows = self._store.db.rows(
            "SELECT id, 1 - (embedding <=> %s::vector) FROM memories "
            "WHERE id = ANY(%s) AND embedding IS NOT NULL",
            (vector_param(vector), [memory_id for memory_id, _ in hits]),
        )
        return hits, {str(i): c for i, cosine in rows if (c := cosine_of(cosine)) is not None}

    def text_matches(
        self, query: str, visibility: Visibility, limit: int, holding: Sequence[Collection[str]]
    ) -> list[TextMatch] | None:
        index = self._current()
        return None if index is None else index.matches(query, visibility, limit, holding)

    def _current(self) -> LexicalIndex | None:
        """The index, brought up to the feed's last change (None: the database answers)."""
        self._asked = time.monotonic()  # a build under way waits for the searches to pause
        if self._index is None or self._store.db.in_transaction:
            # Inside a transaction the feed shows its own writes, which a rollback may take back:
            # the database answers (the index follows them once they are committed).
            return None
        with self._lock:
            if self._working is not None or self._position is None:
                if self._working is None and time.monotonic() - self._failed_at >= RETRY_S:
                    self._start()
                return None
            try:
                changes = self._feed.since(self._position)
                if len(changes) > CATCH_UP_MAX:
                    self._start()
                    return None
                self._apply(changes)
            except StoreError:  # the database answers, and says what failed if it fails too
                return None
            return self._index

    # -- building and catching up --------------------------------------------------------------

    def _start(self) -> None:
        """Build the index or catch it up, on a thread (or here, when not ``background``)."""
        if not self._background:
            self._work()
            return
        self._working = threading.Thread(target=self._work, name="graphmem-team-text", daemon=True)
        self._working.start()

    def _work(self) -> None:
        try:
            position = self._position or self._resumed() or self._built()
            # Until what is left is a search's to apply.
            while position is not None and not self._closing.is_set():
                changes = self._feed.since(position)
                self._apply(changes, paced=self._background)
                position = changes.position
                if len(changes) <= CATCH_UP_MAX:
                    break
            if self._index is not None:
                self._index.flush()
        except _Closed:
            position = None
        except StoreUnavailableError:  # said once by the pool; built at the next search, once it is back
            log.debug("The full-text index of %s waits for the store to answer.", self._store.where)
            position = None
        except StoreError as exc:  # a lost connection, say: the searches say so if it lasts
            log.info("The full-text index of %s is not built yet: %s", self._store.where, exc)
            self._failed_at, position = time.monotonic(), None
        except Exception:  # the index failed: the database answers, and the build is tried again later
            log.exception(
                "Building the full-text index of %s failed; the database answers.", self._store.where
            )
            self._failed_at, position = time.monotonic(), None
        self._position = position
        self._working = None

    def _resumed(self) -> Position | None:
        """The position saved when the index was closed, if it is of this database's feed."""
        token, saved, self._saved = self._feed.token(), self._saved, None
        assert self._index is not None
        if saved is None or token is None or self._index.meta().get("token") != token:
            return None
        kept, _, position = saved.partition("\n")
        return Position.loads(position) if kept == token else None

    def _built(self) -> Position | None:
        """Index every memory the role sees; the feed's position they were read at."""
        token = self._feed.token()
        assert self._index is not None
        if token is None:
            raise StoreError("The store has no change feed (schema 18): run `graphmem migrate`.")
        with self._feed.everything(PAGE) as (pages, position):
            count = self._index.rebuild(self._paced(pages), token=token)
        log.info("Built the full-text index at %s from the store: %d memories.", self.folder, count)
        return position

    def _pause(self, started: float) -> None:
        """After a page of a build or catch-up begun at ``started`` (see ``PAUSE_RATIO``): the
        daemon's calls share its cores and Python's lock with it. During its first build at
        100,000 memories a client's calls went from 34-49 a second (recall p50 14-18 ms) to 13-18
        (32-39 ms) when it paused as long as it worked, to 26 (22 ms) three times as long, and
        to 56 (13 ms) once it also waited for the searches to pause."""
        ends = time.monotonic() + QUIET_MAX_S
        self._closing.wait(min((time.monotonic() - started) * PAUSE_RATIO, QUIET_MAX_S))
        while not self._closing.is_set() and (left := ends - time.monotonic()) > 0:
            quiet = time.monotonic() - self._asked
            if quiet >= QUIET_S:
                return
            self._closing.wait(min(QUIET_S - quiet, left))

    def _paced(self, pages: Iterable[list[MemoryRecord]]) -> Iterator[MemoryRecord]:
        """The records of ``pages``, with a pause after each (``_pause``). Ended by ``_Closed``
        once the store closes: a build under way is abandoned (tantivy drops what was not
        committed) rather than kept a closing daemon waiting."""
        for records in pages:
            started = time.monotonic()
            yield from records
            if self._closing.is_set():
                raise _Closed
            if self._background:  # a daemon's calls share the process
                self._pause(started)

    def _apply(self, changes: Changes, *, paced: bool = False) -> None:
        """Index what ``changes`` wrote and drop what they removed; ``paced`` (a large catch-up on
        the worker): a page at a time, as ``_paced``."""
        assert self._index is not None
        written = list(changes.written)
        self._index.remove(changes.removed)
        for start in range(0, len(written), PAGE):
            began = time.monotonic()
            ids = written[start : start + PAGE]
            found = self._store.get_memories(ids)
            self._index.remove([i for i in ids if i not in found])
            self._index.add(list(found.values()))
            if paced:
                self._pause(began)
        self._position = changes.position

    def close(self) -> None:
        """Stop a build under way, commit the index and save its position (see the module doc)."""
        self._closing.set()
        working = self._working
        if working is not None:
            working.join()
        with self._lock:  # after a search applying changes
            if self._index is None:
                return
            self._index.close()
            token = self._index.meta().get("token")
            if self._position is not None and token:
                (self.folder / POSITION).write_text(f"{token}\n{self._position.dumps()}", "utf-8")
            self._index = None
