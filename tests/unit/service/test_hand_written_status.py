"""A memory whose status graphmem never writes (a row of a team's store written by hand with
``psql``; on Kùzu, by Cypher) is read as archived (``adapters/record_rows.py``), and the service
finds it where it finds archived memories: ``list --status archived`` lists it, and what asks
current memories (recall, context, ``list``'s default) never does. On Kùzu, written by Cypher
into a store graphmem then opens; on the in-memory fake, changed in as a store takes it.
PostgreSQL's is tests/integration/test_team_hostile_rows.py."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support.memory_service import in_memory_service
from support.stores import KuzuTemplates

from graphmem.adapters.embedders import HashEmbedder
from graphmem.adapters.fake_store import FakeGraphStore
from graphmem.adapters.kuzu_store import KuzuGraphStore
from graphmem.app import open_memory
from graphmem.core.bundle import ContextBundle
from graphmem.core.models import Status
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings

PROJECT = "/src/shop"
RULE = "Always deploy the ledger service on Fridays"
KEPT = "Deploy the ledger service with the blue-green script"
DIMENSION = 64

# A service whose memory of ``RULE`` holds the status given, written by hand; its id.
HandWritten = Callable[[str], tuple[MemoryService, str]]


def remember_both(memory: MemoryService) -> str:
    """``KEPT`` and ``RULE`` remembered in ``PROJECT``; the id of ``RULE``'s memory."""
    memory.remember(KEPT, category="procedure", project=PROJECT)
    return memory.remember(RULE, category="directive", project=PROJECT).memory.id


@pytest.fixture(params=["kuzu", "memory"])
def hand_written(
    request: pytest.FixtureRequest, tmp_path: Path, kuzu_templates: KuzuTemplates
) -> Iterator[HandWritten]:
    opened: list[MemoryService] = []
    data = tmp_path / "data"

    def on_kuzu(status: str) -> tuple[MemoryService, str]:
        kuzu_templates.lay_out(data, DIMENSION)
        settings = load_settings(data_dir=data)
        memory = open_memory(settings, embedder=HashEmbedder(DIMENSION))
        memory_id = remember_both(memory)
        memory.close()
        store = KuzuGraphStore(data, dimension=DIMENSION)  # what graphmem never writes: by Cypher
        store.db.run("MATCH (m:Memory {id: $id}) SET m.status = $status", {"id": memory_id, "status": status})
        store.close()
        opened.append(open_memory(settings, embedder=HashEmbedder(DIMENSION)))
        return opened[-1], memory_id

    def on_the_fake(status: str) -> tuple[MemoryService, str]:
        store = FakeGraphStore(dimension=DIMENSION)
        opened.append(in_memory_service(data, store=store, embedder=HashEmbedder(DIMENSION)))
        memory_id = remember_both(opened[-1])
        store.update_memory(memory_id, {"status": status})  # as PostgreSQL or Kùzu takes it
        return opened[-1], memory_id

    yield on_kuzu if request.param == "kuzu" else on_the_fake
    for memory in opened:
        memory.close()


def in_context(bundle: ContextBundle) -> set[str]:
    items = [*(item for group in bundle.groups.values() for item in group), *bundle.related_memories]
    return {item.hit.memory.id for item in items}


@pytest.mark.parametrize("status", ["bogus", "ARCHIVED", "x" * 100_000], ids=["word", "case", "long"])
def test_a_status_graphmem_never_writes_is_listed_with_the_archived_and_never_recalled(
    hand_written: HandWritten, status: str
) -> None:
    memory, memory_id = hand_written(status)

    archived = memory.list(project=PROJECT, statuses=[Status.ARCHIVED])
    hits = memory.recall("deploy the ledger service", project=PROJECT).hits
    context = memory.get_context("deploy the ledger service", project=PROJECT)

    assert memory.show(memory_id).memory.status is Status.ARCHIVED
    assert [(m.id, m.status) for m in archived] == [(memory_id, Status.ARCHIVED)]
    assert memory_id not in {m.id for m in memory.list(project=PROJECT)}
    assert hits and memory_id not in {hit.memory.id for hit in hits}
    assert memory_id not in in_context(context)
