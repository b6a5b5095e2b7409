"""An export imports back whatever its lines hold: texts of control characters or of characters
outside the BMP, edits of them, memories naming a hundred files of a long project path; and an
export that would write a line no import reads writes nothing."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.memory_service import in_memory_service
from support.stores import KuzuTemplates

from graphmem.adapters.embedders import HashEmbedder
from graphmem.app import open_memory
from graphmem.core import export_format
from graphmem.core.text import MAX_TEXT_CHARS
from graphmem.errors import ConflictError
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings


@pytest.fixture
def other(tmp_path: Path, kuzu_templates: KuzuTemplates) -> Iterator[MemoryService]:
    """A second, empty store on Kùzu: where the export is imported."""
    kuzu_templates.lay_out(tmp_path / "other", 256)  # an empty store's files, as open_memory makes them
    memory = open_memory(load_settings(data_dir=tmp_path / "other"), embedder=HashEmbedder(256))
    yield memory
    memory.close()


def export_text(memory: MemoryService) -> str:
    out = io.StringIO()
    memory.export(out)
    return out.getvalue()


def history_texts(memory: MemoryService, memory_id: str) -> list[tuple[object, object]]:
    return [(e.before.get("text"), e.after.get("text")) for e in memory.history(memory_id)]


def test_an_edited_log_of_control_characters_imports_back(
    fake_memory: MemoryService, other: MemoryService, tmp_path: Path
) -> None:
    # The review's repro: each text is 7,808 characters, 7,800 of them written as \u001b or \u0007.
    made = fake_memory.remember("log one " + "\x1b\x07" * 3900).memory.id
    fake_memory.edit(made, text="log two " + "\x1b\x07" * 3900)
    path = tmp_path / "c.jsonl"
    path.write_text(export_text(fake_memory), "utf-8")

    other.import_file(path)

    assert other.show(made).memory.text == "log two " + "\x1b\x07" * 3900
    assert history_texts(other, made) == history_texts(fake_memory, made)


def test_an_edit_of_the_longest_text_outside_the_bmp_imports_back_once_ascii_escaped(
    memory_service: MemoryService, other: MemoryService, tmp_path: Path
) -> None:
    made = memory_service.remember("\U0001f680" * MAX_TEXT_CHARS).memory.id
    memory_service.edit(made, text="\U0001f98a" * MAX_TEXT_CHARS)
    # As a JSON tool that escapes non-ASCII writes it (json.dumps' default): 12 characters each.
    escaped = "".join(
        json.dumps(json.loads(line)) + "\n" for line in export_text(memory_service).splitlines()
    )
    path = tmp_path / "escaped.jsonl"
    path.write_text(escaped, "utf-8")

    other.import_file(path)

    assert other.show(made).memory.text == "\U0001f98a" * MAX_TEXT_CHARS
    assert history_texts(other, made) == history_texts(memory_service, made)


def test_an_edit_of_a_memory_naming_110_files_of_a_long_project_path_imports_back(
    memory_service: MemoryService, other: MemoryService, tmp_path: Path
) -> None:
    root = tmp_path / ("p" * (199 - len(str(tmp_path))))  # the project's path: 200 characters
    names = [f"src/payments/module_{i:03}_of_the_refund_and_retry_service_v2_handlers.py" for i in range(110)]
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("", "utf-8")
    text = "Refunds retry through " + " ".join(names)
    made = memory_service.remember(text, project=str(root)).memory.id
    memory_service.edit(made, text=text.replace("Refunds", "Payments"), project=str(root))
    assert len(memory_service.show(made).entities) == 110
    path = tmp_path / "files.jsonl"
    path.write_text(export_text(memory_service), "utf-8")

    other.import_file(path)

    assert {e.key for e in other.show(made).entities} == {e.key for e in memory_service.show(made).entities}
    assert [e.before.get("about") for e in other.history(made)] == [
        e.before.get("about") for e in memory_service.history(made)
    ]


def test_an_export_that_would_write_a_line_no_import_reads_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = in_memory_service(tmp_path / "data")
    memory.remember("A" * 3_000)
    monkeypatch.setattr(export_format, "MAX_LINE_CHARS", 2_000)  # a line of that memory is longer

    with pytest.raises(ConflictError, match="Nothing was exported"):
        memory.export_file(tmp_path / "too-long.jsonl")

    assert not (tmp_path / "too-long.jsonl").exists()
    memory.close()
