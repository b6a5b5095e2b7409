"""A person may name a memory or an event by the beginning of its id, as git takes a commit's
(``MemoryService.expand_id``: the CLI's ``show`` and ``undo``)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from graphmem.adapters.fake_store import FakeGraphStore
from graphmem.errors import InvalidInputError, NotFoundError
from graphmem.service.memory import MemoryService


def twins(memory_service: MemoryService, memory_store: FakeGraphStore) -> tuple[str, str]:
    stored = memory_service.remember("We deploy on Tuesdays").memory
    first, second = replace(stored, id="mem_ab12cd0000000001"), replace(stored, id="mem_ab12ef0000000002")
    memory_store.add_memories([first, second])
    return first.id, second.id


def test_a_prefix_one_memory_id_starts_with_names_it(
    memory_service: MemoryService, memory_store: FakeGraphStore
) -> None:
    first, _ = twins(memory_service, memory_store)

    assert memory_service.expand_id("mem_ab12cd") == first
    assert memory_service.expand_id(f"  {first}  ") == first


def test_an_ambiguous_prefix_names_the_candidates(
    memory_service: MemoryService, memory_store: FakeGraphStore
) -> None:
    first, second = twins(memory_service, memory_store)

    with pytest.raises(InvalidInputError, match="give more of the id") as raised:
        memory_service.expand_id("mem_ab12")
    assert first in str(raised.value) and second in str(raised.value)


def test_a_prefix_no_id_starts_with_is_not_found_and_a_short_one_is_refused(
    memory_service: MemoryService,
) -> None:
    with pytest.raises(NotFoundError, match="No memory id starts with mem_ffff"):
        memory_service.expand_id("mem_ffff")
    with pytest.raises(InvalidInputError, match="at least its first 8 characters"):
        memory_service.expand_id("mem_")


def test_an_event_prefix_names_the_event(memory_service: MemoryService) -> None:
    memory_id = memory_service.remember("We deploy on Tuesdays").memory.id
    memory_service.archive(memory_id)
    [event] = memory_service.history(memory_id)

    assert memory_service.expand_id(event.id[:12]) == event.id
    with pytest.raises(NotFoundError, match="No event id starts with"):
        memory_service.expand_id("evt_" + "g" * 8)
