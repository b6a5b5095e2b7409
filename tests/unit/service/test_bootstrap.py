"""Bootstrapper on in-memory sources (tests/support/fake_sources.py): the pass's own logic.

No git and no tree-sitter: the files, their parse results and the history are given. The
store is real (``fake_memory``). The same passes on a real repository, with the real
parser and git, are tests/integration/test_bootstrap.py.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from support.fake_sources import EMPTY, FakeFiles, FakeHistory, FakeParser

from graphmem.core.code import Definition, ParsedFile
from graphmem.core.commits import Commit
from graphmem.core.models import Category, EntityKind
from graphmem.service.bootstrap import Bootstrapper
from graphmem.service.memory import MemoryService

NOW = datetime(2026, 3, 10, tzinfo=UTC)
APP = b"def main():\n    return 1\n"
MAIN = Definition("function", "main", "main", 1, 2, "def main()", None, "h1", None)


def commit(sha: str, *files: str, subject: str = "Change", email: str = "ana@example.com") -> Commit:
    return Commit(sha, "Ana Lopez", email, datetime(2026, 3, 1, tzinfo=UTC), subject, "", files)


class Run:
    """One repository (a real directory, fake contents) and the fakes a bootstrap reads."""

    def __init__(self, memory: MemoryService, root: Path) -> None:
        self.memory = memory
        self.root = root
        self.parser = FakeParser({APP: ParsedFile("python", (MAIN,), (), (), (), 0)})
        self.files = FakeFiles({"src/app.py": (APP, 1)})
        self.history = FakeHistory()

    def bootstrap(self, history: int = 500):  # type: ignore[no-untyped-def]
        assert self.memory.code is not None
        bootstrapper = Bootstrapper(
            self.memory,
            self.memory.code,
            lambda: NOW,
            parser=self.parser,
            files=self.files,
            history=self.history,
        )
        return bootstrapper.run(self.root, history=history)


@pytest.fixture
def run(fake_memory: MemoryService, tmp_path: Path) -> Run:
    root = tmp_path / "repo"
    root.mkdir()
    return Run(fake_memory, root)


def test_a_file_unchanged_since_the_last_pass_is_not_read_again(run: Run) -> None:
    first = run.bootstrap()
    second = run.bootstrap()

    assert (first.parsed, first.symbols) == (1, 1)
    assert (second.parsed, second.unchanged) == (0, 1)
    assert run.parser.parsed == [APP]


def test_a_file_touched_but_not_changed_is_not_parsed_again(run: Run) -> None:
    run.bootstrap()
    run.files.files["src/app.py"] = (APP, 2)  # a new mtime, the same bytes

    report = run.bootstrap()

    assert (report.parsed, report.unchanged) == (0, 1)
    assert run.parser.parsed == [APP]


def test_files_the_walker_refuses_are_counted_by_reason(run: Run) -> None:
    run.files.files["logo.py"] = ("binary", 1)

    report = run.bootstrap()

    assert report.skipped == {"binary": 1}
    assert report.files == 2 and report.parsed == 1


def test_parse_errors_name_the_worst_files(run: Run) -> None:
    broken = b"def (:\n"
    run.files.files["src/broken.py"] = (broken, 1)
    run.parser.results[broken] = ParsedFile("python", (), (), (), (), 3)

    report = run.bootstrap()

    assert report.parse_errors == 3
    assert report.parse_error_files == [("src/broken.py", 3)]


def test_a_removed_file_leaves_the_code_graph(run: Run) -> None:
    run.bootstrap()
    del run.files.files["src/app.py"]

    report = run.bootstrap()

    assert (report.removed, report.symbols) == (1, 0)


def test_agent_instructions_become_directives_once(run: Run) -> None:
    run.files.docs["AGENTS.md"] = b"# Rules\n\n- Always run make test before pushing.\n"

    first = run.bootstrap()
    second = run.bootstrap()

    directives = [m for m in run.memory.store.all_memories() if m.category is Category.DIRECTIVE]
    assert first.facts_added == 1 and second.facts_added == 0
    assert [m.text for m in directives] == ["Directive from AGENTS.md: always run make test before pushing."]


def test_an_unreadable_doc_is_skipped(run: Run) -> None:
    run.files.files["AGENTS.md"] = (b"", 1)  # listed, but read_doc cannot read it

    report = run.bootstrap()

    assert report.facts_added == 0


def test_commits_become_events_about_their_files_and_author_once(run: Run) -> None:
    run.history.commits = [commit("a" * 40, "src/app.py", "gone.py", subject="Fix main, fixes #12")]

    first = run.bootstrap()
    second = run.bootstrap()

    assert (first.commits, second.commits) == (1, 0)
    event = run.memory.store.get_memories(["mem_" + "a" * 16])["mem_" + "a" * 16]
    about = {e.kind: e.name for e in run.memory.store.about([event.id])[event.id]}
    assert event.category is Category.EVENT and event.source == "git:" + "a" * 40
    assert about[EntityKind.FILE] == "src/app.py"  # gone.py is no file of the project now
    assert about[EntityKind.PERSON] == "Ana Lopez"
    assert about[EntityKind.ISSUE] == "#12"


def test_a_commit_is_linked_to_the_function_whose_lines_it_last_changed(run: Run) -> None:
    run.history.commits = [commit("b" * 40, "src/app.py")]
    run.history.blame["src/app.py"] = ["b" * 40, "b" * 40]

    run.bootstrap()

    about = run.memory.store.about(["mem_" + "b" * 16])["mem_" + "b" * 16]
    assert [e.name for e in about if e.kind is EntityKind.SYMBOL] == ["main"]


def test_no_history_asked_reads_no_history(run: Run) -> None:
    run.history.commits = [commit("c" * 40, "src/app.py")]

    report = run.bootstrap(history=0)

    assert report.commits == 0 and run.history.reads == 0


def test_an_empty_repository_gives_an_empty_report(run: Run) -> None:
    run.files.files.clear()

    report = run.bootstrap()

    assert (report.files, report.parsed, report.symbols, report.commits) == (0, 0, 0, 0)
    assert run.parser.parsed == [] and EMPTY.definitions == ()
