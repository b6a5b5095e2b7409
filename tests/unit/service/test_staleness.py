"""Staleness everywhere a memory is shown: recall, get_context, boot context, show, list,
exports, the injected block and the store's counts; and what clears it (confirm, a repeat,
an edit). The code graph is given passes by hand (no parser), as bootstrap stores them."""

from __future__ import annotations

import io
import json

import pytest

from graphmem.core.code import Definition, ParsedFile
from graphmem.core.codegraph import CodeScan, FileState, ProjectCode
from graphmem.core.timeparse import utc_now
from graphmem.core.views import hit_view
from graphmem.service.injection import Injector, InjectRequest
from graphmem.service.memory import MemoryService

DECISION = "main() must print the greeting before it returns"


def parsed(body: str) -> ParsedFile:
    main = Definition("function", "main", "main", 1, 2, "def main()", None, f"hash-{body}", None)
    return ParsedFile("python", (main,), (), (), (), 0)


def scan(
    memory: MemoryService, project: str, files: dict[str, ParsedFile], removed: tuple[str, ...] = ()
) -> None:
    """One bootstrap pass of ``files``, stored now (after everything before it)."""
    assert memory.code is not None
    code = ProjectCode(project, memory.code.load_parsed(project))
    for path in removed:
        code.files.pop(path, None)
    code.files.update(files)
    at = utc_now()
    changed = {path: (p, FileState(path, f"{path}-{at}", 10, 1)) for path, p in files.items()}
    memory.code.save(CodeScan(project, changed, list(removed), code, code.edges(), at))


@pytest.fixture
def stale(memory_service: MemoryService, git_project: str) -> str:
    """A decision about ``main`` whose body changed after it was written: its id."""
    scan(memory_service, git_project, {"src/app.py": parsed("v1")})
    note = memory_service.remember(DECISION, category="decision", project=git_project)
    assert [e.name for e in note.entities] == ["main"]
    assert memory_service.show(note.memory.id).memory.stale is None
    scan(memory_service, git_project, {"src/app.py": parsed("v2")})
    return note.memory.id


def test_recall_hits_say_their_code_changed(
    memory_service: MemoryService, git_project: str, stale: str
) -> None:
    [hit] = memory_service.recall("greeting before it returns", project=git_project).hits
    assert hit.memory.id == stale
    assert hit.memory.stale is not None and hit.memory.stale.startswith("possibly stale: main changed on")
    assert hit_view(hit, now=utc_now())["stale"] == hit.memory.stale


def test_get_context_marks_the_memory(memory_service: MemoryService, git_project: str, stale: str) -> None:
    bundle = memory_service.get_context("main", project=git_project)
    assert "possibly stale: main changed on" in bundle.markdown
    [item] = bundle.to_dict()["groups"]["decision"]
    assert item["stale"].startswith("possibly stale")


def test_boot_context_marks_the_memory(memory_service: MemoryService, git_project: str, stale: str) -> None:
    bundle = memory_service.boot_context(project=git_project)
    assert stale in bundle.markdown and "possibly stale: main changed on" in bundle.markdown


def test_show_and_list_mark_the_memory(memory_service: MemoryService, git_project: str, stale: str) -> None:
    assert memory_service.show(stale).memory.stale is not None
    [listed] = memory_service.list(project=git_project)
    assert listed.stale is not None and listed.stale.startswith("possibly stale")


def test_the_injected_block_marks_the_memory(
    memory_service: MemoryService, git_project: str, stale: str
) -> None:
    injector = Injector(memory_service, lambda directory: git_project if directory else None)
    block = injector.inject(InjectRequest("ses_1", "msg_1", git_project, "hello", "")).block
    assert stale in block and "[possibly stale: main changed on" in block


def test_exports_carry_the_mark_and_an_import_ignores_it(
    memory_service: MemoryService, git_project: str, stale: str
) -> None:
    out = io.StringIO()
    memory_service.export(out, project=git_project)
    [line] = [json.loads(x) for x in out.getvalue().splitlines() if '"memory"' in x and stale in x]
    assert line["stale"].startswith("possibly stale")
    markdown = io.StringIO()
    memory_service.export(markdown, project=git_project, fmt="markdown")
    assert "possibly stale: main changed on" in markdown.getvalue()

    memory_service.delete(stale)
    summary = memory_service.import_text(out.getvalue(), project=git_project)
    assert summary.memories_added == 1


def test_stats_count_the_stale_memories(memory_service: MemoryService, git_project: str, stale: str) -> None:
    memory_service.remember("The greeting is in English", project=git_project)
    assert memory_service.stats().stale == 1


def test_confirm_clears_the_mark_until_the_next_change(
    memory_service: MemoryService, git_project: str, stale: str
) -> None:
    confirmed = memory_service.confirm(stale)
    assert confirmed.stale is None
    assert memory_service.show(stale).memory.stale is None
    assert memory_service.stats().stale == 0

    scan(memory_service, git_project, {"src/app.py": parsed("v3")})
    assert memory_service.show(stale).memory.stale is not None


def test_remembering_it_again_confirms_it(
    memory_service: MemoryService, git_project: str, stale: str
) -> None:
    again = memory_service.remember(DECISION, category="decision", project=git_project)
    assert again.duplicate_of == stale
    assert memory_service.show(stale).memory.stale is None


def test_editing_it_confirms_it(memory_service: MemoryService, git_project: str, stale: str) -> None:
    memory_service.edit(stale, text=DECISION + ", also on errors", project=git_project)
    assert memory_service.show(stale).memory.stale is None


def test_a_memory_about_a_deleted_symbol_says_it_no_longer_exists(
    memory_service: MemoryService, git_project: str, stale: str
) -> None:
    scan(memory_service, git_project, {"src/app.py": ParsedFile("python", (), (), (), (), 0)})
    flag = memory_service.show(stale).memory.stale
    assert flag is not None and "`main`, which no longer exists (deleted on" in flag
    assert memory_service.confirm(stale).stale == flag  # confirming does not bring the code back


def test_a_memory_about_a_deleted_file_says_it_no_longer_exists(
    memory_service: MemoryService, git_project: str
) -> None:
    scan(memory_service, git_project, {"src/app.py": parsed("v1")})
    note = memory_service.remember("src/app.py starts the server", project=git_project)
    assert [e.name for e in note.entities] == ["src/app.py"]
    scan(memory_service, git_project, {}, removed=("src/app.py",))
    flag = memory_service.show(note.memory.id).memory.stale
    assert flag is not None and flag.startswith("about src/app.py, which no longer exists (deleted on")


def test_a_memory_written_after_the_change_is_not_flagged(
    memory_service: MemoryService, git_project: str, stale: str
) -> None:
    newer = memory_service.remember("main() prints to stdout, never to a log", project=git_project)
    assert memory_service.show(newer.memory.id).memory.stale is None


@pytest.fixture(params=["memory", "kuzu"])
def service(request: pytest.FixtureRequest) -> MemoryService:
    """The service on the in-memory store and on Kùzu (``fake_memory``)."""
    return request.getfixturevalue("memory_service" if request.param == "memory" else "fake_memory")


def test_the_mark_follows_the_checkout_back_to_the_body_it_was_written_against(
    service: MemoryService, git_project: str
) -> None:
    scan(service, git_project, {"src/app.py": parsed("v1")})
    note = service.remember(DECISION, category="decision", project=git_project).memory
    scan(service, git_project, {"src/app.py": parsed("v2")})  # another branch checked out
    assert service.show(note.id).memory.stale is not None
    assert service.stats().stale == 1

    scan(service, git_project, {"src/app.py": parsed("v1")})  # and back
    assert service.show(note.id).memory.stale is None
    [hit] = service.recall("greeting before it returns", project=git_project).hits
    assert hit.memory.stale is None
    assert service.stats().stale == 0


def test_a_memory_confirmed_on_another_branch_is_marked_back_on_the_first(
    service: MemoryService, git_project: str
) -> None:
    scan(service, git_project, {"src/app.py": parsed("v1")})
    note = service.remember(DECISION, category="decision", project=git_project).memory
    scan(service, git_project, {"src/app.py": parsed("v2")})
    assert service.confirm(note.id).stale is None  # it holds of v2 too: written against v2 now

    scan(service, git_project, {"src/app.py": parsed("v1")})
    assert service.show(note.id).memory.stale is not None
    scan(service, git_project, {"src/app.py": parsed("v2")})
    assert service.show(note.id).memory.stale is None
