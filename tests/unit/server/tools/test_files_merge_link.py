"""An agent's repository export merges with the folder's ``memories.jsonl``: when that file is a
link out of the project (a cloned repository may carry one), graphmem refuses to read it, as an
import refuses, instead of reading it and answering with what it holds or how it fails to parse."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.git_repo import copied_repository
from support.tools_client import Tools

from graphmem.app import resolve_project
from graphmem.server.runtime import Runtime
from graphmem.server.tools import build_mcp
from graphmem.service.memory import MemoryService

OUTSIDE_EXPORT = (
    json.dumps({"type": "header", "format": "graphmem-export", "version": 1, "project": "."})
    + "\n"
    + json.dumps(
        {
            "type": "memory",
            "id": "mem_0123456789abcdef",
            "text": "Someone else's note",
            "category": "fact",
            "scope": "project",
            "project": ".",
            "status": "active",
            "created_at": "2026-01-01T00:00:00Z",
        }
    )
    + "\n"
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return copied_repository(tmp_path / "shop", _empty)


def _empty(root: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)


def export(memory: MemoryService, arguments: dict[str, Any]) -> tuple[bool, str]:
    runtime = Runtime(memory, log_hint="stderr", resolve_project=resolve_project, version="t")
    with Tools(build_mcp(runtime), runtime) as tools:
        return tools.call("export_memories", arguments)


@pytest.mark.parametrize("outside_text", [OUTSIDE_EXPORT, "root:x:0:0:root:/root:/bin/bash\n"])
def test_a_memories_file_linked_out_of_the_project_is_not_read(
    memory_service: MemoryService, root: Path, tmp_path: Path, outside_text: str
) -> None:
    memory_service.remember("Deploys wait for the release manager", category="decision", project=str(root))
    outside = tmp_path / "outside.jsonl"
    outside.write_text(outside_text, "utf-8")
    (root / ".graphmem").mkdir()
    (root / ".graphmem" / "memories.jsonl").symlink_to(outside)

    failed, text = export(
        memory_service, {"path": str(root / ".graphmem"), "repository": True, "project": str(root)}
    )

    assert failed and "is a link out of the project" in text and "export with overwrite" in text, text
    assert "invalid line" not in text and "mem_0123456789abcdef" not in text
    assert outside.read_text("utf-8") == outside_text
    assert (root / ".graphmem" / "memories.jsonl").is_symlink()
    arguments = {"path": str(root / ".graphmem"), "repository": True, "project": str(root), "overwrite": True}
    failed, text = export(memory_service, arguments)  # as the error says
    assert not failed, text
    assert not (root / ".graphmem" / "memories.jsonl").is_symlink()
    assert outside.read_text("utf-8") == outside_text


def test_a_memories_file_in_the_project_is_still_merged(memory_service: MemoryService, root: Path) -> None:
    memory_service.remember("Deploys wait for the release manager", category="decision", project=str(root))
    (root / ".graphmem").mkdir()
    (root / ".graphmem" / "memories.jsonl").write_text(OUTSIDE_EXPORT, "utf-8")

    failed, text = export(
        memory_service, {"path": str(root / ".graphmem"), "repository": True, "project": str(root)}
    )

    # it holds a memory this store lacks: import it first, or overwrite, in the tool's terms
    assert failed and f'call import_memories with path="{root / ".graphmem"}" first' in text, text
    assert "or call export_memories with overwrite=true to drop them" in text and "--force" not in text
