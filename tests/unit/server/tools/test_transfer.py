"""The transfer tools (export_memories, import_memories) with inline text, through an MCP
client. Paths (what an agent may make graphmem read and write) are in test_files.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from support.memory_service import in_memory_service
from support.tools_client import Tools

from graphmem.core.timeparse import utc_now
from graphmem.server.runtime import Runtime
from graphmem.server.tools import build_mcp
from graphmem.server.tools import transfer as transfer_tools
from graphmem.service.coordination import Coordinator
from graphmem.service.memory import MemoryService

PROJECT = "/work/shop"


@pytest.fixture
def other(tmp_path: Path) -> Iterator[tuple[Tools, MemoryService]]:
    """A second daemon with its own empty store: where an export is imported."""
    memory = in_memory_service(tmp_path / "other")
    runtime = Runtime(
        memory.serving(Coordinator(utc_now, timedelta(minutes=5))),
        log_hint="log",
        resolve_project=lambda p: p,
        version="t",
    )
    with Tools(build_mcp(runtime), runtime) as tools:
        yield tools, memory
    memory.close()


def exported(tools: Tools) -> str:
    tools.ok("remember", text="We chose Kùzu for the graph store", category="decision", project=PROJECT)
    tools.ok("remember", text="Prefer ruff format over black", category="preference", project=PROJECT)
    content: str = tools.ok("export_memories", project=PROJECT)["content"]
    return content


def test_an_inline_export_is_one_json_line_per_record_with_the_counts(tools: Tools) -> None:
    tools.ok("remember", text="We chose Kùzu for the graph store", category="decision", project=PROJECT)

    answer = tools.ok("export_memories", project=PROJECT)

    lines = [json.loads(line) for line in answer["content"].splitlines()]
    texts = [line.get("text") for line in lines]
    assert "We chose Kùzu for the graph store" in texts
    assert answer["format"] == "jsonl"
    assert answer["memories"] == 1


def test_a_markdown_export_is_for_reading(tools: Tools) -> None:
    tools.ok("remember", text="We chose Kùzu for the graph store", category="decision", project=PROJECT)

    answer = tools.ok("export_memories", project=PROJECT, format="markdown")

    assert answer["content"].startswith("# ")
    assert "- We chose Kùzu for the graph store" in answer["content"]


def test_an_export_too_big_to_return_inline_says_to_pass_a_path(
    tools: Tools, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools.ok("remember", text="We chose Kùzu for the graph store", project=PROJECT)
    monkeypatch.setattr(transfer_tools, "MAX_INLINE_EXPORT_CHARS", 10)

    assert "pass path" in tools.refused("export_memories", project=PROJECT)


def test_importing_an_export_adds_its_memories_once(tools: Tools, other: tuple[Tools, MemoryService]) -> None:
    content = exported(tools)
    into, memory = other

    first = into.ok("import_memories", content=content, project=PROJECT)
    second = into.ok("import_memories", content=content, project=PROJECT)

    assert first["memories_added"] == 2
    assert second["memories_added"] == 0
    assert sorted(m.text for m in memory.store.all_memories()) == [
        "Prefer ruff format over black",
        "We chose Kùzu for the graph store",
    ]


def test_a_dry_run_validates_and_imports_nothing(tools: Tools, other: tuple[Tools, MemoryService]) -> None:
    content = exported(tools)
    into, memory = other

    answer = into.ok("import_memories", content=content, dry_run=True, project=PROJECT)

    assert answer["dry_run"] is True
    assert answer["records"] > 0
    assert list(memory.store.all_memories()) == []


def test_an_invalid_line_imports_nothing_and_names_the_line(
    tools: Tools, other: tuple[Tools, MemoryService]
) -> None:
    content = exported(tools) + "{not json\n"
    into, memory = other
    bad_line = len(content.splitlines())

    message = into.refused("import_memories", content=content, project=PROJECT)

    assert f"line {bad_line}" in message
    assert list(memory.store.all_memories()) == []


def test_an_import_needs_exactly_one_of_path_or_content(tools: Tools) -> None:
    assert "exactly one of path" in tools.refused("import_memories")
    assert "exactly one of path" in tools.refused("import_memories", path="x.jsonl", content="")


GLOBAL_BLOCKER = {
    "type": "memory", "id": "mem_eeeeeeeeeeeeeeee", "category": "blocker", "scope": "global", "project": None,
    "text": "GLOBALBLOCKER the package registry mirror is down for every repository",
    "created_at": "2026-12-07T19:00:00+00:00",
}  # fmt: skip
HEADER = {"type": "header", "format": "graphmem-export", "version": 1, "project": None, "counts": {}}


def test_what_an_agent_imports_is_kept_in_its_project_never_global(
    tools: Tools, memory_service: MemoryService
) -> None:
    content = f"{json.dumps(HEADER)}\n{json.dumps(GLOBAL_BLOCKER)}\n"

    answer = tools.ok("import_memories", content=content, project=PROJECT)

    stored = memory_service.show(GLOBAL_BLOCKER["id"]).memory
    assert answer["memories_added"] == 1
    assert (stored.scope.value, stored.project) == ("project", PROJECT)
    assert "GLOBALBLOCKER" in tools.ok("get_boot_context", project=PROJECT)["markdown"]
    assert "GLOBALBLOCKER" not in tools.ok("get_boot_context", project="/work/billing")["markdown"]


def test_an_agents_import_that_names_no_project_stores_nothing(
    tools: Tools, memory_service: MemoryService
) -> None:
    content = f"{json.dumps(HEADER)}\n{json.dumps(GLOBAL_BLOCKER)}\n"

    assert "pass project" in tools.refused("import_memories", content=content)
    assert list(memory_service.store.all_memories()) == []


def test_what_an_agent_imports_from_a_file_is_kept_in_its_project_too(
    tools: Tools, memory_service: MemoryService
) -> None:
    exports = memory_service.data_dir / "exports"
    exports.mkdir(parents=True, exist_ok=True)
    (exports / "blockers.jsonl").write_text(f"{json.dumps(HEADER)}\n{json.dumps(GLOBAL_BLOCKER)}\n", "utf-8")

    tools.ok("import_memories", path="blockers.jsonl", project=PROJECT)

    stored = memory_service.show(GLOBAL_BLOCKER["id"]).memory
    assert (stored.scope.value, stored.project) == ("project", PROJECT)
