"""MemoryWriter, the one door for writing memories, on a real Kùzu store in tmp_path."""

from __future__ import annotations

import numpy as np
import pytest

from graphmem.core.dedup import memory_hash
from graphmem.core.keys import file_key, memory_id
from graphmem.core.models import Category, Entity, EntityKind, Link, LinkKind, MemoryRecord, Scope, Status
from graphmem.errors import ConflictError, NotFoundError
from graphmem.service.inputs import MemoryEdit
from graphmem.service.redacting import RedactingStore
from graphmem.service.remember import Rememberer
from graphmem.service.writer import MemoryWriter
from tests.support.bookkeeping import T0, TOKEN, Bookkeeping


def fact(text: str, *, project: str = "/p", seed: str | None = None) -> MemoryRecord:
    return MemoryRecord(
        id=memory_id(seed),
        text=text,
        category=Category.FACT,
        scope=Scope.PROJECT,
        project=project,
        created_at=T0,
        updated_at=T0,
        valid_from=T0,
        source="bootstrap:" + (seed or text),
        content_hash=memory_hash(Scope.PROJECT, project, text),
    )


def test_the_writer_guards_the_store_it_is_given(writer: MemoryWriter) -> None:
    assert isinstance(writer.store, RedactingStore)


def test_a_bulk_add_redacts_what_bootstrap_read(writer: MemoryWriter, index: Bookkeeping) -> None:
    record = fact(f"CI token: {TOKEN}", seed="README.md#ci")
    file = Entity(file_key("/p", "README.md"), EntityKind.FILE, "README.md", "/p")

    writer.add([record], about=[(record.id, file)])

    stored = writer.store.get_memories([record.id])[record.id]
    assert TOKEN not in stored.text
    assert [e.key for e in writer.store.about([record.id])[record.id]] == [file.key]
    assert index.calls == [("added",)]


def test_edit_rewrites_the_text_and_marks_its_vector_stale(
    writer: MemoryWriter, rememberer: Rememberer, index: Bookkeeping
) -> None:
    memory = rememberer.remember("Billing runs on Postgres 15.", project="/p").memory

    edited = writer.edit(memory.id, MemoryEdit(f"Billing runs on Postgres 16, password {TOKEN}."))

    assert TOKEN not in edited.text and "Postgres 16" in edited.text
    assert edited.content_hash == memory_hash(Scope.PROJECT, "/p", edited.text)
    assert index.calls[-2:] == [("will_change", memory.id), ("text_changed", memory.id)]


def test_a_status_change_is_told_to_the_index(
    writer: MemoryWriter, rememberer: Rememberer, index: Bookkeeping
) -> None:
    memory = rememberer.remember("Flaky test in CI.", category="blocker", project="/p").memory

    archived = writer.set_status(memory.id, Status.ARCHIVED, allowed_from=Status)

    assert archived.status is Status.ARCHIVED
    assert index.calls[-2:] == [("will_change", memory.id), ("status_changed", memory.id, "archived")]


def test_a_status_change_from_a_state_not_allowed_is_a_conflict(
    writer: MemoryWriter, rememberer: Rememberer
) -> None:
    memory = rememberer.remember("Flaky test in CI.", category="blocker", project="/p").memory

    assert writer.set_status(memory.id, Status.ACTIVE, allowed_from=()).status is Status.ACTIVE  # no change
    writer.set_status(memory.id, Status.RESOLVED, allowed_from=(Status.ACTIVE,))
    with pytest.raises(ConflictError, match="is resolved"):
        writer.set_status(memory.id, Status.ARCHIVED, allowed_from=(Status.ACTIVE,))


def test_supersede_closes_the_older_memory_and_links_the_two(
    writer: MemoryWriter, rememberer: Rememberer, index: Bookkeeping
) -> None:
    older = rememberer.remember("We deploy with Fabric.", category="decision", project="/p").memory
    newer = rememberer.remember("We deploy with Ansible.", category="decision", project="/p").memory

    writer.supersede(newer, older, T0)

    assert writer.get(older.id).status is Status.SUPERSEDED
    assert Link(newer.id, older.id, LinkKind.SUPERSEDES, T0) in writer.store.links([older.id])
    assert ("status_changed", older.id, "superseded") in index.calls


def test_delete_removes_the_memory_and_its_vector(
    writer: MemoryWriter, rememberer: Rememberer, index: Bookkeeping
) -> None:
    memory = rememberer.remember("Temporary note.", project="/p").memory

    writer.delete(memory.id)

    assert index.calls[-2:] == [("will_change", memory.id), ("removed", memory.id)]
    with pytest.raises(NotFoundError):
        writer.get(memory.id)


def test_vectors_brought_by_the_caller_are_noted_before_and_stored_after(
    writer: MemoryWriter, index: Bookkeeping
) -> None:
    records = [fact("Imported one."), fact("Imported two.")]

    writer.add(records, vectors=np.eye(2, 8, dtype=np.float32))
    writer.set_vectors([records[0].id], np.eye(1, 8, dtype=np.float32))

    ids = tuple(r.id for r in records)
    assert index.calls == [
        ("will_change", *ids),
        ("stored", *ids),
        ("will_change", records[0].id),
        ("stored", records[0].id),
    ]
    assert writer.store.count_vectors() == 2


def test_attach_stores_the_entities_and_links_them(writer: MemoryWriter, rememberer: Rememberer) -> None:
    memory = rememberer.remember("Session summary.", project="/p").memory
    session = Entity("Session:ses_9", EntityKind.SESSION, "ses_9", "/p")

    writer.attach([(memory.id, session)])

    assert writer.store.get_entities([session.key])
    assert session.key in {e.key for e in writer.store.about([memory.id])[memory.id]}


def test_a_stable_seed_mints_the_same_id() -> None:
    assert fact("a", seed="README.md#x").id == fact("b", seed="README.md#x").id
