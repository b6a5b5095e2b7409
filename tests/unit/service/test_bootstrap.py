"""bootstrap on in-memory sources (tests/support/fake_sources.py) and the in-memory store.

No git, no tree-sitter and no Kùzu: the files, their parse results and the history are
given, so these tests hold the pass's own logic. The same passes on a real repository,
with the real parser, git and Kùzu, are tests/integration/test_bootstrap.py.
"""

from __future__ import annotations

import io
import json
import threading
import time
from collections.abc import Collection, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest
from support.fake_sources import FakeFiles, FakeHistory, FakeParser

from graphmem.adapters.embedders import HashEmbedder
from graphmem.adapters.fake_code import FakeCodeGraph
from graphmem.adapters.fake_store import FakeGraphStore
from graphmem.adapters.git import GitToplevel
from graphmem.adapters.opencode_sessions import OpenCodeSessions
from graphmem.adapters.vector_index import HnswVectorIndex
from graphmem.app import build_memory
from graphmem.core.code import Definition, ParsedFile
from graphmem.core.codegraph import CodeScan
from graphmem.core.commits import Commit
from graphmem.core.keys import memory_id
from graphmem.core.models import Category, Entity, EntityKind, MemoryRecord, Status
from graphmem.core.ports import LearningSources
from graphmem.core.skipped_files import SKIPPED_KEY
from graphmem.errors import InvalidInputError
from graphmem.service import bootstrap
from graphmem.service.results import BootstrapReport
from graphmem.service.semantic import SemanticIndex
from graphmem.settings import load_settings

APP = b"def main():\n    return 1\n"
MAIN = Definition("function", "main", "main", 1, 2, "def main()", None, "h1", None)


def commit(sha: str, *files: str, subject: str = "Change") -> Commit:
    return Commit(sha, "Ana Lopez", "ana@example.com", datetime(2026, 3, 1, tzinfo=UTC), subject, "", files)


class Roots(GitToplevel):
    """git's answers of a checkout's project, but its branch: ``off`` (the branch and the default
    it is not; None: on the default branch)."""

    def __init__(self) -> None:
        super().__init__()
        self.off: tuple[str, str] | None = None

    def branch(self, root: Path) -> tuple[str, str] | None:
        return self.off


class Repo:
    """A repository (a real, empty directory; fake contents) and a service that bootstraps it."""

    def __init__(self, root: Path, data_dir: Path) -> None:
        self.root = root
        self.parser = FakeParser({APP: ParsedFile("python", (MAIN,), (), (), (), 0)})
        self.files = FakeFiles({"src/app.py": (APP, 1)})
        self.history = FakeHistory()
        self.roots = Roots()
        self.parsers_made = 0
        self.store = FakeGraphStore(dimension=64)
        sources = LearningSources(
            new_parser=self._new_parser,
            files=self.files,
            history=self.history,
            roots=self.roots,
            sessions=OpenCodeSessions(),
        )
        self.memory = build_memory(
            self.store,
            SemanticIndex(self.store, HashEmbedder(64), HnswVectorIndex),
            load_settings(data_dir=data_dir),
            data_dir=data_dir,
            code=FakeCodeGraph(self.store),
            sources=sources,
        )

    def _new_parser(self) -> FakeParser:
        self.parsers_made += 1
        return self.parser

    def bootstrap(self, history: int = 500) -> BootstrapReport:
        return self.memory.bootstrap(self.root, history=history)

    def memories(self, category: Category) -> list[MemoryRecord]:
        return [m for m in self.store.all_memories() if m.category is category]

    def about(self, memory_id: str) -> list[Entity]:
        return self.store.about([memory_id]).get(memory_id, [])


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    root = tmp_path / "repo"
    root.mkdir()
    return Repo(root, tmp_path / "data")


def test_a_file_unchanged_since_the_last_pass_is_not_read_again(repo: Repo) -> None:
    first = repo.bootstrap()
    second = repo.bootstrap()

    assert (first.parsed, first.symbols) == (1, 1)
    assert (second.parsed, second.unchanged) == (0, 1)
    assert repo.parser.parsed == [APP]


def test_each_pass_gets_a_parser_of_its_own(repo: Repo) -> None:
    repo.bootstrap()
    repo.bootstrap()

    assert repo.parsers_made == 2


def test_changed_files_go_to_the_parser_in_batches_and_the_parser_is_closed_after_the_pass(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bootstrap, "PARSE_BATCH", 2)
    repo.files.files.update({f"src/m{i}.py": (f"x = {i}\n".encode(), 1) for i in range(4)})

    report = repo.bootstrap()

    assert report.parsed == 5
    assert repo.parser.batches == [2, 2, 1]  # each batch may go to several processes at once
    assert repo.parser.closed


def test_the_next_batch_is_read_while_the_parser_has_the_last_one(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bootstrap, "PARSE_BATCH", 2)
    repo.files.files.update({f"src/m{i}.py": (f"x = {i}\n".encode(), 1) for i in range(3)})
    # Sorted, the listing is src/app.py, src/m0.py, src/m1.py, src/m2.py: two batches.
    read_next = threading.Event()
    read = repo.files.read_source

    def reading(root: Path, path: str) -> object:
        if path == "src/m1.py":
            read_next.set()
        return read(root, path)

    parse_many = repo.parser.parse_many
    saw_next_read: list[bool] = []

    def parsing(sources: Sequence[tuple[bytes, str]]) -> list[ParsedFile]:
        if not saw_next_read:  # the first batch: held until the second is read, or long enough
            saw_next_read.append(read_next.wait(timeout=5))
        return parse_many(sources)

    monkeypatch.setattr(repo.files, "read_source", reading)
    monkeypatch.setattr(repo.parser, "parse_many", parsing)

    report = repo.bootstrap()

    assert saw_next_read == [True]
    assert report.parsed == 4
    assert repo.parser.batches == [2, 2]


def test_a_first_scan_starts_the_parser_before_the_history_is_read_and_a_rescan_as_it_finds_changes(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo.files.files.update({f"src/m{i}.py": (f"x = {i}\n".encode(), 1) for i in range(3)})
    repo.history.commits = [commit("a" * 40, "src/app.py")]
    prepared_when_read: list[list[int]] = []
    read_history = repo.history.read_history

    def reading(*args: object, **kwargs: object) -> list[Commit]:
        prepared_when_read.append(list(repo.parser.prepared))
        return read_history(*args, **kwargs)

    monkeypatch.setattr(repo.history, "read_history", reading)

    repo.bootstrap()
    assert prepared_when_read == [[4]]  # every listed file: its processes start first

    repo.bootstrap()
    assert repo.parser.prepared == [4]  # a re-scan that parses nothing starts nothing
    repo.files.files["src/m0.py"] = (b"x = 10\n", 2)
    repo.bootstrap()
    assert repo.parser.prepared == [4, 1]  # a re-scan starts them for the files it found changed
    assert repo.parser.batches[-1] == 1


def test_a_rescan_starts_the_parser_at_its_first_changed_file_not_at_its_first_batch(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bootstrap, "PARSE_BATCH", 2)
    repo.files.files.update({f"src/m{i}.py": (f"x = {i}\n".encode(), 1) for i in range(3)})
    repo.bootstrap()
    repo.files.files.update({f"src/m{i}.py": (f"x = {i + 10}\n".encode(), 2) for i in range(3)})
    prepared_when_parsed: list[list[int]] = []
    parse_many = repo.parser.parse_many

    def parsing(sources: Sequence[tuple[bytes, str]]) -> list[ParsedFile]:
        prepared_when_parsed.append(list(repo.parser.prepared))
        return parse_many(sources)

    monkeypatch.setattr(repo.parser, "parse_many", parsing)
    report = repo.bootstrap()

    # The first scan's 4; then m0 and m1 as each was found, before their batch went to the
    # parser; m2 comes after the first batch, whose processes are running
    assert prepared_when_parsed == [[4, 1, 2], [4, 1, 2]]
    assert report.parsed == 3


def test_git_reads_the_history_while_the_files_are_parsed(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parse does not wait for the history's read (git log, then the commits the store
    has): the parser has its first batch while git still reads."""
    repo.history.commits = [commit("b" * 40, "src/app.py")]
    parsing = threading.Event()
    read_history, parse_many = repo.history.read_history, repo.parser.parse_many

    def reading(*args: object, **kwargs: object) -> list[Commit]:
        assert parsing.wait(10), "the parse waited for the history to be read"
        return read_history(*args, **kwargs)

    def parse(sources: Sequence[tuple[bytes, str]]) -> list[ParsedFile]:
        parsing.set()
        return parse_many(sources)

    monkeypatch.setattr(repo.history, "read_history", reading)
    monkeypatch.setattr(repo.parser, "parse_many", parse)
    report = repo.bootstrap()
    assert (report.parsed, report.commits) == (1, 1)


def test_a_rescan_reads_the_stored_parses_while_the_changed_files_are_parsed(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parses the edges are resolved with again (every file's, as stored) are read on a thread
    of their own from a re-scan's first changed file on, not after its parse; a first scan, which
    has none stored, reads them after its parse, as before."""
    repo.files.files.update({f"src/m{i}.py": (f"x = {i}\n".encode(), 1) for i in range(2)})
    code = repo.memory.code
    assert code is not None
    loading = threading.Event()
    load_parsed, parse_many = code.load_parsed, repo.parser.parse_many
    read_while_parsing: list[bool] = []

    def loading_parsed(project: str, paths: Collection[str] | None = None) -> dict[str, ParsedFile]:
        if paths is None:
            loading.set()
        return load_parsed(project, paths)

    def parse(sources: Sequence[tuple[bytes, str]]) -> list[ParsedFile]:
        # a re-scan waits for the read to begin (before the change: after the parse, never here)
        read_while_parsing.append(loading.wait(10) if read_while_parsing else loading.is_set())
        return parse_many(sources)

    monkeypatch.setattr(code, "load_parsed", loading_parsed)
    monkeypatch.setattr(repo.parser, "parse_many", parse)
    repo.bootstrap(history=0)
    loading.clear()
    repo.files.files["src/m1.py"] = (b"x = 11\n", 2)
    report = repo.bootstrap(history=0)

    assert read_while_parsing == [False, True]
    assert (report.parsed, report.unchanged, report.symbols) == (1, 2, 1)
    assert [s.qualified_name for s in code.symbols_in(str(repo.root.resolve()), "src/app.py")] == ["main"]


def test_git_is_asked_for_the_head_and_the_history_notes_beside_the_parse(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The commit checked out (which the code is stored at) and what to tell of the history are
    git's answers too: read on the history's thread while the files are parsed, not after."""
    repo.history.commits = [commit("b" * 40, "src/app.py")]
    repo.history.said = ["a shallow clone: run git fetch --unshallow"]
    told = threading.Event()
    asked: dict[str, str] = {}
    head, notes, parse_many = repo.history.head, repo.history.notes, repo.parser.parse_many

    def asking_head(root: Path) -> str | None:
        asked["head"] = threading.current_thread().name
        return head(root)

    def asking_notes(root: Path) -> list[str]:
        asked["notes"] = threading.current_thread().name
        told.set()
        return notes(root)

    def parse(sources: Sequence[tuple[bytes, str]]) -> list[ParsedFile]:
        assert told.wait(10), "git's head and notes were not asked while the files were parsed"
        return parse_many(sources)

    monkeypatch.setattr(repo.history, "head", asking_head)
    monkeypatch.setattr(repo.history, "notes", asking_notes)
    monkeypatch.setattr(repo.parser, "parse_many", parse)
    report = repo.bootstrap()

    assert threading.current_thread().name not in asked.values()
    assert set(asked) == {"head", "notes"}
    assert report.notes == ["a shallow clone: run git fetch --unshallow"]
    assert repo.memory.code.scanned_head(str(repo.root.resolve())) == "b" * 40


def test_the_pass_stores_its_code_while_the_parser_processes_leave(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parser is closed (its processes told to go) once the files are parsed, and the pass
    stores what they parsed without waiting for them to be gone; it ends once they are."""
    saving = threading.Event()
    saved_before_closed: list[bool] = []
    assert repo.memory.code is not None
    save, close = repo.memory.code.save, repo.parser.close

    def saving_code(scan: CodeScan) -> dict[str, int]:
        saving.set()
        return save(scan)

    def closing() -> None:
        saved_before_closed.append(saving.wait(10))
        close()

    monkeypatch.setattr(repo.memory.code, "save", saving_code)
    monkeypatch.setattr(repo.parser, "close", closing)
    report = repo.bootstrap()

    assert saved_before_closed[0] is True  # the pass did not wait for the close to store its code
    assert repo.parser.closed  # and did not end before it
    assert report.parsed == 1


def test_a_history_that_cannot_be_read_fails_the_pass_before_it_stores_anything(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo.history.commits = [commit("b" * 40, "src/app.py")]

    def unreadable(*args: object, **kwargs: object) -> list[Commit]:
        raise OSError("git went away")

    monkeypatch.setattr(repo.history, "read_history", unreadable)
    with pytest.raises(OSError, match="git went away"):
        repo.bootstrap()
    assert repo.parser.closed
    assert repo.memory.code.file_states(str(repo.root.resolve())) == {}
    assert repo.store.all_memories() == []

    monkeypatch.undo()  # the next pass, git answering, stores the whole pass
    assert repo.bootstrap().parsed == 1


def test_a_pass_refused_on_another_branch_stores_nothing_and_starts_no_parser(repo: Repo) -> None:
    repo.bootstrap(history=0)  # on the default branch: the project's graph is its
    project = str(repo.root.resolve())
    assert repo.memory.code is not None
    states = repo.memory.code.file_states(project)
    repo.files.files["src/app.py"] = (b"def main():\n    return 2\n", 2)
    repo.files.files["src/new.py"] = (b"def new():\n    return 3\n", 1)
    repo.history.commits = [commit("b" * 40, "src/app.py")]
    repo.roots.off = ("feature/refunds", "main")

    with pytest.raises(InvalidInputError, match="feature/refunds"):
        repo.bootstrap()

    assert (repo.parsers_made, repo.parser.prepared, repo.parser.parsed) == (1, [1], [APP])
    assert repo.history.reads == 0
    assert repo.memory.code.file_states(project) == states
    assert repo.store.all_memories() == []
    assert repo.store.get_meta(bootstrap.CODE_BRANCH_KEY + project) == ""  # still the default branch's


def test_the_parser_is_closed_when_reading_files_fails(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    def unreadable(root: Path, path: str) -> None:
        raise OSError("the disk went away")

    monkeypatch.setattr(repo.files, "read_source", unreadable)
    with pytest.raises(OSError):
        repo.bootstrap()
    assert repo.parser.closed


def test_a_file_touched_but_not_changed_is_not_parsed_again(repo: Repo) -> None:
    repo.bootstrap()
    repo.files.files["src/app.py"] = (APP, 2)  # a new mtime, the same bytes

    report = repo.bootstrap()

    assert (report.parsed, report.unchanged) == (0, 1)
    assert repo.parser.parsed == [APP]


def test_files_the_walker_refuses_are_counted_by_reason_named_and_not_counted_as_indexed(repo: Repo) -> None:
    for n in range(7):
        repo.files.files[f"assets/logo{n}.py"] = ("binary", 1)

    report = repo.bootstrap()
    again = repo.bootstrap()

    assert report.skipped == {"binary": 7}
    # the first few of each reason, sorted: the report's reader adds "and 2 more"
    assert report.skipped_files == {"binary": [f"assets/logo{n}.py" for n in range(5)]}
    assert (report.files, report.parsed, report.unchanged) == (1, 1, 0)  # files: parsed + unchanged
    assert (again.files, again.parsed, again.unchanged, again.skipped) == (1, 0, 1, {"binary": 7})


def test_the_store_keeps_which_files_the_last_pass_skipped_and_why(repo: Repo) -> None:
    repo.files.files["src/logo.py"] = ("binary", 1)
    repo.bootstrap()
    assert json.loads(repo.store.get_meta(SKIPPED_KEY + str(repo.root.resolve())) or "") == {
        "src/logo.py": "binary"
    }

    repo.files.files["src/logo.py"] = (APP, 2)  # no longer binary: the next pass forgets its skip
    repo.bootstrap()

    assert json.loads(repo.store.get_meta(SKIPPED_KEY + str(repo.root.resolve())) or "") == {}


def test_parse_errors_name_the_worst_files(repo: Repo) -> None:
    broken = b"def (:\n"
    repo.files.files["src/broken.py"] = (broken, 1)
    repo.parser.results[broken] = ParsedFile("python", (), (), (), (), 3)

    report = repo.bootstrap()

    assert report.parse_errors == 3
    assert report.parse_error_files == [("src/broken.py", 3)]


def test_a_removed_file_leaves_the_code_graph(repo: Repo) -> None:
    repo.bootstrap()
    del repo.files.files["src/app.py"]

    report = repo.bootstrap()

    assert (report.removed, report.symbols) == (1, 0)


@pytest.mark.parametrize(
    ("denied", "removed"),
    [("src/app.py", 0), ("src/", 0), ("", 0), ("src/app", 1), ("sr/", 1)],  # "": the whole project
)
def test_a_file_this_user_may_not_read_now_is_kept_not_removed(repo: Repo, denied: str, removed: int) -> None:
    repo.bootstrap()
    del repo.files.files["src/app.py"]  # not listed: its folder may not be entered (chmod 000)
    repo.files.denied = [denied]

    report = repo.bootstrap()

    assert (report.removed, report.symbols) == (removed, 1 - removed)


def test_agent_instructions_become_directives_once(repo: Repo) -> None:
    repo.files.docs["AGENTS.md"] = b"# Rules\n\n- Always run make test before pushing.\n"

    first = repo.bootstrap()
    second = repo.bootstrap()

    assert (first.facts_added, second.facts_added) == (1, 0)
    assert [m.text for m in repo.memories(Category.DIRECTIVE)] == [
        "Directive from AGENTS.md: always run make test before pushing."
    ]


def test_two_checkouts_of_one_repository_each_get_their_facts(repo: Repo) -> None:
    repo.files.docs["AGENTS.md"] = b"# Rules\n\n- Always run make test before pushing.\n"
    other = repo.root.parent / "other-checkout"
    other.mkdir()

    first = repo.bootstrap()
    second = repo.memory.bootstrap(other)

    assert (first.facts_added, second.facts_added) == (1, 1)
    directives = repo.memories(Category.DIRECTIVE)
    assert sorted(m.project or "" for m in directives) == sorted([str(repo.root), str(other)])


def test_a_restored_backup_of_facts_holds_the_facts_the_next_pass_finds(repo: Repo, tmp_path: Path) -> None:
    repo.files.docs["AGENTS.md"] = b"# Rules\n\n- Always run make test before pushing.\n"
    repo.files.docs["README.md"] = b"# Shop\n\nA shop for selling things online to people.\n"
    repo.bootstrap()
    backup = io.StringIO()
    repo.memory.export(backup)
    restored = Repo(repo.root, tmp_path / "restored")
    restored.files.docs = dict(repo.files.docs)
    restored.memory.import_text(backup.getvalue(), name="backup.jsonl")

    report = restored.bootstrap()  # each fact's id is the one its import brought

    assert report.facts_added == 0
    by_category = {m.category: m for m in restored.store.all_memories()}
    assert set(by_category) == {Category.DIRECTIVE, Category.FACT}
    assert by_category[Category.DIRECTIVE].status is Status.PROPOSED  # an import never makes a rule
    restored.files.docs["README.md"] = b"# Shop\n\nA shop for selling handmade things to people.\n"
    assert restored.bootstrap().facts_updated == 1
    [fact] = restored.memories(Category.FACT)
    assert (fact.id, fact.source) == (by_category[Category.FACT].id, "import:backup.jsonl")
    assert "handmade" in fact.text


def test_a_rule_gone_from_its_file_is_archived(repo: Repo) -> None:
    repo.files.docs["AGENTS.md"] = b"# Rules\n\n- Always run make test before pushing.\n"
    repo.bootstrap()
    repo.files.docs["AGENTS.md"] = b"# Rules\n"

    report = repo.bootstrap()

    assert report.facts_archived == 1


def test_a_doc_that_cannot_be_read_gives_no_fact(repo: Repo) -> None:
    repo.files.files["AGENTS.md"] = (b"- Always lint.\n", 1)  # listed, but read_doc has nothing

    report = repo.bootstrap()

    assert report.facts_added == 0


def test_commits_become_events_about_their_files_author_and_refs_once(repo: Repo) -> None:
    repo.history.commits = [commit("a" * 40, "src/app.py", "gone.py", subject="Fix main, fixes #12")]

    first = repo.bootstrap()
    second = repo.bootstrap()

    assert (first.commits, second.commits) == (1, 0)
    [event] = repo.memories(Category.EVENT)
    about = {e.kind: e.name for e in repo.about(event.id)}
    assert event.source == "git:" + "a" * 40
    assert about[EntityKind.FILE] == "src/app.py"  # gone.py is no file of the project now
    assert about[EntityKind.PERSON] == "Ana Lopez"
    assert about[EntityKind.ISSUE] == "#12"


def test_a_commit_is_about_the_files_the_pass_leaves_in_the_graph(repo: Repo) -> None:
    """One the pass found unchanged, one it added, and not one it removed."""
    repo.files.files["src/old.py"] = (b"OLD = 1\n", 1)
    repo.bootstrap(history=0)
    del repo.files.files["src/old.py"]
    repo.files.files["src/new.py"] = (b"NEW = 1\n", 1)
    repo.history.commits = [commit("e" * 40, "src/app.py", "src/new.py", "src/old.py")]

    report = repo.bootstrap()

    assert (report.parsed, report.removed, report.unchanged) == (1, 1, 1)
    [event] = repo.memories(Category.EVENT)
    assert {e.name for e in repo.about(event.id) if e.kind is EntityKind.FILE} == {"src/app.py", "src/new.py"}


def test_a_commit_is_linked_to_the_function_whose_lines_it_last_changed(repo: Repo) -> None:
    repo.history.commits = [commit("b" * 40, "src/app.py")]
    repo.history.blame["src/app.py"] = ["b" * 40, "b" * 40]

    repo.bootstrap()

    [event] = repo.memories(Category.EVENT)
    assert [e.name for e in repo.about(event.id) if e.kind is EntityKind.SYMBOL] == ["main"]


def test_blame_walks_back_only_to_a_day_before_the_oldest_commit_it_links(repo: Repo) -> None:
    """A line git last changed before the history read has no memory to link: blame need not
    walk the rest of the file's history to say so."""
    older = Commit(
        "d" * 40, "Ana", "ana@example.com", datetime(2026, 2, 1, tzinfo=UTC), "Old", "", ("src/app.py",)
    )
    repo.history.commits = [commit("b" * 40, "src/app.py"), older]
    repo.history.blame["src/app.py"] = ["b" * 40, ""]  # line 2: before the history read

    repo.bootstrap()

    assert repo.history.blamed_since == [datetime(2026, 1, 31, tzinfo=UTC)]
    symbols = {
        e.source: [x.name for x in repo.about(e.id) if x.kind is EntityKind.SYMBOL]
        for e in repo.memories(Category.EVENT)
    }
    assert symbols == {"git:" + "b" * 40: ["main"], "git:" + "d" * 40: []}


def test_the_files_are_blamed_while_they_are_parsed(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    """git blames the files the new commits touched while the parser works: the history is read
    and the blames started beside the parse, whose answers link the commits at the end."""
    repo.history.commits = [commit("b" * 40, "src/app.py")]
    repo.history.blame["src/app.py"] = ["b" * 40, "b" * 40]
    blaming = threading.Event()
    blame_files, parse_many = repo.history.blame_files, repo.parser.parse_many

    def blame(
        root: Path, paths: Sequence[str], since: datetime | None = None
    ) -> Iterator[tuple[str, list[str]]]:
        blaming.set()
        yield from blame_files(root, paths, since)

    def parse(sources: Sequence[tuple[bytes, str]]) -> list[ParsedFile]:
        assert blaming.wait(10), "nothing was blamed while the files were parsed"
        return parse_many(sources)

    monkeypatch.setattr(repo.history, "blame_files", blame)
    monkeypatch.setattr(repo.parser, "parse_many", parse)
    repo.bootstrap()

    [event] = repo.memories(Category.EVENT)
    assert [e.name for e in repo.about(event.id) if e.kind is EntityKind.SYMBOL] == ["main"]


def test_a_pass_that_fails_stops_its_blames(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    repo.history.commits = [commit("b" * 40, "src/app.py")]
    closed = threading.Event()

    def blame(
        root: Path, paths: Sequence[str], since: datetime | None = None
    ) -> Iterator[tuple[str, list[str]]]:
        try:
            for _ in range(6000):  # git blaming for a minute
                time.sleep(0.01)
                yield "src/app.py", []
        finally:
            closed.set()

    def unreadable(root: Path, path: str) -> None:
        raise OSError("the disk went away")

    monkeypatch.setattr(repo.history, "blame_files", blame)
    monkeypatch.setattr(repo.files, "read_source", unreadable)
    with pytest.raises(OSError):
        repo.bootstrap()
    assert closed.is_set()


def test_no_history_asked_reads_no_history(repo: Repo) -> None:
    repo.history.commits = [commit("c" * 40, "src/app.py")]

    report = repo.bootstrap(history=0)

    assert report.commits == 0 and repo.history.reads == 0


def test_an_empty_repository_gives_an_empty_report(repo: Repo) -> None:
    repo.files.files.clear()

    report = repo.bootstrap()

    assert (report.files, report.parsed, report.symbols, report.commits) == (0, 0, 0, 0)
    assert repo.parser.parsed == []


def test_what_the_history_lacks_is_reported(repo: Repo) -> None:
    repo.history.said = ["a shallow clone: run git fetch --unshallow"]

    report = repo.bootstrap()

    assert report.notes == ["a shallow clone: run git fetch --unshallow"]
    assert repo.bootstrap(history=0).notes == []  # no history asked: nothing to say about it


def test_a_second_clone_of_the_repository_gets_its_history_too(repo: Repo, tmp_path: Path) -> None:
    repo.history.commits = [commit("a" * 40, "src/app.py", subject="Fix main")]
    clone = tmp_path / "clone"
    clone.mkdir()

    reports = [
        repo.bootstrap(),
        repo.memory.bootstrap(clone, history=500),
        repo.memory.bootstrap(clone, history=500),
    ]

    assert [r.commits for r in reports] == [1, 1, 0]  # once for each clone
    events = repo.memories(Category.EVENT)
    assert len({e.project for e in events}) == 2
    # The first keeps the sha's id, as every store made before holds it.
    assert memory_id(commit="a" * 40) in {e.id for e in events}
    assert repo.bootstrap().commits == 0
