"""The full-text index's overlay: memories written since tantivy's last commit, scored
in Python alike (tantivy's BM25 with the index's statistics) until the background commit
takes them (``LexicalIndex``)."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import tantivy

from graphmem.adapters.lexical_analysis import ANALYZER
from graphmem.adapters.lexical_visibility import ColumnFilter, Columns
from graphmem.core.models import MemoryRecord
from graphmem.core.ports import TextMatch, Visibility
from graphmem.core.text import fold

K1, B = 1.2, 0.75  # tantivy's BM25 parameters, for scoring the overlay alike


@dataclass(frozen=True, slots=True)
class Change:
    """A memory written since the last commit, its words analysed once for every search."""

    record: MemoryRecord
    tokens: list[str]
    counts: Counter[str]
    pairs: Counter[tuple[str, str]]  # adjacent tokens: the query's phrases are mostly pairs
    columns: Columns  # what its visibility is decided by, as the index will hold it

    @classmethod
    def of(cls, record: MemoryRecord | None) -> Change | None:
        if record is None:
            return None  # deleted
        tokens = ANALYZER.analyze(fold(record.text))
        return cls(record, tokens, Counter(tokens), Counter(itertools.pairwise(tokens)), Columns.of(record))


def as_match(change: Change | None) -> TextMatch:
    assert change is not None  # only a memory the overlay holds scores
    record = change.record
    return TextMatch(record.id, record.text, record.category, record.scope, record.project, record.branch)


def score_overlay(
    terms: list[str],
    pairs: list[str],
    whole: str,
    overlay: Mapping[str, Change | None],
    visibility: Visibility,
    searcher: tantivy.Searcher,
) -> tuple[list[tuple[str, float]], set[str]]:
    """BM25 of the memories not committed yet, with the index's statistics (tantivy's
    formula), and those of them that hold the phrase ``whole``."""
    stems = list(dict.fromkeys(s for term in terms for s in ANALYZER.analyze(term)))
    phrases = [ANALYZER.analyze(pair) for pair in pairs]
    shows = ColumnFilter(visibility).shows
    changes = [c for c in overlay.values() if c is not None and shows(*c.columns)]
    if not (stems or phrases) or not changes:
        return [], set()
    total = int(searcher.num_docs) + len(changes)
    vocabulary = dict.fromkeys([*stems, *(s for phrase in phrases for s in phrase)])
    held = ANALYZER.analyze(whole) if whole else []
    average = sum(len(c.tokens) for c in changes) / len(changes) or 1.0
    # Only a memory holding one of the stems or a phrase's first word can score.
    wanted = set(stems) | {phrase[0] for phrase in phrases if phrase} | set(held[:1])
    changes = [c for c in changes if not wanted.isdisjoint(c.counts.keys())]
    if not changes:
        return [], set()
    frequency = {s: int(searcher.doc_freq("text", s)) for s in vocabulary}
    idf = {s: math.log(1 + (total - df + 0.5) / (df + 0.5)) for s, df in frequency.items()}
    weights = [(s, idf[s]) for s in stems]
    saturation = K1 + 1
    scored, exact = [], set()
    for change in changes:  # a plain loop: a search of a burst of writes scores over 100 of them
        counts = change.counts
        norm = K1 * (1 - B + B * len(change.tokens) / average)
        score = 0.0
        for stem, weight in weights:
            if stem in counts:
                count = counts[stem]
                score += weight * count * saturation / (count + norm)
        for phrase in phrases:
            hits = _occurrences(change, phrase)
            if hits:
                weight = sum(idf.get(s, 0.0) for s in phrase)
                score += weight * hits * saturation / (hits + norm)
        if score > 0:
            scored.append((change.record.id, score))
            if held and _occurrences(change, held):
                exact.add(change.record.id)
    return scored, exact


def _occurrences(change: Change, phrase: Sequence[str]) -> int:
    """How often ``phrase`` stands in the change's tokens, word after word."""
    if len(phrase) == 2:
        return change.pairs.get((phrase[0], phrase[1]), 0)
    if not phrase or any(word not in change.counts for word in phrase):
        return 0
    tokens, first, size = change.tokens, phrase[0], len(phrase)
    return sum(1 for i, token in enumerate(tokens) if token == first and tokens[i : i + size] == phrase)
