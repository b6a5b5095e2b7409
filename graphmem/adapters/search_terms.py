"""Words as a full-text index sees them: the fake store's search and PostgreSQL's lexemes.

Accents and case folded (``core.text.fold``), English stopwords left out, each word
stemmed with Porter's steps 1 and 5a: "deploying", "deployed" and "deploys" are one
term, "linting" is "lint". Close to what the Kùzu store's index does, with no dependency.
"""

from __future__ import annotations

from collections.abc import Sequence

from graphmem.core.text import fold, words

# English words too common to find anything by: a query of them alone matches nothing.
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can cannot could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it its
    itself me more most my myself no nor not of off on once only or other ought our ours ourselves
    out over own same she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up very was we were what when where which while
    who whom why with would you your yours yourself yourselves""".split()  # noqa: SIM905
)
_VOWELS = frozenset("aeiou")


def terms(text: str) -> list[str]:
    """Folded words without stopwords, each stemmed (Porter's steps 1 and 5a)."""
    return [_stem(w) for w in words(fold(text)) if w not in STOPWORDS]


def tokens(text: str) -> list[str]:
    """Every folded word of ``text``, in order and stemmed, stopwords kept (what a phrase is
    matched against: the PostgreSQL store's ``terms``)."""
    return [_stem(w) for w in words(fold(text))]


def stem(word: str) -> str:
    """One folded word, stemmed as ``terms`` does."""
    return _stem(word)


def holds(text: str, phrase: Sequence[str]) -> bool:
    """Whether ``text`` holds the folded words ``phrase`` in that order, each next to the
    next (both stemmed, stopwords kept)."""
    wanted = [_stem(w) for w in phrase]
    held = tokens(text)
    size = len(wanted)
    return size > 0 and any(held[i : i + size] == wanted for i in range(len(held) - size + 1))


def _consonant(word: str, i: int) -> bool:
    if word[i] in _VOWELS:
        return False
    return word[i] != "y" or i == 0 or not _consonant(word, i - 1)


def _measure(stem: str) -> int:
    """Porter's m: how many vowel-consonant sequences ``stem`` has."""
    shape = "".join("c" if _consonant(stem, i) else "v" for i in range(len(stem)))
    return shape.lstrip("c").count("vc")


def _has_vowel(stem: str) -> bool:
    return any(not _consonant(stem, i) for i in range(len(stem)))


def _ends_cvc(stem: str) -> bool:
    return (
        len(stem) >= 3
        and _consonant(stem, len(stem) - 3)
        and not _consonant(stem, len(stem) - 2)
        and _consonant(stem, len(stem) - 1)
        and stem[-1] not in "wxy"
    )


def _stem(word: str) -> str:
    if len(word) <= 2 or not word.isalpha():
        return word
    for suffix, replacement in (("sses", "ss"), ("ies", "i"), ("ss", "ss"), ("s", "")):
        if word.endswith(suffix):
            word = word[: len(word) - len(suffix)] + replacement
            break
    word = _step_1b(word)
    if word.endswith("y") and _has_vowel(word[:-1]):
        word = word[:-1] + "i"
    if word.endswith("e"):
        stem = word[:-1]
        if _measure(stem) > 1 or (_measure(stem) == 1 and not _ends_cvc(stem)):
            word = stem
    return word


def _step_1b(word: str) -> str:
    if word.endswith("eed"):
        return word[:-1] if _measure(word[:-3]) > 0 else word
    for suffix in ("ed", "ing"):
        stem = word[: -len(suffix)]
        if word.endswith(suffix) and _has_vowel(stem):
            if stem.endswith(("at", "bl", "iz")):
                return stem + "e"
            if (
                len(stem) >= 2
                and stem[-1] == stem[-2]
                and _consonant(stem, len(stem) - 1)
                and stem[-1] not in "lsz"
            ):
                return stem[:-1]
            if _measure(stem) == 1 and _ends_cvc(stem):
                return stem + "e"
            return stem
    return word
