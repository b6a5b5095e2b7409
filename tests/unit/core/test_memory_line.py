"""What an import keeps of a memory line (``core/memory_line.py``): the fields it uses, in slots."""

from __future__ import annotations

import json

from graphmem.core.export_format import parse_lines

NEVER_TAKEN = {"source": "user", "reinforced": 4, "trust": "confirmed", "stale": "its file changed"}


def test_a_memory_line_is_kept_in_slots_without_the_fields_an_import_never_takes() -> None:
    line = {
        "type": "memory", "id": "mem_1111111111111111", "text": "Payments retry 3 times", "category": "fact",
        "scope": "global", "created_at": "2026-01-01T00:00:00Z", **NEVER_TAKEN,
    }  # fmt: skip

    parsed = parse_lines([(1, json.dumps(line))])

    [(_, kept)] = parsed.memories
    assert parsed.problems == [] and kept.text == "Payments retry 3 times"
    assert not hasattr(kept, "__dict__")
    assert [name for name in NEVER_TAKEN if hasattr(kept, name)] == []
