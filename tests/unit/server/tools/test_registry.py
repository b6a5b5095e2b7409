"""How every tool is registered (``registry.py``): a call is checked against the tool's
parameters before it runs, graphmem's errors become messages saying how to fix the call,
anything else is reported without internals, and every call is counted."""

from __future__ import annotations

import gc
import json
import logging
import weakref
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fastmcp.tools import FunctionTool
from support.memory_service import in_memory_service
from support.tools_client import Tools

from graphmem.core.timeparse import utc_now
from graphmem.errors import ImportFileError
from graphmem.server.runtime import Runtime
from graphmem.server.tools import build_mcp, registry
from graphmem.server.tools.registry import MAX_PROBLEMS_SHOWN
from graphmem.service.coordination import Coordinator
from graphmem.service.memory import MemoryService

PROJECT = "/work/shop"  # an agent's memories belong to a project


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
    message = tools.refused("get_history", id="mem_0000000000000000", limit=0)

    assert message.startswith("Invalid arguments for get_history: limit:")
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


def logged(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """The records of a warning or worse (FastMCP's too: pytest catches a non-propagating
    logger's records as well)."""
    return [record for record in caplog.records if record.levelno >= logging.WARNING]


def test_a_refused_call_is_no_failure_of_the_daemon_and_is_not_logged(
    tools: Tools, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)

    tools.refused("recall", query="deploys", limt=3)  # the argument check's
    tools.refused("get_history", id="mem_0000000000000000")  # the service's: no such memory
    tools.refused("recall", query="deploys", since="garbage")  # the service's: invalid input

    assert logged(caplog) == [], [f"{r.name}: {r.getMessage()}" for r in logged(caplog)]


def test_an_unexpected_failure_is_logged_once_at_error_with_its_traceback(
    tools: Tools,
    memory_service: MemoryService,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(memory_service, "recall", broken)

    tools.refused("recall", query="deploys")

    [record] = logged(caplog)
    assert record.levelno == logging.ERROR and record.name.startswith("graphmem.")
    assert record.exc_info is not None and isinstance(record.exc_info[1], RuntimeError)


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
    tools.ok("remember", text="We chose Kùzu for the graph store", project=PROJECT)
    tools.refused("delete_memory", id="mem_0000000000000000", confirm=True)

    assert calls(tools, "remember", "ok") == 1.0
    assert calls(tools, "delete_memory", "NotFoundError") == 1.0


def test_a_write_wakes_the_background_worker_and_a_read_does_not(tools: Tools) -> None:
    tools.ok("recall", query="deploys")
    woken_by_read = tools.runtime._wake.is_set()

    tools.ok("remember", text="We chose Kùzu for the graph store", project=PROJECT)

    assert not woken_by_read
    assert tools.runtime._wake.is_set()


def test_read_only_tools_say_so_and_writes_do_not(tools: Tools) -> None:
    listed = tools.listing()

    assert listed["recall"].annotations.read_only_hint is True
    assert listed["remember"].annotations.read_only_hint is False
    assert listed["delete_memory"].annotations.destructive_hint is True


def test_memory_status_reports_the_counts(tools: Tools) -> None:
    tools.ok("remember", text="We chose Kùzu for the graph store", category="decision", project=PROJECT)

    status = tools.ok("memory_status")

    assert status["memories"] == 1
    assert status["by_category"] == {"decision": 1}
    assert json.dumps(status)  # JSON all the way down


def test_a_second_server_parses_no_tool_again_lists_the_same_tools_and_calls_its_own_runtime(
    tools: Tools, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ``tools``'s server may have copied its tools from an earlier test's: one parsed afresh here
    monkeypatch.setattr(registry, "_TOOLS", {})
    with Tools(build_mcp(tools.runtime), tools.runtime) as afresh:
        parsed_afresh = afresh.listing()
    parsed: list[str] = []
    parse = FunctionTool.from_function

    def counted(fn: Any, **options: Any) -> FunctionTool:
        parsed.append(options["name"])
        return parse(fn, **options)

    monkeypatch.setattr(FunctionTool, "from_function", counted)
    unserved = in_memory_service(tmp_path / "other")
    other_memory = unserved.serving(Coordinator(utc_now, timedelta(minutes=5)))
    other_runtime = Runtime(
        other_memory, log_hint="the other log", resolve_project=lambda path: path, version="test"
    )
    try:
        with Tools(build_mcp(other_runtime), other_runtime) as other:
            listed = other.listing()
            assert parsed == []
            assert list(listed) == list(parsed_afresh)
            assert {name: tool.model_dump() for name, tool in listed.items()} == {
                name: tool.model_dump() for name, tool in parsed_afresh.items()
            }

            other.ok("remember", text="We chose Kùzu for the graph store", project=PROJECT)
            assert [m.text for m in other_memory.store.all_memories()] == [
                "We chose Kùzu for the graph store"
            ]
            assert list(tools.runtime.memory.store.all_memories()) == []
            assert tools.ok("recall", query="Kùzu graph store")["hits"] == []
            assert calls(other, "remember", "ok") == 1.0
            assert calls(tools, "remember", "ok") == 0.0
            assert other_runtime._wake.is_set()
            assert not tools.runtime._wake.is_set()

            def broken(*args: object, **kwargs: object) -> None:
                raise RuntimeError("the store went away")

            monkeypatch.setattr(other_memory, "recall", broken)
            assert "the other log" in other.refused("recall", query="deploys")  # its runtime's log hint
            assert tools.ok("recall", query="deploys")["hits"] == []
    finally:
        unserved.close()


def test_a_server_gone_keeps_none_of_its_runtime_alive_whatever_fastmcp_caches(tmp_path: Path) -> None:
    # FastMCP caches what it learns of a tool's function for the life of the process (keyed on
    # the function): a function closing over the runtime kept every server's stores alive.
    def served(name: str) -> weakref.ref[Runtime]:
        unserved = in_memory_service(tmp_path / name)
        memory = unserved.serving(Coordinator(utc_now, timedelta(minutes=5)))
        runtime = Runtime(memory, log_hint="its log", resolve_project=lambda path: path, version="test")
        with Tools(build_mcp(runtime), runtime) as tools:
            tools.ok("remember", text="We chose Kùzu for the graph store", project=PROJECT)
            tools.ok("recall", query="Kùzu graph store", project=PROJECT)
            tools.ok("memory_status")
        unserved.close()
        return weakref.ref(runtime)

    gone = [served("first"), served("second")]
    gc.collect()

    assert [runtime() for runtime in gone] == [None, None]
