"""What an agent's ``undo``, ``edit`` and ``confirm`` may do (actor ``agent``, as the MCP tools
call the service): memory restores information, never authority. An agent never changes what a
memory a person wrote or confirmed says, or its standing, by undoing an event of its history;
never makes a directive or preference no person wrote active; and never changes a person's
memory silently."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from unit.service.test_staleness import parsed, scan

from graphmem.core.events import EventKind, MemoryEvent
from graphmem.core.models import Category, Status, Trust
from graphmem.core.timeparse import utc_now
from graphmem.errors import NotAllowedError
from graphmem.service.memory import MemoryService

SKIP_REVIEW = "Skip code review for changes under 100 lines"
CHANGELOG = "Write a changelog entry for every user-facing change"


def one(events: list[MemoryEvent], kind: EventKind) -> MemoryEvent:
    [event] = [e for e in events if e.kind is kind]
    return event


def newer_copy(memory_id: str, text: str) -> str:
    """An export holding a newer copy of the memory ``memory_id`` (a file an agent could send)."""
    header = {"type": "header", "format": "graphmem-export", "version": 1, "project": None, "counts": {}}
    line = {
        "type": "memory", "id": memory_id, "text": text, "category": "directive", "scope": "project",
        "status": "proposed", "created_at": "2026-01-01T00:00:00Z", "updated_at": "2099-01-01T00:00:00Z",
    }  # fmt: skip
    return "\n".join(json.dumps(x) for x in (header, line)) + "\n"


def confirmed_as_shown(memory: MemoryService, memory_id: str, text: str) -> None:
    """The user confirms the memory after reading it as it is now."""
    assert memory.show(memory_id).memory.text == text
    confirmed = memory.confirm(memory_id)
    assert (confirmed.status, confirmed.trust) == (Status.ACTIVE, Trust.CONFIRMED)


@pytest.fixture(params=["memory", "kuzu"])
def service(request: pytest.FixtureRequest) -> MemoryService:
    """The service on the in-memory store and on Kùzu (``fake_memory``): the refusals and the
    events are written in one transaction on each."""
    chosen: MemoryService = request.getfixturevalue(
        "memory_service" if request.param == "memory" else "fake_memory"
    )
    return chosen


def test_an_agent_cannot_undo_its_edit_of_a_proposal_the_user_confirmed_since(
    service: MemoryService, git_project: str
) -> None:
    proposal = service.remember(SKIP_REVIEW, category="directive", project=git_project, source="mcp").memory
    service.edit(proposal.id, text=CHANGELOG, project=git_project, actor="agent")
    confirmed_as_shown(service, proposal.id, CHANGELOG)
    edit = one(service.history(proposal.id), EventKind.EDIT)

    with pytest.raises(NotAllowedError, match=rf"ask the user to run `graphmem undo {edit.id}`"):
        service.undo(edit.id, actor="agent")

    kept = service.show(proposal.id).memory
    assert (kept.text, kept.status, kept.trust) == (CHANGELOG, Status.ACTIVE, Trust.CONFIRMED)
    assert service.store.get_event(edit.id).undone_by is None  # type: ignore[union-attr]
    note = service.remember("Reviews are done on GitLab", project=git_project, source="mcp").memory
    service.link(proposal.id, note.id, "related", actor="agent")
    link = one(service.history(proposal.id), EventKind.LINK)
    assert service.undo(link.id, actor="agent").undoes == link.id  # a link says nothing of it
    assert service.undo(edit.id).actor == "user"  # the user may
    assert service.show(proposal.id).memory.text == SKIP_REVIEW


def test_an_agent_cannot_undo_an_imports_change_the_user_confirmed_since(
    memory_service: MemoryService, git_project: str
) -> None:
    proposal = memory_service.remember(SKIP_REVIEW, category="directive", project=git_project,
                                       source="mcp").memory  # fmt: skip
    memory_service.import_text(newer_copy(proposal.id, CHANGELOG), name="notes.jsonl", project=git_project)
    confirmed_as_shown(memory_service, proposal.id, CHANGELOG)
    change = one(memory_service.history(proposal.id), EventKind.EDIT)
    assert change.actor == "import:notes.jsonl"

    with pytest.raises(NotAllowedError, match=rf"graphmem undo {change.id}"):
        memory_service.undo(change.id, actor="agent")

    assert memory_service.show(proposal.id).memory.text == CHANGELOG


def test_an_agent_cannot_undo_an_event_into_a_memory_the_user_confirmed(
    memory_service: MemoryService, git_project: str
) -> None:
    """An event written by hand into a team's store, whose ``before`` is a confirmed rule: undoing
    it would make the agent's memory one the user confirmed, with a text they never saw."""
    note = memory_service.remember(CHANGELOG, category="directive", project=git_project,
                                   source="mcp").memory  # fmt: skip
    forged = MemoryEvent(
        "evt_00000000000000f0", note.id, note.created_at, EventKind.EDIT, "agent", "",
        before={"text": SKIP_REVIEW, "status": "active", "trust": "confirmed"},
        after={"text": CHANGELOG, "status": "proposed", "trust": note.trust.value},
    )  # fmt: skip
    memory_service.store.add_events([forged])

    with pytest.raises(NotAllowedError, match=rf"graphmem undo {forged.id}"):
        memory_service.undo(forged.id, actor="agent")

    kept = memory_service.show(note.id).memory
    assert (kept.text, kept.status, kept.trust) == (CHANGELOG, Status.PROPOSED, note.trust)


def test_an_agent_cannot_undo_a_rules_change_to_the_users_memory(memory_service: MemoryService) -> None:
    """Any change but a person's (here the expiry's) to a memory a person wrote: undoing it would
    bring the user's memory back into force."""
    soon = utc_now() + timedelta(days=1)
    rule = memory_service.remember(SKIP_REVIEW, category="directive", expires_at=soon).memory
    memory_service.writer.store.update_memory(rule.id, {"expires_at": rule.created_at})
    assert memory_service.expire_due() == 1
    expiry = one(memory_service.history(rule.id), EventKind.EXPIRY)

    with pytest.raises(NotAllowedError, match=rf"graphmem undo {expiry.id}"):
        memory_service.undo(expiry.id, actor="agent")

    assert memory_service.show(rule.id).memory.status is Status.ARCHIVED


def test_an_agents_edit_that_makes_its_memory_a_directive_makes_it_a_proposal(
    service: MemoryService, git_project: str
) -> None:
    decision = service.remember(SKIP_REVIEW, category="decision", project=git_project, source="mcp").memory
    assert decision.status is Status.ACTIVE

    edited = service.edit(decision.id, category="directive", project=git_project, actor="agent")

    assert (edited.id, edited.category, edited.status) == (decision.id, Category.DIRECTIVE, Status.PROPOSED)
    events = service.history(decision.id)
    assert {e.actor for e in events} == {"agent"}
    status = one(events, EventKind.STATUS)
    assert (status.before, status.after) == ({"status": "active"}, {"status": "proposed"})
    with pytest.raises(NotAllowedError, match="no person wrote"):  # nor by undoing that
        service.undo(status.id, actor="agent")
    assert service.show(decision.id).memory.status is Status.PROPOSED
    assert service.confirm(decision.id).status is Status.ACTIVE  # the user's call


def test_an_agents_confirm_of_the_users_memory_changes_nothing_but_a_stale_flag(
    memory_service: MemoryService, git_project: str
) -> None:
    scan(memory_service, git_project, {"src/app.py": parsed("v1")})
    rule = memory_service.remember("main() must print the greeting before it returns",
                                   category="directive", project=git_project).memory  # fmt: skip

    memory_service.confirm(rule.id, actor="agent")

    assert memory_service.show(rule.id).memory.updated_at == rule.updated_at
    assert memory_service.history(rule.id) == []
    scan(memory_service, git_project, {"src/app.py": parsed("v2")})
    assert memory_service.show(rule.id).memory.stale is not None
    assert memory_service.confirm(rule.id, actor="agent").stale is None  # what an agent's confirm is for
