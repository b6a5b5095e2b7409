"""A memory's history and undo (``service/lifecycle.py``, the writer's events), on the in-memory store."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import pytest
from support.memory_service import in_memory_service

from graphmem.adapters.embedders import HashEmbedder
from graphmem.app import open_memory
from graphmem.core.events import AGENT, EventKind
from graphmem.core.models import Category, LinkKind, Status
from graphmem.errors import ConflictError, ImportFileError, InvalidInputError, NotFoundError
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings


def test_an_edit_keeps_the_old_text_and_category_in_the_history(memory_service: MemoryService) -> None:
    mem = memory_service.remember("Payments retry 3 times, see !12", category="fact").memory
    memory_service.edit(mem.id, text="Payments retry 5 times", category="decision")

    [event] = memory_service.history(mem.id)

    assert event.kind is EventKind.EDIT and event.actor == "user"
    assert event.before["text"] == "Payments retry 3 times, see !12"
    assert event.before["category"] == "fact" and event.after["category"] == "decision"
    assert event.before["about"] == ["MergeRequest:!12"] and event.after["about"] == []


def test_undoing_an_edit_brings_back_the_text_category_and_entities(memory_service: MemoryService) -> None:
    mem = memory_service.remember("Payments retry 3 times, see !12", category="fact").memory
    memory_service.edit(mem.id, text="Payments retry 5 times", category="decision")
    [event] = memory_service.history(mem.id)

    undo = memory_service.undo(event.id)

    detail = memory_service.show(mem.id)
    assert detail.memory.text == "Payments retry 3 times, see !12"
    assert detail.memory.category is Category.FACT
    assert [e.key for e in detail.entities] == ["MergeRequest:!12"]
    assert undo.kind is EventKind.UNDO and undo.undoes == event.id
    assert [e.id for e in memory_service.history(mem.id)] == [undo.id, event.id]
    assert memory_service.history(mem.id)[1].undone_by == undo.id


def test_status_changes_are_listed_newest_first_with_their_actor(memory_service: MemoryService) -> None:
    mem = memory_service.remember("CI is red on main", category="blocker").memory
    memory_service.resolve(mem.id, actor=AGENT)
    memory_service.unresolve(mem.id)
    memory_service.archive(mem.id)

    events = memory_service.history(mem.id)

    assert [(e.before["status"], e.after["status"]) for e in events] == [
        ("active", "archived"),
        ("resolved", "active"),
        ("active", "resolved"),
    ]
    assert [e.actor for e in events] == ["user", "user", "agent"]


def test_undo_of_an_archive_restores_the_memory(memory_service: MemoryService) -> None:
    mem = memory_service.remember("We deploy on Tuesdays").memory
    archived = memory_service.archive(mem.id)
    [event] = memory_service.history(mem.id)

    memory_service.undo(event.id)

    assert archived.status is Status.ARCHIVED
    assert memory_service.show(mem.id).memory.status is Status.ACTIVE


def test_undoing_an_event_twice_is_a_clear_error(memory_service: MemoryService) -> None:
    mem = memory_service.remember("We deploy on Tuesdays").memory
    memory_service.archive(mem.id)
    [event] = memory_service.history(mem.id)
    undo = memory_service.undo(event.id)

    with pytest.raises(ConflictError, match=f"undone already \\(by {undo.id}\\)"):
        memory_service.undo(event.id)


def test_undo_of_an_event_whose_memory_changed_since_is_refused(memory_service: MemoryService) -> None:
    mem = memory_service.remember("CI is red on main", category="blocker").memory
    memory_service.resolve(mem.id)
    [resolved] = memory_service.history(mem.id)
    memory_service.archive(mem.id)

    with pytest.raises(ConflictError, match=r"changed since .*status is now 'archived'"):
        memory_service.undo(resolved.id)
    assert memory_service.show(mem.id).memory.status is Status.ARCHIVED


def test_an_undo_can_itself_be_undone(memory_service: MemoryService) -> None:
    mem = memory_service.remember("We deploy on Tuesdays").memory
    memory_service.archive(mem.id)
    [event] = memory_service.history(mem.id)
    undo = memory_service.undo(event.id)

    memory_service.undo(undo.id)

    assert memory_service.show(mem.id).memory.status is Status.ARCHIVED


def test_a_supersession_is_in_the_older_memorys_history_and_undoes_exactly(
    memory_service: MemoryService,
) -> None:
    old = memory_service.remember("Payments retry 3 times", category="decision").memory
    new = memory_service.remember("Payments never retry", category="decision").memory
    memory_service.link(new.id, old.id, "supersedes")
    [event] = memory_service.history(old.id)

    memory_service.undo(event.id)

    assert event.kind is EventKind.SUPERSEDE and event.other_id == new.id
    restored = memory_service.show(old.id)
    assert restored.memory.status is Status.ACTIVE and restored.memory.valid_to is None
    assert not [link for link in restored.links if link.kind is LinkKind.SUPERSEDES]


def test_an_automatic_supersession_says_what_replaced_it(memory_service: MemoryService) -> None:
    old = memory_service.remember("We use Kùzu 0.10 for the graph store", category="decision").memory
    new = memory_service.remember("We use Kùzu 0.11 for the graph store", category="decision")

    assert new.superseded == (old.id,)
    [event] = memory_service.history(old.id)
    assert event.kind is EventKind.SUPERSEDE and new.memory.id in event.reason


def test_restoring_a_superseded_memory_removes_its_link_and_undo_puts_it_back(
    memory_service: MemoryService,
) -> None:
    old = memory_service.remember("Payments retry 3 times", category="decision").memory
    new = memory_service.remember("Payments never retry", category="decision").memory
    memory_service.link(new.id, old.id, "supersedes")
    memory_service.restore(old.id)
    restore = memory_service.history(old.id)[0]

    memory_service.undo(restore.id)

    detail = memory_service.show(old.id)
    assert detail.memory.status is Status.SUPERSEDED and detail.memory.valid_to is not None
    assert [(x.source, x.kind) for x in detail.links] == [(new.id, LinkKind.SUPERSEDES)]


def test_a_link_is_in_both_memories_history_and_undo_removes_it(memory_service: MemoryService) -> None:
    a = memory_service.remember("The cache is Redis").memory
    b = memory_service.remember("Sessions live in the cache").memory
    memory_service.link(a.id, b.id, "related")

    [event] = memory_service.history(b.id)
    assert memory_service.history(a.id) == [event]
    memory_service.undo(event.id)

    assert not memory_service.show(a.id).links


def test_an_unlink_undone_brings_the_link_back_with_its_time(memory_service: MemoryService) -> None:
    a = memory_service.remember("The cache is Redis").memory
    b = memory_service.remember("Sessions live in the cache").memory
    link = memory_service.link(a.id, b.id, "contradicts")
    memory_service.unlink(a.id, b.id, "contradicts")

    memory_service.undo(memory_service.history(a.id)[0].id)

    [back] = memory_service.show(a.id).links
    assert (back.kind, back.created_at) == (LinkKind.CONTRADICTS, link.created_at)


def test_undo_of_a_link_whose_other_memory_was_deleted_is_refused(memory_service: MemoryService) -> None:
    a = memory_service.remember("The cache is Redis").memory
    b = memory_service.remember("Sessions live in the cache").memory
    memory_service.link(a.id, b.id, "related")
    [event] = memory_service.history(a.id)
    memory_service.delete(b.id)

    with pytest.raises(ConflictError, match=f"Memory {b.id} was deleted"):
        memory_service.undo(event.id)


def test_a_memory_never_changed_has_an_empty_history(memory_service: MemoryService) -> None:
    mem = memory_service.remember("We deploy on Tuesdays").memory

    assert memory_service.history(mem.id) == []


def test_history_of_an_unknown_memory_is_not_found(memory_service: MemoryService) -> None:
    with pytest.raises(NotFoundError, match="No memory with id mem_nobody"):
        memory_service.history("mem_nobody")


@pytest.mark.parametrize("event_id", ["", "mem_0123456789abcdef", "evt_xyz", "evt_" + "0" * 17, "\x00"])
def test_undo_of_a_malformed_event_id_says_what_an_id_looks_like(
    memory_service: MemoryService, event_id: str
) -> None:
    with pytest.raises(InvalidInputError, match="evt_ and 16 hex digits"):
        memory_service.undo(event_id)


def test_undo_of_an_unknown_event_is_not_found(memory_service: MemoryService) -> None:
    with pytest.raises(NotFoundError, match="No event evt_0123456789abcdef"):
        memory_service.undo("evt_0123456789abcdef")


def test_the_history_and_an_undo_survive_a_restart_on_kuzu(tmp_path: Path) -> None:
    settings = load_settings(data_dir=tmp_path / "data")
    first = open_memory(settings, embedder=HashEmbedder(32))
    mem = first.remember("Payments retry 3 times").memory
    first.edit(mem.id, text="Payments retry 5 times")
    first.close()

    second = open_memory(settings, embedder=HashEmbedder(32))
    [event] = second.history(mem.id)
    second.undo(event.id)

    assert second.show(mem.id).memory.text == "Payments retry 3 times"
    second.close()


# -- the history in exports -----------------------------------------------------------------


def test_an_export_carries_the_history_and_an_import_brings_it_back_undoable(
    memory_service: MemoryService, tmp_path: Path
) -> None:
    mem = memory_service.remember("Payments retry 3 times").memory
    memory_service.edit(mem.id, text="Payments retry 5 times")
    memory_service.archive(mem.id)
    before = memory_service.history(mem.id)
    buffer = io.StringIO()
    memory_service.export(buffer)
    other = in_memory_service(tmp_path / "other")

    other.import_text(buffer.getvalue())
    other.import_text(buffer.getvalue())  # twice: nothing repeats

    # What happened, when, as it was; made by the import, the file's "user" kept in words only.
    imported = [replace(e, actor="import:The export", reason="by user, as the file says") for e in before]
    assert other.history(mem.id) == imported
    restored = io.StringIO()
    other.export(restored)
    third = in_memory_service(tmp_path / "third")
    third.import_text(restored.getvalue())  # a backup of the restored backup: said once, never nested
    assert third.history(mem.id) == imported
    third.close()
    other.undo(before[0].id)
    other.undo(before[1].id)
    assert other.show(mem.id).memory.text == "Payments retry 3 times"
    other.close()


def test_an_event_line_with_a_state_undo_could_not_apply_is_refused(memory_service: MemoryService) -> None:
    mem = memory_service.remember("Payments retry 3 times").memory
    buffer = io.StringIO()
    memory_service.export(buffer)
    bad = {
        "type": "event", "id": "evt_0123456789abcdef", "memory_id": mem.id, "at": "2026-11-20",
        "kind": "status", "actor": "user", "before": {"status": "bogus"}, "after": {"colour": "red"},
    }  # fmt: skip

    with pytest.raises(ImportFileError) as refused:
        memory_service.import_text(buffer.getvalue() + json.dumps(bad) + "\n")

    [(_, problem)] = refused.value.problems
    assert "event.before.status: Input should be 'active'" in problem
    assert "event.after.(a field): an unknown field" in problem
    assert memory_service.history(mem.id) == []


def test_a_deleted_memorys_history_ends_with_who_deleted_it_and_that_is_not_undone(
    memory_service: MemoryService,
) -> None:
    mem = memory_service.remember("The staging password rotates monthly").memory
    memory_service.archive(mem.id)

    memory_service.delete(mem.id)

    deleted, archived = memory_service.history(mem.id)
    assert (deleted.kind, deleted.actor, archived.kind) == (EventKind.DELETE, "user", EventKind.STATUS)
    with pytest.raises(ConflictError, match=f"Memory {mem.id} was deleted"):
        memory_service.undo(deleted.id)
