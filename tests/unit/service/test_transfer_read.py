"""How an import reads an export file's text (``service/transfer_read.py``): what an editor adds
to a file is no content; a record is copied only when it is rooted at the importing project."""

from __future__ import annotations

import json
from pathlib import Path

from graphmem.service.memory import MemoryService
from graphmem.service.transfer_read import _reroot, parse_export

LINES = [
    {"type": "header", "format": "graphmem-export", "version": 1},
    {
        "type": "memory", "id": "mem_1111111111111111", "text": "Payments retry 3 times",
        "category": "fact", "scope": "global", "created_at": "2026-01-01T00:00:00Z",
    },
]  # fmt: skip


def test_a_file_saved_with_a_byte_order_mark_imports(memory_service: MemoryService, tmp_path: Path) -> None:
    path = tmp_path / "notepad.jsonl"
    path.write_text("".join(json.dumps(line) + "\r\n" for line in LINES), encoding="utf-8-sig")

    summary = memory_service.import_file(path)

    assert summary.memories_added == 1
    assert memory_service.show("mem_1111111111111111").memory.text == "Payments retry 3 times"


def test_an_import_into_a_project_copies_only_the_records_it_roots() -> None:
    rooted = {**LINES[1], "id": "mem_2222222222222222", "entities": ["File:.::src/retry.py"]}
    parsed = parse_export("\n".join(json.dumps(line) for line in [*LINES, rooted]))
    [(_, plain), _] = parsed.memories

    _reroot(parsed, "/home/me/shop")

    [(_, kept), (_, moved)] = parsed.memories
    assert kept is plain and moved.entities == ("File:/home/me/shop::src/retry.py",)
