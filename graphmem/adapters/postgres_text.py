"""Full-text search in PostgreSQL: which memories to rank, and how (``search_text``, ``text_matches``).

A part of ``PostgresGraphStore`` (``postgres_store.py``) over its connection part; the
``tsvector`` and the queries' lexemes are ``postgres_rows.py``'s. ``search_text_near`` is a
recall's search: each hit comes with its cosine to the query's vector, in the same statement.

**Ranking.** Each query word a memory holds adds the word's inverse document frequency
(BM25's ``ln(1 + (N - df + 0.5) / (df + 0.5))``); the memories that hold the asked phrase
word for word come first. ``ts_rank`` knows no corpus statistics: under it a memory with two
common words outranked one with the rare word that names what was asked.

**Bounded work.** Any of a query's words is a large share of a big store: four words of the
scale benchmark's questions match 19% of 100,000 memories, and reading and ranking all of
them took 250 ms. So only the memories likeliest to reach the top are read: those holding one
of the rarest words (taken rarest first while their estimated matches stay under
:data:`CANDIDATES_CAP`, and at least until they reach the ``limit`` asked) and those holding
the phrase (found through its rarest word, not its stopwords). A memory holding only more
common words is left out: one of them scores less than one rarer word, but two or three
together may score more, so on a large store this is an approximation of the full ranking,
traded for bounded work. A small store (every word under the cap) is searched whole.

**Two words first.** Reading a candidate is a heap fetch (about 3 µs at 100,000 memories), the
bulk of a search's time. So the candidates that hold a second scored word of the query are read
first (GIN intersects the posting lists without fetching a row): a candidate holding one word
only scores that word's weight at most, so when the last of the first read's ``limit`` best
scores more than the heaviest candidate word (or holds the phrase), it is the whole answer,
else every candidate is read. Same ranking either way; a fifth to a third of the rows when the
first read suffices (three searches in four of the scale benchmark's questions). Both reads are
one statement (``_first_or_every``): the second runs in the database only when the first is not
the answer, without a round trip between them.

**Statistics.** How common each word is comes from PostgreSQL's own statistics of the
``terms`` column (``most_common_elems``, which ``ANALYZE`` and autovacuum keep), read once per
:data:`STATS_REFRESH_S`; a word not among them is taken to be in half as many memories as the
rarest there, at most :data:`RARE_SHARE_MAX` of them. They are of the memories the role sees,
never of another's: a role row-level security does not apply to (an administrator) reads
``pg_stats`` of ``terms``; the others read the statistics of the shared memories (project
ones and team-wide global ones, which every role sees) through ``graphmem_term_stats()``
(schema 10) and count their own global memories holding each query word themselves (up to
:data:`COUNT_MAX`), the database hiding everyone else's. A table never analysed yet (a new
store) has none: then each word's memories the role sees are counted, up to :data:`COUNT_MAX`.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from graphmem.adapters.postgres_connection import PostgresConnection
from graphmem.adapters.postgres_rows import (
    cosine_of,
    phrase_query,
    query_lexemes,
    read_column,
    vector_param,
    visibility_clause,
)
from graphmem.adapters.record_rows import UNKNOWN_CATEGORY, memory_text, read_enum, read_scope
from graphmem.core.models import Category
from graphmem.core.ports import TextHits, TextMatch, Vector, Visibility

# Estimated memories past which rarer words alone pick the candidates (see the module doc):
# ranking 2,000 rows costs a few ms.
CANDIDATES_CAP = 2000
# The largest share of memories a word missing from the statistics is taken to be in.
RARE_SHARE_MAX = 0.005
# Where counting a word's memories stops (no statistics): the cost of a count is bounded.
COUNT_MAX = 5000
# How long the word statistics are reused before they are read again (ANALYZE's own pace
# is minutes).
STATS_REFRESH_S = 60.0
# Words of a query that are scored (the rest still find memories, unweighted): a query is a
# question or a memory's text, and its score is one term per word.
SCORED_MAX = 32
# The memories graphmem_term_stats() leaves out (those not of postgres_functions.SHARED): for a
# role under row-level security, its own global memories.
OWN_ROWS = "m.scope = 'global' AND m.owner IS NOT NULL"


def _score(words: int) -> str:
    """The SQL of a memory's score: each of the query's first ``words`` lexemes it holds (the
    parameters ``l0``, ``l1``, ...) adds its weight (``w0``, ``w1``, ...). Only numbers go
    into the text; the lexemes and weights are parameters."""
    terms = [f"CASE WHEN m.terms @@ %(l{i})s::tsquery THEN %(w{i})s::float8 ELSE 0 END" for i in range(words)]
    return " + ".join(terms) or "0"


def _with_another(candidates: list[str], scored: list[str]) -> str | None:
    """The ``tsquery`` of the memories holding one of ``candidates`` (quoted lexemes) and one
    more of the ``scored`` words; None when there is no second word to hold."""
    terms = []
    for candidate in candidates:
        others = [f"'{word}'" for word in scored if f"'{word}'" != candidate]
        if not others or not candidate.startswith("'"):
            return None
        terms.append(f"({candidate} & ({' | '.join(others)}))")
    return " | ".join(terms) or None


def _first_or_every(select: str) -> str:
    """One statement for the two reads of a search (see the module doc): ``select`` over the
    candidates holding two words (``pairs``) when its ``limit`` rows are the answer (the last
    holds the phrase or outscores any one word, ``alone``), else ``select`` over every candidate,
    which PostgreSQL then runs only (a one-time filter on the first's verdict)."""
    first = select.replace("%(candidates)s", "%(pairs)s")
    return (
        f"WITH first AS MATERIALIZED ({first}), enough AS (SELECT count(*) = %(limit)s AND "
        "(bool_and(exact) OR min(score) FILTER (WHERE NOT exact) > %(alone)s) AS yes FROM first) "
        "SELECT * FROM first WHERE (SELECT yes FROM enough) "
        f"UNION ALL SELECT * FROM ({select}) AS every WHERE NOT (SELECT yes FROM enough) "
        "ORDER BY exact DESC, score DESC, id"
    )


@dataclass(frozen=True, slots=True)
class _Stats:
    """How common words are among the memories a role sees: ``shares`` of the ``base``
    memories holding each common word, ``rare`` the share any other word is below, and the
    role's own global memories (``own_rows``, ``own``: how many of them hold a word counted),
    when ``base`` are the shared ones only. ``counted``: exact counts of every word instead."""

    read_at: float
    base: float
    shares: dict[str, float]
    rare: float
    counted: bool
    own_rows: float = 0.0
    own: dict[str, int] = field(default_factory=dict)

    @property
    def rows(self) -> float:
        """The memories the role sees."""
        return self.base + self.own_rows

    def matches(self, word: str) -> float:
        """How many of them hold ``word`` (an estimate), at most all of them."""
        held = self.shares.get(word, self.rare) * self.base + self.own.get(word, 0)
        return min(held, max(self.rows, 1.0))


class PostgresTextSearch:
    """``search_text`` and ``text_matches`` of the PostgreSQL store (see the module doc)."""

    def __init__(self, db: PostgresConnection) -> None:
        self._db = db
        self._stats: _Stats | None = None  # read again after STATS_REFRESH_S
        self._stats_lock = threading.Lock()

    def forget_stats(self) -> None:
        """The memories changed in bulk (an import): the next search reads the statistics again."""
        with self._stats_lock:
            self._stats = None

    def search_text(
        self, query: str, visibility: Visibility, limit: int, *, phrase: str | None = None
    ) -> TextHits:
        return self.search_text_near(query, visibility, limit, None, phrase=phrase)[0]

    def search_text_near(
        self,
        query: str,
        visibility: Visibility,
        limit: int,
        vector: Vector | None,
        *,
        phrase: str | None = None,
    ) -> tuple[TextHits, dict[str, float]]:
        """``search_text``, and each hit's cosine to ``vector`` (those with a vector) read in the same
        statement: a recall's words need not wait for a second round trip (``service/recall.py``)."""
        lexemes, whole = query_lexemes(query), phrase_query(query, phrase)
        if not (lexemes or whole) or limit <= 0:
            return TextHits(), {}
        held = query_lexemes(query if phrase is None else phrase)  # the phrase's own words
        rows = self._ranked(("m.id",), lexemes, (whole, held) if whole else None, visibility, limit, vector)
        # A phrase of stopwords only scores no word: it still ranks, as ts_rank's hits did.
        hits = ((str(i), score if score > 0 else 1.0) for i, _, score, _ in rows)
        cosines = {str(i): cosine for i, _, _, cosine in rows if cosine is not None}
        return TextHits(hits, (str(i) for i, exact, _, _ in rows if exact)), cosines

    def text_matches(self, query: str, visibility: Visibility, limit: int) -> list[TextMatch]:
        lexemes = query_lexemes(query)
        if not lexemes or limit <= 0:
            return []
        columns = ("m.id", read_column("m", "text"), "m.category", "m.scope", "m.project", "m.branch")
        rows = self._ranked(columns, lexemes, None, visibility, limit)
        return [
            TextMatch(
                str(i),
                memory_text(t, i),
                read_enum(Category, c, UNKNOWN_CATEGORY, i),
                read_scope(s, p, i),
                p,
                b,
            )
            for (i, t, c, s, p, b), _, _, _ in rows
        ]

    def _ranked(
        self,
        columns: Sequence[str],
        lexemes: list[str],
        phrase: tuple[str, list[str]] | None,
        visibility: Visibility,
        limit: int,
        vector: Vector | None = None,
    ) -> list[tuple[Any, bool, float, float | None]]:
        """``columns`` of the best ``limit`` visible memories, whether each holds the phrase
        (its ``tsquery`` and its words but stopwords), its score and (with ``vector``) the cosine
        of its vector to ``vector`` (None: it has none); best first."""
        whole, held = phrase if phrase else (None, [])
        weights, matches, chosen = self._plan(lexemes, held, limit)
        candidates = [f"'{lexeme}'" for lexeme in chosen]
        if whole and not held:
            candidates.append(f"({whole})")  # stopwords only: the index reads them all, rarely
        elif held and not set(held) & set(chosen):
            # Memories holding the phrase hold its rarest word: the index need not read the
            # phrase's stopwords, which are in nearly every memory.
            candidates.append(f"'{min(held, key=lambda word: (matches[word], word))}'")
        if not candidates:
            return []
        where, params = visibility_clause(visibility)
        scored = lexemes[:SCORED_MAX]
        params.update(candidates=" | ".join(candidates), whole=whole, limit=limit)
        for i, lexeme in enumerate(scored):
            params[f"l{i}"], params[f"w{i}"] = f"'{lexeme}'", weights[lexeme]
        select = (
            f"SELECT {', '.join(columns)}, coalesce(m.terms @@ %(whole)s::tsquery, false) AS exact, "
            f"{_score(len(scored))} AS score "
            f"FROM memories m WHERE m.terms @@ %(candidates)s::tsquery AND {where} "
            "ORDER BY exact DESC, score DESC, m.id LIMIT %(limit)s"
        )
        pairs = (
            _with_another(candidates, scored) if not (whole and len(set(held) & set(scored)) < 2) else None
        )
        statement = select
        if pairs is not None:
            # First the candidates that hold a second scored word: a candidate holding one only
            # scores that word's weight at most, so if the last of these scores more, it is the
            # same answer from a fraction of the rows; else every candidate is read, in the same
            # statement (the second read is skipped when the first is the answer).
            alone = max((weights[w] for w in scored if f"'{w}'" in candidates), default=0.0)
            statement = _first_or_every(select)
            params.update(pairs=pairs, alone=alone)
        if vector is not None:  # each ranked row's vector read again by its key, for its cosine
            statement = (
                f"SELECT r.*, 1 - (v.embedding <=> %(near)s::vector) FROM ({statement}) AS r "
                "JOIN memories v ON v.id = r.id ORDER BY r.exact DESC, r.score DESC, r.id"
            )
            params["near"] = vector_param(vector)
        rows = self._db.rows(statement, params)
        width, near = len(columns), vector is not None
        return [
            (
                row[0] if width == 1 else row[:width],
                bool(row[width]),
                float(row[width + 1]),
                None if not near or row[-1] is None else cosine_of(row[-1]),
            )
            for row in rows
        ]

    def _plan(
        self, lexemes: list[str], held: list[str], limit: int
    ) -> tuple[dict[str, float], dict[str, float], list[str]]:
        """Each word's weight (its idf) and estimated matches (of ``lexemes`` and the phrase's
        ``held``), and the words that pick the candidates."""
        words = list(dict.fromkeys([*lexemes, *held]))
        stats = self._word_stats(words)
        rows = max(stats.rows, 1.0)
        # A word is in no more memories than there are (the statistics are estimates).
        matches = {lexeme: stats.matches(lexeme) for lexeme in words}
        weights = {lexeme: math.log(1 + (rows - df + 0.5) / (df + 0.5)) for lexeme, df in matches.items()}
        chosen: list[str] = []
        expected = 0.0
        for lexeme in sorted(lexemes, key=lambda word: (matches[word], word)):
            if expected >= limit and expected + matches[lexeme] > CANDIDATES_CAP:
                break
            chosen.append(lexeme)
            expected += matches[lexeme]
        return weights, matches, chosen

    def _word_stats(self, lexemes: list[str]) -> _Stats:
        """The statistics of the ``terms`` column this role may know (cached; see the module doc)."""
        with self._stats_lock:
            stats = self._stats
            if stats is None or time.monotonic() - stats.read_at > STATS_REFRESH_S:
                stats = self._read_stats()
            if stats.counted and any(lexeme not in stats.shares for lexeme in lexemes):
                stats = self._counted(stats, lexemes)
            elif stats.own_rows > 0 and any(lexeme not in stats.own for lexeme in lexemes):
                stats = self._own_counted(stats, lexemes)
            self._stats = stats
            return stats

    def _read_stats(self) -> _Stats:
        now = time.monotonic()
        if self._db.rows("SELECT row_security_active('memories')")[0][0]:
            # The shared memories' statistics, read as the schema's owner (schema 10,
            # postgres_functions.py), and how many of this role's own global memories there are
            # (row-level security shows it no one else's).
            found = self._db.rows(
                "SELECT t.words, t.shares, t.memories, (SELECT count(*) FROM memories m "
                f"WHERE {OWN_ROWS}) FROM graphmem_term_stats() AS t"
            )
        else:
            # Every memory is this role's to see: its own pg_stats (a view that hides a table under
            # row-level security from a role it applies to).
            found = self._db.rows(
                "SELECT s.most_common_elems::text::text[], s.most_common_elem_freqs, c.reltuples, 0 "
                "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace LEFT JOIN pg_stats s "
                "ON s.schemaname = n.nspname AND s.tablename = 'memories' AND s.attname = 'terms' "
                "WHERE c.oid = 'memories'::regclass"
            )
        words, shares, rows, own = found[0] if found else (None, None, -1, 0)
        if not words or not shares:
            # Never analysed (a new store): each word's memories this role sees are counted.
            rows = self._db.rows("SELECT count(*) FROM memories")[0][0]
            return _Stats(now, float(rows), {}, 0.0, counted=True)
        # The shares list ends with the smallest and largest share and the share of NULLs.
        common = dict(zip(words, shares[: len(words)], strict=True))
        # A word not among them: half the rarest one's share, at most 0.5% (as PostgreSQL's planner
        # estimates it, ts_selfuncs.c).
        rare = min(float(shares[len(words)]) / 2, RARE_SHARE_MAX)
        return _Stats(now, max(float(rows), 0.0), common, rare, counted=False, own_rows=float(own))

    def _counted(self, stats: _Stats, lexemes: list[str]) -> _Stats:
        """``stats`` with the share of each of ``lexemes`` counted (no statistics to read);
        a count stops at :data:`COUNT_MAX`: a word that common is only ranked, never a candidate."""
        missing = [lexeme for lexeme in lexemes if lexeme not in stats.shares]
        # The memories are counted again with the words: the store grows while the statistics
        # are reused, and a word counted among more memories than an older total would weigh
        # less than nothing (BM25's idf turns negative past half the memories).
        counts = self._db.rows(
            "SELECT q.l, (SELECT count(*) FROM (SELECT 1 FROM memories m WHERE m.terms @@ q.l::tsquery "
            "LIMIT %(most)s) AS hit), (SELECT count(*) FROM memories) "
            "FROM unnest(%(words)s::text[]) AS q(l)",
            {"words": [f"'{lexeme}'" for lexeme in missing], "most": COUNT_MAX},
        )
        rows = max(float(counts[0][2]) if counts else stats.rows, 1.0)
        # The shares counted before are rescaled to the new total: a share is a count here.
        scale = max(stats.rows, 1.0) / rows
        shares = {word: share * scale for word, share in stats.shares.items()}
        for quoted, count, _ in counts:
            shares[str(quoted)[1:-1]] = int(count) / rows
        return _Stats(stats.read_at, rows, shares, 0.0, counted=True)

    def _own_counted(self, stats: _Stats, lexemes: list[str]) -> _Stats:
        """``stats`` with how many of this role's own global memories hold each of ``lexemes``
        (row-level security shows it no one else's), up to :data:`COUNT_MAX` a word."""
        missing = [lexeme for lexeme in lexemes if lexeme not in stats.own]
        counts = self._db.rows(
            "SELECT q.l, (SELECT count(*) FROM (SELECT 1 FROM memories m WHERE m.terms @@ q.l::tsquery "
            f"AND {OWN_ROWS} LIMIT %(most)s) AS hit) FROM unnest(%(words)s::text[]) AS q(l)",
            {"words": [f"'{lexeme}'" for lexeme in missing], "most": COUNT_MAX},
        )
        own = dict(stats.own)
        for quoted, count in counts:
            own[str(quoted)[1:-1]] = int(count)
        return replace(stats, own=own)
