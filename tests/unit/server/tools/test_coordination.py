"""The coordination tools (session_start, session_heartbeat, session_end, active_sessions,
claim_item, release_item) through an MCP client: two agents on one project see and avoid
each other."""

from __future__ import annotations

from support.tools_client import Tools

from graphmem.core.models import Category
from graphmem.service.memory import MemoryService

PROJECT = "/work/shop"


def start(tools: Tools, agent: str, project: str = PROJECT) -> str:
    answer = tools.ok("session_start", agent=agent, task="payments", project=project)
    session_id: str = answer["session"]["id"]
    return session_id


def test_a_started_session_is_listed_with_the_daemons_ttl(tools: Tools) -> None:
    answer = tools.ok("session_start", agent="opencode/build", task="payments", project=PROJECT)

    listed = tools.ok("active_sessions", project=PROJECT)

    assert answer["ttl_seconds"] == 300
    assert [(s["id"], s["agent"], s["task"]) for s in listed["sessions"]] == [
        (answer["session"]["id"], "opencode/build", "payments")
    ]


def test_sessions_of_another_project_are_listed_only_when_all_projects_are_asked(tools: Tools) -> None:
    start(tools, "alice", project="/work/other")

    assert tools.ok("active_sessions", project=PROJECT)["sessions"] == []
    assert len(tools.ok("active_sessions", project=PROJECT, all_projects=True)["sessions"]) == 1


def test_a_claim_held_by_another_session_is_a_conflict_naming_its_holder(tools: Tools) -> None:
    alice = start(tools, "alice")
    bob = start(tools, "bob")
    tools.ok("claim_item", session_id=alice, item="!123")

    answer = tools.ok("claim_item", session_id=bob, item="!123")

    assert answer["claim"] is None
    assert answer["conflict"]["agent"] == "alice"
    assert answer["conflict"]["session"] == alice
    assert "alice" in answer["conflict"]["message"]


def test_renewing_ones_own_claim_is_no_conflict(tools: Tools) -> None:
    alice = start(tools, "alice")
    tools.ok("claim_item", session_id=alice, item="src/app.py")

    again = tools.ok("claim_item", session_id=alice, item="src/app.py")

    assert again["conflict"] is None
    assert again["claim"]["session"] == alice


def test_a_released_item_can_be_claimed_by_another_session(tools: Tools) -> None:
    alice = start(tools, "alice")
    bob = start(tools, "bob")
    tools.ok("claim_item", session_id=alice, item="#45")

    released = tools.ok("release_item", session_id=alice, item="#45")
    taken = tools.ok("claim_item", session_id=bob, item="#45")

    assert released == {"released": True, "item": "#45"}
    assert taken["claim"]["agent"] == "bob"


def test_ending_a_session_stores_its_summary_as_an_event_and_frees_its_claims(
    tools: Tools, memory_service: MemoryService
) -> None:
    alice = start(tools, "alice")
    bob = start(tools, "bob")
    tools.ok("claim_item", session_id=alice, item="!123")

    ended = tools.ok("session_end", session_id=alice, summary="Moved the retry cap to 30 s; !123 is ready")
    taken = tools.ok("claim_item", session_id=bob, item="!123")

    summary = memory_service.store.get_memories([ended["summary_memory_id"]])[ended["summary_memory_id"]]
    assert summary.category is Category.EVENT
    assert "retry cap" in summary.text
    assert taken["conflict"] is None


def test_a_heartbeat_updates_the_task(tools: Tools) -> None:
    alice = start(tools, "alice")

    answer = tools.ok("session_heartbeat", session_id=alice, task="reviewing !123")

    assert answer["session"]["task"] == "reviewing !123"


def test_an_unknown_session_is_a_clear_error(tools: Tools) -> None:
    message = tools.refused("session_heartbeat", session_id="ses_nosuchsession")

    assert "No live session 'ses_nosuchsession'" in message
    assert "session_start" in message


def test_a_claim_by_an_unknown_session_claims_nothing(tools: Tools) -> None:
    alice = start(tools, "alice")

    tools.refused("claim_item", session_id="ses_nosuchsession", item="!123")

    assert tools.ok("claim_item", session_id=alice, item="!123")["conflict"] is None


def test_a_task_is_shown_to_other_agents_without_its_secrets(tools: Tools) -> None:
    token = "glpat-" + "Zk3vQ8wR2mT6yB9nC4xL"
    tools.ok("session_start", agent="alice", task=f"mirror to gitlab with {token}", project=PROJECT)

    listed = tools.ok("active_sessions", project=PROJECT)["sessions"]
    boot = tools.ok("get_boot_context", project=PROJECT)["active_sessions"]

    assert [s["task"] for s in listed] == ["mirror to gitlab with [REDACTED:gitlab-token]"]
    assert [s["task"] for s in boot] == ["mirror to gitlab with [REDACTED:gitlab-token]"]


def test_an_agent_cannot_end_a_session_or_release_a_claim_it_did_not_start(
    tools: Tools, memory_service: MemoryService
) -> None:
    person = memory_service.session_start("alice/cli", project=PROJECT)  # started by a person
    memory_service.claim_item(person.id, "!12")

    ended = tools.refused("session_end", session_id=person.id, summary="done")
    released = tools.refused("release_item", session_id=person.id, item="!12")

    assert "started by another client" in ended and "--force" in ended
    assert "started by another client" in released
    listed = tools.ok("active_sessions", project=PROJECT)
    assert [s["id"] for s in listed["sessions"]] == [person.id]
    assert [c["item"] for c in listed["claims"]] == ["!12"]


def test_an_agent_ends_its_own_session(tools: Tools) -> None:
    own = start(tools, "opencode/build")
    tools.ok("claim_item", session_id=own, item="!12")

    assert tools.ok("release_item", session_id=own, item="!12")["released"] is True
    assert tools.ok("session_end", session_id=own)["session"]["id"] == own


def test_an_agents_summary_of_a_session_without_a_project_is_refused_and_the_session_goes_on(
    tools: Tools, memory_service: MemoryService
) -> None:
    session = tools.ok("session_start", agent="opencode/build", project=None)["session"]["id"]

    refused = tools.refused("session_end", session_id=session, summary="Moved the retry cap to 30 s")

    assert "has no project" in refused and "without a summary" in refused
    assert list(memory_service.store.all_memories()) == []
    assert tools.ok("session_heartbeat", session_id=session)["session"]["id"] == session
    assert tools.ok("session_end", session_id=session)["summary_memory_id"] is None
