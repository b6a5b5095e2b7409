"""Which of the full-text index's hits a :class:`Visibility` shows (``top_hits``).

A search first asks its words alone, for more hits than it needs (as many more as the
visibility hides of the store: ``visible_share``), and drops the hidden ones by their columns
(``filtered_hits``): integer fast fields that tantivy reads without the stored documents.
When that cannot be sure of the answer, it asks again with what the visibility hides left
out of the query (``excluded_hits``, ``MustNot``); a visibility that shows few memories (a
project of many) is asked so at once, its places required (``narrow``). All answer alike,
to the score's last bit.

The columns (``Columns``): ``code`` (the status, scope and category, one bit each), the
64-bit hashes ``project_hash`` and ``branch_hash`` (0: none) and ``created_at``
(microseconds). ``ColumnFilter`` is the one Python predicate of a visibility; the overlay's
records go through it too (``Columns.of``). ``_hidden`` states the same rules as tantivy
queries. The index holds a memory as read (``Columns.of`` a record: a status graphmem never
writes is archived, ``record_rows``), so both ask graphmem's own values only.
"""

from __future__ import annotations

import hashlib
import math
import zlib
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import NamedTuple

import tantivy

from graphmem.adapters.lexical_analysis import SCHEMA
from graphmem.adapters.lexical_bounds import ScoreBounds, proven_hits
from graphmem.core.keys import numbered_memory_id
from graphmem.core.models import Category, MemoryRecord, Scope, Status
from graphmem.core.ports import Visibility

# One bit per status, scope and category, in declaration order: a change to these
# enumerations changes ``CODES_VERSION``, which is part of the index's version.
_BITS: dict[Status | Scope | Category, int] = {
    member: 1 << i for i, member in enumerate([*Status, *Scope, *Category])
}
CODES_VERSION = f"{zlib.crc32('|'.join(f'{type(m).__name__}.{m.value}' for m in _BITS).encode()):08x}"
_ALL_CATEGORIES = sum(_BITS[c] for c in Category)
_GLOBAL = _BITS[Scope.GLOBAL]
_NOT_SINCE = -(1 << 63)  # the smallest created_at
# The most hits ``filtered_hits`` is asked for; a narrower visibility is asked ``excluded_hits``
# among its places at once (``narrow``). At a million memories in 20 projects (the scale
# benchmark's), p50 of 100 searches each, the filtered search against the narrow one: 245 hits
# 5.4 against 6.6 ms, 489 hits 5.1 against 5.1, 640 hits 6.7 against 7.3, 976 hits 6.2 against
# 4.5, 1,278 hits 6.3 against 5.3, 2,551 hits 9.2 against 5.0.
MAX_DEPTH = 768


def code(status: Status, scope: Scope, category: Category) -> int:
    return _BITS[status] | _BITS[scope] | _BITS[category]


def name_hash(name: str | None) -> int:
    """A project's or a branch's name as a signed 64-bit number, never 0; 0 for none (None
    or "", as the index's text fields hold them: empty)."""
    if not name:
        return 0
    value = int.from_bytes(hashlib.blake2b(name.encode("utf-8"), digest_size=8).digest(), "big", signed=True)
    return value or 1


def micros(when: datetime) -> int:
    """A time as the index's ``created_at`` column holds it: microseconds since the epoch."""
    return int(when.timestamp() * 1_000_000)


class Columns(NamedTuple):
    """A memory's visibility columns, as the index holds them (``ColumnFilter.shows(*columns)``)."""

    code: int
    project_hash: int
    branch_hash: int
    created_at: int

    @classmethod
    def of(cls, record: MemoryRecord) -> Columns:
        return cls(
            code(record.status, record.scope, record.category),
            name_hash(record.project),
            name_hash(record.branch),
            micros(record.created_at),
        )


class ColumnFilter:
    """A :class:`Visibility` as a test of a memory's columns (``shows``)."""

    __slots__ = ("all_branches", "branch", "categories", "projects", "since", "statuses")

    def __init__(self, visibility: Visibility) -> None:
        self.statuses = sum(_BITS[s] for s in visibility.statuses)
        categories = visibility.categories
        self.categories = _ALL_CATEGORIES if categories is None else sum(_BITS[c] for c in categories)
        # Empty: no project memory is shown.
        self.projects = frozenset(name_hash(p) for p in visibility.projects)
        self.branch = name_hash(visibility.branch)
        self.all_branches = visibility.all_branches
        self.since = _NOT_SINCE if visibility.since is None else micros(visibility.since)

    def shows(self, code: int, project_hash: int, branch_hash: int, created_at: int) -> bool:
        """Whether a memory of these columns is visible: of a shown status and category,
        global or of the caller's project, on no branch or the caller's, not too old."""
        return (
            code & self.statuses != 0
            and code & self.categories != 0
            and (code & _GLOBAL != 0 or project_hash in self.projects)
            and (branch_hash == 0 or self.all_branches or branch_hash == self.branch)
            and created_at >= self.since
        )


@cache
def _on_a_branch() -> tantivy.Query:
    """The memories written on a branch: made once, since compiling the pattern into its
    automaton took 1.8 ms, as long as the rest of a search."""
    return tantivy.Query.regex_query(SCHEMA, "branch", ".+")


def _hidden(visibility: Visibility, *, placed: bool = False) -> list[tantivy.Query]:
    """Queries of the memories ``visibility`` hides, to leave out (``MustNot``): the same
    rules as ``lexical_visibility.ColumnFilter``, for ``excluded_hits``. An exclusion cost
    less than a required filter (a third of it), but still made a search twice as long.
    ``placed``: the search requires ``_places`` already, which leaves the other projects'
    memories out (their exclusion tested each match again: 1 ms of 5.4 at a million)."""
    hidden = []
    statuses = sorted(s.value for s in Status if s not in visibility.statuses)
    if statuses:
        hidden.append(tantivy.Query.term_set_query(SCHEMA, "status", statuses))
    if not placed:
        elsewhere = tantivy.Query.term_query(SCHEMA, "scope", Scope.PROJECT.value)  # not global...
        if visibility.project is not None:  # ...and of another project (not one of its aliases)
            mine = tantivy.Query.term_set_query(SCHEMA, "project", sorted(visibility.projects))
            elsewhere = tantivy.Query.boolean_query(
                [(tantivy.Occur.Must, elsewhere), (tantivy.Occur.MustNot, mine)]
            )
        hidden.append(elsewhere)
    if not visibility.all_branches:  # on a branch, and not on the caller's
        other = [(tantivy.Occur.Must, _on_a_branch())]
        if visibility.branch is not None:
            mine = tantivy.Query.term_query(SCHEMA, "branch", visibility.branch)
            other.append((tantivy.Occur.MustNot, mine))
        hidden.append(tantivy.Query.boolean_query(other))
    if visibility.categories is not None:
        categories = sorted(c.value for c in Category if c not in visibility.categories)
        if categories:
            hidden.append(tantivy.Query.term_set_query(SCHEMA, "category", categories))
    if visibility.since is not None:
        since = micros(visibility.since)
        hidden.append(
            tantivy.Query.range_query(
                SCHEMA, "created_at", tantivy.FieldType.Integer, None, since, include_upper=False
            )
        )
    return hidden


def _places(visibility: Visibility) -> tantivy.Query:
    """The memories global or of one of ``visibility``'s projects (its aliases too)."""
    shown = tantivy.Query.term_query(SCHEMA, "scope", Scope.GLOBAL.value)
    if not visibility.projects:
        return shown
    mine = tantivy.Query.term_set_query(SCHEMA, "project", sorted(visibility.projects))
    return tantivy.Query.boolean_query([(tantivy.Occur.Should, shown), (tantivy.Occur.Should, mine)])


@dataclass(frozen=True, slots=True)
class Hit:
    """A visible memory the index found."""

    memory_id: str
    score: float
    address: tantivy.DocAddress
    doc: tantivy.Document | None  # its stored document, when the id was read from it


@dataclass(frozen=True, slots=True)
class Search:
    """What a search asks the index: the ``limit`` best hits of ``query`` that ``visibility``
    shows, but for the ids in ``overlay`` (their indexed state is stale: the overlay scores them)."""

    query: tantivy.Query
    visibility: Visibility
    overlay: Collection[str]
    limit: int
    # The ``text`` tokens of a query of words alone, one term query each in its order, and
    # the searcher's best score of each: its leading hits are then found among the memories
    # that hold its rarer words (``lexical_bounds.proven_hits``).
    terms: tuple[str, ...] = ()
    bounds: ScoreBounds | None = None


def top_hits(searcher: tantivy.Searcher, search: Search) -> list[Hit]:
    """The hits ``search`` asks for, best first: ``filtered_hits`` when they are sure to be the
    answer (most searches), else ``excluded_hits``; the two answer alike. A visibility that
    shows so few memories that ``filtered_hits`` would ask more than ``MAX_DEPTH`` hits is
    asked ``excluded_hits`` among its places at once (``narrow``)."""
    depth = first_depth(search.limit, visible_share(searcher, search.visibility))
    if depth > MAX_DEPTH:
        return excluded_hits(searcher, search, narrow=True)
    found = filtered_hits(searcher, search, depth)
    return excluded_hits(searcher, search) if found is None else found


def first_depth(limit: int, share: float = 1.0) -> int:
    """Hits ``filtered_hits`` asks for, to find ``limit`` visible ones when about ``share`` of
    the matches are visible: enough that a filter hiding half of them still finds them at once
    (``2 * limit + 16``), and for a narrower one enough to expect ``limit`` visible ones and
    two standard deviations more (``limit + 2 * sqrt(limit) + 8`` of them)."""
    expected = limit + 2 * math.sqrt(limit) + 8
    return max(2 * limit + 16, math.ceil(expected / max(share, 1 / (1 << 32))))


def visible_share(searcher: tantivy.Searcher, visibility: Visibility) -> float:
    """About the share of the index's memories ``visibility`` shows, from its term counts: the
    global ones and its projects' (a project's share of a store of many), times the share of a
    shown status; branches, categories and age left out, which hide few. Deleted memories
    are counted until a merge drops them, as BM25 counts them. Two or three microseconds a
    term: a search asks about ten."""
    scopes = [searcher.doc_freq("scope", scope.value) for scope in (Scope.GLOBAL, Scope.PROJECT)]
    statuses = {status: searcher.doc_freq("status", status.value) for status in Status}
    if not sum(scopes) or not sum(statuses.values()):
        return 1.0
    place = scopes[0] + sum(searcher.doc_freq("project", project) for project in visibility.projects)
    shown = sum(count for status, count in statuses.items() if status in visibility.statuses)
    return min(1.0, place / sum(scopes)) * shown / sum(statuses.values())


def filtered_hits(searcher: tantivy.Searcher, search: Search, depth: int | None = None) -> list[Hit] | None:
    """``top_hits`` from the query alone, asked for ``depth`` hits (``first_depth(limit)``
    unless given) whose columns say which are visible; None when fewer than ``limit`` of them
    are while more matches exist. Half the time of ``excluded_hits``, where tantivy tested
    each match against every exclusion.

    The answer is the same: asked as the only clause of a boolean query (both ways ask it
    so), tantivy ranks hits by score, ties by ascending address, so the hits it returns are
    the first of that order and the visible ones among them the first visible ones
    (``test_lexical_visibility`` holds it on ties across segments). Not every query form
    breaks ties so: beside a required clause it did not, which is why ``proven_hits``
    leaves the hits tied at its cut to the whole query. A query of words alone first tries the
    leading hits ``proven_hits`` finds without scoring every match: when ``limit`` visible
    ones are among them, they are the answer."""
    depth = first_depth(search.limit) if depth is None else depth
    if search.terms and search.bounds is not None:
        proven = proven_hits(search.bounds, search.terms, search.query, depth, search.limit)
        found = _visible(searcher, search, proven, every=False) if proven else None
        if found is not None:
            return found
    # The query as the only clause of a boolean one, as excluded_hits asks it: tantivy then
    # scores each hit alike, to the bit (block-max WAND, for a query of words alone, adds
    # the words' scores in another order).
    whole = tantivy.Query.boolean_query([(tantivy.Occur.Should, search.query)])
    hits = searcher.search(whole, depth, count=False).hits
    return _visible(searcher, search, hits, every=len(hits) < depth)  # every: all matches are in


def _visible(
    searcher: tantivy.Searcher, search: Search, hits: list[tuple[float, tantivy.DocAddress]], *, every: bool
) -> list[Hit] | None:
    """The first ``limit`` visible hits of ``hits`` (a search's leading hits in order) that
    the overlay does not hold; None when fewer are there and ``hits`` are not ``every`` match."""
    visibility, overlay, limit = search.visibility, search.overlay, search.limit
    addresses = [address for _, address in hits]
    shows = ColumnFilter(visibility).shows
    columns = [searcher.fast_field_values(name, addresses) for name in Columns._fields]
    shown = [i for i, values in enumerate(zip(*columns, strict=True)) if shows(*values)]
    if len(shown) < limit and not every:
        return None
    keys = searcher.fast_field_values("key", [addresses[i] for i in shown])
    kept = []
    for i, key in zip(shown, keys, strict=True):
        hit = _hit(searcher, hits[i], key)
        if hit.memory_id in overlay:
            continue  # its indexed state is stale: the overlay scores it
        kept.append(hit)
        if len(kept) == limit:
            return kept
    return kept if every else None


def excluded_hits(searcher: tantivy.Searcher, search: Search, *, narrow: bool = False) -> list[Hit]:
    """``top_hits`` from the query with what the visibility hides and the overlay's ids left
    out (``MustNot``). ``narrow`` (``top_hits`` asks it so for a visibility that shows few
    memories): the memories of its places (the global ones, its projects') required too, in a
    clause that adds 0.0 to each score, so tantivy scores only the matches among those. For
    one project of 20 at a million memories, a recall's search took 4.3-5.0 instead of
    8.2-8.8 ms at p50 (the same hits for 200 of 200 searches)."""
    hidden = _hidden(search.visibility, placed=narrow)
    if search.overlay:
        hidden.append(tantivy.Query.term_set_query(SCHEMA, "id", list(search.overlay)))
    asked: list[tuple[tantivy.Occur, tantivy.Query]] = [(tantivy.Occur.Should, search.query)]
    if narrow:
        places = tantivy.Query.const_score_query(_places(search.visibility), 0.0)
        asked = [(tantivy.Occur.Must, search.query), (tantivy.Occur.Must, places)]
    parts = [*asked, *((tantivy.Occur.MustNot, q) for q in hidden)]
    hits = searcher.search(tantivy.Query.boolean_query(parts), search.limit, count=False).hits
    keys = searcher.fast_field_values("key", [address for _, address in hits])
    return [_hit(searcher, hit, key) for hit, key in zip(hits, keys, strict=True)]


def _hit(searcher: tantivy.Searcher, hit: tuple[float, tantivy.DocAddress], key: object) -> Hit:
    """The hit with its memory id: from its ``key`` column, else from its stored document."""
    score, address = hit
    if isinstance(key, int):
        return Hit(numbered_memory_id(key), float(score), address, None)
    doc = searcher.doc(address)
    return Hit(str(doc["id"][0]), float(score), address, doc)
