"""What an import file says of a memory the store held before: it changes that memory only as any
other writer's change does (audited, undoable), and never replaces what a person wrote or
confirmed (``Transfer._sort_links``)."""

from __future__ import annotations

import json
from typing import Any

from graphmem.core.models import LinkKind, Status
from graphmem.service.memory import MemoryService

RULE = "Run make test-fast before every commit"
NEW_ID = "mem_1111111111111111"


def export(*records: dict[str, Any]) -> str:
    header = {"type": "header", "format": "graphmem-export", "version": 1, "project": None, "counts": {}}
    return "\n".join(json.dumps(r) for r in (header, *records)) + "\n"


def memory(memory_id: str, text: str, **fields: Any) -> dict[str, Any]:
    return {
        "type": "memory", "id": memory_id, "text": text, "category": "fact", "scope": "global",
        "status": "active", "created_at": "2026-01-01T00:00:00Z", "entities": [], **fields,
    }  # fmt: skip


def link(source: str, target: str, kind: str) -> dict[str, Any]:
    return {
        "type": "link",
        "source": source,
        "target": target,
        "kind": kind,
        "created_at": "2026-01-01T00:00:00Z",
    }


ENTITY = {"type": "entity", "key": "File:evil.py", "kind": "File", "name": "evil.py"}


def test_an_import_adds_no_entity_to_a_memory_it_did_not_bring(memory_service: MemoryService) -> None:
    rule = memory_service.remember(RULE, category="directive", scope="global").memory
    older_copy = memory(
        rule.id, RULE, category="directive", updated_at="2020-01-01T00:00:00Z", entities=["File:evil.py"]
    )
    duplicate = memory("mem_2222222222222222", RULE, category="directive", entities=["File:evil.py"])

    summary = memory_service.import_text(export(ENTITY, older_copy, duplicate), name="evil.jsonl")

    assert summary.memories_added == 0 and summary.memories_skipped == 2
    assert memory_service.show(rule.id).entities == ()
    assert memory_service.history(rule.id) == []


def test_an_import_cannot_supersede_a_persons_memory(memory_service: MemoryService) -> None:
    rule = memory_service.remember(RULE, category="directive", scope="global").memory
    text = export(memory(NEW_ID, "Skip the tests before commits"), link(NEW_ID, rule.id, "supersedes"))

    assert memory_service.import_text(text, name="evil.jsonl", dry_run=True).links_refused == 1
    summary = memory_service.import_text(text, name="evil.jsonl")

    assert (summary.memories_added, summary.links, summary.links_refused) == (1, 0, 1)
    detail = memory_service.show(rule.id)
    assert detail.memory.status is Status.ACTIVE and detail.links == ()
    assert memory_service.history(rule.id) == []


def test_a_link_onto_a_stored_memory_is_an_event_of_its_history(memory_service: MemoryService) -> None:
    rule = memory_service.remember(RULE, category="directive", scope="global").memory

    summary = memory_service.import_text(
        export(memory(NEW_ID, "The CI runs make test-fast too"), link(NEW_ID, rule.id, "contradicts")),
        name="team.jsonl",
    )

    assert summary.links == 1
    [event] = memory_service.history(rule.id)
    assert (event.actor, event.memory_id, event.other_id) == ("import:team.jsonl", NEW_ID, rule.id)
    memory_service.undo(event.id)
    assert memory_service.show(rule.id).links == ()


def test_a_teammates_supersession_of_an_imported_memory_closes_it_with_an_event(
    memory_service: MemoryService,
) -> None:
    first = export(memory("mem_3333333333333333", "Deploys go out on Tuesdays"))
    memory_service.import_text(first, name="team.jsonl")
    second = export(
        memory("mem_3333333333333333", "Deploys go out on Tuesdays"),
        memory(NEW_ID, "Deploys go out on Thursdays"),
        link(NEW_ID, "mem_3333333333333333", "supersedes"),
    )

    summary = memory_service.import_text(second, name="team.jsonl")
    again = memory_service.import_text(second, name="team.jsonl")

    assert (summary.links, summary.links_refused, again.links) == (1, 0, 0)
    older = memory_service.show("mem_3333333333333333")
    assert older.memory.status is Status.SUPERSEDED
    assert [(x.source, x.kind) for x in older.links] == [(NEW_ID, LinkKind.SUPERSEDES)]
    [event] = memory_service.history("mem_3333333333333333")
    assert event.actor == "import:team.jsonl"
    memory_service.undo(event.id)
    assert memory_service.show("mem_3333333333333333").memory.status is Status.ACTIVE


def test_links_between_the_files_own_memories_come_as_they_are(memory_service: MemoryService) -> None:
    text = export(
        memory("mem_3333333333333333", "Deploys went out on Tuesdays", status="superseded"),
        memory(NEW_ID, "Deploys go out on Thursdays", entities=["File:evil.py"]),
        ENTITY,
        link(NEW_ID, "mem_3333333333333333", "supersedes"),
    )

    summary = memory_service.import_text(text, name="team.jsonl")

    assert (summary.memories_added, summary.links, summary.links_refused) == (2, 1, 0)
    assert [e.key for e in memory_service.show(NEW_ID).entities] == ["File:evil.py"]
    assert memory_service.history(NEW_ID) == []
