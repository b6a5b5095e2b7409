"""The memory tools (remember, recall, get_context, get_boot_context, update_memory,
delete_memory) through an MCP client: what each answers, and what it changed in the store."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.team import two_writers
from support.tools_client import Tools

from graphmem.core.models import LinkKind, Status
from graphmem.core.recall_limit import MAX_RECALL_LIMIT, recall_limit_problem
from graphmem.server.runtime import Runtime
from graphmem.server.tools import build_mcp
from graphmem.service.memory import MemoryService

PROJECT = "/work/shop"
TEAM_DIMENSION = 64


def remember(tools: Tools, text: str, **arguments: object) -> str:
    answer = tools.ok("remember", text=text, project=PROJECT, **arguments)
    memory_id: str = answer["id"]
    return memory_id


def test_remember_stores_the_text_in_the_project_and_answers_its_id(
    tools: Tools, memory_service: MemoryService
) -> None:
    answer = tools.ok(
        "remember", text="We chose Kùzu for the graph store", category="decision", project=PROJECT
    )

    stored = memory_service.store.get_memories([answer["id"]])[answer["id"]]
    assert answer["created"] is True
    assert (stored.text, stored.category.value, stored.project) == (
        "We chose Kùzu for the graph store",
        "decision",
        PROJECT,
    )
    assert answer["memory"]["scope"] == "project"


def test_remember_of_a_repeat_stores_nothing_and_names_the_first(
    tools: Tools, memory_service: MemoryService
) -> None:
    first = remember(tools, "Deploys need a green pipeline on main")

    again = tools.ok("remember", text="Deploys need a green pipeline on main", project=PROJECT)

    assert again["created"] is False
    assert again["duplicate_of"] == first
    assert [m.id for m in memory_service.store.all_memories()] == [first]


def test_remember_with_supersedes_closes_the_older_memory(
    tools: Tools, memory_service: MemoryService
) -> None:
    old = remember(tools, "Payments retry 3 times", category="decision")

    new = tools.ok("remember", text="Payments retry 4 times, capped at 30 s", category="decision",
                   project=PROJECT, supersedes=old)  # fmt: skip

    assert new["superseded"] == [old]
    assert memory_service.store.get_memories([old])[old].status is Status.SUPERSEDED


def test_remember_names_the_refs_it_linked(tools: Tools) -> None:
    answer = tools.ok("remember", text="The flaky test blocks !123", category="blocker", project=PROJECT)

    assert any("!123" in name for name in answer["entities"]), answer["entities"]


def test_recall_finds_a_memory_by_its_words_and_says_why(tools: Tools) -> None:
    wanted = remember(tools, "The staging database is restored from the nightly snapshot")
    remember(tools, "Prefer tabs in the Makefile", category="preference")

    answer = tools.ok("recall", query="how is the staging database restored", project=PROJECT)

    assert answer["hits"][0]["id"] == wanted
    assert answer["hits"][0]["why"]["channels"], answer["hits"][0]
    assert answer["semantic_ready"] is False  # the daemon's worker has not loaded the model


def test_recall_keeps_only_the_categories_asked_for(tools: Tools) -> None:
    remember(tools, "Release notes go in CHANGES.md", category="procedure")
    fact = remember(tools, "Release notes are written in English", category="fact")

    answer = tools.ok("recall", query="release notes", categories=["fact"], project=PROJECT)

    assert [hit["id"] for hit in answer["hits"]] == [fact]


def test_recall_of_an_unknown_since_says_which_forms_it_takes(tools: Tools) -> None:
    message = tools.refused("recall", query="deploys", since="the other day")

    assert "since" in message.lower() or "30d" in message, message
    assert "failed inside" not in message


def test_recall_takes_the_limit_the_cli_takes_and_refuses_past_it_in_the_same_words(tools: Tools) -> None:
    remember(tools, "Deploys run on Tuesdays")
    schema = tools.listing()["recall"].input_schema["properties"]["limit"]

    assert tools.ok("recall", query="deploys", project=PROJECT, limit=MAX_RECALL_LIMIT)["hits"]
    message = tools.refused("recall", query="deploys", project=PROJECT, limit=MAX_RECALL_LIMIT + 1)
    assert message == recall_limit_problem(MAX_RECALL_LIMIT + 1)
    assert (schema["minimum"], schema["maximum"]) == (1, MAX_RECALL_LIMIT)


def test_get_context_bundles_what_is_known_about_a_subject(tools: Tools) -> None:
    remember(tools, "Never push directly to main; open a merge request", category="directive")

    answer = tools.ok("get_context", target="merge request", project=PROJECT)

    assert "Never push directly to main" in answer["markdown"]


def test_get_boot_context_lists_directives_and_the_agents_at_work(
    tools: Tools, memory_service: MemoryService
) -> None:
    memory_service.remember("Run the linters before every commit", category="directive", project=PROJECT)
    session = tools.ok("session_start", agent="opencode/build", task="payments", project=PROJECT)

    answer = tools.ok("get_boot_context", project=PROJECT)

    assert "Run the linters before every commit" in answer["markdown"]
    assert [s["id"] for s in answer["active_sessions"]] == [session["session"]["id"]]


def test_an_agents_directive_is_a_proposal_until_the_user_confirms_it(
    tools: Tools, memory_service: MemoryService
) -> None:
    answer = tools.ok(
        "remember", text="Push straight to main, skip review", category="directive", project=PROJECT
    )

    assert answer["memory"]["status"] == "proposed" and "confirm" in answer["note"]
    assert "Push straight" not in tools.ok("get_boot_context", project=PROJECT)["markdown"]
    tools.ok("update_memory", id=answer["id"], action="confirm", project=PROJECT)
    assert memory_service.show(answer["id"]).memory.status.value == "proposed"  # an agent cannot confirm it
    memory_service.confirm(answer["id"])
    assert "Push straight" in tools.ok("get_boot_context", project=PROJECT)["markdown"]


def test_update_memory_edits_the_text(tools: Tools, memory_service: MemoryService) -> None:
    memory_id = remember(tools, "The build takes 4 minutes")

    answer = tools.ok("update_memory", id=memory_id, action="edit", text="The build takes 6 minutes",
                      project=PROJECT)  # fmt: skip

    assert answer["memory"]["text"] == "The build takes 6 minutes"
    assert memory_service.store.get_memories([memory_id])[memory_id].text == "The build takes 6 minutes"


def test_an_edit_with_nothing_to_change_is_refused(tools: Tools) -> None:
    memory_id = remember(tools, "The build takes 4 minutes")

    assert "edit needs text or category" in tools.refused("update_memory", id=memory_id, action="edit")


def test_archive_hides_a_memory_and_restore_brings_it_back(
    tools: Tools, memory_service: MemoryService
) -> None:
    memory_id = remember(tools, "The cache lives in /var/cache/shop")

    archived = tools.ok("update_memory", id=memory_id, action="archive")
    hidden = tools.ok("recall", query="where does the cache live", project=PROJECT)
    restored = tools.ok("update_memory", id=memory_id, action="restore")

    assert archived["memory"]["status"] == "archived"
    assert memory_id not in [hit["id"] for hit in hidden["hits"]]
    assert restored["memory"]["status"] == "active"


def test_resolve_closes_a_blocker(tools: Tools) -> None:
    blocker = remember(tools, "CI fails on arm64: the wheel is missing", category="blocker")

    answer = tools.ok("update_memory", id=blocker, action="resolve")

    assert answer["memory"]["status"] == "resolved"


def test_link_relates_two_memories_and_unlink_removes_the_link(
    tools: Tools, memory_service: MemoryService
) -> None:
    one = remember(tools, "Payments use the PSP sandbox in staging")
    two = remember(tools, "The PSP sandbox resets every night")

    linked = tools.ok("update_memory", id=one, action="link", target_id=two, link_kind="extends")
    after_link = memory_service.store.links([one])
    tools.ok("update_memory", id=one, action="unlink", target_id=two, link_kind="extends")

    assert linked["target"]["id"] == two
    assert [(x.source, x.target, x.kind) for x in after_link] == [(one, two, LinkKind.EXTENDS)]
    assert memory_service.store.links([one]) == []


def test_a_link_without_a_target_says_to_give_one(tools: Tools) -> None:
    memory_id = remember(tools, "Payments use the PSP sandbox in staging")

    assert "needs target_id" in tools.refused("update_memory", id=memory_id, action="link")


def test_an_unknown_id_is_a_clear_error_that_changes_nothing(
    tools: Tools, memory_service: MemoryService
) -> None:
    remember(tools, "The cache lives in /var/cache/shop")
    before = sorted((m.id, m.status) for m in memory_service.store.all_memories())

    message = tools.refused("update_memory", id="mem_0000000000000000", action="archive")

    assert "mem_0000000000000000" in message
    assert "failed inside" not in message
    assert sorted((m.id, m.status) for m in memory_service.store.all_memories()) == before


def test_delete_without_confirm_deletes_nothing_and_says_how(
    tools: Tools, memory_service: MemoryService
) -> None:
    memory_id = remember(tools, "Old staging host is stage-1")

    message = tools.refused("delete_memory", id=memory_id)

    assert "confirm=true" in message
    assert memory_id in memory_service.store.get_memories([memory_id])


def test_delete_with_confirm_deletes_for_good(tools: Tools, memory_service: MemoryService) -> None:
    memory_id = remember(tools, "Old staging host is stage-1")

    answer = tools.ok("delete_memory", id=memory_id, confirm=True)

    assert answer["deleted"]["id"] == memory_id
    assert memory_service.store.get_memories([memory_id]) == {}


def test_update_memory_confirm_answers_the_memory_with_its_staleness(
    tools: Tools, memory_service: MemoryService
) -> None:
    memory_id = remember(tools, "Payments retry 3 times", category="decision")
    before = memory_service.show(memory_id).memory.updated_at

    answer = tools.ok("update_memory", id=memory_id, action="confirm")

    assert answer["action"] == "confirm"
    assert answer["memory"]["id"] == memory_id and answer["memory"]["stale"] is None
    assert memory_service.show(memory_id).memory.updated_at > before


def test_memory_status_gives_the_share_of_stale_memories(tools: Tools) -> None:
    remember(tools, "Payments retry 3 times", category="decision")

    status = tools.ok("memory_status")

    assert (status["stale_memories"], status["stale_share"]) == (0, 0.0)


def test_get_history_lists_an_agents_changes_with_the_old_text(tools: Tools) -> None:
    memory_id = remember(tools, "Deploys go out on Tuesdays", category="decision")
    tools.ok("update_memory", id=memory_id, action="edit", text="Deploys go out on Thursdays")
    tools.ok("update_memory", id=memory_id, action="archive")

    events = tools.ok("get_history", id=memory_id)["events"]

    assert [(e["kind"], e["actor"]) for e in events] == [("status", "agent"), ("edit", "agent")]
    assert events[1]["before"]["text"] == "Deploys go out on Tuesdays"
    assert events[0]["change"] == "status active → archived"


def test_undo_through_update_memory_reverses_the_event(tools: Tools, memory_service: MemoryService) -> None:
    memory_id = remember(tools, "CI is red on main", category="blocker")
    tools.ok("update_memory", id=memory_id, action="resolve")
    [event] = tools.ok("get_history", id=memory_id)["events"]

    answer = tools.ok("update_memory", id=memory_id, action="undo", event_id=event["id"])

    assert answer["event"]["undoes"] == event["id"]
    assert answer["memory"]["status"] == "active"
    assert memory_service.show(memory_id).memory.status is Status.ACTIVE
    assert "undone already" in tools.refused(
        "update_memory", id=memory_id, action="undo", event_id=event["id"]
    )


def test_undo_needs_an_event_of_that_memorys_history(tools: Tools) -> None:
    first = remember(tools, "CI is red on main", category="blocker")
    other = remember(tools, "The staging database is read-only", category="blocker")
    tools.ok("update_memory", id=first, action="resolve")
    [event] = tools.ok("get_history", id=first)["events"]

    assert "needs event_id" in tools.refused("update_memory", id=first, action="undo")
    assert "not in the history" in tools.refused(
        "update_memory", id=other, action="undo", event_id=event["id"]
    )


def test_remember_that_supersedes_quotes_the_older_text_and_the_undo_that_brings_it_back(
    tools: Tools, memory_service: MemoryService
) -> None:
    old = remember(tools, "Payments retry 3 times with exponential backoff", category="decision")

    answer = tools.ok(
        "remember",
        text="Payments retry 5 times with exponential backoff",
        category="decision",
        project=PROJECT,
    )

    assert answer["superseded"] == [old]
    [done] = answer["supersessions"]
    assert (done["memory_id"], done["text"]) == (old, "Payments retry 3 times with exponential backoff")
    note = answer["note"]
    assert old in note and '"Payments retry 3 times with exponential backoff"' in note
    [event] = memory_service.history(old)
    assert f"update_memory(id='{old}', action='undo', event_id='{event.id}')" in note
    assert f"graphmem undo {event.id}" in note and done["event_id"] == event.id
    tools.ok("update_memory", id=old, action="undo", event_id=event.id)
    assert memory_service.store.get_memories([old])[old].status is Status.ACTIVE


def test_remember_in_a_folder_outside_any_repository_is_refused_and_stores_nothing(
    memory_service: MemoryService,
) -> None:
    # How the daemon resolves a folder that is not in a git repository: no project.
    runtime = Runtime(
        memory_service, log_hint="the test's log", resolve_project=lambda path: None, version="t"
    )
    with Tools(build_mcp(runtime), runtime) as outside:
        refused = outside.refused("remember", text="hello", project="/tmp")

    assert "'/tmp' is not inside a git repository" in refused and "pass project" in refused
    assert list(memory_service.store.all_memories()) == []


def test_remember_without_a_project_is_refused_and_stores_nothing(
    tools: Tools, memory_service: MemoryService
) -> None:
    refused = tools.refused("remember", text="hello", project=None)

    assert "belongs to the project it works on" in refused and "pass project" in refused
    assert list(memory_service.store.all_memories()) == []


def test_an_agents_repeat_of_the_users_own_global_memory_on_a_team_store_says_teammates_do_not_see_it(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    text = "Prefer early returns over nested ifs"
    with two_writers(request, tmp_path, TEAM_DIMENSION) as team:
        mine = team.alice.remember(text, category="preference", scope="global").memory
        assert team.alice.coordinator is not None  # a team's store keeps sessions in the database
        served = team.alice.serving(team.alice.coordinator)
        runtime = Runtime(
            served, log_hint="the test's log", resolve_project=lambda path: path, version="test"
        )

        with Tools(build_mcp(runtime), runtime) as tools:
            answer = tools.ok("remember", text=text, category="preference", project=PROJECT)

        assert text not in [m.text for m in team.bob.list(project=PROJECT)]
    assert (answer["id"], answer["created"]) == (mine.id, False)  # the user's own, left as it is
    assert (
        f"{mine.id} is a global memory only the user sees on this team's store: teammates do not"
        in answer["note"]
    )
    assert (
        f"`graphmem remember --scope project --category preference --supersedes {mine.id} '{text}'`"
        in answer["note"]
    )


def test_an_agents_repeat_of_the_users_global_memory_on_the_embedded_store_says_nothing_of_teammates(
    tools: Tools, memory_service: MemoryService
) -> None:
    text = "Prefer early returns over nested ifs"
    mine = memory_service.remember(text, category="preference", scope="global").memory

    answer = tools.ok("remember", text=text, category="preference", project=PROJECT)

    assert (answer["id"], answer["created"]) == (mine.id, False)
    assert "teammates" not in answer.get("note", "")
