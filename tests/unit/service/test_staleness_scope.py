"""Which memories a code change flags "possibly stale" (``service/staleness.py``): a statement
about the code that changed, not a record of a past event (a commit bootstrap learned), and
not a memory about a method because the class around it changed elsewhere.

The code graph is given by bootstrap passes over fake sources (no git, no tree-sitter), or
stored by hand (``test_staleness.scan``), as bootstrap stores it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from support.fake_sources import FakeFiles, FakeHistory, FakeParser
from unit.service.test_staleness import scan

from graphmem.adapters.embedders import HashEmbedder
from graphmem.adapters.fake_code import FakeCodeGraph
from graphmem.adapters.fake_store import FakeGraphStore
from graphmem.adapters.git import GitToplevel
from graphmem.adapters.opencode_sessions import OpenCodeSessions
from graphmem.adapters.vector_index import HnswVectorIndex
from graphmem.app import build_memory
from graphmem.core.code import Definition, ParsedFile
from graphmem.core.commits import Commit
from graphmem.core.models import Category, Entity, EntityKind
from graphmem.core.ports import LearningSources
from graphmem.service.memory import MemoryService
from graphmem.service.semantic import SemanticIndex
from graphmem.settings import load_settings

SHA = "c" * 40


def context_file(*, invoke: str = "v1", close: str = "v1") -> ParsedFile:
    """``class Context`` (lines 1-9) with ``invoke`` (2-4) and ``close`` (6-8), then ``class
    ContextMenu`` (11-14) with ``open`` (12-13); a class's body holds its methods', so it changes
    with either."""
    definitions = (
        Definition("class", "Context", "Context", 1, 9, "class Context", None, f"k-{invoke}-{close}", None),
        Definition(
            "method", "invoke", "Context.invoke", 2, 4, "def invoke(self)", None, f"i-{invoke}", "Context"
        ),
        Definition(
            "method", "close", "Context.close", 6, 8, "def close(self)", None, f"c-{close}", "Context"
        ),
        Definition("class", "ContextMenu", "ContextMenu", 11, 14, "class ContextMenu", None, "m", None),
        Definition("method", "open", "ContextMenu.open", 12, 13, "def open(self)", None, "o", "ContextMenu"),
    )
    return ParsedFile("python", definitions, (), (), (), 0)


def qualified(entity: Entity) -> str:
    """A symbol's qualified name, a file's path: the last part of its key."""
    return entity.key.rsplit("::", 1)[-1]


class Checkout:
    """A repository's ``src/core.py`` (fake bytes, parsed as given) and one commit, on a service."""

    def __init__(self, tmp_path: Path) -> None:
        self.root = tmp_path / "repo"
        self.root.mkdir()
        self.parser = FakeParser()
        self.files = FakeFiles()
        self.history = FakeHistory()
        self.store = FakeGraphStore(dimension=64)
        sources = LearningSources(
            new_parser=lambda: self.parser,
            files=self.files,
            history=self.history,
            roots=OnTheDefaultBranch(),
            sessions=OpenCodeSessions(),
        )
        self.memory = build_memory(
            self.store,
            SemanticIndex(self.store, HashEmbedder(64), HnswVectorIndex),
            load_settings(data_dir=tmp_path / "data"),
            data_dir=tmp_path / "data",
            code=FakeCodeGraph(self.store),
            sources=sources,
        )
        self.project = str(self.root.resolve())
        self.version = 0

    def write(self, parsed: ParsedFile) -> None:
        """``src/core.py`` now holds ``parsed`` (new bytes, a later mtime)."""
        self.version += 1
        data = f"version {self.version}\n".encode()
        self.parser.results[data] = parsed
        self.files.files["src/core.py"] = (data, self.version)


class OnTheDefaultBranch(GitToplevel):
    def branch(self, root: Path) -> tuple[str, str] | None:
        return None


@pytest.fixture
def checkout(tmp_path: Path) -> Checkout:
    return Checkout(tmp_path)


def test_a_commit_is_not_flagged_when_the_class_it_changed_changes_later(checkout: Checkout) -> None:
    """The commit says what it changed then; the decision about the changed method is flagged."""
    checkout.write(context_file())
    checkout.history.commits = [
        Commit(
            SHA,
            "Ana",
            "ana@example.com",
            datetime(2026, 3, 1, tzinfo=UTC),
            "Retry invoke",
            "",
            ("src/core.py",),
        )
    ]
    checkout.history.blame["src/core.py"] = [SHA] * 9  # the class's lines and both methods'
    memory = checkout.memory
    memory.bootstrap(checkout.root)
    [event] = [m for m in checkout.store.all_memories() if m.category is Category.EVENT]
    linked = {qualified(e) for e in checkout.store.about([event.id])[event.id] if e.kind is EntityKind.SYMBOL}
    assert linked == {"Context", "Context.invoke", "Context.close"}
    note = memory.remember(
        "Context.invoke retries once on a timeout", category="decision", project=checkout.project
    )
    assert [qualified(e) for e in note.entities] == ["Context.invoke"]

    checkout.write(context_file(invoke="v2"))  # two lines of invoke, so of Context too
    memory.bootstrap(checkout.root)

    assert memory.show(event.id).memory.stale is None
    flag = memory.show(note.memory.id).memory.stale
    assert flag is not None and flag.startswith("possibly stale: Context.invoke changed on")
    assert memory.stats().stale == 1
    reviewed = memory.review(project=checkout.project)
    assert [item.memory.id for item in reviewed if any("stale" in why for why in item.reasons)] == [
        note.memory.id
    ]
    events = memory.get_context("src/core.py", project=checkout.project).to_dict()["groups"]["event"]
    assert [(item["id"], item["stale"]) for item in events] == [(event.id, None)]


def test_an_event_about_code_that_went_away_is_not_flagged(
    memory_service: MemoryService, git_project: str
) -> None:
    """What happened to it then still happened; a fact about it no longer holds."""
    scan(memory_service, git_project, {"src/app.py": context_file()})
    event = memory_service.remember(
        "Deployed the retry in `Context.invoke` of src/app.py", category="event", project=git_project
    ).memory
    fact = memory_service.remember(
        "`Context.invoke` retries once", category="fact", project=git_project
    ).memory
    assert {qualified(e) for e in memory_service.show(event.id).entities} == {"Context.invoke", "src/app.py"}

    scan(memory_service, git_project, {}, removed=("src/app.py",))

    assert memory_service.show(event.id).memory.stale is None
    assert "no longer exists" in (memory_service.show(fact.id).memory.stale or "")
    assert memory_service.stats().stale == 1


@pytest.fixture(params=["memory", "kuzu"])
def service(request: pytest.FixtureRequest) -> MemoryService:
    """The service on the in-memory store and on Kùzu (``fake_memory``)."""
    return request.getfixturevalue("memory_service" if request.param == "memory" else "fake_memory")


NARROW = "`Context`: `Context.invoke` retries once on a timeout"


def test_a_memory_about_a_method_and_its_class_is_not_flagged_by_another_method(
    service: MemoryService, git_project: str
) -> None:
    scan(service, git_project, {"src/app.py": context_file()})
    note = service.remember(NARROW, category="decision", project=git_project).memory
    assert sorted(qualified(e) for e in service.show(note.id).entities) == ["Context", "Context.invoke"]

    scan(service, git_project, {"src/app.py": context_file(close="v2")})  # Context changed, not invoke

    assert service.show(note.id).memory.stale is None
    [hit] = service.recall("retries once on a timeout", project=git_project).hits
    assert hit.memory.stale is None
    assert service.stats().stale == 0


def test_a_memory_about_a_method_and_its_class_is_flagged_when_the_method_changes(
    service: MemoryService, git_project: str
) -> None:
    scan(service, git_project, {"src/app.py": context_file()})
    note = service.remember(NARROW, category="decision", project=git_project).memory

    scan(service, git_project, {"src/app.py": context_file(invoke="v2")})

    flag = service.show(note.id).memory.stale
    assert flag is not None and flag.startswith("possibly stale: Context.invoke changed on")
    [hit] = service.recall("retries once on a timeout", project=git_project).hits
    assert hit.memory.stale == flag


def test_a_memory_about_the_class_alone_is_flagged_when_any_of_it_changes(
    memory_service: MemoryService, git_project: str
) -> None:
    scan(memory_service, git_project, {"src/app.py": context_file()})
    note = memory_service.remember("`Context` is made once per invocation", project=git_project).memory
    assert [qualified(e) for e in memory_service.show(note.id).entities] == ["Context"]

    scan(memory_service, git_project, {"src/app.py": context_file(close="v2")})

    flag = memory_service.show(note.id).memory.stale
    assert flag is not None and flag.startswith("possibly stale: Context changed on")


def test_a_class_is_not_narrowed_by_another_class_whose_name_starts_with_its_own(
    memory_service: MemoryService, git_project: str
) -> None:
    scan(memory_service, git_project, {"src/app.py": context_file()})
    note = memory_service.remember(
        "`Context` is made once per invocation, `ContextMenu.open` reads it", project=git_project
    ).memory
    assert sorted(qualified(e) for e in memory_service.show(note.id).entities) == [
        "Context",
        "ContextMenu.open",
    ]

    scan(memory_service, git_project, {"src/app.py": context_file(close="v2")})

    flag = memory_service.show(note.id).memory.stale
    assert flag is not None and flag.startswith("possibly stale: Context changed on")
