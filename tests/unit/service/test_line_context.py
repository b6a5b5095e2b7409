"""get_context on ``path:start-end``: the memories about exactly those lines come first, each
saying why, within the budget. The code graph is given a pass by hand (no parser)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from graphmem.core.code import Definition, ParsedFile
from graphmem.core.codegraph import CodeScan, FileState, ProjectCode, symbol_key
from graphmem.core.models import Category, EntityKind, MemoryRecord, Scope
from graphmem.core.timeparse import utc_now
from graphmem.errors import InvalidInputError
from graphmem.service.line_context import parse_line_target
from graphmem.service.memory import MemoryService

APP = ParsedFile(
    "python",
    (
        Definition("function", "main", "main", 1, 2, "def main()", None, "h-main", None),
        Definition("class", "Greeter", "Greeter", 4, 12, "class Greeter", None, "h-greeter", None),
        Definition("method", "greet", "Greeter.greet", 5, 8, "def greet(self)", None, "h-greet", "Greeter"),
    ),
    (),
    (),
    (),
    0,
)
SHA = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"


@pytest.fixture
def project(memory_service: MemoryService, git_project: str) -> str:
    """``src/app.py`` scanned; a decision about ``Greeter.greet``, one about ``main``, a fact about
    the file, and a commit that last changed ``Greeter.greet``."""
    assert memory_service.code is not None
    code = ProjectCode(git_project, {"src/app.py": APP})
    state = FileState("src/app.py", "c1", 10, 1)
    memory_service.code.save(
        CodeScan(git_project, {"src/app.py": (APP, state)}, [], code, code.edges(), utc_now())
    )
    memory_service.remember("Greeter.greet must say hello in the user's language", category="decision",
                            project=git_project)  # fmt: skip
    memory_service.remember(
        "main() exits 0 even when greeting fails", category="decision", project=git_project
    )
    memory_service.remember("src/app.py is the entry point of the service", project=git_project)
    when = datetime(2026, 1, 5, tzinfo=UTC)
    commit = MemoryRecord(
        "mem_a1b2c3d4e5f60718", "Greet in the user's language", Category.EVENT, Scope.PROJECT, git_project,
        when, when, when, source="git:" + SHA, content_hash="git:" + SHA,
    )  # fmt: skip
    greet = memory_service.store.get_entities([symbol_key(git_project, "src/app.py", "Greeter.greet")])
    memory_service.writer.add([commit], about=[(commit.id, e) for e in greet.values()])
    return git_project


def test_the_memories_about_the_lines_come_first_and_say_why(
    memory_service: MemoryService, project: str
) -> None:
    bundle = memory_service.get_context("src/app.py:6-7", project=project)

    decisions = bundle.to_dict()["groups"]["decision"]
    assert [d["text"] for d in decisions] == ["Greeter.greet must say hello in the user's language"]
    assert decisions[0]["why"] == "about `Greeter.greet` (lines 5–8, around lines 6–7)"
    [event] = bundle.to_dict()["groups"]["event"]
    assert event["why"] == "commit a1b2c3d last changed `Greeter.greet` (lines 5–8, around lines 6–7)"
    assert "main() exits 0" not in "\n".join(d["text"] for d in decisions)


def test_memories_about_the_file_alone_come_after_those_about_its_symbols(
    memory_service: MemoryService, project: str
) -> None:
    bundle = memory_service.get_context("src/app.py:6", project=project)

    texts = [item.hit.memory.text for items in bundle.groups.values() for item in items]
    assert "src/app.py is the entry point of the service" in texts
    fact = next(i for i in bundle.groups[Category.FACT] if "entry point" in i.hit.memory.text)
    assert fact.hit.reason == "about src/app.py, not linked to a symbol at line 6"


def test_the_code_section_names_the_symbols_around_the_lines(
    memory_service: MemoryService, project: str
) -> None:
    bundle = memory_service.get_context("src/app.py:6-7", project=project)

    section = dict(bundle.code)["Lines 6–7 of src/app.py"]
    assert section[0].startswith("- method `Greeter.greet` L5–8")  # the innermost first
    assert any("`Greeter` L4–12" in line for line in section)
    assert "## Memory: src/app.py:6-7" in bundle.markdown
    assert bundle.entity is not None and bundle.entity.kind is EntityKind.FILE


def test_the_bundle_fits_the_budget(memory_service: MemoryService, project: str) -> None:
    bundle = memory_service.get_context("src/app.py:6-7", project=project, max_tokens=60)

    assert bundle.tokens <= 60
    assert bundle.omitted >= 1


def test_lines_outside_every_symbol_say_so(memory_service: MemoryService, project: str) -> None:
    bundle = memory_service.get_context("src/app.py:3", project=project)

    assert dict(bundle.code)["Line 3 of src/app.py"] == [
        "- no function, method or class of the last scan overlaps these lines"
    ]


def test_a_file_of_no_project_is_asked_as_its_path(memory_service: MemoryService, project: str) -> None:
    bundle = memory_service.get_context("src/nope.py:3-4", project=project)

    assert "src/nope.py is not in the graph" in bundle.markdown


@pytest.mark.parametrize("target", ["src/app.py:0", "src/app.py:9-3", "src/app.py:1-200000"])
def test_a_wrong_range_is_refused_with_how_to_write_it(
    memory_service: MemoryService, project: str, target: str
) -> None:
    with pytest.raises(InvalidInputError, match=r"src/app\.py"):
        memory_service.get_context(target, project=project)


@pytest.mark.parametrize(
    ("target", "lines"),
    [("src/x.py:40-52", ("src/x.py", 40, 52)), ("src/x.py:L40-L52", ("src/x.py", 40, 52)),
     ("a.py:7", ("a.py", 7, 7)), ("a.py:3–5", ("a.py", 3, 5))],
)  # fmt: skip
def test_line_targets_are_read(target: str, lines: tuple[str, int, int]) -> None:
    found = parse_line_target(target)
    assert found is not None and (found.path, found.start, found.end) == lines


@pytest.mark.parametrize("target", ["!123", "Greeter.greet", "src/x.py", "retry: 3 times", "a b:3"])
def test_other_targets_name_no_lines(target: str) -> None:
    assert parse_line_target(target) is None
