"""The longest line an import reads (``MAX_LINE_CHARS``) holds every line an export writes: a
memory and an edit event with their fields at their bounds, escaped at their worst by graphmem's
own export (a control character: 6 characters) or by any JSON writer (outside the BMP: 12)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphmem.core import export_format
from graphmem.core.events import EventKind, MemoryEvent
from graphmem.core.export_format import (
    MAX_ABOUT_CHARS,
    MAX_LINE_CHARS,
    MAX_STATE_LINKS,
    event_line,
    memory_line,
    parse_lines,
)
from graphmem.core.held_lines import EventLine
from graphmem.core.memory_line import MemoryLine
from graphmem.core.models import Category, MemoryRecord, Scope
from graphmem.core.text import MAX_TEXT_CHARS
from graphmem.errors import ConflictError

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
MEMORY_ID = "mem_0123456789abcdef"
CONTROL = "\x1b"  # \u001b in a line: 6 characters
ASTRAL = "\U0001f680"  # \ud83d\ude80 where non-ASCII is escaped: 12 characters
WORST = pytest.mark.parametrize("char", [CONTROL, ASTRAL], ids=["control", "astral"])
ENCODED = pytest.mark.parametrize("ensure_ascii", [False, True], ids=["as-exported", "ascii-escaped"])


def record(text: str, project: str) -> MemoryRecord:
    return MemoryRecord(
        MEMORY_ID, text, Category.DECISION, Scope.PROJECT, project,
        created_at=NOW, updated_at=NOW, valid_from=NOW, content_hash="h",
    )  # fmt: skip


def project_of(char: str) -> str:
    return "/" + char * 199  # a project whose path is 200 characters


def about_keys(char: str) -> list[str]:
    """Keys of files of ``project_of(char)``, as many as fit ``MAX_ABOUT_CHARS`` as a JSON list."""
    keys: list[str] = []
    while len(json.dumps(keys, ensure_ascii=False)) < MAX_ABOUT_CHARS - 300:
        keys.append(f"File:{project_of(char)}::{len(keys)}{char * 60}.py")
    return keys


def edit_event(
    before: str, after: str, about: list[str], links: list[list[str]] | None = None
) -> MemoryEvent:
    return MemoryEvent(
        "evt_0123456789abcdef", MEMORY_ID, NOW, EventKind.EDIT, "user", "",
        before={"text": before, "about": about, **({"links": links} if links else {})},
        after={"text": after, "about": about},
    )  # fmt: skip


def read(line: str) -> object:
    parsed = parse_lines([(1, line)])
    assert parsed.problems == []
    [(_, found)] = parsed.memories + parsed.events
    return found


@WORST
@ENCODED
def test_the_worst_memory_line_is_read(char: str, ensure_ascii: bool) -> None:
    keys = about_keys(char)
    line = json.dumps(
        memory_line(record(char * MAX_TEXT_CHARS, project_of(char)), keys), ensure_ascii=ensure_ascii
    )

    found = read(line)

    assert isinstance(found, MemoryLine)
    assert (found.text, found.entities) == (char * MAX_TEXT_CHARS, tuple(keys))


@WORST
@ENCODED
def test_the_worst_edit_event_line_is_read(char: str, ensure_ascii: bool) -> None:
    keys = about_keys(char)
    links = [
        [f"mem_{i:016x}{char * 170}", f"mem_{i + 1:016x}{char * 170}", "supersedes", NOW.isoformat()]
        for i in range(MAX_STATE_LINKS)
    ]
    event = edit_event(char * MAX_TEXT_CHARS, "x" + char * (MAX_TEXT_CHARS - 1), keys, links)
    line = json.dumps(event_line(event), ensure_ascii=ensure_ascii)

    found = read(line)

    assert isinstance(found, EventLine)
    assert (found.before["text"], found.after["text"]) == (event.before["text"], event.after["text"])
    assert found.before["about"] == keys and len(found.before["links"]) == MAX_STATE_LINKS


def test_the_edit_of_a_log_of_control_characters_is_read() -> None:
    # The review's repro: `remember` 'log one ' + '\x1b\x07' * 3900, `edit` it to 'log two ...'.
    event = edit_event("log one " + "\x1b\x07" * 3900, "log two " + "\x1b\x07" * 3900, [])

    found = read(json.dumps(event_line(event), ensure_ascii=False))

    assert isinstance(found, EventLine) and found.before["text"] == event.before["text"]


# Texts of every length up to the limit, of any characters a memory's text holds (no NUL:
# ``validate_text``): a short run repeated to the length.
_RUNS = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), min_size=1, max_size=12)
texts = st.tuples(_RUNS, st.integers(1, MAX_TEXT_CHARS)).map(
    lambda run_and_size: (run_and_size[0] * MAX_TEXT_CHARS)[: run_and_size[1]]
)


@settings(max_examples=40, deadline=None)
@given(before=texts, after=texts, ensure_ascii=st.booleans())
def test_any_edit_event_an_export_writes_is_read_back(before: str, after: str, ensure_ascii: bool) -> None:
    event = edit_event(before, after, about_keys(CONTROL)[:20])

    found = read(json.dumps(event_line(event), ensure_ascii=ensure_ascii))

    assert isinstance(found, EventLine)
    assert (found.before["text"], found.after["text"]) == (before, after)


def test_an_export_refuses_a_line_longer_than_an_import_reads() -> None:
    keys = [f"File:/p::{i}{'f' * 4000}.py" for i in range(MAX_LINE_CHARS // 4000 + 1)]

    with pytest.raises(ConflictError, match=f"Nothing was exported: the memory line of {MEMORY_ID}"):
        export_format.jsonl_line(memory_line(record("names every file", "/p"), keys))
