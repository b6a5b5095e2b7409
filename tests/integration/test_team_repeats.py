"""A memory said again on a team's PostgreSQL store (docs/team.md, "Scopes"): an agent that
repeats its person's private global memory publishes nothing of it and confirms nothing (memory
restores information, never authority), and another person's agent that says the same words
learns nothing of it; she herself, asking for the project's scope by name, shares it with the team.
Two people, each logged in as their own role, on one database."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.team import Team, two_writers

from graphmem.errors import NotFoundError

pytestmark = pytest.mark.integration

DIMENSION = 256
PROJECT = "/src/shop"
RULE = "Run the cfgvault smoke tests before every release"  # learned from Alice's own session
ECHO = "run the cfgvault smoke test before every release"  # her agent's near-duplicate of it
NEVER_REPEATED = "unconfirmed: learned from a session (opencode), never repeated"


@pytest.fixture
def team(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Team]:
    with two_writers(request, tmp_path, DIMENSION) as team:
        yield team


def test_her_agents_repeat_of_her_private_memory_is_not_published_to_the_team(team: Team) -> None:
    mine = team.alice.remember(RULE, category="directive", scope="global", source="opencode").memory

    echoed = team.alice.remember(ECHO, category="directive", project=PROJECT, source="mcp")

    assert (echoed.created, echoed.duplicate_of, echoed.private) == (False, mine.id, True)
    team.alice.embed_pending()
    team.bob.embed_pending()
    assert team.bob.list(project=PROJECT) == [] and team.bob.list(project=None) == []
    assert team.bob.stats().total == 0
    assert team.bob.recall("cfgvault smoke tests", project=PROJECT).hits == []
    with pytest.raises(NotFoundError):
        team.bob.show(mine.id)


def test_her_agents_repeat_of_her_private_memory_does_not_confirm_it(team: Team) -> None:
    mine = team.alice.remember(RULE, category="directive", scope="global", source="opencode").memory

    team.alice.remember(ECHO, category="directive", project=PROJECT, source="mcp")

    kept = team.alice.show(mine.id).memory
    assert (kept.reinforced, kept.updated_at, kept.text) == (0, mine.updated_at, RULE)
    assert [r for item in team.alice.review() for r in item.reasons] == [NEVER_REPEATED]
    assert team.alice.history(mine.id) == []


def test_another_persons_agent_saying_the_same_words_learns_nothing_of_her_memory(team: Team) -> None:
    mine = team.alice.remember(RULE, category="directive", scope="global").memory

    his = team.bob.remember(RULE, category="directive", project=PROJECT, source="mcp")
    his_own = team.bob.remember(RULE, category="directive", scope="global")  # the same content hash

    for stored in (his, his_own):
        assert stored.created and stored.duplicate_of is None and stored.memory.id != mine.id
    assert team.alice.show(mine.id).memory.reinforced == 0
    assert {m.id for m in team.bob.list(project=PROJECT)} == {his.memory.id, his_own.memory.id}


def test_her_own_share_of_what_only_she_sees_reaches_the_team(team: Team) -> None:
    mine = team.alice.remember(RULE, category="directive", scope="global").memory

    shared = team.alice.remember(ECHO, category="directive", scope="project", project=PROJECT)

    assert shared.created and shared.duplicate_of is None and not shared.private
    assert [m.id for m in team.bob.list(project=PROJECT)] == [shared.memory.id]
    kept = team.alice.show(mine.id).memory
    assert (kept.status, kept.reinforced, kept.text) == (mine.status, 0, RULE)
    assert {m.id for m in team.alice.list(project=PROJECT)} == {mine.id, shared.memory.id}


def test_words_of_hers_in_the_projects_default_scope_publish_nothing_of_her_memory(team: Team) -> None:
    mine = team.alice.remember(RULE, category="directive", scope="global").memory

    said = team.alice.remember(ECHO, category="directive", project=PROJECT)  # scope by default

    assert (said.created, said.duplicate_of, said.private) == (False, mine.id, True)
    assert team.bob.list(project=PROJECT) == []
