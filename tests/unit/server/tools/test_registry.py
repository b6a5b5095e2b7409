"""How every tool is registered (``registry.py``): a call is checked against the tool's
parameters before it runs, graphmem's errors become messages saying how to fix the call,
anything else is reported without internals, and every call is counted."""

from __future__ import annotations

import json

import pytest
from support.tools_client import Tools

from graphmem.errors import ImportFileError
from graphmem.server.tools.registry import MAX_PROBLEMS_SHOWN
from graphmem.service.memory import MemoryService


def calls(tools: Tools, tool: str, outcome: str) -> float:
    value = tools.runtime.metrics.registry.get_sample_value(
        "graphmem_tool_calls_total", {"tool": tool, "outcome": outcome}
    )
    return value or 0.0


def test_an_unknown_argument_is_named_with_the_accepted_ones(tools: Tools) -> None:
    message = tools.refused("recall", query="deploys", limt=3)

    assert "Unknown argument(s) for recall: limt" in message
    assert "It accepts: query, limit," in message


def test_a_missing_argument_is_named(tools: Tools) -> None:
    assert "remember needs text." in tools.refused("remember", category="fact")


def test_a_value_out_of_bounds_names_the_argument_and_what_was_given(tools: Tools) -> None:
    message = tools.refused("recall", query="deploys", limit=0)

    assert message.startswith("Invalid arguments for recall: limit:")
    assert "(got 0)" in message


def test_a_refused_call_reaches_no_tool(tools: Tools, memory_service: MemoryService) -> None:
    tools.refused("remember", text="We chose Kùzu", category="wish")

    assert list(memory_service.store.all_memories()) == []
    assert (
        tools.runtime.metrics.registry.get_sample_value(
            "graphmem_errors_total", {"kind": "invalid_arguments"}
        )
        == 1.0
    )


def test_an_unexpected_failure_says_where_the_log_is_and_shows_no_internals(
    tools: Tools, memory_service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("SELECT secret FROM internals")

    monkeypatch.setattr(memory_service, "recall", broken)

    message = tools.refused("recall", query="deploys")

    assert "graphmem failed inside recall (RuntimeError)" in message
    assert "the test's log" in message  # the runtime's log hint
    assert "secret" not in message
    assert calls(tools, "recall", "internal") == 1.0


def test_an_import_with_many_bad_lines_shows_the_first_ones_and_counts_the_rest(
    tools: Tools, memory_service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    problems = [(line, f"problem {line}") for line in range(1, MAX_PROBLEMS_SHOWN + 6)]

    def invalid(*args: object, **kwargs: object) -> None:
        raise ImportFileError("The content has invalid lines; nothing was imported.", problems)

    monkeypatch.setattr(memory_service, "import_text", invalid)

    message = tools.refused("import_memories", content="{}")

    assert f"line {MAX_PROBLEMS_SHOWN}: problem {MAX_PROBLEMS_SHOWN}" in message
    assert f"line {MAX_PROBLEMS_SHOWN + 1}:" not in message
    assert "... and 5 more" in message
    assert calls(tools, "import_memories", "ImportFileError") == 1.0


def test_every_call_is_counted_by_tool_and_outcome(tools: Tools) -> None:
    tools.ok("remember", text="We chose Kùzu for the graph store")
    tools.refused("delete_memory", id="mem_0000000000000000", confirm=True)

    assert calls(tools, "remember", "ok") == 1.0
    assert calls(tools, "delete_memory", "NotFoundError") == 1.0


def test_a_write_wakes_the_background_worker_and_a_read_does_not(tools: Tools) -> None:
    tools.ok("recall", query="deploys")
    woken_by_read = tools.runtime._wake.is_set()

    tools.ok("remember", text="We chose Kùzu for the graph store")

    assert not woken_by_read
    assert tools.runtime._wake.is_set()


def test_read_only_tools_say_so_and_writes_do_not(tools: Tools) -> None:
    listed = tools.listing()

    assert listed["recall"].annotations.read_only_hint is True
    assert listed["remember"].annotations.read_only_hint is False
    assert listed["delete_memory"].annotations.destructive_hint is True


def test_memory_status_reports_the_counts(tools: Tools) -> None:
    tools.ok("remember", text="We chose Kùzu for the graph store", category="decision")

    status = tools.ok("memory_status")

    assert status["memories"] == 1
    assert status["by_category"] == {"decision": 1}
    assert json.dumps(status)  # JSON all the way down
