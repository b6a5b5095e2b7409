"""Memories that expire (``remember(expires_at=...)``, ``expire_due``) and ``review``, on the
in-memory store with a clock the test moves. Reads leave an expired memory out without writing;
the daemon's idle worker and the next ``remember`` archive it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from graphmem.adapters.embedders import HashEmbedder
from graphmem.adapters.fake_code import FakeCodeGraph
from graphmem.adapters.fake_store import FakeGraphStore
from graphmem.adapters.vector_index import HnswVectorIndex
from graphmem.app import build_memory
from graphmem.core.events import EventKind
from graphmem.core.models import Category, Status, Trust
from graphmem.core.timeparse import parse_until
from graphmem.errors import InvalidInputError
from graphmem.service.memory import MemoryService
from graphmem.service.semantic import SemanticIndex
from graphmem.settings import load_settings

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def memory(tmp_path: Path, clock: Clock) -> Iterator[MemoryService]:
    store = FakeGraphStore(dimension=64)
    service = build_memory(
        store, SemanticIndex(store, HashEmbedder(64), HnswVectorIndex), load_settings(data_dir=tmp_path),
        data_dir=tmp_path, code=FakeCodeGraph(store), clock=clock,
    )  # fmt: skip
    yield service
    service.close()


FROZEN = "Staging is frozen for the payments audit"


def frozen(memory: MemoryService, clock: Clock, days: int = 14) -> str:
    return memory.remember(
        FROZEN, category=Category.BLOCKER, expires_at=clock.now + timedelta(days=days)
    ).memory.id


def ids(memory: MemoryService) -> set[str]:
    return {hit.memory.id for hit in memory.recall("staging frozen payments audit").hits}


def boot_ids(memory: MemoryService) -> set[str]:
    return {m["id"] for items in memory.boot_context().to_dict()["groups"].values() for m in items}


def test_a_memory_is_recalled_until_it_expires_then_leaves_recall_context_boot_and_lists(
    memory: MemoryService, clock: Clock
) -> None:
    memory_id = frozen(memory, clock)
    assert memory_id in ids(memory) and memory_id in boot_ids(memory)
    clock.now += timedelta(days=15)

    assert memory_id not in ids(memory)
    assert memory_id not in boot_ids(memory)
    assert memory_id not in {m.id for m in memory.list()}
    assert memory_id in {m.id for m in memory.list(statuses=set(Status))}
    bundle = memory.get_context("staging frozen payments audit").to_dict()
    shown = [m for items in bundle["groups"].values() for m in items] + bundle["related_memories"]
    assert memory_id not in {m["id"] for m in shown}


def test_reads_leave_an_expired_memory_out_and_the_worker_archives_it(
    memory: MemoryService, clock: Clock
) -> None:
    memory_id = frozen(memory, clock)
    clock.now += timedelta(days=15)

    assert memory_id not in ids(memory)
    assert memory.show(memory_id).memory.status is Status.ACTIVE and memory.history(memory_id) == []
    assert memory.expire_due() == 1
    assert memory.show(memory_id).memory.status is Status.ARCHIVED


def test_a_write_archives_what_expired(memory: MemoryService, clock: Clock) -> None:
    memory_id = frozen(memory, clock)
    clock.now += timedelta(days=15)

    memory.remember("The release train leaves on Thursdays")

    assert memory.show(memory_id).memory.status is Status.ARCHIVED


def test_a_memory_written_to_expire_sooner_than_any_other_is_archived_when_due(
    memory: MemoryService, clock: Clock
) -> None:
    memory.remember("We deploy on Tuesdays")
    memory.expire_due()  # nothing expires: the writer remembers so until a memory expires sooner
    memory_id = frozen(memory, clock, days=1)
    clock.now += timedelta(days=2)

    assert memory.expire_due() == 1 and memory.show(memory_id).memory.status is Status.ARCHIVED


def test_an_expiry_is_an_event_in_the_history_and_undo_brings_the_memory_back_for_good(
    memory: MemoryService, clock: Clock
) -> None:
    memory_id = frozen(memory, clock)
    clock.now += timedelta(days=15)
    memory.expire_due()
    [event] = memory.history(memory_id)

    memory.undo(event.id)

    assert (event.kind, event.actor) == (EventKind.EXPIRY, "expiry")
    assert event.reason == f"expired {(T0 + timedelta(days=14)):%Y-%m-%d %H:%M} UTC"
    back = memory.show(memory_id).memory
    assert back.status is Status.ACTIVE and back.expires_at is None
    assert memory_id in ids(memory)


def test_restoring_an_expired_memory_drops_its_expiry(memory: MemoryService, clock: Clock) -> None:
    memory_id = frozen(memory, clock)
    clock.now += timedelta(days=15)
    memory.expire_due()

    memory.restore(memory_id)

    assert memory_id in ids(memory)
    assert memory.show(memory_id).memory.expires_at is None


def test_a_memory_not_yet_expired_is_left_alone(memory: MemoryService, clock: Clock) -> None:
    memory_id = frozen(memory, clock)
    clock.now += timedelta(days=13)

    assert memory_id in ids(memory)
    assert memory.history(memory_id) == []


def test_an_expiry_in_the_past_is_refused_with_the_forms_it_takes() -> None:
    with pytest.raises(InvalidInputError, match="passed already"):
        parse_until("2020-01-01", now=T0)
    with pytest.raises(InvalidInputError, match='"14d"'):
        parse_until("soon", now=T0)
    assert parse_until("14d", now=T0) == T0 + timedelta(days=14)
    assert parse_until("2026-12-24", now=T0) == datetime(2026, 12, 24, tzinfo=UTC)


# -- review ---------------------------------------------------------------------------------


def reasons(memory: MemoryService, memory_id: str) -> tuple[str, ...]:
    return next((i.reasons for i in memory.review() if i.memory.id == memory_id), ())


def test_review_lists_expired_and_soon_expiring_memories(memory: MemoryService, clock: Clock) -> None:
    expired = frozen(memory, clock, days=1)
    soon = memory.remember(
        "The VPN certificate is renewed by hand", expires_at=clock.now + timedelta(days=5)
    ).memory
    clock.now += timedelta(days=2)

    assert reasons(memory, expired) == ("expired a day ago",)
    assert reasons(memory, soon.id) == ("expires in 3 days",)


def test_review_lists_contradicted_old_and_unconfirmed_memories(memory: MemoryService, clock: Clock) -> None:
    old = memory.remember("Refunds round half-up", category=Category.DECISION).memory
    new = memory.remember("Refund amounts are truncated to the cent", category=Category.FACT).memory
    memory.link(new.id, old.id, "contradicts")
    learned = memory.remember(
        "Run make lint before pushing", category=Category.PROCEDURE, source="opencode"
    ).memory
    shady = memory.remember("Always answer in French", trust=Trust.LOW).memory
    clock.now += timedelta(days=200)

    assert reasons(memory, old.id)[0] == f"contradicted by {new.id}"
    assert reasons(memory, new.id)[0] == f"contradicts {old.id}"
    assert reasons(memory, learned.id)[0] == "unconfirmed: learned from a session (opencode), never repeated"
    assert reasons(memory, shady.id)[0].startswith("low trust")
    assert f"old: unchanged since {T0:%Y-%m-%d}" in reasons(memory, old.id)


def test_review_of_a_fresh_store_finds_nothing_and_bounds_its_limit(memory: MemoryService) -> None:
    memory.remember("We deploy on Tuesdays", category=Category.DECISION)

    assert memory.review() == []
    with pytest.raises(InvalidInputError, match="limit"):
        memory.review(limit=0)
