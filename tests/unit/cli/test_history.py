"""graphmem history and undo, in process on a fresh in-memory store."""

from __future__ import annotations

import json
from collections.abc import Callable

from click.testing import Result

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
