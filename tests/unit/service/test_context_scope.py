"""get_context answers about the project asked: a path or a symbol is resolved in that project
only, never to another project's file or symbol of the same name; a directory is said to be one,
and lines past the end of a file are said to be. The code graph is given a pass by hand."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from graphmem.core.code import Definition, ParsedFile
from graphmem.core.codegraph import CodeScan, FileState, ProjectCode
from graphmem.core.keys import file_key
from graphmem.core.timeparse import utc_now
from graphmem.service.context import relative_path
from graphmem.service.line_context import count_lines
from graphmem.service.memory import MemoryService

RESPONSE = ParsedFile(
    "javascript",
    (Definition("method", "send", "res.send", 3, 9, "res.send = function send(body)", None, "h-send", None),),
    (),
    (),
    (),
    0,
)
EMPTY = ParsedFile("python", (), (), (), (), 0)


def _scan(memory: MemoryService, project: str, files: dict[str, ParsedFile], *, on_disk: bool = True) -> None:
    """``files`` scanned into ``project``'s code graph (and written in its checkout)."""
    assert memory.code is not None
    if on_disk:
        for path in files:
            (Path(project) / path).parent.mkdir(parents=True, exist_ok=True)
            (Path(project) / path).write_text("// one\n// two\n// three\n", "utf-8")
    code = ProjectCode(project, files)
    scan = {path: (parsed, FileState(path, f"c-{path}", 10, 1)) for path, parsed in files.items()}
    memory.code.save(CodeScan(project, scan, [], code, code.edges(), utc_now()))


def _checkout(tmp_path: Path, name: str) -> str:
    root = tmp_path / name
    root.mkdir()
    return str(root.resolve())


@pytest.fixture
def express(memory_service: MemoryService, tmp_path: Path) -> str:
    """A project with ``lib/response.js`` (defines ``res.send``) and a memory about it."""
    project = _checkout(tmp_path, "express")
    _scan(memory_service, project, {"lib/response.js": RESPONSE, "lib/router/index.js": EMPTY})
    memory_service.remember("lib/response.js sets Content-Length itself", project=project)
    return project


@pytest.fixture
def click(memory_service: MemoryService, tmp_path: Path) -> str:
    """Another project, bootstrapped, with no ``lib/`` at all."""
    project = _checkout(tmp_path, "click")
    _scan(memory_service, project, {"src/click/core.py": EMPTY})
    return project


def test_a_path_only_another_project_has_is_not_in_the_graph_of_the_asked_one(
    memory_service: MemoryService, express: str, click: str
) -> None:
    bundle = memory_service.get_context("lib/response.js", project=click)

    assert bundle.found is False
    assert bundle.entity is None
    assert bundle.code == []  # no "Defines" of express's file
    assert bundle.notes[0].startswith("lib/response.js is not in the graph")
    shown = [item.hit.memory.text for items in bundle.groups.values() for item in items]
    assert "lib/response.js sets Content-Length itself" not in shown


def test_the_project_that_has_the_path_still_gets_its_file(
    memory_service: MemoryService, express: str, click: str
) -> None:
    bundle = memory_service.get_context("lib/response.js", project=express)

    assert bundle.found is True
    assert bundle.entity is not None and bundle.entity.key == file_key(express, "lib/response.js")
    assert any(title.startswith("Defines") for title, _ in bundle.code)


def test_lines_of_a_path_only_another_project_has_are_not_answered_with_its_file(
    memory_service: MemoryService, express: str, click: str
) -> None:
    bundle = memory_service.get_context("lib/response.js:3-4", project=click)

    assert bundle.found is False
    assert bundle.entity is None
    assert bundle.code == []


def test_a_stored_file_of_the_asked_project_is_found_though_others_share_its_path(
    memory_service: MemoryService, tmp_path: Path
) -> None:
    first, second = _checkout(tmp_path, "first"), _checkout(tmp_path, "second")
    for project in (first, second):  # in the graph, not in the checkouts (deleted since the scan)
        _scan(memory_service, project, {"gone.py": EMPTY}, on_disk=False)

    bundle = memory_service.get_context("./gone.py", project=second)

    assert bundle.found is True
    assert bundle.entity is not None and bundle.entity.key == file_key(second, "gone.py")


def test_a_symbol_only_another_project_has_is_not_answered(
    memory_service: MemoryService, express: str, click: str
) -> None:
    bundle = memory_service.get_context("res.send", project=click)

    assert bundle.entity is None
    assert bundle.code == []


def test_without_a_project_the_one_file_of_that_path_is_found(
    memory_service: MemoryService, express: str, click: str
) -> None:
    bundle = memory_service.get_context("lib/response.js")

    assert bundle.found is True
    assert bundle.entity is not None and bundle.entity.key == file_key(express, "lib/response.js")


def test_a_directory_is_said_to_be_one_naming_files_in_it(
    memory_service: MemoryService, express: str
) -> None:
    bundle = memory_service.get_context("lib", project=express)

    assert bundle.found is False
    assert bundle.notes[0] == (
        "lib is a directory: name a file in it (lib/response.js, lib/router/index.js); "
        "showing memories that mention related words."
    )
    assert "bootstrap" not in bundle.markdown


def test_lines_past_the_end_of_a_file_are_said_to_be(memory_service: MemoryService, express: str) -> None:
    bundle = memory_service.get_context("lib/response.js:9999-10000", project=express)

    assert bundle.found is False
    assert bundle.notes[0] == (
        "lib/response.js has 3 lines: lines 9999–10000 are past its end. "
        "Ask for lines within 1–3, or for lib/response.js itself."
    )
    assert bundle.code == [
        ("Lines 9999–10000 of lib/response.js", ["- past the end of the file: it has 3 lines"])
    ]
    assert bundle.groups == {}  # nothing is about lines that do not exist
    related = [item.hit.memory.text for item in bundle.related_memories]
    assert "lib/response.js sets Content-Length itself" in related


def test_the_last_line_of_a_file_is_not_past_its_end(memory_service: MemoryService, express: str) -> None:
    bundle = memory_service.get_context("lib/response.js:3", project=express)

    assert bundle.found is True
    assert not any("past" in note for note in bundle.notes)


@pytest.mark.parametrize(
    ("content", "lines"), [(b"", 0), (b"one", 1), (b"one\n", 1), (b"one\ntwo", 2), (b"one\ntwo\n", 2)]
)
def test_count_lines_counts_a_last_line_without_a_newline(tmp_path: Path, content: bytes, lines: int) -> None:
    path = tmp_path / "f"
    path.write_bytes(content)
    assert count_lines(path, 10) == lines


def test_count_lines_stops_at_enough_and_never_reads_a_fifo(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x\n" * 100)
    assert count_lines(path, 5) == 5
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert count_lines(fifo, 5) is None  # opening it would wait for a writer


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("lib/response.js", "lib/response.js"),
        ("./lib//response.js", "lib/response.js"),
        ("/repo/lib/response.js", "lib/response.js"),
        ("/elsewhere/lib/response.js", None),
        ("../other/lib/response.js", None),
        (".", None),
    ],
)
def test_relative_path_stays_inside_the_project(target: str, expected: str | None) -> None:
    assert relative_path(target, Path("/repo")) == expected
