"""The Memory service's session and claim verbs, with and without the daemon's coordinator."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from graphmem.errors import ClaimConflictError, InvalidInputError
from graphmem.service.coordination import Coordinator
from graphmem.service.memory import MemoryService


def test_without_a_coordinator_the_verbs_say_to_start_the_daemon(memory_service: MemoryService) -> None:
    with pytest.raises(InvalidInputError, match="graphmem serve"):
        memory_service.session_start("ci/nightly")


def test_a_conflict_carries_the_holders_claim(memory_service: MemoryService) -> None:
    memory_service = memory_service.serving(Coordinator(lambda: datetime(2026, 5, 1, tzinfo=UTC)))
    first = memory_service.session_start("opencode/build", project="/p")
    second = memory_service.session_start("opencode/plan", project="/p")
    memory_service.claim_item(first.id, "!12")

    with pytest.raises(ClaimConflictError) as caught:
        memory_service.claim_item(second.id, "!12")

    assert caught.value.held is not None
    assert caught.value.held["session"] == first.id and caught.value.held["agent"] == "opencode/build"
    found = memory_service.active_sessions(project="/p")
    assert [c.item for c in found.claims] == ["!12"] and len(found.sessions) == 2
    ended = memory_service.session_end(first.id, summary="Fixed !12")
    assert ended.summary_memory_id is not None
    assert memory_service.show(ended.summary_memory_id).memory.session == first.id
    assert memory_service.claim_item(second.id, "!12").session == second.id
