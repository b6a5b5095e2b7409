"""The best hits of a query of words without scoring every memory that holds one (``proven_hits``).

tantivy-py collects a search's hits with a ``MultiCollector``, which scores every match: a
query of eight words, three of them common ("call", "retry", "policy"), scored 150,000-250,000
memories at a million, 3-4 ms of a remember's near-duplicate check. Yet a memory that holds
only common words cannot be among the best: it scores at most the sum of those words' best
scores (``ScoreBounds``: each word's best score in the index, read once per searcher). So the
search first asks only the memories that hold one of the rarer words, each scored by the whole
query (beside a ``Must`` clause that adds 0.0: the same float sums, to the bit).

Its leading hits that score above both what the words left out can add and the first hit past
the cut are the whole query's leading hits, in its order: every other memory scores lower.
Hits tied at the cut are not (which of them tantivy keeps depends on the order it sees them),
so the caller asks the whole query when the answer reaches past the proven ones.

Only a query of words alone is asked so. A recall's query of words and pairs took longer so at
a million memories, whatever the hits asked for (p50 10.4-14.3 against 4.6-9.2 ms for 5 to 100
hits): its rarer words are still in tens of thousands of memories, and a second try is common.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Sequence

import tantivy

from graphmem.adapters.lexical_analysis import PAIRS_FIELD, SCHEMA, Clause, any_of, pair_token, within

# tantivy adds scores as 32-bit floats: a sum of best scores is raised by this much
# (relative, then absolute) before it is compared with a hit's score.
BOUND_SLACK = 1e-4
# Words whose best scores are kept per searcher (a new searcher, after each commit, starts anew).
TERM_CACHE_SIZE = 4096
# The first try leaves out the commonest words whose best scores add up to less than this
# share of the best scores of all the query's words together: a leading hit holds most of them.
FIRST_TRY_SHARE = 0.5
# Matches (the sum of the words' document counts) under which the whole query is asked at
# once: at 100,000 memories (a remember's query matching about 25,000) it took 0.6-0.9 ms
# and the bounded search 0.2 ms more; at a million (150,000-250,000) 3-4 ms against 1-1.5.
MIN_POSTINGS = 100_000
# Searches of the rarer words' memories before the whole query is asked: a second leaves out
# fewer words, those the first's hits prove cannot matter.
TRIES = 2

Hits = list[tuple[float, tantivy.DocAddress]]


class ScoreBounds:
    """One searcher's statistics as BM25 scores by them: each word's best score in the index
    (``best``: what it adds to any memory's score at most, from a search of the word alone,
    once per word and searcher), the idf of words and pairs, and a phrase of two words as
    the term of the ``pairs`` field that stands for it (``paired``)."""

    def __init__(self, searcher: tantivy.Searcher) -> None:
        self.searcher = searcher
        self._best: dict[str, float] = {}
        self._documents: float | None = None  # BM25's N, read once (``documents``)
        self._lock = threading.Lock()  # searches run on several threads (a daemon's)

    def best(self, term: str) -> float:
        score = self._best.get(term)
        if score is None:
            query = tantivy.Query.term_query(SCHEMA, "text", term)
            hits = self.searcher.search(query, 1, count=False).hits
            score = float(hits[0][0]) if hits else 0.0
            with self._lock:
                if len(self._best) >= TERM_CACHE_SIZE:
                    self._best.pop(next(iter(self._best)))
                self._best[term] = score
        return score

    def idf(self, field: str, tokens: Sequence[str]) -> float | None:
        """The sum of ``tokens``' idf in ``field``, as BM25 has it; None when the count of
        documents cannot be read."""
        documents = self.documents()
        if documents is None:
            return None
        total = 0.0
        for token in tokens:
            held = self.searcher.doc_freq(field, token)
            total += math.log(1.0 + (documents - held + 0.5) / (held + 0.5))
        return total

    def documents(self) -> float | None:
        """BM25's N: every document of the index, deleted ones too (tantivy counts them until
        a merge drops them), as tantivy's explanation of a hit states it (the searcher's
        ``num_docs`` leaves the deleted out); None when the index is empty or it does not."""
        if self._documents is None:
            hits = self.searcher.search(tantivy.Query.all_query(), 1, count=False).hits
            if hits:
                address = hits[0][1]
                query = tantivy.Query.term_query(SCHEMA, "id", self.searcher.doc(address)["id"][0])
                self._documents = _explained_documents(query, self.searcher, address)
        return self._documents

    def paired(self, clause: Clause) -> Clause:
        """A phrase of two words asked as the one term of the ``pairs`` field that stands for
        it, scored as tantivy scores the phrase: BM25 with the sum of its words' idf (the
        pair's own idf, boosted) and its count in the memory. The phrase itself when the
        count of documents cannot be read."""
        first, second = clause.tokens
        token = pair_token(first, second)
        words, pair = self.idf("text", clause.tokens), self.idf(PAIRS_FIELD, [token])
        if words is None or pair is None:
            return clause
        query = tantivy.Query.term_query(SCHEMA, PAIRS_FIELD, token)
        return Clause(clause.tokens, tantivy.Query.boost_query(query, words / pair))


def _explained_documents(
    query: tantivy.Query, searcher: tantivy.Searcher, address: tantivy.DocAddress
) -> float | None:
    try:
        explanation = json.loads(query.explain(searcher, address).to_json())
    except (ValueError, TypeError):
        return None
    pending = [explanation]
    while pending:
        node = pending.pop()
        if not isinstance(node, dict):
            continue
        if str(node.get("description", "")).startswith("N,"):
            value = node.get("value")
            return float(value) if isinstance(value, int | float) else None
        details = node.get("details")
        if isinstance(details, list):
            pending.extend(details)
    return None


def left_out(terms: Sequence[str], doc_freqs: Sequence[int], bounds: ScoreBounds, budget: float) -> list[int]:
    """The positions of the words to leave out of the required clause: the commonest first,
    while their best scores add up to less than ``budget``; never every word."""
    order = sorted(range(len(terms)), key=lambda i: (-doc_freqs[i], i))
    chosen: list[int] = []
    total = 0.0
    for i in order[:-1]:
        best = bounds.best(terms[i])
        if total + best >= budget:
            break
        chosen.append(i)
        total += best
    return chosen


def proven_hits(
    bounds: ScoreBounds, terms: Sequence[str], query: tantivy.Query, depth: int, want: int
) -> Hits:
    """The leading hits of ``query`` (any of ``terms``: tokens of the ``text`` field, one term
    query each, in the query's order) that its ``depth`` best as ``searcher.search`` of the
    query alone in a boolean one begin with: the same hits, scores and order; at least
    ``want`` of them when it can. Empty when none can be proven so (the caller asks the
    whole query)."""
    if len(terms) < 2 or depth <= 0:
        return []
    searcher = bounds.searcher
    doc_freqs = [searcher.doc_freq("text", term) for term in terms]
    if sum(doc_freqs) < MIN_POSTINGS:
        return []  # the whole query is cheap: scoring every match costs less than the bounds
    budget = FIRST_TRY_SHARE * sum(bounds.best(term) for term in terms)
    proven: Hits = []
    tried: set[tuple[int, ...]] = set()
    for _ in range(TRIES):
        out = tuple(left_out(terms, doc_freqs, bounds, budget))
        if not out or out in tried:
            break
        tried.add(out)
        rare = [term for i, term in enumerate(terms) if i not in out]
        hits = _holding(searcher, query, rare, depth + 1)
        cut = sum(bounds.best(terms[i]) for i in out) * (1 + BOUND_SLACK) + BOUND_SLACK
        if len(hits) > depth:
            cut = max(cut, hits[depth][0])  # tied at the cut: which tantivy keeps is its own
        proven = [hit for hit in hits[:depth] if hit[0] > cut]
        if len(proven) >= want or len(hits) < want:
            break
        # The whole query's ``want``-th hit scores at least this: leave out fewer words.
        budget = hits[want - 1][0]
    return proven


def _holding(searcher: tantivy.Searcher, query: tantivy.Query, rare: Sequence[str], limit: int) -> Hits:
    """The ``limit`` best hits of ``query`` among the memories that hold one of ``rare``."""
    holds = any_of([tantivy.Query.term_query(SCHEMA, "text", term) for term in dict.fromkeys(rare)])
    return list(searcher.search(within(query, holds), limit, count=False).hits)
