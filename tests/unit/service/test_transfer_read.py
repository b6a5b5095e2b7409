"""How an import reads an export file's text (``service/transfer_read.py``): what an editor adds
to a file is no content; a file's bytes are decoded a line at a time, never as one text, and read
as that text would be; a record is copied only when it is rooted at the importing project."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from graphmem.errors import ImportFileError
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


def test_a_file_with_a_character_outside_the_bmp_is_never_held_as_one_text(
    memory_service: MemoryService, tmp_path: Path
) -> None:
    # 4 MB of blank lines (no records) after a memory with an emoji: as one text, 4 bytes a character.
    path = tmp_path / "emoji.jsonl"
    memory = {**LINES[1], "text": "Payments retry 3 times \U0001f680"}
    path.write_text(json.dumps(memory, ensure_ascii=False) + "\n" + (" " * 999 + "\n") * 4000, "utf-8")
    memory_service.import_file(path, dry_run=True)  # the line validators are built at their first use
    held: list[int] = []  # what the import holds while it stores its memories

    tracemalloc.start()
    try:
        summary = memory_service.import_file(
            path, progress=lambda _: held.append(tracemalloc.get_traced_memory()[0])
        )
    finally:
        tracemalloc.stop()

    assert summary.memories_added == 1
    assert memory_service.show(memory["id"]).memory.text == memory["text"]
    assert held and held[0] < 2 * path.stat().st_size  # the file's bytes (as one text: 4 times them)


def test_bytes_are_read_as_their_text_is(memory_service: MemoryService) -> None:
    # A byte order mark, CRLF, blank lines, characters outside ASCII and the BMP, a line separator
    # inside a text (only \n ends a line), an invalid line and a last line without \n.
    texts = ["caf\u00e9 \u20ac", "rocket \U0001f680", "two\u2028lines"]
    memories = [{**LINES[1], "id": f"mem_{i}", "text": text} for i, text in enumerate(texts)]
    text = "\ufeff" + "\r\n".join(json.dumps(m, ensure_ascii=False) for m in memories) + "\n\n  \n{bad\n"
    text += json.dumps({**LINES[1], "id": "mem_last"})

    from_bytes, from_text = parse_export(text.encode("utf-8")), parse_export(text)

    assert from_bytes == from_text
    assert [m.text for _, m in from_bytes.memories] == [*texts, LINES[1]["text"]]
    assert [n for n, _ in from_bytes.problems] == [6]


def test_bytes_that_are_not_utf8_are_refused_naming_each_line_and_nothing_is_imported(
    memory_service: MemoryService,
) -> None:
    good = [json.dumps({**LINES[1], "id": f"mem_{i}"}).encode() for i in range(4)]
    data = b"\n".join([good[0], good[1].replace(b"retry", b"r\xe9try"), good[2], b"\xed\xa0\x80", good[3]])

    with pytest.raises(ImportFileError) as refused:
        memory_service.import_text(data, name="latin1.jsonl")

    assert str(refused.value).startswith(
        "latin1.jsonl has 2 line(s) that are not UTF-8; nothing was imported."
    )
    assert refused.value.problems == [
        (2, f"invalid UTF-8 at byte {good[1].index(b'retry') + 1}: save the file as UTF-8"),
        (4, "invalid UTF-8 at byte 0: save the file as UTF-8"),  # an encoded half of a UTF-16 pair
    ]
    assert memory_service.stats().total == 0
