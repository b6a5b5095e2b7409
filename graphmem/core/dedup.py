"""When a new memory repeats an existing one, and when it replaces one.

Both checks are lexical so they run on the write path without the model:
``similarity`` is the Jaccard overlap of word unigrams and bigrams. A pair is a
*near-duplicate* when it overlaps strongly **and** every word that differs is a
function word or a variant of a word on the other side ("it's"/"it is",
"test"/"tests"): a changed name, number or content word ("SQLite" → "DuckDB",
"15" → "16") makes a different statement, never a duplicate. The thresholds are
tuned on ``samples/dedup_pairs.jsonl`` (see docs/configuration.md). A newer statement
*replaces* an older one (``replaces``) when, word for word, it changes one short choice on
the same subject and nothing else; ``samples/supersession_pairs.jsonl`` holds it to that.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from functools import lru_cache

from graphmem.core.models import Scope
from graphmem.core.text import content_hash, fold, jaccard, shingles, words

FUNCTION_WORDS = frozenset(
    """a an the and or but if then so of to in on at by for with from as into onto about is
    are was were be been being am it its it's this that these those there here we our us
    i me my you your he she they them their s do does did done have has had will would
    shall should can could may might must just also very really too please only always
    instead get gets got lives live sits more than over""".split()  # noqa: SIM905
)
# Words that flip a statement: both sides must have as many.
NEGATIONS = frozenset({"not", "no", "never", "without", "nothing", "none", "cannot"})
# Two words are variants of one word ("test"/"tests", "manage"/"managing") when,
# after a shared stem of at least this many letters, what is left of each is an
# inflection ending. Words with digits are never variants: "python2" is not "python3".
VARIANT_STEM = 4
INFLECTIONS = frozenset(
    {"", "s", "es", "e", "ed", "d", "ing", "er", "ers", "ly", "ion", "ions", "ment", "ments"}
)


def are_variants(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` are inflections of one word."""
    if a == b:
        return True
    if a[:VARIANT_STEM] != b[:VARIANT_STEM]:  # no shared stem: the cheap answer, asked most
        return False
    if any(ch.isdigit() for ch in a + b):
        return False
    stem = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        stem += 1
    return any(a[cut:] in INFLECTIONS and b[cut:] in INFLECTIONS for cut in range(VARIANT_STEM, stem + 1))


# Texts whose words are kept between calls: a new memory is compared with each of its
# candidates twice (``similarity``, then ``is_near_duplicate``) on the write path.
WORD_CACHE_SIZE = 256


def similarity(a: str, b: str) -> float:
    """Word unigram+bigram Jaccard overlap of two texts (0..1)."""
    return jaccard(_grams(a), _grams(b))


@lru_cache(maxsize=WORD_CACHE_SIZE)
def _grams(text: str) -> frozenset[str]:
    folded = fold(text)
    return shingles(folded, 1) | shingles(folded, 2)


@lru_cache(maxsize=WORD_CACHE_SIZE)
def _word_tuple(text: str) -> tuple[str, ...]:
    # "don't" → "do not", so negation counts the same however it is written
    return tuple(words(fold(text).replace("n't", " not").replace("n’t", " not")))


def _words(text: str) -> list[str]:
    return list(_word_tuple(text))


def _content(tokens: list[str]) -> list[str]:
    return [t for t in tokens if t not in FUNCTION_WORDS and t not in NEGATIONS]


def differing_content_words(a: str, b: str) -> set[str]:
    """Words on one side only that are neither function words nor variants of the other side."""
    left, right = set(_words(a)), set(_words(b))
    differing = set()
    for mine, theirs in ((left - right, right), (right - left, left)):
        by_stem: dict[str, list[str]] = {}  # only words that start alike can be variants
        for other in theirs:
            by_stem.setdefault(other[:VARIANT_STEM], []).append(other)
        for word in mine:
            if word in FUNCTION_WORDS or word.replace("'", "") in FUNCTION_WORDS:
                continue
            if any(are_variants(word, other) for other in by_stem.get(word[:VARIANT_STEM], ())):
                continue
            differing.add(word)
    return differing


def is_near_duplicate(a: str, b: str, threshold: float) -> bool:
    """``b`` says what ``a`` says, in nearly the same words.

    Also not when one side is negated and the other not, or when the same content
    words come in another order ("from Kafka to RabbitMQ").
    """
    if similarity(a, b) < threshold or differing_content_words(a, b):
        return False
    left, right = _words(a), _words(b)
    if sum(t in NEGATIONS for t in left) != sum(t in NEGATIONS for t in right):
        return False
    left_content, right_content = _content(left), _content(right)
    return not (sorted(left_content) == sorted(right_content) and left_content != right_content)


# A changed choice is short: a name, a version, a number ("SQLite" -> "DuckDB", "3" -> "5",
# "black" -> "ruff format"); a longer change says something else.
MAX_CHOICE_WORDS = 3
# Content words the two must keep in place: "We use SQLite" and "We use DuckDB" keep only "use",
# too little to tell that they are about one thing.
MIN_SUBJECT_WORDS = 2


# Words that open what a statement applies to (its purpose or its condition): a change after one
# of them, in the same clause, changes the subject, not the choice ("SQLite for the memory store"
# -> "SQLite for the session store").
SCOPE_WORDS = frozenset(
    {"for", "when", "whenever", "while", "if", "unless", "before", "after", "during", "until"}
)
# What ends a clause: a scope word or a negation opens no more than its clause.
_CLAUSE_BREAK = re.compile(r"[,;]|[:.!?](?=\s|$)|\s[-–—]\s")


@lru_cache(maxsize=WORD_CACHE_SIZE)
def _clauses(text: str) -> tuple[int, ...]:
    """The clause of each word of ``_word_tuple(text)``, numbered from 0."""
    folded = fold(text).replace("n't", " not").replace("n’t", " not")
    clauses = [i for i, piece in enumerate(_CLAUSE_BREAK.split(folded)) for _ in words(piece)]
    return tuple(clauses) if len(clauses) == len(_word_tuple(text)) else (0,) * len(_word_tuple(text))


def _opens_subject(older: str, start: int) -> bool:
    """Whether the clause of word ``start`` of ``older`` says, before it, what the statement
    applies to (a scope word) or what it forbids (a negation): a word changed there is the
    subject of the statement, or one more thing it rules out, never another choice."""
    old, clauses = _word_tuple(older), _clauses(older)
    before = [old[k] for k in range(start) if clauses[k] == clauses[start]]
    return any(w in SCOPE_WORDS or w in NEGATIONS for w in before)


def replaces(newer: str, older: str, same_subject: float) -> bool:
    """``newer`` makes another choice on ``older``'s subject: it replaces it.

    The two say the same thing in the same words and order but in **one place**, where a short
    choice changed ("Prefer yarn over npm" -> "Prefer pnpm over npm", "retry 3 times" -> "retry
    5 times") or a negation came or went ("Cache sessions in Redis" -> "Do not cache sessions in
    Redis"); and the content words kept around it, the subject, are at least two and at least
    ``same_subject`` of the older text's. Statements that differ in more places ("Prefer
    res.json() over res.send() when responding with objects" after "Prefer res.sendStatus() over
    res.status().send() for bare status codes") are about different things, however many words,
    files or refs they share; one that only adds words ("... for the workspaces too") narrows or
    widens the older one, and both stand. A change of function words or inflections ("test" /
    "tests") is wording, never a place. Nor is a change after a scope word or a negation of its
    clause a choice, unless it is a number: "Use pnpm for builds" after "Use pnpm for installs"
    changes the subject, "Never log request headers" after "Never log request bodies" rules out
    one more thing, and both stand.
    """
    if len(differing_content_words(newer, older)) > 2 * MAX_CHOICE_WORDS:
        return False  # more words differ than one short choice holds: no need to align them
    from difflib import SequenceMatcher  # here: a recall, which imports this module, never loads it

    old, new = _word_tuple(older), _word_tuple(newer)
    places: list[tuple[int, list[str], list[str]]] = []
    kept: list[str] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            kept.extend(old[i1:i2])
        elif _changes(list(old[i1:i2]), list(new[j1:j2])):
            places.append((i1, _content(list(old[i1:i2])), _content(list(new[j1:j2]))))
    if len(places) != 1:
        return False
    [(start, gone, added)] = places
    negated = sum(t in NEGATIONS for t in old) != sum(t in NEGATIONS for t in new)
    if not ((gone and added) or negated) or max(len(gone), len(added)) > MAX_CHOICE_WORDS:
        return False
    is_value = any(ch.isdigit() for word in gone + added for ch in word)  # "for 30 days" -> "90"
    if not negated and not is_value and _opens_subject(older, start):
        return False
    subject = set(_content(kept))
    return len(subject) >= max(MIN_SUBJECT_WORDS, same_subject * len(set(_content(list(old)))))


def _changes(gone: list[str], added: list[str]) -> bool:
    """Whether one side of an aligned difference says something the other does not: a content
    word with no variant across, or a negation more on one side."""
    if sum(t in NEGATIONS for t in gone) != sum(t in NEGATIONS for t in added):
        return True
    return bool(differing_content_words(" ".join(gone), " ".join(added)))


# Longest word ``repeat_words`` counts on: its variants (up to five letters longer) stay under
# the 40 bytes from which a full-text index drops a token.
REPEAT_WORD_MAX_CHARS = 30
_PLAIN_WORD = re.compile(r"[a-z0-9]+")


def repeat_words(text: str) -> list[str]:
    """Words of ``text`` that any near-duplicate of it holds, each itself or a variant
    (``variant_forms``): its content words, as ``is_near_duplicate`` reads them, that a
    full-text index holds as one token whatever surrounds them (plain letters and digits).

    Left out, besides function words: "not" and words that begin with it, which a memory
    may hold only as "n't" ("don't" reads as "do not", the index holds "don" and "t")."""
    return [
        word
        for word in dict.fromkeys(_content(_words(text)))
        if len(word) <= REPEAT_WORD_MAX_CHARS and _PLAIN_WORD.fullmatch(word) and not word.startswith("not")
    ]


def variant_forms(word: str) -> frozenset[str]:
    """Every word ``are_variants(word, ·)`` holds for, ``word`` among them, and each with an
    "n" after it: a memory holding "wasn't" reads as "was not" here, and holds "wasn" in a
    full-text index."""
    forms = {word}
    if not any(ch.isdigit() for ch in word):
        for cut in range(VARIANT_STEM, len(word) + 1):
            if word[cut:] in INFLECTIONS:
                forms.update(word[:cut] + ending for ending in INFLECTIONS)
    return frozenset(forms | {form + "n" for form in forms})


# A word as a full-text index splits them: a longest run of letters and digits.
_RUNS = re.compile(r"[^\W_]+")


def holds_each(text: str, groups: Sequence[Collection[str]]) -> bool:
    """Whether ``text`` holds a word of each of ``groups`` (``GraphStore.text_matches``'
    ``holding``), as a full-text index splits its folded text."""
    if not groups:
        return True
    held = set(_RUNS.findall(fold(text)))
    return all(not held.isdisjoint(group) for group in groups)


def memory_hash(scope: Scope, project: str | None, text: str) -> str:
    """The exact-duplicate key of a memory: its normalized text within its scope and project."""
    return content_hash(f"{scope.value}\x1f{project or ''}\x1f{text}")


# Words of a new memory searched for candidates it may repeat or replace.
CANDIDATE_QUERY_WORDS = 8


def candidate_query(text: str) -> str:
    """The longest content words of ``text``: a repeat or rewording shares nearly all of
    them, and a short query keeps the full-text search fast on a large store."""
    content = dict.fromkeys(t for t in _content(_words(text)) if len(t) > 2)
    return " ".join(sorted(content, key=lambda t: (-len(t), t))[:CANDIDATE_QUERY_WORDS])
