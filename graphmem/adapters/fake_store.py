"""An in-memory :class:`graphmem.core.ports.GraphStore`: the store fake for fast tests.

Pure Python and numpy, thread-safe, nothing on disk. It keeps the contract the Kùzu
store keeps (``tests/unit/adapters/test_store_contract.py`` runs the same tests
against both): visibility filters, statuses, merged edges, edges dropped with their
memory, vectors, graph neighbours with fanout, and a BM25 full-text search over
folded, stemmed words with English stopwords left out, the memories that hold the
whole phrase asked first. Scores differ from Kùzu's in value, not in what they rank first.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Unpack

import numpy as np

from graphmem.adapters.fake_rows import FakeRow, field_value, kind_of, stored, utc, visible
from graphmem.adapters.graph_cache import GraphCache
from graphmem.adapters.record_rows import check_changes
from graphmem.adapters.search_terms import holds, terms
from graphmem.adapters.store_parts import OnePersonsStore
from graphmem.core.branches import place
from graphmem.core.code_moves import Body, moved_body
from graphmem.core.dedup import holds_each
from graphmem.core.events import EventKind, MemoryEvent
from graphmem.core.models import Entity, EntityKind, Link, LinkKind, MemoryRecord
from graphmem.core.ports import Neighbour, NewText, StoredVectors, TextHits, TextMatch, Vector, Visibility
from graphmem.core.text import phrase_words
from graphmem.errors import StoreError

# BM25's usual constants (term saturation, length normalisation).
BM25_K1 = 1.2
BM25_B = 0.75
# Entities ``find_entities`` returns per kind, as the Kùzu store does.
FIND_ENTITIES_LIMIT = 20


@dataclass(frozen=True, slots=True)
class _State:
    """Everything the store holds, copied: what a rolled-back transaction puts back."""

    seq: int
    meta: dict[str, str]
    rows: dict[str, FakeRow]
    entities: dict[tuple[EntityKind, str], Entity]
    relates: dict[tuple[str, str, LinkKind], datetime]
    nexts: dict[tuple[str, str], None]
    events: dict[str, MemoryEvent]


class FakeGraphStore(OnePersonsStore):
    """A graphmem store held in this process's memory (see the module doc)."""

    def __init__(self, *, dimension: int) -> None:
        self.dimension = dimension
        self._lock = threading.RLock()
        self._closed = False
        self._in_transaction = False
        self._failed = False  # a write failed inside the open transaction
        self._seq = 0
        self._meta: dict[str, str] = {}
        self._rows: dict[str, FakeRow] = {}
        self._entities: dict[tuple[EntityKind, str], Entity] = {}
        self._relates: dict[tuple[str, str, LinkKind], datetime] = {}
        self._next: dict[tuple[str, str], None] = {}  # an ordered set
        self._events: dict[str, MemoryEvent] = {}  # in the order stored
        self._bodies: dict[str, Body] = {}  # symbol key -> its body hash and when it changed (code graph)

    @contextmanager
    def _open(self) -> Iterator[None]:
        with self._lock:
            if self._closed:
                raise StoreError("The graph store is closed: open the memory again.")
            if self._failed:  # as Kùzu: a failed statement ends the transaction it was in
                raise StoreError(
                    "The graph store failed earlier in this transaction; nothing of it was kept."
                )
            try:
                yield
            except StoreError:
                self._failed = self._in_transaction
                raise

    def close(self) -> None:
        with self._lock:
            self._closed = True

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """The writes inside are kept together or, when the block raises, none of them (the
        state is copied at the start and put back); other threads wait till it ends."""
        with self._open():
            if self._in_transaction:
                yield
                return
            saved = self._snapshot()
            self._in_transaction = True
            try:
                yield
                if self._failed:
                    raise StoreError("The graph store failed inside a transaction; nothing of it was kept.")
            except BaseException:
                self._restore(saved)
                raise
            finally:
                self._in_transaction = self._failed = False

    def _snapshot(self) -> _State:
        return _State(
            self._seq,
            dict(self._meta),
            {i: row.copy() for i, row in self._rows.items()},
            dict(self._entities),
            dict(self._relates),
            dict(self._next),
            dict(self._events),
        )

    def _restore(self, saved: _State) -> None:
        self._seq, self._meta, self._rows = saved.seq, saved.meta, saved.rows
        self._entities, self._relates, self._next = saved.entities, saved.relates, saved.nexts
        self._events = saved.events

    # -- for the other in-memory adapters (the code graph) ----------------------

    @property
    def lock(self) -> threading.RLock:
        return self._lock

    def put_entity(self, entity: Entity, body: Body | None = None) -> None:
        """Store ``entity`` as it is (its title too), as the code graph writes its nodes; a
        symbol's ``body`` (hash, ``body_changed_at``) is what a new ABOUT edge to it records."""
        with self._open():
            self._entities[(entity.kind, entity.key)] = entity
            if body is not None:
                self._bodies[entity.key] = body

    def remove_entity(self, kind: EntityKind, key: str) -> None:
        """Delete an entity node and the ABOUT edges to it."""
        with self._open():
            self._entities.pop((kind, key), None)
            self._bodies.pop(key, None)
            for row in self._rows.values():
                if row.about.get(key) is kind:
                    del row.about[key]
                    row.bodies.pop(key, None)

    def move_about(self, kind: EntityKind, old: str, new: str) -> list[str]:
        """Make the memories about entity ``old`` about ``new`` instead; the ids moved."""
        moved: list[str] = []
        with self._open():
            if old == new or (kind, new) not in self._entities:
                return moved
            for memory_id, row in self._rows.items():
                if row.about.get(old) is kind:
                    del row.about[old]
                    body = moved_body(row.bodies.pop(old, None), self._bodies.get(old), self._bodies.get(new))
                    if new not in row.about and body is not None:  # the body it records goes with it
                        row.bodies[new] = body
                    row.about.setdefault(new, kind)
                    moved.append(memory_id)
        return moved

    def is_about(self, kind: EntityKind, key: str) -> bool:
        """Whether any memory is about the entity."""
        with self._open():
            return any(row.about.get(key) is kind for row in self._rows.values())

    # -- metadata ---------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        with self._open():
            return self._meta.get(key)

    def set_meta(self, key: str, value: str) -> None:
        with self._open():
            self._meta[key] = value

    # -- memories ---------------------------------------------------------------

    def add_memories(self, records: Sequence[MemoryRecord], vectors: Vector | None = None) -> None:
        if vectors is not None and len(vectors) != len(records):
            raise StoreError(f"{len(records)} memories came with {len(vectors)} vectors.")
        with self._open():
            ids = [r.id for r in records]
            taken = sorted(
                {i for i in ids if i in self._rows} | {i for i, n in Counter(ids).items() if n > 1}
            )
            if taken:
                raise StoreError(f"The graph store failed: duplicated primary key {taken[0]!r} in Memory.")
            for i, record in enumerate(records):
                vector = None if vectors is None else np.array(vectors[i], dtype=np.float32)
                self._insert(stored(record, embedded=vector is not None), vector)

    def _insert(self, record: MemoryRecord, vector: Vector | None) -> FakeRow:
        self._seq += 1
        row = FakeRow(record, self._seq, Counter(terms(record.text)), vector)
        self._rows[record.id] = row
        return row

    def get_memories(self, ids: Collection[str]) -> dict[str, MemoryRecord]:
        with self._open():
            return {i: self._rows[i].record for i in dict.fromkeys(ids) if i in self._rows}

    def find_by_hash(self, content_hash: str) -> list[MemoryRecord]:
        return self.find_by_hashes([content_hash]).get(content_hash, [])

    def find_by_hashes(self, content_hashes: Collection[str]) -> dict[str, list[MemoryRecord]]:
        wanted, found = set(content_hashes), dict[str, list[MemoryRecord]]()
        with self._open():
            for row in sorted(self._rows.values(), key=lambda r: r.record.id):
                if row.record.content_hash in wanted:
                    found.setdefault(row.record.content_hash, []).append(row.record)
        return found

    def update_memory(self, memory_id: str, changes: Mapping[str, object]) -> None:
        check_changes(changes)
        with self._open():
            row = self._rows.get(memory_id)
            if row is None:
                return
            values = {
                name: field_value(name, value, row.record)
                for name, value in changes.items()
                if name != "embedding"
            }
            if "embedding" in changes:
                embedding = changes["embedding"]
                row.vector = None if embedding is None else np.array(embedding, dtype=np.float32)
                values["embedded"] = row.vector is not None
            later = values.get("updated_at")
            if isinstance(later, datetime) and later > row.record.updated_at:  # against the bodies of now
                row.bodies.update({k: h for k in row.about if (h := self._body_of(k)) is not None})
            row.record = replace(row.record, **values)  # type: ignore[arg-type]

    def replace_text(self, memory_id: str, **new: Unpack[NewText]) -> None:
        with self._open():
            old = self._rows.get(memory_id)
            if old is None:
                return
            entities = new["entities"]
            if entities:
                self.upsert_entities(entities)
            record = replace(
                old.record,
                text=new["text"],
                content_hash=new["content_hash"],
                updated_at=utc(new["updated_at"]),
                embedded=False,
            )
            row = self._insert(record, None)  # a new node, as in Kùzu: seq moves, the vector goes
            self._link(row, entities)

    def delete_memory(self, memory_id: str) -> None:
        with self._open():
            if self._rows.pop(memory_id, None) is None:
                return
            for key in [k for k in self._relates if memory_id in k[:2]]:
                del self._relates[key]
            for pair in [p for p in self._next if memory_id in p]:
                del self._next[pair]

    def list_memories(self, visibility: Visibility, *, limit: int, offset: int = 0) -> list[MemoryRecord]:
        with self._open():
            found = [row.record for row in self._rows.values() if visible(row.record, visibility)]
        found.sort(key=lambda r: r.id)
        found.sort(key=lambda r: r.created_at, reverse=True)
        return found[max(offset, 0) : max(offset, 0) + max(limit, 0)]

    def all_memories(self, project: str | None = None) -> Iterable[MemoryRecord]:
        with self._open():
            found = [r.record for r in self._rows.values() if project is None or r.record.project == project]
        return sorted(found, key=lambda r: (r.created_at, r.id))

    def total_memories(self) -> int:
        with self._open():
            return len(self._rows)

    def count_memories(self) -> dict[tuple[str, str, str], int]:
        with self._open():
            records = [row.record for row in self._rows.values()]
        return dict(Counter((r.category.value, r.scope.value, r.status.value) for r in records))

    def projects(self) -> dict[str, datetime]:
        first: dict[str, datetime] = {}
        with self._open():
            for row in self._rows.values():
                project, made = row.record.project, row.record.created_at
                if project is not None and (project not in first or made < first[project]):
                    first[project] = made
        return first

    def last_in_session(self, session: str) -> str | None:
        with self._open():
            rows = [row for row in self._rows.values() if row.record.session == session]
            if not rows:
                return None
            return max(rows, key=lambda row: (row.record.created_at, row.seq)).record.id

    # -- search -----------------------------------------------------------------

    @property
    def full_text_search(self) -> None:
        return None  # one search, as the embedded store's

    def search_text(
        self, query: str, visibility: Visibility, limit: int, *, phrase: str | None = None
    ) -> TextHits:
        asked = set(terms(query))
        whole = phrase_words(query if phrase is None else phrase)
        if not (asked or whole) or limit <= 0:
            return TextHits()
        with self._open():
            rows = list(self._rows.values())
        if not rows:
            return TextHits()
        average = sum(r.terms.total() for r in rows) / len(rows)
        frequency = Counter(t for r in rows for t in asked if t in r.terms)
        scored, exact = [], set()
        for row in rows:
            held = bool(whole) and holds(row.record.text, whole)
            if not (held or asked & row.terms.keys()) or not visible(row.record, visibility):
                continue
            norm = BM25_K1 * (1 - BM25_B + BM25_B * row.terms.total() / (average or 1))
            score = sum(
                _idf(len(rows), frequency[t]) * row.terms[t] * (BM25_K1 + 1) / (row.terms[t] + norm)
                for t in asked
                if t in row.terms
            )
            if held:
                exact.add(row.record.id)
                score = score or 1.0  # a phrase of stopwords alone scores by being held
            scored.append((row.record.id, score))
        # Whole-phrase holders first, then by score; ties by id.
        scored.sort(key=lambda hit: (hit[0] not in exact, -hit[1], hit[0]))
        return TextHits(scored[:limit], exact.intersection(memory_id for memory_id, _ in scored[:limit]))

    def text_matches(
        self, query: str, visibility: Visibility, limit: int, *, holding: Sequence[Collection[str]] = ()
    ) -> list[TextMatch]:
        if holding:  # ranked as without: every match asked, then the holders' first ``limit``
            with self._open():
                every = len(self._rows)
                shown = {i for i, row in self._rows.items() if holds_each(row.record.text, holding)}
            found = self.search_text(query, visibility, max(every, 1), phrase="")
            hits = [hit for hit in found if hit[0] in shown][:limit]
        else:
            hits = list(self.search_text(query, visibility, limit, phrase=""))  # words only
        with self._open():
            rows = [self._rows[memory_id].record for memory_id, _ in hits if memory_id in self._rows]
        return [TextMatch(r.id, r.text, r.category, r.scope, r.project, r.branch) for r in rows]

    # -- vectors ----------------------------------------------------------------

    def pending_embeddings(self, limit: int) -> list[tuple[str, str]]:
        with self._open():
            pending = [(i, row.record.text) for i, row in self._rows.items() if row.vector is None]
        return pending[: max(limit, 0)]

    def count_pending_embeddings(self) -> int:
        with self._open():
            return sum(row.vector is None for row in self._rows.values())

    def set_embeddings(self, ids: Sequence[str], vectors: Vector) -> None:
        if len(ids) != len(vectors):
            raise ValueError(f"{len(ids)} ids came with {len(vectors)} vectors")
        with self._open():
            for memory_id, vector in zip(ids, vectors, strict=True):
                row = self._rows.get(memory_id)
                if row is not None:
                    row.vector = np.array(vector, dtype=np.float32)
                    row.record = replace(row.record, embedded=True)

    def clear_embeddings(self, dimension: int) -> None:
        with self._open():
            for row in self._rows.values():
                row.vector = None
                row.record = replace(row.record, embedded=False)
            self.dimension = dimension

    def load_vectors(self) -> StoredVectors:
        with self._open():
            rows = [row for row in self._rows.values() if row.vector is not None]
        if not rows:
            return StoredVectors([], np.zeros((0, self.dimension), np.float32), [], [])
        matrix = np.ascontiguousarray(np.stack([row.vector for row in rows if row.vector is not None]))
        return StoredVectors(
            [r.record.id for r in rows],
            matrix.astype(np.float32, copy=False),
            [place(r.record.project, r.record.branch) for r in rows],
            [r.record.status.value for r in rows],
        )

    def count_vectors(self) -> int:
        with self._open():
            return sum(1 for row in self._rows.values() if row.vector is not None)

    def embedding_of(self, memory_id: str) -> Vector | None:
        with self._open():
            row = self._rows.get(memory_id)
            return None if row is None or row.vector is None else row.vector.copy()

    # -- entities ---------------------------------------------------------------

    def upsert_entities(self, entities: Sequence[Entity]) -> None:
        with self._open():
            for entity in entities:
                known = self._entities.get((entity.kind, entity.key))
                title = entity.title or (known.title if known is not None else "")
                self._entities[(entity.kind, entity.key)] = replace(entity, title=title)

    def get_entities(self, keys: Collection[str]) -> dict[str, Entity]:
        with self._open():
            found = (self._entities.get((kind, key)) for key in keys if (kind := kind_of(key)) is not None)
            return {entity.key: entity for entity in found if entity is not None}

    def find_entities(self, name: str, kinds: Collection[EntityKind]) -> list[Entity]:
        found: list[Entity] = []
        with self._open():
            for kind in kinds:
                named = [
                    e
                    for (k, _), e in self._entities.items()
                    if k is kind and (e.name == name or e.key.endswith(f"::{name}"))
                ]
                found += sorted(named, key=lambda e: e.key)[:FIND_ENTITIES_LIMIT]
        return found

    def all_entities(self) -> Iterable[Entity]:
        with self._open():
            entities = list(self._entities.values())
        order = {kind: i for i, kind in enumerate(EntityKind)}
        return sorted(entities, key=lambda e: (order[e.kind], e.key))

    def link_about(self, pairs: Sequence[tuple[str, Entity]]) -> None:
        with self._open():
            for memory_id, entity in pairs:
                row = self._rows.get(memory_id)
                if row is not None:
                    self._link(row, [entity])

    def _link(self, row: FakeRow, entities: Sequence[Entity]) -> None:
        for entity in entities:
            if (entity.kind, entity.key) not in self._entities or entity.key in row.about:
                continue  # unknown, or linked already: the edge keeps the body it records
            row.about[entity.key] = entity.kind
            body = self._body_of(entity.key)
            if entity.kind is EntityKind.SYMBOL and body is not None:
                row.bodies[entity.key] = body

    def _body_of(self, key: str) -> str | None:
        """The body hash of now of symbol ``key`` (None: no pass stored it)."""
        body = self._bodies.get(key)
        return None if body is None else body[0]

    def about_bodies(self, memory_ids: Collection[str]) -> dict[str, dict[str, str]]:
        with self._open():
            rows = {i: self._rows.get(i) for i in dict.fromkeys(memory_ids)}
            return {i: dict(row.bodies) for i, row in rows.items() if row is not None and row.bodies}

    def about(self, memory_ids: Collection[str]) -> dict[str, list[Entity]]:
        found: dict[str, list[Entity]] = {}
        with self._open():
            for memory_id in dict.fromkeys(memory_ids):
                row = self._rows.get(memory_id)
                if row is not None and row.about:
                    found[memory_id] = [self._entities[(kind, key)] for key, kind in row.about.items()]
        return found

    def remembered(self, keys: Collection[str]) -> set[str]:
        return set(self.memories_about(keys))  # one user: every memory is seen

    def memories_about(self, entity_keys: Collection[str]) -> dict[str, list[str]]:
        wanted = {key for key in entity_keys if kind_of(key) is not None}
        found: dict[str, list[str]] = {}
        with self._open():
            for memory_id, row in self._rows.items():
                for key, kind in row.about.items():
                    if key in wanted and kind_of(key) is kind:
                        found.setdefault(key, []).append(memory_id)
        return found

    # -- edges between memories -------------------------------------------------

    def add_links(self, links: Sequence[Link]) -> None:
        with self._open():
            for link in links:
                if link.source in self._rows and link.target in self._rows:
                    created = utc(link.created_at)
                    self._relates.setdefault((link.source, link.target, link.kind), created)

    def remove_link(self, source: str, target: str, kind: LinkKind) -> bool:
        with self._open():
            return self._relates.pop((source, target, kind), None) is not None

    def links(self, memory_ids: Collection[str] | None = None) -> list[Link]:
        wanted = None if memory_ids is None else set(memory_ids)
        with self._open():
            found = [
                Link(source, target, kind, created)
                for (source, target, kind), created in self._relates.items()
                if wanted is None or source in wanted or target in wanted
            ]
        return sorted(found, key=lambda link: (link.created_at, link.source, link.target))

    def add_next(self, pairs: Sequence[tuple[str, str]]) -> None:
        with self._open():
            for a, b in pairs:
                if a in self._rows and b in self._rows:
                    self._next[(a, b)] = None

    def next_pairs(self, memory_ids: Collection[str] | None = None) -> list[tuple[str, str]]:
        wanted = None if memory_ids is None else set(memory_ids)
        with self._open():
            return [(a, b) for a, b in self._next if wanted is None or a in wanted]

    def neighbours(self, memory_ids: Collection[str], limit: int) -> list[Neighbour]:
        with self._open():
            about = [(memory_id, key) for memory_id, row in self._rows.items() for key in row.about]
            relates = [(source, target, kind.value) for source, target, kind in self._relates]
            nexts = list(self._next)
        # The Kùzu store's own expansion, over a snapshot: the same order, fanout and hub cut.
        return GraphCache(lambda: (about, relates, nexts)).neighbours(memory_ids, limit)

    # -- expiry -------------------------------------------------------------------

    def expiring(self, now: datetime, limit: int) -> list[MemoryRecord]:
        with self._open():
            found = [
                row.record
                for row in self._rows.values()
                if row.record.expires_at is not None
                and row.record.is_current
                and row.record.expires_at <= utc(now)
            ]
        return sorted(found, key=lambda r: (r.expires_at or now, r.id))[:limit]

    def next_expiry(self) -> datetime | None:
        with self._open():
            times = [r.record.expires_at for r in self._rows.values() if r.record.is_current]
        return min((t for t in times if t is not None), default=None)

    def branch_memories(self, project: str | None, branch: str | None, limit: int) -> list[MemoryRecord]:
        with self._open():
            found = [r.record for r in self._rows.values() if r.record.branch and r.record.is_current]
        found = [r for r in found if project in (None, r.project) and branch in (None, r.branch)]
        return sorted(found, key=lambda r: (r.created_at, r.id))[:limit]

    # -- history ------------------------------------------------------------------

    def add_events(self, events: Sequence[MemoryEvent]) -> None:
        with self._open():
            for event in events:
                if event.id in self._events:
                    raise StoreError(f"Event {event.id} is stored already.")
                self._events[event.id] = replace(event, at=utc(event.at))

    def events_of(
        self, memory_id: str, limit: int, *, kinds: Collection[EventKind] | None = None
    ) -> list[MemoryEvent]:
        wanted = set(EventKind if kinds is None else kinds)  # chosen before ``limit`` counts, as a query
        with self._open():
            found = [e for e in self._events.values() if memory_id in (e.memory_id, e.other_id)]
        return [e for e in found[::-1] if e.kind in wanted][:limit]

    def get_event(self, event_id: str) -> MemoryEvent | None:
        with self._open():
            return self._events.get(event_id)

    def set_undone(self, event_id: str, undone_by: str) -> None:
        with self._open():
            if event_id in self._events:
                self._events[event_id] = replace(self._events[event_id], undone_by=undone_by)

    def all_events(self) -> Iterable[MemoryEvent]:
        with self._open():
            return list(self._events.values())


def _idf(documents: int, containing: int) -> float:
    """BM25's inverse document frequency, kept positive so that every match scores above 0."""
    return math.log(1 + (documents - containing + 0.5) / (containing + 0.5))
