"""archive, restore, resolve and delete of several ids or of a filter, in process on a fresh store."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from click.testing import Result

Invoke = Callable[..., Result]  # the ``invoke`` fixture of conftest.py


def remember(invoke: Invoke, text: str, category: str) -> str:
    result = invoke("remember", "-c", category, text)
    assert result.exit_code == 0, result.output
    return result.stdout.strip()


def statuses(invoke: Invoke) -> dict[str, str]:
    listed = json.loads(invoke("list", "--status", "all", "--json").stdout)["memories"]
    return {m["id"]: m["status"] for m in listed}


@pytest.fixture
def three(invoke: Invoke) -> tuple[str, str, str]:
    return (
        remember(invoke, "Deployed release 1.2 to staging", "event"),
        remember(invoke, "Deployed release 1.3 to production", "event"),
        remember(invoke, "We use Kuzu as the graph store", "decision"),
    )


def test_a_dry_run_lists_what_the_filter_picks_and_changes_nothing(
    invoke: Invoke, three: tuple[str, ...]
) -> None:
    first, second, decision = three

    result = invoke("archive", "--category", "event", "--older-than", "2999-01-01", "--dry-run")

    assert result.exit_code == 0, result.output
    assert {first, second} <= set(result.stdout.split()) and decision not in result.stdout
    assert "would archive 2 memories" in result.stderr
    assert set(statuses(invoke).values()) == {"active"}


def test_archive_of_a_filter_says_how_many_changed(invoke: Invoke, three: tuple[str, ...]) -> None:
    first, second, decision = three

    result = invoke("archive", "--category", "event", "--older-than", "2999-01-01")

    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "archived 2 memories"
    assert statuses(invoke) == {first: "archived", second: "archived", decision: "active"}
    again = invoke("restore", "--category", "event")
    assert again.stdout.strip() == "restored 2 memories"
    assert set(statuses(invoke).values()) == {"active"}


def test_several_ids_change_together(invoke: Invoke, three: tuple[str, ...]) -> None:
    first, second, decision = three

    result = invoke("archive", first, decision)

    assert result.stdout.strip() == "archived 2 memories"
    assert statuses(invoke) == {first: "archived", second: "active", decision: "archived"}


def test_one_id_keeps_its_one_line(invoke: Invoke, three: tuple[str, ...]) -> None:
    assert invoke("archive", three[0]).stdout.strip() == f"archived {three[0]}"


def test_nothing_named_is_refused_instead_of_acting_on_everything(
    invoke: Invoke, three: tuple[str, ...]
) -> None:
    result = invoke("archive")

    assert result.exit_code != 0
    assert "--older-than" in result.stderr
    assert set(statuses(invoke).values()) == {"active"}


def test_a_wrong_age_is_a_usage_error(invoke: Invoke, three: tuple[str, ...]) -> None:
    result = invoke("archive", "--older-than", "ninety days")

    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_resolve_by_filter_picks_blockers_only(invoke: Invoke, three: tuple[str, ...]) -> None:
    blocker = remember(invoke, "CI fails on arm64: kuzu wheel missing", "blocker")

    result = invoke("resolve", "--since", "1d")

    assert result.stdout.strip() == "resolved 1 memory"
    assert statuses(invoke)[blocker] == "resolved"


def test_delete_of_a_filter_asks_first_and_yes_skips_the_question(
    invoke: Invoke, three: tuple[str, ...]
) -> None:
    decision = three[2]

    kept = invoke("delete", "--category", "event", input="n\n")
    assert kept.exit_code == 1
    assert "Delete these 2 memories?" in kept.stderr
    assert len(statuses(invoke)) == 3

    gone = invoke("delete", "--category", "event", "--yes")
    assert gone.stdout.strip() == "deleted 2 memories"
    assert set(statuses(invoke)) == {decision}


def test_an_error_on_one_id_does_not_stop_the_others(invoke: Invoke, three: tuple[str, ...]) -> None:
    decision = three[2]
    blocker = remember(invoke, "CI fails on arm64: kuzu wheel missing", "blocker")

    result = invoke("resolve", decision, blocker)

    assert result.exit_code != 0
    assert "not a blocker" in result.stderr
    assert result.stdout.strip() == "resolved 1 memory"
    assert statuses(invoke)[blocker] == "resolved"


@pytest.mark.parametrize("verb", [["archive"], ["delete", "--yes"]])
def test_an_unknown_id_among_several_is_reported_and_the_others_go_on(
    invoke: Invoke, three: tuple[str, ...], verb: list[str]
) -> None:
    first, second, _ = three

    result = invoke(*verb, "mem_0000000000000000", first)

    assert result.exit_code == 3, result.output
    assert result.stderr.count("error: ") == 1 and "mem_0000000000000000" in result.stderr
    assert result.stdout.strip() == f"{'archived' if verb[0] == 'archive' else 'deleted'} 1 memory"
    assert statuses(invoke).get(first, "deleted") != "active" and statuses(invoke)[second] == "active"


def test_an_unknown_id_in_a_dry_run_is_reported_and_nothing_changes(
    invoke: Invoke, three: tuple[str, ...]
) -> None:
    result = invoke("archive", "--dry-run", three[0], "mem_0000000000000000")

    assert result.exit_code == 3 and "mem_0000000000000000" in result.stderr
    assert set(statuses(invoke).values()) == {"active"}


def test_confirm_says_each_memory_confirmed_and_moves_its_update_time(
    invoke: Invoke, three: tuple[str, ...]
) -> None:
    decision = three[2]
    before = json.loads(invoke("show", decision, "--json").stdout)["updated_at"]

    result = invoke("confirm", decision, "mem_0000000000000000")

    assert result.exit_code == 3, result.output
    assert result.stdout.strip() == f"confirmed {decision}"
    assert "mem_0000000000000000" in result.stderr
    assert json.loads(invoke("show", decision, "--json").stdout)["updated_at"] > before


def test_confirm_needs_an_id(invoke: Invoke) -> None:
    result = invoke("confirm")

    assert result.exit_code == 2
    assert "ID" in result.stderr


@pytest.mark.parametrize(("verb", "said"), [("archive", "archived"), ("widen", "is global already")])
def test_an_id_given_twice_is_acted_on_once(
    invoke: Invoke, three: tuple[str, ...], verb: str, said: str
) -> None:
    first = three[0]  # a memory remembered by the user is global: widening it changes nothing

    result = invoke(verb, first, f" {first} ")

    assert result.exit_code == 0, result.output
    assert result.stdout.count(first) == 1 and said in result.stdout


def test_a_status_verb_said_again_says_the_memory_was_so_already_and_exits_0(invoke: Invoke) -> None:
    blocker = remember(invoke, "CI fails on arm64: the kuzu wheel is missing", "blocker")

    for verb, past, status in (
        ("resolve", "resolved", "resolved"),
        ("unresolve", "unresolved", "active"),
        ("archive", "archived", "archived"),
        ("restore", "restored", "active"),
    ):
        first = invoke(verb, blocker)
        assert first.exit_code == 0 and first.stdout.startswith(f"{past} {blocker}"), first.output
        again = invoke(verb, blocker)
        assert again.exit_code == 0, again.output
        assert again.stdout.strip() == f"{blocker} is {status} already: nothing changed"
        assert statuses(invoke) == {blocker: status}
