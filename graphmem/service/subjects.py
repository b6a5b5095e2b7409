"""What a new memory is measured against when it is written: the stored memories that share
its words (near-duplicates to reinforce) and the older one it replaces (same subject).

Reads only; ``Rememberer`` (``remember.py``) decides on what these find.
"""

from __future__ import annotations

from collections.abc import Sequence

from graphmem.core.dedup import (
    candidate_query,
    is_near_duplicate,
    repeat_words,
    replaces,
    similarity,
    variant_forms,
)
from graphmem.core.models import SUPERSEDABLE, Category, MemoryRecord
from graphmem.core.ports import GraphStore, TextMatch, Visibility
from graphmem.core.text import clean_fts_query

# Lexical candidates compared with a new memory for near-duplicates / same subject.
DEDUP_CANDIDATES = 8


def similar_memories(
    store: GraphStore, text: str, visibility: Visibility, *, repeats_only: bool = False
) -> list[tuple[TextMatch, float]]:
    """Visible memories that share words with ``text``, most similar first: their texts come
    with the full-text search's hits, so no record is read. ``repeats_only``: only those that
    hold each word every near-duplicate of ``text`` holds, in one of its forms
    (``core.dedup.repeat_words``); a new memory naming something no memory names then costs
    no search (at a million memories 3-4 ms of a ``remember`` whose other words are common)."""
    holding = [variant_forms(word) for word in repeat_words(text)] if repeats_only else []
    query = clean_fts_query(candidate_query(text))
    matches = store.text_matches(query, visibility, DEDUP_CANDIDATES, holding=holding)
    scored = [(match, similarity(text, match.text)) for match in matches]
    return sorted(scored, key=lambda pair: (-pair[1], pair[0].id))


def near_duplicate_of(
    store: GraphStore,
    text: str,
    category: Category,
    similar: Sequence[tuple[TextMatch, float]],
    threshold: float,
) -> MemoryRecord | None:
    """The stored memory of ``category`` that ``text`` repeats in other words (to reinforce)."""
    for candidate, _ in similar:
        if candidate.category is category and is_near_duplicate(text, candidate.text, threshold):
            repeated = store.get_memories([candidate.id]).get(candidate.id)
            if repeated is not None:
                return repeated
    return None


def same_subject_as(
    record: MemoryRecord, similar: Sequence[tuple[TextMatch, float]], same_subject: float
) -> list[TextMatch]:
    """The older memory that ``record`` replaces: another choice on its subject
    (``core.dedup.replaces``).

    Only for categories where a newer statement replaces an older one, only in the same
    scope and on the same branch (what a branch decides must not replace anything before
    it merges). Sharing a file, a ref or a phrasing ("Prefer X over Y") never makes two
    memories one subject: the words decide, and at most one memory is replaced.
    """
    if record.category not in SUPERSEDABLE:
        return []
    for other, _ in similar:
        if other.category is not record.category or other.scope is not record.scope:
            continue
        if (other.project, other.branch) != (record.project, record.branch) or other.id == record.id:
            continue
        if replaces(record.text, other.text, same_subject):
            return [other]
    return []
