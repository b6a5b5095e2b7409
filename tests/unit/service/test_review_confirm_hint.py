"""``review`` says what confirming a proposal does: a directive or preference becomes a rule,
a proposed change of the user's memory replaces it (a decision is no rule of any session)."""

from __future__ import annotations

from graphmem.core.models import Status
from graphmem.service.memory import MemoryService


def test_a_proposed_change_of_the_users_decision_says_it_replaces_it(
    memory_service: MemoryService, git_project: str
) -> None:
    decision = memory_service.remember(
        "We chose Kuzu for the graph", category="decision", project=git_project
    )
    proposal = memory_service.edit(decision.memory.id, text="We chose SQLite for the graph", actor="agent")

    [item] = [i for i in memory_service.review(project=git_project) if i.memory.id == proposal.id]

    assert f"makes it yours (it replaces {decision.memory.id})" in item.reasons[0]
    assert "rule" not in item.reasons[0]
    memory_service.confirm(proposal.id)  # and it does
    assert memory_service.show(decision.memory.id).memory.status is Status.SUPERSEDED


def test_an_agents_directive_says_it_becomes_a_rule(memory_service: MemoryService, git_project: str) -> None:
    proposal = memory_service.remember(
        "Always squash merge", category="directive", project=git_project, source="mcp"
    ).memory

    [item] = memory_service.review(project=git_project)

    assert item.memory.id == proposal.id
    assert "makes it yours (a directive becomes a rule in every session)" in item.reasons[0]
