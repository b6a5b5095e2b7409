"""The ``GraphStore`` contract for long lists of keys, run against every store.

Kùzu answers a few keys with one primary-key lookup each and more with one join on the
primary key (``FEW_NODE_KEYS``, ``FEW_EDGE_KEYS`` in kuzu_connection.py): these lists are
longer than both, with unknown and repeated keys among them.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from itertools import pairwise
from pathlib import Path

import pytest
from support.records import NOW, memory
from support.stores import STORES, open_store

from graphmem.adapters.kuzu_connection import FEW_EDGE_KEYS
from graphmem.adapters.kuzu_store import LOOKUP_MAX_IDS
from graphmem.core.models import Entity, EntityKind, Link, LinkKind, MemoryRecord
from graphmem.core.ports import GraphStore

MANY = max(FEW_EDGE_KEYS, LOOKUP_MAX_IDS) + 50
FILES = [
    Entity(f"File:/src/proj::f{i:03}.py", EntityKind.FILE, f"f{i:03}.py", "/src/proj") for i in range(MANY)
]
KEYS = [e.key for e in FILES]
RECORDS = [memory(f"m{i:03}") for i in range(MANY)]
IDS = [r.id for r in RECORDS]


@pytest.fixture(params=sorted(STORES))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[GraphStore]:
    opened = open_store(request.param, tmp_path, request, 8)
    yield opened
    opened.close()


def with_unknown_and_repeated(keys: list[str], unknown: str) -> list[str]:
    return [*keys, unknown, *keys[:5], unknown]


def test_many_entities_are_read_at_once(store: GraphStore) -> None:
    store.upsert_entities(FILES)

    found = store.get_entities([*with_unknown_and_repeated(KEYS, "File:/src/proj::nope.py"), "Nolabel:x"])

    assert found == {e.key: e for e in FILES}


def test_memories_about_many_entities_are_listed_once_each(store: GraphStore) -> None:
    store.add_memories(RECORDS)
    store.upsert_entities(FILES)
    store.link_about([(r.id, e) for r, e in zip(RECORDS, FILES, strict=True)] + [(IDS[0], FILES[1])])

    about = store.memories_about(with_unknown_and_repeated(KEYS, "File:/src/proj::nope.py"))

    expected = {key: [memory_id] for key, memory_id in zip(KEYS, IDS, strict=True)}
    expected[KEYS[1]] = sorted([IDS[0], IDS[1]])
    assert {key: sorted(ids) for key, ids in about.items()} == expected


def test_entities_of_many_memories_are_listed_once_each(store: GraphStore) -> None:
    issue = Entity("Issue:group/proj#4", EntityKind.ISSUE, "#4", "/src/proj", "Flaky test")
    store.add_memories(RECORDS)
    store.upsert_entities([*FILES, issue])
    store.link_about([(r.id, e) for r, e in zip(RECORDS, FILES, strict=True)] + [(IDS[0], issue)])

    about = store.about(with_unknown_and_repeated(IDS, "nope"))

    expected = {memory_id: [e.key] for memory_id, e in zip(IDS, FILES, strict=True)}
    expected[IDS[0]] = sorted([KEYS[0], issue.key])
    assert {memory_id: sorted(e.key for e in es) for memory_id, es in about.items()} == expected


def chain(records: list[MemoryRecord]) -> list[Link]:
    """Links m000 → m001 → m002 ..., one second apart (oldest first)."""
    return [
        Link(a.id, b.id, LinkKind.RELATED, NOW + timedelta(seconds=i))
        for i, (a, b) in enumerate(pairwise(records))
    ]


def test_links_of_many_memories_are_listed_once_each_oldest_first(store: GraphStore) -> None:
    store.add_memories(RECORDS)
    links = chain(RECORDS)
    store.add_links(links)

    assert store.links(with_unknown_and_repeated(IDS, "nope")) == links
    assert store.links(IDS[:2]) == links[:2]


def test_next_pairs_of_many_memories_are_listed_once_each(store: GraphStore) -> None:
    store.add_memories(RECORDS)
    pairs = list(pairwise(IDS))
    store.add_next(pairs)

    assert sorted(store.next_pairs(with_unknown_and_repeated(IDS, "nope"))) == pairs
