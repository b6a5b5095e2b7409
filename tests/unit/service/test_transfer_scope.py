"""Where an import keeps what it brings: an agent's (the ``import_memories`` tool, ``actor``
agent) in the project it works on, as its ``remember`` is (``transfer_plan._kept_in``); a
person's (the CLI, the Python API) as the file says, a global memory global."""

from __future__ import annotations

import json
from typing import Any

import pytest

from graphmem.core.events import AGENT
from graphmem.core.models import Category, Scope, Status
from graphmem.errors import InvalidInputError
from graphmem.service.memory import MemoryService

PROJECT = "/work/shop"
OTHER = "/work/billing"
BLOCKER_ID = "mem_eeeeeeeeeeeeeeee"
BLOCKER = "GLOBALBLOCKER the package registry mirror is down for every repository"
HEADER = {"type": "header", "format": "graphmem-export", "version": 1, "project": None, "counts": {}}


def export(*records: dict[str, Any]) -> str:
    return "".join(json.dumps(r) + "\n" for r in (HEADER, *records))


def line(memory_id: str, text: str, **fields: Any) -> dict[str, Any]:
    return {
        "type": "memory", "id": memory_id, "text": text, "category": "blocker", "scope": "global",
        "project": None, "created_at": "2026-12-07T19:00:00+00:00", **fields,
    }  # fmt: skip


def blockers_seen_from(memory: MemoryService, project: str) -> list[str]:
    """The texts of the open blockers the boot block of ``project`` shows."""
    bundle = memory.boot_context(project=project)
    return [item.hit.memory.text for item in bundle.groups.get(Category.BLOCKER, [])]


def test_an_agents_import_keeps_a_global_line_in_its_project(memory_service: MemoryService) -> None:
    summary = memory_service.import_text(
        export(line(BLOCKER_ID, BLOCKER)), name="The content an agent sent", project=PROJECT, actor=AGENT
    )

    stored = memory_service.show(BLOCKER_ID).memory
    assert summary.memories_added == 1
    assert (stored.scope, stored.project, stored.status) == (Scope.PROJECT, PROJECT, Status.ACTIVE)
    assert blockers_seen_from(memory_service, PROJECT) == [BLOCKER]
    assert blockers_seen_from(memory_service, OTHER) == []
    assert [m.id for m in memory_service.list(project=OTHER)] == []


def test_an_agents_imported_global_fact_is_not_recalled_from_another_project(
    memory_service: MemoryService,
) -> None:
    fact = line(BLOCKER_ID, "The registry mirror lives at mirror.example.com", category="fact")
    memory_service.import_text(export(fact), project=PROJECT, actor=AGENT)

    assert [h.memory.id for h in memory_service.recall("registry mirror", project=OTHER).hits] == []
    assert [h.memory.id for h in memory_service.recall("registry mirror", project=PROJECT).hits] == [
        BLOCKER_ID
    ]


def test_a_persons_import_keeps_a_global_line_global(memory_service: MemoryService) -> None:
    memory_service.import_text(export(line(BLOCKER_ID, BLOCKER)), project=PROJECT)

    stored = memory_service.show(BLOCKER_ID).memory
    assert (stored.scope, stored.project) == (Scope.GLOBAL, None)
    assert blockers_seen_from(memory_service, OTHER) == [BLOCKER]


def test_an_agents_import_of_a_global_line_its_project_holds_adds_nothing(
    memory_service: MemoryService,
) -> None:
    memory_service.remember(BLOCKER, category="blocker", project=PROJECT, source="mcp")

    summary = memory_service.import_text(export(line(BLOCKER_ID, BLOCKER)), project=PROJECT, actor=AGENT)

    assert (summary.memories_added, summary.memories_skipped) == (0, 1)
    assert [m.scope for m in memory_service.store.all_memories()] == [Scope.PROJECT]


@pytest.mark.parametrize("dry_run", [False, True])
def test_an_agents_import_that_names_no_project_is_refused_and_stores_nothing(
    memory_service: MemoryService, dry_run: bool
) -> None:
    other_projects = line(
        "mem_dddddddddddddddd", "Billing deploys on Fridays", scope="project", project=OTHER
    )
    text = export(line(BLOCKER_ID, BLOCKER), other_projects)

    with pytest.raises(InvalidInputError, match="pass project"):
        memory_service.import_text(text, dry_run=dry_run, actor=AGENT)

    assert list(memory_service.store.all_memories()) == []


def test_an_agents_import_that_names_no_project_may_bring_what_the_store_holds(
    memory_service: MemoryService,
) -> None:
    held = memory_service.remember(BLOCKER, category="blocker", scope="global").memory

    summary = memory_service.import_text(export(line(held.id, BLOCKER)), actor=AGENT)

    assert (summary.memories_added, summary.memories_skipped) == (0, 1)
