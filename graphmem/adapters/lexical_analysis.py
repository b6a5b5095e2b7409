"""How the full-text index reads text: its fields (``SCHEMA``), the analysis of its ``text``
field (tantivy's ``en_stem``: words, long tokens dropped, lower-cased, English stems), the
stopwords left out of queries, the words and phrases a query asks (``LexicalIndex.search``),
the clauses it asks them by (``clauses``), and each text's adjacent word pairs, indexed as
terms of their own (``indexed_pairs``) so that a phrase of two words is asked as one term."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import tantivy

from graphmem.core.text import fold, phrase_words, words

MAX_PHRASES = 8  # adjacent word pairs asked as phrases, at most
MAX_TOKEN_BYTES = 40  # tantivy's en_stem drops longer tokens
# The field of each text's adjacent word pairs, one term each ("retri_polici"): a phrase of
# two words asked there costs what a word costs, where a phrase query intersected both
# words' memories and read their positions (at a million memories a recall's two or three
# phrases took 5 of its full-text search's 8 ms).
PAIRS_FIELD = "pairs"
PAIR_JOIN = "_"  # never in a token: the simple tokenizer splits on it
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


ANALYZER = (
    tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
    .filter(tantivy.Filter.remove_long(MAX_TOKEN_BYTES))
    .filter(tantivy.Filter.lowercase())
    .filter(tantivy.Filter.stemmer("english"))
    .build()
)
# ANALYZER's tokens before any filter, and after every filter but the one that drops long
# tokens: one for one, so ``indexed_pairs`` sees where ANALYZER leaves a gap.
_WORDS = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple()).build()
_UNCUT = (
    tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
    .filter(tantivy.Filter.lowercase())
    .filter(tantivy.Filter.stemmer("english"))
    .build()
)


def query_parts(query: str, phrase: str | None = None) -> tuple[list[str], list[str]]:
    """The words of ``query`` to score by BM25 (stopwords dropped) and the phrases to score:
    the adjacent pairs of words of ``query`` that are no stopwords; when there is neither,
    the whole ``phrase`` (``whole_phrase``), so that a phrase of stopwords alone ("how have
    you been") is still asked. Otherwise the whole phrase only decides which memories come
    first in ``search``, not their BM25: asking it twice cost about 1 ms a query at 100,000
    memories."""
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


@dataclass(frozen=True, slots=True)
class Clause:
    """One clause of a search's query: the ``text`` tokens a memory must hold for it to add
    anything to the memory's score (a term's one, a phrase's every one), and the query."""

    tokens: tuple[str, ...]
    query: tantivy.Query


def clauses(parts: Iterable[str]) -> list[Clause]:
    """A term or phrase clause for each of ``parts`` (a word or a phrase) that has a word the
    index keeps, as the index analyses it: the same query as tantivy's parser makes of quoted
    parts, without its parsing."""
    found = []
    for part in parts:
        tokens = tuple(ANALYZER.analyze(part))
        if len(tokens) == 1:
            found.append(Clause(tokens, tantivy.Query.term_query(SCHEMA, "text", tokens[0])))
        elif tokens:
            phrase: list[str | tuple[int, str]] = [*tokens]
            found.append(Clause(tokens, tantivy.Query.phrase_query(SCHEMA, "text", phrase)))
    return found


def pair_token(first: str, second: str) -> str:
    """Two adjacent tokens of the ``text`` field as one term of the ``pairs`` field."""
    return f"{first}{PAIR_JOIN}{second}"


def indexed_pairs(text: str) -> str:
    """The pairs of adjacent tokens of ``text`` as the ``text`` field holds them, for the
    ``pairs`` field: those a phrase query of the two would match. A token the analysis drops
    (too long) leaves a gap, as it does in the positions a phrase query reads."""
    raw = _WORDS.analyze(text)
    stems = _UNCUT.analyze(text)
    if len(raw) != len(stems):
        return ""  # never: lower-casing and stemming keep every token
    kept = [len(token.encode("utf-8")) < MAX_TOKEN_BYTES for token in raw]
    return " ".join(
        pair_token(stems[i], stems[i + 1]) for i in range(len(stems) - 1) if kept[i] and kept[i + 1]
    )


def any_of(queries: Sequence[tantivy.Query]) -> tantivy.Query:
    """Any of ``queries`` (at least one), their scores summed."""
    if len(queries) == 1:
        return queries[0]
    return tantivy.Query.boolean_query([(tantivy.Occur.Should, q) for q in queries])


def within(query: tantivy.Query, required: tantivy.Query) -> tantivy.Query:
    """``query`` asked only of the memories ``required`` matches, each scored by ``query``
    alone: ``required`` adds 0.0 beside it, so the float sums are the same, to the bit."""
    held = tantivy.Query.const_score_query(required, 0.0)
    return tantivy.Query.boolean_query([(tantivy.Occur.Must, held), (tantivy.Occur.Should, query)])


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw")
    builder.add_text_field("text", tokenizer_name="en_stem")
    builder.add_text_field(PAIRS_FIELD, tokenizer_name="whitespace", index_option="freq")
    builder.add_bytes_field("body", stored=True, indexed=False, fast=False)  # the text as written
    for name in ("scope", "project", "status", "category", "branch"):  # branch: only when on one
        builder.add_text_field(name, stored=True, tokenizer_name="raw")
    builder.add_integer_field("created_at", indexed=True, fast=True)
    # A ``mem_`` id's 16 hex digits as a signed 64-bit number: a search reads its hits' ids
    # from this column instead of their stored documents (0.02 ms a hit). Ids of another
    # shape (imported ones may be) have no key and are read from the stored document.
    builder.add_integer_field("key", fast=True)
    # What a hit's visibility is decided by, read from columns (``lexical_visibility``).
    for name in ("code", "project_hash", "branch_hash"):
        builder.add_integer_field(name, fast=True)
    return builder.build()


SCHEMA = _schema()
