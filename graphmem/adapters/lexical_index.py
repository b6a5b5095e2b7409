"""The full-text index of memories: tantivy in ``<data_dir>/lexical.tantivy/``.

Kùzu stays the store of record; this index is derived from it and is rebuilt from it
whenever it is missing or out of date. BM25 over the accent-folded text, English
stemming, the query's adjacent word pairs as phrases, and the filters of a
:class:`Visibility` (status, scope and project, category, time) inside the query.

Writes stay off the caller's path: a change is noted in the journal
(``lexical.tantivy/pending``, one id a line, written before the store's own write), kept
in memory (the *overlay*, searched alongside the index), and committed to tantivy by a
background thread ``COMMIT_DELAY`` seconds after the first change (at once past
``COMMIT_MAX_CHANGES``), after which the journal forgets it. At open, the ids still in
the journal are read again from the store, so a memory the store acknowledged is found
after a crash and one it deleted is never returned.

Besides the words, the index keeps each memory's text as written and its category,
scope and project, so that ``matches`` answers remember's near-duplicate check without
reading the records from the store.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import os
import shutil
import threading
import time
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import tantivy

from graphmem.adapters.id_journal import IdJournal
from graphmem.core.models import Category, MemoryRecord, Scope, Status
from graphmem.core.ports import TextHits, TextMatch, Visibility
from graphmem.core.text import fold, phrase_words, words
from graphmem.errors import StoreError

log = logging.getLogger(__name__)

DIRNAME = "lexical.tantivy"
JOURNAL = "pending"
META = "graphmem.json"
# Bump when the schema or the analysis changes: an index of another version is rebuilt.
INDEX_VERSION = "2"
TOKEN_KEY = "lexical_index_token"  # the store's meta key naming the index that belongs to it
# Seconds a change waits in the overlay before the background commit. A tantivy commit
# writes a segment, fsyncs it and starts two threads: the writes of half a minute share one.
COMMIT_DELAY = 30.0
COMMIT_MAX_CHANGES = 128  # changes waiting that start the commit at once (each search scores them)
WRITER_HEAP = 15_000_000  # bytes: tantivy's writer buffer (its minimum per thread)
MAX_PHRASES = 8  # adjacent word pairs asked as phrases, at most
# Added to the score of a memory that holds the whole phrase (``core.text.phrase_words``):
# above any BM25 score of a query of at most 12 words and their variants and pairs (under
# 1,000 at a million memories), so such a memory comes first and is told apart
# (``TextHits.exact``); small enough that tantivy's float32 keeps BM25 to 0.001.
EXACT_BONUS = 1e4
K1, B = 1.2, 0.75  # tantivy's BM25 parameters, for scoring the overlay alike
MAX_TOKEN_BYTES = 40  # tantivy's en_stem drops longer tokens
FILTER_FIELDS = ("scope", "project", "status", "category", "created_at")

# English words too common to find anything by (Kùzu's FTS dropped them too): a query of
# them alone matches nothing, and leaving them out keeps queries from visiting every row.
_STOPWORDS_TEXT = """
a about above after again against all am an and any are aren't as at be because been before
being below between both but by can can't cannot could couldn't did didn't do does doesn't doing
don't down during each few for from further had hadn't has hasn't have haven't having he he'd
he'll he's her here here's hers herself him himself his how how's i i'd i'll i'm i've if in into
is isn't it it's its itself let's me more most mustn't my myself no nor not of off on once only
or other ought our ours ourselves out over own same shan't she she'd she'll she's should
shouldn't so some such than that that's the their theirs them themselves then there there's
these they they'd they'll they're they've this those through to too under until up very was
wasn't we we'd we'll we're we've were weren't what what's when when's where where's which while
who who's whom why why's with won't would wouldn't you you'd you'll you're you've your yours
yourself yourselves
"""
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw")
    builder.add_text_field("text", tokenizer_name="en_stem")
    builder.add_bytes_field("body", stored=True, indexed=False, fast=False)  # the text as written
    for name in ("scope", "project", "status", "category"):
        builder.add_text_field(name, stored=True, tokenizer_name="raw")
    builder.add_integer_field("created_at", indexed=True, fast=True)
    return builder.build()


SCHEMA = _schema()
_ANALYZER = (
    tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
    .filter(tantivy.Filter.remove_long(MAX_TOKEN_BYTES))
    .filter(tantivy.Filter.lowercase())
    .filter(tantivy.Filter.stemmer("english"))
    .build()
)


def query_parts(query: str, phrase: str | None = None) -> tuple[list[str], list[str]]:
    """The words of ``query`` to score by BM25 (stopwords dropped) and the phrases to score:
    the adjacent pairs of words of ``query`` that are no stopwords; when there is neither,
    the whole ``phrase`` (``whole_phrase``), so that a phrase of stopwords alone ("how have
    you been") is still asked. Otherwise the whole phrase adds ``EXACT_BONUS`` in ``search``
    rather than BM25: asking it twice cost about 1 ms a query at 100,000 memories."""
    tokens = words(fold(query))
    # A word the index drops (too long) is no term: a query of only such words asks nothing.
    terms = list(dict.fromkeys(w for w in tokens if w not in STOPWORDS and _indexed(w)))
    kept = set(terms)
    pairs = [f"{a} {b}" for a, b in itertools.pairwise(tokens) if a != b and a in kept and b in kept]
    if not terms and not pairs and (whole := whole_phrase(query, phrase)):
        return terms, [whole]
    return terms, list(dict.fromkeys(pairs))[:MAX_PHRASES]


def _indexed(word: str) -> bool:
    return len(word.encode("utf-8")) < MAX_TOKEN_BYTES


def whole_phrase(query: str, phrase: str | None = None) -> str:
    """``phrase`` (``query`` when not given) as the index asks it whole; "" when it is no
    phrase (``core.text.phrase_words``) or the index keeps none of its words."""
    tokens = phrase_words(query if phrase is None else phrase)
    return " ".join(tokens) if any(_indexed(w) for w in tokens) else ""


def match_expression(query: str, phrase: str | None = None) -> str:
    """The tantivy query for ``query``: its phrases and words, any of them (BM25 adds up
    what each matches); "" when no word is left. ``words`` yields no quote character."""
    terms, pairs = query_parts(query, phrase)
    if not terms and not pairs:
        return ""
    return " ".join(f'"{part}"' for part in [*pairs, *terms])


def _micros(record: MemoryRecord) -> int:
    return int(record.created_at.timestamp() * 1_000_000)


def _document(record: MemoryRecord) -> tantivy.Document:
    return tantivy.Document(
        id=record.id,
        text=fold(record.text),
        body=record.text.encode("utf-8"),
        scope=record.scope.value,
        project=record.project or "",
        status=record.status.value,
        category=record.category.value,
        created_at=_micros(record),
    )


def _stored_match(doc: tantivy.Document) -> TextMatch:
    return TextMatch(
        doc["id"][0],
        bytes(doc["body"][0]).decode("utf-8"),
        Category(doc["category"][0]),
        Scope(doc["scope"][0]),
        doc["project"][0] or None,
    )


@dataclass(frozen=True, slots=True)
class _Change:
    """A memory written since the last commit, its words analysed once for every search."""

    record: MemoryRecord
    tokens: list[str]
    counts: Counter[str]
    pairs: Counter[tuple[str, str]]  # adjacent tokens: the query's phrases are mostly pairs

    @classmethod
    def of(cls, record: MemoryRecord | None) -> _Change | None:
        if record is None:
            return None  # deleted
        tokens = _ANALYZER.analyze(fold(record.text))
        return cls(record, tokens, Counter(tokens), Counter(itertools.pairwise(tokens)))


def _visible(record: MemoryRecord, visibility: Visibility) -> bool:
    if record.status not in visibility.statuses:
        return False
    if record.scope.value != "global" and (
        visibility.project is None or record.project != visibility.project
    ):
        return False
    if visibility.categories is not None and record.category not in visibility.categories:
        return False
    return visibility.since is None or record.created_at >= visibility.since


def _hidden(visibility: Visibility) -> list[tantivy.Query]:
    """Queries of the memories ``visibility`` hides, to leave out (``MustNot``): tantivy
    still skips the postings that cannot reach the top (block-max WAND) around an
    exclusion, not around a required filter, which cost three times as much."""
    hidden = []
    statuses = sorted(s.value for s in Status if s not in visibility.statuses)
    if statuses:
        hidden.append(tantivy.Query.term_set_query(SCHEMA, "status", statuses))
    elsewhere = tantivy.Query.term_query(SCHEMA, "scope", Scope.PROJECT.value)  # not global...
    if visibility.project is not None:  # ...and of another project
        mine = tantivy.Query.term_query(SCHEMA, "project", visibility.project)
        elsewhere = tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, elsewhere), (tantivy.Occur.MustNot, mine)]
        )
    hidden.append(elsewhere)
    if visibility.categories is not None:
        categories = sorted(c.value for c in Category if c not in visibility.categories)
        if categories:
            hidden.append(tantivy.Query.term_set_query(SCHEMA, "category", categories))
    if visibility.since is not None:
        since = int(visibility.since.timestamp() * 1_000_000)
        hidden.append(
            tantivy.Query.range_query(
                SCHEMA, "created_at", tantivy.FieldType.Integer, None, since, include_upper=False
            )
        )
    return hidden


class Source(Protocol):
    """What the index needs of the store of record (``KuzuGraphStore``)."""

    def get_meta(self, key: str) -> str | None: ...
    def set_meta(self, key: str, value: str) -> None: ...
    def count_memories(self) -> Mapping[tuple[str, str, str], int]: ...
    def get_memories(self, ids: Collection[str]) -> Mapping[str, MemoryRecord]: ...
    def all_memories(self, project: str | None = None) -> Iterable[MemoryRecord]: ...


class LexicalIndex:
    """BM25 full-text search over memory texts, filtered by visibility."""

    def __init__(self, directory: Path, source: Source) -> None:
        self.directory = directory
        self._source = source
        self._lock = threading.Lock()  # guards the overlay, the journal and in-flight marks
        self._overlay: dict[str, _Change | None] = {}  # id -> what it is now, None: deleted
        self._marked: Counter[str] = Counter()  # marked, the store's write not done yet
        self._wake = threading.Condition(self._lock)
        self._closed = False
        self._commit_lock = threading.Lock()  # one commit at a time
        try:
            directory.mkdir(parents=True, exist_ok=True)
            self._index = tantivy.Index(SCHEMA, path=str(directory), reuse=True)
            self._writer = self._index.writer(WRITER_HEAP, 1)
        except (OSError, ValueError) as exc:
            raise StoreError(
                f"Cannot open the full-text index at {directory}: {exc}. Delete the folder; "
                "graphmem rebuilds it from the store when it opens."
            ) from exc
        self._journal = IdJournal(directory / JOURNAL)
        self._thread = threading.Thread(target=self._commit_loop, name="graphmem-lexical", daemon=True)
        self._thread.start()

    # -- state ------------------------------------------------------------------

    def meta(self) -> dict[str, str]:
        return _read_meta(self.directory)

    def count(self) -> int:
        """Memories in the index (the overlay committed first)."""
        self.flush()
        return int(self._index.searcher().num_docs)

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
        changes = {memory_id: _Change.of(found.get(memory_id)) for memory_id in ids}
        with self._lock:
            self._overlay.update(changes)
            self._marked.subtract(ids)
            self._marked = +self._marked
            self._wake.notify()

    def _change(self, records: Mapping[str, MemoryRecord | None]) -> None:
        changes = {memory_id: _Change.of(record) for memory_id, record in records.items()}
        with self._lock:
            self._overlay.update(changes)
            self._marked.subtract(changes.keys())
            self._marked = +self._marked
            self._wake.notify()

    def flush(self) -> None:
        """Commit every change of the overlay now."""
        with self._commit_lock:
            with self._lock:
                drained = dict(self._overlay)
            if not drained:
                return
            for memory_id, change in drained.items():
                self._writer.delete_documents_by_term("id", memory_id)
                if change is not None:
                    self._writer.add_document(_document(change.record))
            self._writer.commit()
            self._index.reload()
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
            except (OSError, ValueError, RuntimeError):
                log.exception("Committing the full-text index failed; retrying.")
                with self._lock:
                    self._wake.wait(COMMIT_DELAY * 4)

    def rebuild(self, records: Iterable[MemoryRecord], *, token: str) -> int:
        """Replace the whole index by ``records``; it then belongs to the store ``token``."""
        with self._commit_lock:
            with self._lock:
                self._overlay.clear()
            self._writer.delete_all_documents()
            count = 0
            for record in records:
                self._writer.add_document(_document(record))
                count += 1
            self._writer.commit()
            self._index.reload()
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
        self._thread.join()
        try:
            self.flush()
        finally:
            self._journal.close()
            del self._writer  # releases tantivy's writer lock now, for a store opened again

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

    def matches(self, query: str, visibility: Visibility, limit: int) -> list[TextMatch]:
        """The visible memories that hold any word of ``query`` (stopwords left out), best
        first by BM25 of the words alone, each with its text, category, scope and project as
        indexed: the words of a near-duplicate's candidate query are no phrase to ask."""
        terms, _ = query_parts(query)
        found, _, kept = self._search(terms, [], "", visibility, limit, keep=True)
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
    ) -> tuple[list[tuple[str, float]], set[str], dict[str, TextMatch]]:
        """BM25 of ``terms`` and the phrases ``pairs``, plus ``EXACT_BONUS`` for holding ``whole``."""
        expression = " ".join(f'"{part}"' for part in [*pairs, *terms])
        if not expression or limit <= 0:
            return [], set(), {}
        with self._lock:
            overlay = dict(self._overlay)
        kept: dict[str, TextMatch] = {}
        try:
            text = self._index.parse_query(expression, ["text"])
            if whole:  # a constant bonus for holding the phrase: ranks first, told apart
                bonus = tantivy.Query.const_score_query(
                    self._index.parse_query(f'"{whole}"', ["text"]), EXACT_BONUS
                )
                text = tantivy.Query.boolean_query(
                    [(tantivy.Occur.Should, text), (tantivy.Occur.Should, bonus)]
                )
            hidden = _hidden(visibility)
            if overlay:  # their indexed state is stale: the overlay scores them
                hidden.append(tantivy.Query.term_set_query(SCHEMA, "id", list(overlay)))
            parts = [(tantivy.Occur.Should, text), *((tantivy.Occur.MustNot, q) for q in hidden)]
            searcher = self._index.searcher()
            found = []
            for score, address in searcher.search(
                tantivy.Query.boolean_query(parts), limit, count=False
            ).hits:
                doc = searcher.doc(address)
                found.append((doc["id"][0], float(score)))
                if keep:
                    kept[found[-1][0]] = _stored_match(doc)
        except ValueError as exc:
            raise StoreError(f"The full-text index failed: {exc}") from exc
        exact = {memory_id for memory_id, score in found if whole and score >= EXACT_BONUS}
        found = [
            (memory_id, score - EXACT_BONUS if memory_id in exact else score) for memory_id, score in found
        ]
        if overlay:
            scored, held = _score_overlay(terms, pairs, whole, overlay, visibility, searcher)
            found += scored
            exact |= held
        # Whole-phrase holders first, then by score; ties by id: the same order every time.
        found.sort(key=lambda hit: (hit[0] not in exact, -hit[1], hit[0]))
        found = found[:limit]
        if keep:
            kept.update((i, _as_match(overlay[i])) for i, _ in found if i not in kept)
        return found, exact.intersection(memory_id for memory_id, _ in found), kept


def _as_match(change: _Change | None) -> TextMatch:
    assert change is not None  # only a memory the overlay holds scores
    record = change.record
    return TextMatch(record.id, record.text, record.category, record.scope, record.project)


def _score_overlay(
    terms: list[str],
    pairs: list[str],
    whole: str,
    overlay: Mapping[str, _Change | None],
    visibility: Visibility,
    searcher: tantivy.Searcher,
) -> tuple[list[tuple[str, float]], set[str]]:
    """BM25 of the memories not committed yet, with the index's statistics (tantivy's
    formula), and those of them that hold the phrase ``whole``."""
    stems = list(dict.fromkeys(s for term in terms for s in _ANALYZER.analyze(term)))
    phrases = [_ANALYZER.analyze(pair) for pair in pairs]
    changes = [c for c in overlay.values() if c is not None and _visible(c.record, visibility)]
    if not (stems or phrases) or not changes:
        return [], set()
    total = int(searcher.num_docs) + len(changes)
    vocabulary = dict.fromkeys([*stems, *(s for phrase in phrases for s in phrase)])
    held = _ANALYZER.analyze(whole) if whole else []
    average = sum(len(c.tokens) for c in changes) / len(changes) or 1.0
    # Only a memory holding one of the stems or a phrase's first word can score.
    wanted = set(stems) | {phrase[0] for phrase in phrases if phrase} | set(held[:1])
    changes = [c for c in changes if not wanted.isdisjoint(c.counts.keys())]
    frequency = {s: int(searcher.doc_freq("text", s)) for s in vocabulary} if changes else {}
    idf = {s: math.log(1 + (total - df + 0.5) / (df + 0.5)) for s, df in frequency.items()}
    scored, exact = [], set()
    for change in changes:
        tokens, counts = change.tokens, change.counts
        norm = K1 * (1 - B + B * len(tokens) / average)
        score = sum(idf[s] * counts[s] * (K1 + 1) / (counts[s] + norm) for s in stems if s in counts)
        for phrase in phrases:
            hits = _occurrences(change, phrase)
            if hits:
                weight = sum(idf.get(s, 0.0) for s in phrase)
                score += weight * hits * (K1 + 1) / (hits + norm)
        if score > 0:
            scored.append((change.record.id, score))
            if held and _occurrences(change, held):
                exact.add(change.record.id)
    return scored, exact


def _occurrences(change: _Change, phrase: Sequence[str]) -> int:
    """How often ``phrase`` stands in the change's tokens, word after word."""
    if len(phrase) == 2:
        return change.pairs.get((phrase[0], phrase[1]), 0)
    if not phrase or any(word not in change.counts for word in phrase):
        return 0
    tokens, first, size = change.tokens, phrase[0], len(phrase)
    return sum(1 for i, token in enumerate(tokens) if token == first and tokens[i : i + size] == phrase)


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
    built_for = _read_meta(directory).get("version")
    if directory.exists() and built_for != INDEX_VERSION:  # its files may not open with this schema
        log.info("The full-text index at %s is of version %s: building it again.", directory, built_for)
        shutil.rmtree(directory, ignore_errors=True)
    try:
        index = LexicalIndex(directory, store)
    except StoreError:
        log.warning("The full-text index at %s is unreadable: rebuilding it.", directory)
        shutil.rmtree(directory, ignore_errors=True)
        index = LexicalIndex(directory, store)
    meta = index.meta()
    if meta.get("version") != INDEX_VERSION or meta.get("token") != token:
        rebuild(index, store)
        return index
    marked = index.journal()
    if marked:
        index.refresh(marked)
        index.flush()
    if index.count() != sum(store.count_memories().values()):
        log.warning("The full-text index at %s disagrees with the store: rebuilding it.", directory)
        rebuild(index, store)
    return index


def rebuild(index: LexicalIndex, store: Source) -> int:
    """Index every memory of ``store`` again (``graphmem reindex``, or at open)."""
    token = store.get_meta(TOKEN_KEY) or os.urandom(16).hex()
    store.set_meta(TOKEN_KEY, token)
    count = index.rebuild(store.all_memories(), token=token)
    log.info("Built the full-text index at %s from the store: %d memories.", index.directory, count)
    return count
