"""When a new memory repeats an existing one, and when it replaces one.

Both checks are lexical so they run on the write path without the model:
``similarity`` is the Jaccard overlap of word unigrams and bigrams. A pair is a
*near-duplicate* when it overlaps strongly **and** every word that differs is a
function word or a variant of a word on the other side ("it's"/"it is",
"test"/"tests"): a changed name, number or content word ("SQLite" → "DuckDB",
"15" → "16") makes a different statement, never a duplicate. The thresholds are
tuned on ``samples/dedup_pairs.jsonl`` (see docs/configuration.md).
"""

from __future__ import annotations

from graphmem.core.models import Scope
from graphmem.core.text import content_hash, fold, jaccard, shingles, words

FUNCTION_WORDS = frozenset(
    """a an the and or but if then so of to in on at by for with from as into onto about
    is are was were be been being am it its it's this that these those there here we our
    us i me my you your he she they them their s t do does did done have has had will would
    shall should can could may might must not no just also very really too please only""".split()
)
# Words sharing this many leading letters count as variants of one word.
VARIANT_PREFIX = 5


def similarity(a: str, b: str) -> float:
    """Word unigram+bigram Jaccard overlap of two texts (0..1)."""
    a, b = fold(a), fold(b)
    return jaccard(shingles(a, 1) | shingles(a, 2), shingles(b, 1) | shingles(b, 2))


def differing_content_words(a: str, b: str) -> set[str]:
    """Words on one side only that are neither function words nor variants of the other side."""
    left, right = set(words(fold(a))), set(words(fold(b)))
    differing = set()
    for mine, theirs in ((left - right, right), (right - left, left)):
        for word in mine:
            if word in FUNCTION_WORDS or word.replace("'", "") in FUNCTION_WORDS:
                continue
            if len(word) >= VARIANT_PREFIX and any(
                len(t) >= VARIANT_PREFIX and t[:VARIANT_PREFIX] == word[:VARIANT_PREFIX] for t in theirs
            ):
                continue
            differing.add(word)
    return differing


def is_near_duplicate(a: str, b: str, threshold: float) -> bool:
    """``b`` says what ``a`` says, in nearly the same words."""
    return similarity(a, b) >= threshold and not differing_content_words(a, b)


def memory_hash(scope: Scope, project: str | None, text: str) -> str:
    """The exact-duplicate key of a memory: its normalized text within its scope and project."""
    return content_hash(f"{scope.value}\x1f{project or ''}\x1f{text}")
