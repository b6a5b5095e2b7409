"""The read-only hints are true: every tool annotated read-only, and every verb the table of
verbs (``server/verbs.py``) classifies read-only, leaves the store as it was -- memories and
events -- even when a memory has expired (a read leaves it out; the daemon's idle worker or
the next write archives it)."""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from support.tools_client import Tools

from graphmem.adapters.fake_store import FakeGraphStore
from graphmem.core.models import Category, Status
from graphmem.server.runtime import Runtime
from graphmem.server.verbs import VERBS, Owner
from graphmem.service.memory import MemoryService

# Arguments of each read-only tool's call; a tool annotated read-only later must be added here.
READ_ONLY_CALLS: dict[str, dict[str, Any]] = {
    "memory_status": {},
    "recall": {"query": "staging freeze audit"},
    "get_context": {"target": "staging freeze audit"},
    "get_boot_context": {},
    "get_history": {"id": "{expired}"},
    "active_sessions": {"all_projects": True},
}

SERVICE_READS: dict[str, Callable[[MemoryService, str], object]] = {
    "recall": lambda m, _: m.recall("staging freeze audit"),
    "get_context": lambda m, _: m.get_context("staging freeze audit"),
    "boot_context": lambda m, _: m.boot_context(),
    "list": lambda m, _: m.list(),
    "select": lambda m, _: m.select(categories=[Category.BLOCKER]),
    "review": lambda m, _: m.review(),
    "show": lambda m, expired: m.show(expired),
    "expand_id": lambda m, expired: m.expand_id(expired[:12]),
    "history": lambda m, expired: m.history(expired),
    "stats": lambda m, _: m.stats(),
    "gauges": lambda m, _: m.gauges(),
    "export": lambda m, _: m.export(io.StringIO()),
    "export_repository": lambda m, _: m.export_repository(project="/src/shop"),
    "gitlab_status": lambda m, _: m.gitlab_status(),
    "active_sessions": lambda m, _: m.active_sessions(all_projects=True),
    "session_overrides": lambda m, _: m.session_overrides(),
}


def snapshot(store: FakeGraphStore) -> tuple[object, ...]:
    """The memories and their events. Not whether a memory has its vector yet: without a daemon,
    a search embeds the backlog first (an index of the text, not the memory)."""
    memories = sorted((replace(r, embedded=False) for r in store.all_memories()), key=lambda r: r.id)
    return memories, list(store.all_events()), store.links([r.id for r in memories])


@pytest.fixture
def expired(memory_service: MemoryService) -> str:
    """A blocker whose expiry has passed, not archived yet, beside one that has not expired."""
    memory_service.remember("The staging freeze for the audit is still on", category=Category.BLOCKER)
    return memory_service.parts.rememberer.remember(
        "The staging freeze for the audit ends on Monday",
        category=Category.BLOCKER,
        expires_at=datetime(2020, 1, 1, tzinfo=UTC),
    ).memory.id


def test_every_read_only_tool_is_called_here(tools: Tools) -> None:
    annotated = {
        name for name, tool in tools.listing().items() if tool.annotations and tool.annotations.read_only_hint
    }
    assert annotated == set(READ_ONLY_CALLS)


def test_every_verb_classified_read_only_is_called_here() -> None:
    """The Memory service's; the daemon's own (``status``) is the memory_status tool's."""
    classified = {v.name for v in VERBS.values() if v.effect.read_only and v.owner is Owner.MEMORY}
    assert classified <= set(SERVICE_READS)


@pytest.mark.parametrize("name", sorted(READ_ONLY_CALLS))
def test_a_read_only_tool_leaves_the_store_as_it_was(
    tools: Tools, memory_store: FakeGraphStore, expired: str, name: str
) -> None:
    before = snapshot(memory_store)
    arguments = {
        k: v.format(expired=expired) if isinstance(v, str) else v for k, v in READ_ONLY_CALLS[name].items()
    }

    answer = tools.ok(name, **arguments)

    assert snapshot(memory_store) == before
    assert expired not in str(answer) or name == "get_history"


@pytest.mark.parametrize("verb", sorted(SERVICE_READS))
def test_a_read_verb_leaves_the_store_as_it_was(
    runtime: Runtime, memory_service: MemoryService, memory_store: FakeGraphStore, expired: str, verb: str
) -> None:
    """``runtime``: the service served as the daemon serves it (sessions live in its coordinator)."""
    before = snapshot(memory_store)

    SERVICE_READS[verb](memory_service, expired)

    assert snapshot(memory_store) == before


def test_the_expired_memory_is_left_out_of_reads_until_archived(
    memory_service: MemoryService, expired: str
) -> None:
    assert expired not in {m.id for m in memory_service.list()}
    [reasons] = [i.reasons for i in memory_service.review() if i.memory.id == expired]
    assert reasons[0].startswith("expired ") and reasons[0].endswith(" ago")
    assert memory_service.show(expired).memory.status is Status.ACTIVE


def test_the_daemons_idle_worker_archives_what_expired(
    tools: Tools, memory_service: MemoryService, expired: str
) -> None:
    tools.runtime._expire()  # what the embedding worker does when it has nothing to embed

    assert memory_service.show(expired).memory.status is Status.ARCHIVED
    assert [e.actor for e in memory_service.history(expired)] == ["expiry"]
