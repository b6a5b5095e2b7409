"""graphmem history and undo, in process on a fresh in-memory store."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

from click.testing import Result

from graphmem.adapters.fake_store import FakeGraphStore

Invoke = Callable[..., Result]  # the ``invoke`` fixture of conftest.py


def remember(invoke: Invoke, text: str, category: str = "fact") -> str:
    result = invoke("remember", "-c", category, text)
    assert result.exit_code == 0, result.output
    return result.stdout.strip()


def test_history_prints_each_change_with_its_id_and_the_old_text(invoke: Invoke) -> None:
    memory_id = remember(invoke, "CI fails on arm64", "blocker")
    invoke("edit", memory_id, "CI fails on arm64: the kuzu wheel is missing")
    invoke("resolve", memory_id)

    result = invoke("history", memory_id)

    lines = result.stdout.splitlines()
    assert result.exit_code == 0
    assert lines[0].startswith("evt_") and lines[0].endswith("user  status active → resolved")
    assert lines[1].endswith("user  text edited")
    assert lines[2] == "    was: CI fails on arm64"


def test_history_json_gives_id_rule_and_reason_newest_first(invoke: Invoke) -> None:
    memory_id = remember(invoke, "We deploy on Tuesdays")
    invoke("archive", memory_id)
    invoke("restore", memory_id)

    events = json.loads(invoke("history", memory_id, "--json").stdout)["events"]

    assert [e["after"]["status"] for e in events] == ["active", "archived"]
    assert all({"id", "rule", "reason"} <= set(e) for e in events)


def test_history_shows_each_repeat_with_who_and_the_count_and_undo_takes_it_back(invoke: Invoke) -> None:
    memory_id = remember(invoke, "We deploy on Tuesdays")
    remember(invoke, "We deploy on Tuesdays")

    lines = invoke("history", memory_id).stdout.splitlines()

    assert lines[0].startswith("evt_") and lines[0].endswith("user  reinforced 0 → 1")
    assert lines[1:] == ["    remembered again"]
    undone = invoke("undo", lines[0].split()[0])
    assert undone.stdout == f"undid {lines[0].split()[0]} on {memory_id}: reinforced 1 → 0\n"


def test_a_memory_never_changed_says_so(invoke: Invoke) -> None:
    memory_id = remember(invoke, "We deploy on Tuesdays")

    assert invoke("history", memory_id).stdout == "No changes since it was remembered.\n"


def test_undo_reverses_one_event_and_a_second_undo_is_a_conflict(invoke: Invoke) -> None:
    memory_id = remember(invoke, "We deploy on Tuesdays")
    invoke("archive", memory_id)
    event_id = json.loads(invoke("history", memory_id, "--json").stdout)["events"][0]["id"]

    first = invoke("undo", event_id)
    second = invoke("undo", event_id)

    assert first.stdout == f"undid {event_id} on {memory_id}: status archived → active\n"
    assert second.exit_code == 4 and "undone already" in second.stderr
    shown = json.loads(invoke("show", memory_id, "--json").stdout)
    assert shown["status"] == "active"


def test_undo_of_no_event_id_exits_2_and_says_what_one_looks_like(invoke: Invoke) -> None:
    result = invoke("undo", "mem_0123456789abcdef")

    assert result.exit_code == 2 and "evt_ and 16 hex digits" in result.stderr


def test_history_of_an_unknown_memory_exits_3(invoke: Invoke) -> None:
    assert invoke("history", "mem_0000000000000000").exit_code == 3


def test_remember_with_an_expiry_shows_it_and_refuses_one_that_passed(invoke: Invoke) -> None:
    made = json.loads(
        invoke("remember", "Staging is frozen for the audit", "--expires", "14d", "--json").stdout
    )
    late = invoke("remember", "Staging is frozen again", "--expires", "2020-01-01")

    assert made["memory"]["expires_at"] is not None
    assert late.exit_code == 2 and "passed already" in late.stderr


def test_review_lists_what_to_look_at_with_why(invoke: Invoke) -> None:
    old = remember(invoke, "Refunds round half-up", "decision")
    new = remember(invoke, "Refund amounts are truncated to the cent")
    invoke("link", new, old, "--kind", "contradicts")

    text = invoke("review").stdout
    listed = json.loads(invoke("review", "--json").stdout)["memories"]

    assert f"{old}  [decision]  Refunds round half-up\n    contradicted by {new}\n" in text
    assert {m["id"]: m["reasons"] for m in listed}[new] == [f"contradicts {old}"]


def test_review_of_nothing_to_review_says_so(invoke: Invoke) -> None:
    remember(invoke, "We deploy on Tuesdays")

    assert invoke("review").stdout == "Nothing to review.\n"


def test_show_says_when_a_memory_expires(invoke: Invoke) -> None:
    memory_id = invoke("remember", "Staging is frozen for the audit", "--expires", "14d").stdout.strip()

    assert " · expires in 13 days (" in invoke("show", memory_id).stdout  # 14 days less the seconds since


def test_show_and_undo_take_the_beginning_of_an_id(invoke: Invoke) -> None:
    memory_id = remember(invoke, "We deploy on Tuesdays")
    invoke("archive", memory_id)
    event_id = json.loads(invoke("history", memory_id, "--json").stdout)["events"][0]["id"]

    shown = invoke("show", memory_id[:12])
    undone = invoke("undo", event_id[:12])

    assert shown.exit_code == 0 and shown.stdout.startswith(memory_id)
    assert undone.stdout == f"undid {event_id} on {memory_id}: status archived → active\n"


def test_show_of_a_prefix_of_several_ids_exits_2_naming_them(
    invoke: Invoke, in_memory_cli: Mapping[Path, FakeGraphStore]
) -> None:
    memory_id = remember(invoke, "We deploy on Tuesdays")
    [store] = in_memory_cli.values()
    stored = store.get_memories([memory_id])[memory_id]
    store.add_memories(
        [replace(stored, id="mem_ab12cd0000000001"), replace(stored, id="mem_ab12ef0000000002")]
    )

    result = invoke("show", "mem_ab12")

    assert result.exit_code == 2
    assert result.stderr == (
        "error: mem_ab12 is the beginning of 2 memory ids (mem_ab12cd0000000001, mem_ab12ef0000000002): "
        "give more of the id.\n"
    )


def test_history_names_the_person_of_a_change_when_the_store_knows_it(
    invoke: Invoke, in_memory_cli: Mapping[Path, FakeGraphStore]
) -> None:
    memory_id = remember(invoke, "We deploy on Tuesdays")
    invoke("archive", memory_id)
    [store] = in_memory_cli.values()
    [event] = store.events_of(memory_id, 10)
    # A team's store reads back who made a change (the database role); a store of one person, no one.
    store.add_events([replace(event, id="evt_00000000000000aa", person="alice")])

    shown = invoke("history", memory_id).stdout.splitlines()
    listed = json.loads(invoke("history", memory_id, "--json").stdout)["events"]

    assert shown[0].startswith("evt_00000000000000aa  ")
    assert "  user (alice)  status active → archived" in shown[0]
    assert "  user  status active → archived" in shown[1]
    assert [e["person"] for e in listed] == ["alice", None]
