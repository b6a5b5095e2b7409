"""The full-text index of memories: tantivy in ``<data_dir>/lexical.tantivy/``.

Kùzu stays the store of record; this index is derived from it and is rebuilt from it
whenever it is missing or out of date. BM25 over the accent-folded text, English
stemming, the query's adjacent word pairs as phrases; the hits a :class:`Visibility`
hides (status, scope and project, category, branch, time) are dropped by their columns
after the search, or left out by the query when that is needed (``lexical_visibility``).

Writes stay off the caller's path: a change is noted in the journal
(``lexical.tantivy/pending``, one id a line, written before the store's own write), kept
in memory (the *overlay*, searched alongside the index), and committed to tantivy by a
background thread ``COMMIT_DELAY`` seconds after the first change (at once past
``COMMIT_MAX_CHANGES``), after which the journal forgets it. At open, the ids still in
the journal are read again from the store, so a memory the store acknowledged is found
after a crash and one it deleted is never returned.

An open that only searches opens tantivy's index and its searcher, nothing more: the
writer (six threads and tantivy's writer lock) is made at the first commit and the commit
thread started at the first change (0.8 of an open's 2.5 ms of CPU, paid by every command
that opens the store). The open takes the index's own lock in its place, so that a second
writer of the folder is refused at its open as before; and refuses a folder this user may not
write (``lexical_folder``). A commit that fails (a folder changed under an open index) is a
``StoreError`` with its fix; its changes stay in the overlay, searched, and in the journal, so
the next open that may write the folder indexes them.

Besides the words, the index keeps each memory's text as written and its category,
scope and project, so that ``matches`` answers remember's near-duplicate check without
reading the records from the store.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import threading
import time
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Protocol

import tantivy

from graphmem.adapters.id_journal import IdJournal
from graphmem.adapters.lexical_analysis import (
    ANALYZER,
    SCHEMA,
    any_of,
    clauses,
    indexed_pairs,
    query_parts,
    whole_phrase,
    within,
)
from graphmem.adapters.lexical_bounds import ScoreBounds
from graphmem.adapters.lexical_folder import take_folder, unreadable, unwritten, writable
from graphmem.adapters.lexical_overlay import Change, as_match, score_overlay
from graphmem.adapters.lexical_visibility import CODES_VERSION, Columns, Hit, Search, top_hits
from graphmem.core.keys import memory_id_number
from graphmem.core.models import Category, MemoryRecord, Scope
from graphmem.core.ports import TextHits, TextMatch, Visibility
from graphmem.core.text import fold
from graphmem.errors import StoreError, StoreLockedError

log = logging.getLogger(__name__)

DIRNAME = "lexical.tantivy"
JOURNAL = "pending"
META = "graphmem.json"
# Bump when the schema or the analysis changes: an index of another version is rebuilt. The
# visibility columns' codes add their own version (a change to the statuses, say).
INDEX_VERSION = f"6.{CODES_VERSION}"
TOKEN_KEY = "lexical_index_token"  # the store's meta key naming the index that belongs to it
# Seconds a change waits in the overlay before the background commit. A tantivy commit
# writes a segment, fsyncs it and starts two threads: the writes of half a minute share one.
COMMIT_DELAY = 30.0
COMMIT_MAX_CHANGES = 128  # changes waiting that start the commit at once (each search scores them)
WRITER_HEAP = 15_000_000  # bytes: tantivy's writer buffer (its minimum per thread)
FILTER_FIELDS = ("scope", "project", "status", "category", "created_at", "branch")


def _document(record: MemoryRecord) -> tantivy.Document:
    columns = Columns.of(record)
    doc = tantivy.Document(
        id=record.id,
        text=(text := fold(record.text)),
        pairs=indexed_pairs(text),
        body=record.text.encode("utf-8"),
        scope=record.scope.value,
        project=record.project or "",
        status=record.status.value,
        category=record.category.value,
        created_at=columns.created_at,
        code=columns.code,
        project_hash=columns.project_hash,
        branch_hash=columns.branch_hash,
    )
    if record.branch is not None:
        doc.add_text("branch", record.branch)
    key = memory_id_number(record.id)
    if key is not None:
        doc.add_integer("key", key)
    return doc


def _stored_match(doc: tantivy.Document) -> TextMatch:
    return TextMatch(
        doc["id"][0],
        bytes(doc["body"][0]).decode("utf-8"),
        Category(doc["category"][0]),
        Scope(doc["scope"][0]),
        doc["project"][0] or None,
        doc.get_first("branch"),
    )


class Source(Protocol):
    """What the index needs of the store of record (``KuzuGraphStore``)."""

    def get_meta(self, key: str) -> str | None: ...
    def set_meta(self, key: str, value: str) -> None: ...
    def total_memories(self) -> int: ...
    def get_memories(self, ids: Collection[str]) -> Mapping[str, MemoryRecord]: ...
    def all_memories(self, project: str | None = None) -> Iterable[MemoryRecord]: ...


class LexicalIndex:
    """BM25 full-text search over memory texts, filtered by visibility."""

    def __init__(self, directory: Path, source: Source) -> None:
        self.directory = directory
        self._source = source
        self._lock = threading.Lock()  # guards the overlay, the journal and in-flight marks
        self._overlay: dict[str, Change | None] = {}  # id -> what it is now, None: deleted
        self._marked: Counter[str] = Counter()  # marked, the store's write not done yet
        self._wake = threading.Condition(self._lock)
        self._closed = False
        self._commit_lock = threading.Lock()  # one commit at a time
        self._writer: tantivy.IndexWriter | None = None  # made at the first commit (``_writing``)
        self._thread: threading.Thread | None = None  # the commit loop, started at the first change
        self._held = take_folder(directory)  # refused if another index holds it, or not writable
        try:
            self._index = tantivy.Index(SCHEMA, path=str(directory), reuse=True)
            # The last commit's searcher, made again after each reload: making one per
            # search cost 0.7 ms of a 5 ms search. With its words' best scores (one attribute:
            # a search reads the two of one commit).
            self._bounds = ScoreBounds(self._index.searcher())
            self._journal = IdJournal(directory / JOURNAL)
        except (OSError, ValueError) as exc:
            os.close(self._held)
            raise unreadable(directory, exc) from exc

    # -- state ------------------------------------------------------------------

    @property
    def _searcher(self) -> tantivy.Searcher:
        return self._bounds.searcher

    def meta(self) -> dict[str, str]:
        return _read_meta(self.directory)

    def count(self) -> int:
        """Memories in the index (the overlay committed first)."""
        self.flush()
        return int(self._searcher.num_docs)

    def journal(self) -> list[str]:
        return self._journal.read()

    # -- writes -----------------------------------------------------------------

    def mark(self, ids: Iterable[str], changes: Mapping[str, object] | None = None) -> None:
        """Note in the journal that the store is about to change ``ids`` (before it does);
        nothing to note when ``changes`` are given and no filter reads them."""
        if changes is not None and not any(name in changes for name in FILTER_FIELDS):
            return
        ids = list(ids)
        with self._lock:
            self._marked.update(ids)
            self._journal.append(ids)

    def add(self, records: Sequence[MemoryRecord]) -> None:
        """Index ``records`` (replacing any of the same id)."""
        self._change({r.id: r for r in records})

    def remove(self, ids: Collection[str]) -> None:
        self._change(dict.fromkeys(ids))

    def set_fields(self, memory_id: str, changes: Mapping[str, object]) -> None:
        """After the store changed fields of ``memory_id``: re-index it if a filter reads them."""
        if any(name in changes for name in FILTER_FIELDS):
            self._change({memory_id: self._source.get_memories([memory_id]).get(memory_id)})

    def refresh(self, ids: Sequence[str]) -> None:
        """Index ``ids`` as the store holds them now: after the store's write of them was
        rolled back (each id as often as it was marked), or at open for the journal's ids."""
        if not ids:
            return
        found = self._source.get_memories(ids)
        changes = {memory_id: Change.of(found.get(memory_id)) for memory_id in ids}
        with self._lock:
            self._overlay.update(changes)
            self._marked.subtract(ids)
            self._marked = +self._marked
            self._changed()

    def _change(self, records: Mapping[str, MemoryRecord | None]) -> None:
        changes = {memory_id: Change.of(record) for memory_id, record in records.items()}
        with self._lock:
            self._overlay.update(changes)
            self._marked.subtract(changes.keys())
            self._marked = +self._marked
            self._changed()

    def _changed(self) -> None:
        """Wake the commit loop to the overlay's change (under ``_lock``), starting it at the
        first change: an open that only searches starts no thread."""
        if self._thread is None and not self._closed:
            self._thread = threading.Thread(target=self._commit_loop, name="graphmem-lexical", daemon=True)
            self._thread.start()
        self._wake.notify()

    def _writing(self) -> tantivy.IndexWriter:
        """tantivy's writer (under ``_commit_lock``), made at the first commit."""
        if self._writer is None:
            self._writer = self._index.writer(WRITER_HEAP, 1)
        return self._writer

    @contextmanager
    def _committing(self) -> Iterator[None]:
        """A commit (under ``_commit_lock``): tantivy's and the journal's errors become a
        ``StoreError`` with its fix. What it was to commit stays in the overlay and the journal,
        and the writer drops what it was given: after a failed commit, tantivy's next one (0.27)
        said it succeeded and kept none of it, nor what it was given after."""
        try:
            yield
        except (OSError, ValueError) as exc:
            if self._writer is not None:
                try:
                    self._writer.rollback()
                except ValueError:
                    self._writer = None  # made again at the next commit
            raise unwritten(self.directory, exc) from exc

    def flush(self) -> None:
        """Commit every change of the overlay now."""
        with self._commit_lock:
            with self._lock:
                drained = dict(self._overlay)
            if not drained:
                return
            with self._committing():
                writer = self._writing()
                for memory_id, change in drained.items():
                    writer.delete_documents_by_term("id", memory_id)
                    if change is not None:
                        writer.add_document(_document(change.record))
                writer.commit()
                self._index.reload()
                self._bounds = ScoreBounds(self._index.searcher())
                with self._lock:
                    for memory_id, change in drained.items():
                        if self._overlay.get(memory_id, ...) is change:
                            del self._overlay[memory_id]
                    self._journal.keep([*self._overlay, *self._marked])

    def _commit_loop(self) -> None:
        while True:
            with self._lock:
                while not self._overlay and not self._closed:
                    self._wake.wait()
                deadline = time.monotonic() + COMMIT_DELAY  # let a burst of writes gather
                while not self._closed and len(self._overlay) < COMMIT_MAX_CHANGES:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._wake.wait(left)
                if self._closed:
                    return
            try:
                self.flush()
            except (StoreError, RuntimeError) as exc:  # said in one line: the next close says it again
                log.warning("%s Retrying in %.0f s.", exc, COMMIT_DELAY * 4)
                with self._lock:
                    self._wake.wait(COMMIT_DELAY * 4)

    def rebuild(self, records: Iterable[MemoryRecord], *, token: str) -> int:
        """Replace the whole index by ``records``; it then belongs to the store ``token``."""
        with self._commit_lock:
            with self._lock:
                self._overlay.clear()
            with self._committing():
                writer = self._writing()
                writer.delete_all_documents()
                count = 0
                for record in records:
                    writer.add_document(_document(record))
                    count += 1
                writer.commit()
                self._index.reload()
                self._bounds = ScoreBounds(self._index.searcher())
                (self.directory / META).write_text(
                    json.dumps({"version": INDEX_VERSION, "token": token}), "utf-8"
                )
                with self._lock:
                    self._journal.keep([*self._overlay, *self._marked])
        return count

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return  # a store closed twice (a test's own close, then its fixture's)
            self._closed = True
            self._wake.notify()
            thread = self._thread
        if thread is not None:
            thread.join()
        try:
            self.flush()
        finally:
            self._journal.close()
            # The merges under way finish first: a writer dropped abandons them, and an index
            # written by short processes (a one-shot command each) kept its small segments.
            # After an import of 100,000 memories (11 segments), searches took 30% longer
            # while a later process merged them.
            try:
                if self._writer is not None:
                    self._writer.wait_merging_threads()
            finally:
                self._writer = None  # releases tantivy's writer lock now, for a store opened again
                os.close(self._held)  # then the index's own, once tantivy's is free

    # -- search -----------------------------------------------------------------

    def search(self, query: str, visibility: Visibility, limit: int, phrase: str | None = None) -> TextHits:
        """The ids of up to ``limit`` visible memories that match ``query``, best first,
        with their BM25 scores (higher is better); those that hold the whole ``phrase``
        (``query`` when not given) word for word first, and named in ``exact``."""
        terms, pairs = query_parts(query, phrase)
        found, exact, _ = self._search(
            terms, pairs, whole_phrase(query, phrase), visibility, limit, keep=False
        )
        return TextHits(found, exact)

    def matches(
        self, query: str, visibility: Visibility, limit: int, holding: Sequence[Collection[str]] = ()
    ) -> list[TextMatch]:
        """The visible memories that hold any word of ``query`` (stopwords left out), best
        first by BM25 of the words alone, each with its text, category, scope and project as
        indexed: the words of a near-duplicate's candidate query are no phrase to ask. With
        ``holding`` (``GraphStore.text_matches``), only those holding a stem of each group's
        words, asked of tantivy as required beside the words: a group no memory holds (a new
        name) makes the search empty at once, and common ones leave few memories to score."""
        terms, _ = query_parts(query)
        stems = [frozenset(s for word in group for s in ANALYZER.analyze(word)) for group in holding]
        if not all(stems):
            return []  # a group with no word the index keeps: no memory holds one of it
        found, _, kept = self._search(terms, [], "", visibility, limit, keep=True, holding=stems)
        return [kept[memory_id] for memory_id, _ in found]

    def _search(
        self,
        terms: list[str],
        pairs: list[str],
        whole: str,
        visibility: Visibility,
        limit: int,
        *,
        keep: bool,
        holding: Sequence[frozenset[str]] = (),
    ) -> tuple[list[tuple[str, float]], set[str], dict[str, TextMatch]]:
        """BM25 of ``terms`` and the phrases ``pairs``; the memories that hold ``whole`` first
        (``exact``), by their BM25 too. Phrases of two words are asked from the ``pairs``
        field, scored as their phrase (``ScoreBounds.paired``): every clause is then a term,
        which tantivy unions without reading positions."""
        parts = clauses([*pairs, *terms])
        if not parts or limit <= 0:
            return [], set(), {}
        with self._lock:
            overlay = dict(self._overlay)
        bounds = self._bounds
        searcher = bounds.searcher
        try:
            asked = [bounds.paired(c) if len(c.tokens) == 2 else c for c in parts]
            text = any_of([clause.query for clause in asked])
            # Words alone (remember's near-duplicate check): their tokens let the search skip
            # the memories that hold only common ones (``lexical_bounds``).
            alone = (
                not (pairs or whole) and len(asked) == len(terms) and all(len(c.tokens) == 1 for c in asked)
            )
            tokens = tuple(clause.tokens[0] for clause in asked) if alone and not holding else ()
            if holding:
                text = within(text, _every(holding))
            hits = top_hits(searcher, Search(text, visibility, overlay, limit, tokens, bounds))
            holders = (
                _phrase_holders(bounds, whole, Search(text, visibility, overlay, limit)) if whole else []
            )
            exact = {hit.memory_id for hit in holders}
            hits = holders + [hit for hit in hits if hit.memory_id not in exact]
            found = [(hit.memory_id, hit.score) for hit in hits]
            kept: dict[str, TextMatch] = {}
            if keep:
                kept = {
                    hit.memory_id: _stored_match(searcher.doc(hit.address) if hit.doc is None else hit.doc)
                    for hit in hits
                }
        except ValueError as exc:
            raise StoreError(f"The full-text index failed: {exc}") from exc
        if overlay:
            scored, held = score_overlay(terms, pairs, whole, overlay, visibility, searcher)
            scored = [hit for hit in scored if _holds_each(overlay[hit[0]], holding)]
            found += scored
            exact |= held
        # Whole-phrase holders first, then by score; ties by id: the same order every time.
        found.sort(key=lambda hit: (hit[0] not in exact, -hit[1], hit[0]))
        found = found[:limit]
        if keep:
            kept.update((i, as_match(overlay[i])) for i, _ in found if i not in kept)
        return found, exact.intersection(memory_id for memory_id, _ in found), kept


def _every(groups: Sequence[frozenset[str]]) -> tantivy.Query:
    """The memories holding a stem of each of ``groups``."""
    held = [any_of([tantivy.Query.term_query(SCHEMA, "text", stem) for stem in sorted(g)]) for g in groups]
    return tantivy.Query.boolean_query([(tantivy.Occur.Must, query) for query in held])


def _holds_each(change: Change | None, groups: Sequence[frozenset[str]]) -> bool:
    return change is not None and all(not group.isdisjoint(change.counts) for group in groups)


def _phrase_holders(bounds: ScoreBounds, whole: str, search: Search) -> list[Hit]:
    """The hits ``search`` asks for among the memories that hold the phrase ``whole`` word for
    word, with the scores its own search gives them (``within``). Asked apart from its query:
    a constant clause beside its terms made tantivy score every match the slow way (2.8 of
    5.4 ms at a million)."""
    phrase = clauses([whole])
    if not phrase:
        return []
    holds = bounds.paired(phrase[0]) if len(phrase[0].tokens) == 2 else phrase[0]
    asked = within(search.query, holds.query)
    return top_hits(bounds.searcher, Search(asked, search.visibility, search.overlay, search.limit))


def _read_meta(directory: Path) -> dict[str, str]:
    try:
        data = json.loads((directory / META).read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def open_lexical_index(data_dir: Path, store: Source) -> LexicalIndex:
    """The index of ``store`` in ``data_dir``, brought up to date with it: rebuilt when
    missing, unreadable, of another version or of another store, or holding another
    number of memories; the memories the journal names are read again from the store."""
    token = store.get_meta(TOKEN_KEY)
    if token is None:
        token = os.urandom(16).hex()
        store.set_meta(TOKEN_KEY, token)
    directory = data_dir / DIRNAME
    meta = _read_meta(directory)  # read once: nothing else writes it before ``rebuild``
    if meta.get("version") != INDEX_VERSION and directory.exists():  # may not open with this schema
        log.info(
            "The full-text index at %s is of version %s: building it again.", directory, meta.get("version")
        )
        shutil.rmtree(directory, ignore_errors=True)
        meta = {}
    try:
        index = LexicalIndex(directory, store)
    except StoreLockedError:
        raise  # another open index's folder: never deleted under it
    except StoreError:
        if not writable(directory):
            raise  # this user's to fix: it could not delete the folder or build it again either
        log.warning("The full-text index at %s is unreadable: rebuilding it.", directory)
        shutil.rmtree(directory, ignore_errors=True)
        meta = {}
        index = LexicalIndex(directory, store)
    try:
        _catch_up(index, store, meta, token)
    except BaseException:
        with suppress(StoreError):  # its locks released, for the store opened again
            index.close()
        raise
    return index


def _catch_up(index: LexicalIndex, store: Source, meta: Mapping[str, str], token: str) -> None:
    """Bring ``index``, just opened with ``meta``, up to date with ``store`` (see ``open_lexical_index``)."""
    if meta.get("version") != INDEX_VERSION or meta.get("token") != token:
        rebuild(index, store)
        return
    marked = index.journal()
    if marked:
        index.refresh(marked)
        index.flush()
    if index.count() != store.total_memories():
        log.warning("The full-text index at %s disagrees with the store: rebuilding it.", index.directory)
        rebuild(index, store)


def rebuild(index: LexicalIndex, store: Source) -> int:
    """Index every memory of ``store`` again (``graphmem reindex``, or at open)."""
    token = store.get_meta(TOKEN_KEY) or os.urandom(16).hex()
    store.set_meta(TOKEN_KEY, token)
    count = index.rebuild(store.all_memories(), token=token)
    log.info("Built the full-text index at %s from the store: %d memories.", index.directory, count)
    return count
