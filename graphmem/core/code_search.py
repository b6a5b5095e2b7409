"""Which code a question describes: BM25 over each symbol's name, split into words, and the first
paragraph of its docstring ("when is the Authorization header stripped" finds
``should_strip_auth``; "wait for the user to press a key" finds ``pause``).

Recall asks here when a question names no code itself (``service.mentions``): the symbols it finds
join the entity channel as weak evidence, and the hit says which symbol led there. Pure: built
from the parsed files the code graph keeps.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from graphmem.core.code import ParsedFile
from graphmem.core.codegraph import symbol_key

SEARCHED_KINDS = frozenset({"function", "method", "class"})
# A symbol's name counts this many times its docstring's words: the name is what it is.
NAME_REPEAT = 3
# Characters of a docstring read: its summary, before parameters and version notes.
DOCSTRING_CHARS = 400
# BM25's usual constants.
K1 = 1.2
B = 0.75
# A question must match at least this share of its best symbol's score to name another one.
RELATIVE_FLOOR = 0.6
# ...and match at least two of its words: one shared word is chance.
MIN_MATCHED_WORDS = 2
# Share of what a question says (its words weighed by their rarity in the code) a symbol must
# hold to be what it describes: "when do I open the merge request" says mostly what no code does.
MIN_COVERAGE = 0.5

_WORD_RE = re.compile(r"[A-Za-z][a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_DOC_END_RE = re.compile(r"\n\s*\n|:param|:return|\.\. |Args:|Returns:|Example")


def stem(word: str) -> str:
    """A light English stem, enough to match "stripped" with "strip", "files" with "file" and
    "matches" with "match"."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "xes", "sses", "zes")):
        return word[:-2]
    for suffix in ("ing", "ed", "s"):
        if word.endswith(suffix) and not word.endswith("ss") and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            if suffix != "s" and len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouls":
                word = word[:-1]  # stripp -> strip
            break
    return word


def terms(text: str) -> list[str]:
    """The stemmed, lower-cased words of ``text``, identifiers split (``should_strip_auth``,
    ``getAppDir`` and ``HTTPAdapter`` give their words)."""
    return [stem(w.lower()) for w in _WORD_RE.findall(text) if len(w) > 1]


@dataclass(frozen=True, slots=True)
class Described:
    """A symbol a question describes, and how well (BM25)."""

    key: str
    qualified_name: str
    path: str
    score: float


class SymbolIndex:
    """BM25 over a project's functions, methods and classes."""

    def __init__(self, project: str, parsed: Mapping[str, ParsedFile]) -> None:
        self._symbols: list[tuple[str, str, str]] = []  # key, qualified name, path
        self._postings: dict[str, list[tuple[int, int]]] = {}
        lengths: list[int] = []
        for path, parsed_file in sorted(parsed.items()):
            for definition in parsed_file.definitions:
                if definition.kind not in SEARCHED_KINDS:
                    continue
                doc = (definition.docstring or "")[:DOCSTRING_CHARS]
                doc = _DOC_END_RE.split(doc, maxsplit=1)[0]
                words = terms(definition.qualified_name) * NAME_REPEAT + terms(doc)
                number = len(self._symbols)
                self._symbols.append(
                    (symbol_key(project, path, definition.qualified_name), definition.qualified_name, path)
                )
                lengths.append(len(words))
                for term, count in Counter(words).items():
                    self._postings.setdefault(term, []).append((number, count))
        self._lengths = lengths
        self._average = sum(lengths) / len(lengths) if lengths else 0.0

    def __len__(self) -> int:
        return len(self._symbols)

    def search(self, question: str, limit: int = 3) -> list[Described]:
        """The symbols ``question`` describes best, at most ``limit``, best first: those that hold
        at least ``MIN_COVERAGE`` of what the question says (its words weighed by how rare they are
        in the code, a word the code never uses weighing most) and two of its words at least,
        within ``RELATIVE_FLOOR`` of the best one's score."""
        wanted = list(dict.fromkeys(terms(question)))
        total = len(self._symbols)
        if not wanted or not total:
            return []
        unknown_idf = math.log(1 + (total + 0.5) / 0.5)
        said = 0.0
        scores: dict[int, float] = {}
        covered: dict[int, float] = {}
        matched: dict[int, int] = {}
        for term in wanted:
            postings = self._postings.get(term, ())
            idf = (
                math.log(1 + (total - len(postings) + 0.5) / (len(postings) + 0.5))
                if postings
                else unknown_idf
            )
            said += idf
            for number, count in postings:
                norm = K1 * (1 - B + B * self._lengths[number] / (self._average or 1.0))
                scores[number] = scores.get(number, 0.0) + idf * count * (K1 + 1) / (count + norm)
                covered[number] = covered.get(number, 0.0) + idf
                matched[number] = matched.get(number, 0) + 1
        kept = [n for n in scores if matched[n] >= MIN_MATCHED_WORDS and covered[n] >= MIN_COVERAGE * said]
        if not kept:
            return []
        ranked = sorted(kept, key=lambda n: (-scores[n], self._symbols[n][1]))
        best = scores[ranked[0]]
        return [
            Described(*self._symbols[n], round(scores[n], 3))
            for n in ranked[:limit]
            if scores[n] >= RELATIVE_FLOOR * best
        ]
