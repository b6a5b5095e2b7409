"""The MCP tools export_memories(repository=True) and import_memories(path=<folder>), in process."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from support.git_repo import copied_repository
from support.stores import KuzuTemplates

from graphmem.adapters.embedders import HashEmbedder
from graphmem.app import open_memory
from graphmem.core.timeparse import utc_now
from graphmem.server.runtime import Runtime
from graphmem.server.tools import build_mcp
from graphmem.service.coordination import Coordinator
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings


def checkout(parent: Path) -> str:
    return str(copied_repository(parent / "shop", _shop))


def _shop(root: Path) -> None:
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("def main() -> None:\n    pass\n", "utf-8")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)


def open_store(path: Path, templates: KuzuTemplates) -> MemoryService:
    templates.lay_out(path, 64)  # an empty store's files, as open_memory makes them
    return open_memory(load_settings(data_dir=path), embedder=HashEmbedder(64))


@pytest.fixture
def stores(tmp_path: Path, kuzu_templates: KuzuTemplates) -> Iterator[tuple[MemoryService, MemoryService]]:
    alice, bob = open_store(tmp_path / "a", kuzu_templates), open_store(tmp_path / "b", kuzu_templates)
    yield alice, bob
    alice.close()
    bob.close()


def call(memory: MemoryService, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    runtime = Runtime(
        memory.serving(Coordinator(utc_now, timedelta(minutes=5))),
        log_hint="stderr",
        resolve_project=lambda p: p,
        version="t",
    )

    async def run() -> dict[str, Any]:
        async with Client(build_mcp(runtime)) as client:
            result = await client.call_tool(tool, arguments)
            data: dict[str, Any] = json.loads(result.content[0].text)  # type: ignore[union-attr]
            return data

    return asyncio.run(run())


def test_an_agent_exports_the_project_folder_and_a_teammate_imports_it(
    stores: tuple[MemoryService, MemoryService], tmp_path: Path
) -> None:
    alice, bob = stores
    alice_root, bob_root = checkout(tmp_path / "alice"), checkout(tmp_path / "bob")
    alice.remember("Keep src/app.py free of I/O", category="directive", project=alice_root)
    folder = str(Path(alice_root) / ".graphmem")

    exported = call(alice, "export_memories", {"project": alice_root, "repository": True, "path": folder})
    pulled = shutil.copytree(folder, Path(bob_root) / ".graphmem")  # git pull brings it to Bob's checkout
    imported = call(bob, "import_memories", {"path": str(pulled), "project": bob_root})

    assert exported["memories"] == 1
    assert sorted(Path(p).name for p in exported["written"]) == ["MEMORY.md", "memories.jsonl"]
    assert (imported["memories_added"], imported["memories_updated"], imported["proposed"]) == (1, 0, 1)
    about = {e.key for m in bob.store.all_memories(bob_root) for e in bob.show(m.id).entities}
    assert about == {f"File:{bob_root}::src/app.py"}


def test_a_repository_export_can_come_back_inline(
    stores: tuple[MemoryService, MemoryService], tmp_path: Path
) -> None:
    alice, _ = stores
    root = checkout(tmp_path)
    alice.remember("Keep src/app.py free of I/O", category="directive", project=root)

    exported = call(alice, "export_memories", {"project": root, "repository": True})

    assert root not in exported["content"]
    assert '"File:.::src/app.py"' in exported["content"]
