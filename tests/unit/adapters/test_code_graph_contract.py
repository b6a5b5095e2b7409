"""The contract of ``core.ports.CodeGraph``, run against the Kùzu code graph, the PostgreSQL one and
the in-memory one.

Each store is given the same passes (``CodeScan``s built from hand-written parsed files, no
parser) and must answer alike. A new code graph joins by adding itself to ``GRAPHS``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path

import pytest
from support.stores import new_kuzu, postgres_url

from graphmem.adapters.fake_code import FakeCodeGraph
from graphmem.adapters.fake_gitlab_graph import FakeGitLabGraph
from graphmem.adapters.fake_store import FakeGraphStore
from graphmem.adapters.kuzu_code import KuzuCodeGraph
from graphmem.adapters.kuzu_connection import FEW_EDGE_KEYS
from graphmem.adapters.kuzu_gitlab import KuzuGitLabGraph
from graphmem.adapters.kuzu_store import KuzuGraphStore
from graphmem.adapters.postgres_code import PostgresCodeGraph
from graphmem.adapters.postgres_gitlab import PostgresGitLabGraph
from graphmem.adapters.postgres_store import PostgresGraphStore
from graphmem.core.code import CallRef, Definition, ImportRef, ParsedFile
from graphmem.core.code_moves import MovePlan, SymbolMove
from graphmem.core.codegraph import CodeScan, FileState, ProjectCode, file_key, module_key, symbol_key
from graphmem.core.enrichment import target_key
from graphmem.core.gitlab import ChangedFile, MergeRequestData, Person
from graphmem.core.gitlab_edits import GitLabAnswer, edit_for
from graphmem.core.gitlab_ports import GitLabGraph
from graphmem.core.models import Category, Entity, EntityKind, MemoryRecord, Scope
from graphmem.core.ports import CodeGraph, GraphStore

PROJECT = "/src/proj"
T0 = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
T1 = T0 + timedelta(hours=1)

GRAPHS: dict[str, Callable[[Path, pytest.FixtureRequest], tuple[GraphStore, CodeGraph]]] = {
    "kuzu": lambda path, request: _kuzu(path, request),
    "memory": lambda path, _: _memory(),
    "postgres": lambda _, request: _postgres(request),
}


def _kuzu(path: Path, request: pytest.FixtureRequest) -> tuple[GraphStore, CodeGraph]:
    store = new_kuzu(path / "data", request, 8)
    return store, KuzuCodeGraph(store)


def _postgres(request: pytest.FixtureRequest) -> tuple[GraphStore, CodeGraph]:
    store = PostgresGraphStore(postgres_url(request, 8), dimension=8)
    return store, PostgresCodeGraph(store)


def _memory() -> tuple[GraphStore, CodeGraph]:
    store = FakeGraphStore(dimension=8)
    return store, FakeCodeGraph(store)


@pytest.fixture(params=sorted(GRAPHS))
def graphs(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[GraphStore, CodeGraph]]:
    store, code = GRAPHS[request.param](tmp_path, request)
    yield store, code
    store.close()


def function(name: str, line: int, body: str = "", parent: str | None = None) -> Definition:
    qualified = f"{parent}.{name}" if parent else name
    return Definition(
        "function", name, qualified, line, line + 1, f"def {name}()", None, f"hash-{qualified}-{body}", parent
    )


def parsed(
    *definitions: Definition, calls: tuple[CallRef, ...] = (), imports: tuple[ImportRef, ...] = ()
) -> ParsedFile:
    return ParsedFile("python", definitions, calls, imports, (), 0)


def save(
    code: CodeGraph,
    files: dict[str, ParsedFile],
    *,
    removed: tuple[str, ...] = (),
    at: datetime = T0,
    moves: MovePlan | None = None,
    head: str | None = None,
) -> dict[str, int]:
    """One bootstrap pass, as service/bootstrap.py stores it."""
    project = ProjectCode(PROJECT, code.load_parsed(PROJECT))
    for path in removed:
        project.files.pop(path, None)
    project.files.update(files)
    changed = {path: (p, FileState(path, f"content-{path}-{at}", 10, 1)) for path, p in files.items()}
    scan = CodeScan(PROJECT, changed, list(removed), project, project.edges(), at, moves or MovePlan(), head)
    return code.save(scan)


APP = parsed(
    function("main", 3),
    function("run", 8),
    calls=(CallRef("helper", None, 4, "main"), CallRef("run", None, 5, "main")),
    imports=(ImportRef("util", ("helper",), None, 1), ImportRef("requests", (), None, 2)),
)
UTIL = parsed(function("helper", 1), function("Tool", 5), function("apply", 6, parent="Tool"))


def key(path: str, qualified: str) -> str:
    return symbol_key(PROJECT, path, qualified)


def remember_about(store: GraphStore, entity_key: str, kind: EntityKind) -> None:
    record = MemoryRecord(
        f"m-{entity_key}", "a note", Category.FACT, Scope.GLOBAL, None, T0, T0, T0, content_hash=entity_key
    )
    store.add_memories([record])
    store.link_about([(record.id, Entity(entity_key, kind, entity_key))])


def test_a_saved_pass_is_read_back(graphs: tuple[GraphStore, CodeGraph]) -> None:
    _, code = graphs
    save(code, {"app.py": APP, "util.py": UTIL})
    assert set(code.file_states(PROJECT)) == {"app.py", "util.py"}
    assert code.file_states(PROJECT)["app.py"] == FileState("app.py", f"content-app.py-{T0}", 10, 1)
    assert code.load_parsed(PROJECT) == {"app.py": APP, "util.py": UTIL}
    assert code.load_parsed(PROJECT, ["util.py"]) == {"util.py": UTIL}
    assert not code.scan_interrupted(PROJECT)
    assert code.file_states("/elsewhere") == {}


def test_projects_are_those_with_a_live_file(graphs: tuple[GraphStore, CodeGraph]) -> None:
    _, code = graphs
    assert code.projects() == set()
    save(code, {"app.py": APP, "util.py": UTIL})
    assert code.projects() == {PROJECT}
    save(code, {}, removed=("app.py", "util.py"), at=T1)  # kept as nodes, no longer live
    assert code.projects() == set()


def test_symbols_are_listed_by_line_and_are_entities(graphs: tuple[GraphStore, CodeGraph]) -> None:
    store, code = graphs
    save(code, {"util.py": UTIL})
    assert [s.qualified_name for s in code.symbols_in(PROJECT, "util.py")] == ["helper", "Tool", "Tool.apply"]
    helper = code.symbols([key("util.py", "helper"), "Symbol:nope"])
    assert list(helper) == [key("util.py", "helper")]
    assert helper[key("util.py", "helper")].body_changed_at is None  # as first seen
    entity = store.get_entities([key("util.py", "helper")])[key("util.py", "helper")]
    assert (entity.kind, entity.name, entity.title) == (EntityKind.SYMBOL, "helper", "def helper()")
    assert file_key(PROJECT, "util.py") in store.get_entities([file_key(PROJECT, "util.py")])


def test_find_symbols_matches_names_and_qualified_suffixes(graphs: tuple[GraphStore, CodeGraph]) -> None:
    _, code = graphs
    save(code, {"util.py": UTIL})
    assert [s.key for s in code.find_symbols(PROJECT, "apply")] == [key("util.py", "Tool.apply")]
    assert [s.key for s in code.find_symbols(None, "Tool.apply")] == [key("util.py", "Tool.apply")]
    assert code.find_symbols("/elsewhere", "apply") == []
    assert len(code.find_symbols(None, "helper", limit=0)) == 0


def test_unique_symbols_names_only_what_one_live_symbol_is_called(
    graphs: tuple[GraphStore, CodeGraph],
) -> None:
    store, code = graphs
    save(code, {"app.py": APP, "util.py": UTIL, "jobs.py": parsed(function("run", 1), function("old", 4))})
    remember_about(store, key("jobs.py", "old"), EntityKind.SYMBOL)  # kept, as deleted, once gone
    save(code, {"jobs.py": parsed(function("run", 1))}, at=T1)
    found = code.unique_symbols(PROJECT, ["helper", "apply", "run", "old", "nope"])
    assert {name: s.key for name, s in found.items()} == {
        "helper": key("util.py", "helper"),
        "apply": key("util.py", "Tool.apply"),
    }
    assert code.unique_symbols("/elsewhere", ["helper"]) == {}
    assert code.unique_symbols(PROJECT, []) == {}


def test_a_memory_about_a_symbol_leaves_its_code_name_as_the_pass_stored_it(
    graphs: tuple[GraphStore, CodeGraph],
) -> None:
    store, code = graphs
    save(code, {"util.py": UTIL})
    apply = key("util.py", "Tool.apply")
    # What the writer links a memory to: the symbol as an entity, under its qualified name.
    store.upsert_entities([Entity(apply, EntityKind.SYMBOL, "Tool.apply", PROJECT, "def apply(self)")])

    assert {name: s.key for name, s in code.unique_symbols(PROJECT, ["apply"]).items()} == {"apply": apply}
    assert [s.key for s in code.find_symbols(PROJECT, "apply")] == [apply]


def test_a_symbol_only_an_import_named_is_no_code_until_a_pass_finds_it(
    graphs: tuple[GraphStore, CodeGraph],
) -> None:
    store, code = graphs
    apply = key("util.py", "Tool.apply")
    # An imported memory about it, and the entity as an export carries it; no pass yet.
    store.upsert_entities([Entity(apply, EntityKind.SYMBOL, "Tool.apply", PROJECT, "def apply(self)")])
    remember_about(store, apply, EntityKind.SYMBOL)

    assert code.symbols([apply]) == {}
    assert code.find_symbols(PROJECT, "Tool.apply") == [] and code.find_symbols(None, "apply") == []
    assert code.unique_symbols(PROJECT, ["apply"]) == {}
    assert code.symbols_in(PROJECT, "util.py") == []
    assert code.code_links(100) == []  # nothing to call stale: no pass has seen its code


def test_calls_are_followed_both_ways(graphs: tuple[GraphStore, CodeGraph]) -> None:
    _, code = graphs
    save(code, {"app.py": APP, "util.py": UTIL})
    main = key("app.py", "main")
    outgoing = {(other.key, given) for other, given, _ in code.calls([main], incoming=False, limit=10)}
    assert outgoing == {(key("util.py", "helper"), main), (key("app.py", "run"), main)}
    incoming = code.calls([key("util.py", "helper")], incoming=True, limit=10)
    assert [(other.key, given) for other, given, _ in incoming] == [(main, key("util.py", "helper"))]
    assert len(code.calls([main], incoming=False, limit=1)) == 1


# Past the few keys Kùzu looks up one by one (kuzu_connection.py): one join for them all.
MANY = FEW_EDGE_KEYS + 50
NAMES = [f"f{i:03}" for i in range(MANY)]
CHAIN = parsed(
    *(function(name, 3 * i + 1) for i, name in enumerate(NAMES)),
    calls=tuple(CallRef(NAMES[i + 1], None, 3 * i + 2, NAMES[i]) for i in range(MANY - 1)),
)


def test_many_symbols_are_read_and_followed_at_once(graphs: tuple[GraphStore, CodeGraph]) -> None:
    _, code = graphs
    save(code, {"chain.py": CHAIN})
    keys = [key("chain.py", name) for name in NAMES]
    asked = [*keys, "Symbol:nope", *keys[:5]]

    assert set(code.symbols(asked)) == set(keys)
    callers = code.calls(asked, incoming=True, limit=10 * MANY)
    assert sorted((other.key, given) for other, given, _ in callers) == list(pairwise(keys))
    assert len(code.calls(asked, incoming=False, limit=10)) == 10
    assert set(code.unique_symbols(PROJECT, [*NAMES, "nope", NAMES[0]])) == set(NAMES)


def test_many_symbols_and_files_go_at_once(graphs: tuple[GraphStore, CodeGraph]) -> None:
    store, code = graphs
    paths = [f"m{i:03}.py" for i in range(MANY)]
    save(code, {"chain.py": CHAIN, **{path: parsed(function("x", 1)) for path in paths}})
    remember_about(store, file_key(PROJECT, paths[0]), EntityKind.FILE)
    remember_about(store, key("chain.py", NAMES[1]), EntityKind.SYMBOL)

    save(code, {"chain.py": parsed(function(NAMES[0], 1))}, removed=tuple(paths), at=T1)

    kept = code.symbols([key("chain.py", name) for name in NAMES])
    assert {k: s.deleted_at for k, s in kept.items()} == {
        key("chain.py", NAMES[0]): None,
        key("chain.py", NAMES[1]): T1,
    }
    asked = [file_key(PROJECT, path) for path in [*paths, "nope.py", *paths[:5]]]
    assert code.deleted_files(asked) == {file_key(PROJECT, paths[0]): T1}
    assert set(code.file_states(PROJECT)) == {"chain.py"}


def test_imports_name_files_first_then_external_modules(graphs: tuple[GraphStore, CodeGraph]) -> None:
    _, code = graphs
    save(code, {"app.py": APP, "util.py": UTIL})
    assert code.imports(PROJECT, "app.py", incoming=False, limit=10) == ["util.py", "requests"]
    assert code.imports(PROJECT, "util.py", incoming=True, limit=10) == ["app.py"]
    assert code.imports(PROJECT, "util.py", incoming=False, limit=10) == []


def test_a_body_change_moves_body_changed_at_and_nothing_else_does(
    graphs: tuple[GraphStore, CodeGraph],
) -> None:
    _, code = graphs
    save(code, {"util.py": UTIL})
    edited = parsed(
        function("helper", 2, body="v2"), function("Tool", 6), function("apply", 7, parent="Tool")
    )
    save(code, {"util.py": edited}, at=T1)
    symbols = code.symbols([key("util.py", "helper"), key("util.py", "Tool")])
    assert symbols[key("util.py", "helper")].body_changed_at == T1
    assert symbols[key("util.py", "Tool")].body_changed_at is None
    assert symbols[key("util.py", "Tool")].start_line == 6


def test_a_removed_symbol_goes_unless_a_memory_is_about_it(graphs: tuple[GraphStore, CodeGraph]) -> None:
    store, code = graphs
    save(code, {"util.py": UTIL})
    remember_about(store, key("util.py", "Tool"), EntityKind.SYMBOL)
    save(code, {"util.py": parsed(function("apply", 6, parent="Tool"))}, at=T1)
    found = code.symbols([key("util.py", "helper"), key("util.py", "Tool"), key("util.py", "Tool.apply")])
    assert key("util.py", "helper") not in found
    assert store.get_entities([key("util.py", "helper")]) == {}
    assert found[key("util.py", "Tool")].deleted_at == T1
    assert found[key("util.py", "Tool.apply")].deleted_at is None
    assert [s.key for s in code.find_symbols(None, "Tool")][-1] == key("util.py", "Tool")


def test_a_removed_file_goes_unless_a_memory_is_about_it(graphs: tuple[GraphStore, CodeGraph]) -> None:
    store, code = graphs
    save(code, {"app.py": APP, "util.py": UTIL})
    remember_about(store, file_key(PROJECT, "app.py"), EntityKind.FILE)
    save(code, {}, removed=("app.py", "util.py"), at=T1)
    assert code.file_states(PROJECT) == {}
    assert code.load_parsed(PROJECT) == {}
    assert list(store.get_entities([file_key(PROJECT, "app.py"), file_key(PROJECT, "util.py")])) == [
        file_key(PROJECT, "app.py")
    ]
    assert code.imports(PROJECT, "util.py", incoming=True, limit=10) == []


def test_unused_external_modules_go_unless_imported_or_remembered(
    graphs: tuple[GraphStore, CodeGraph],
) -> None:
    store, code = graphs
    uses = {m: parsed(imports=(ImportRef(m, (), None, 1),)) for m in ("requests", "sqlalchemy", "click")}
    save(code, {f"{m}_use.py": p for m, p in uses.items()})
    modules = {m: module_key(PROJECT, m) for m in uses}
    remember_about(store, modules["sqlalchemy"], EntityKind.EXTERNAL_MODULE)
    save(code, {}, removed=("requests_use.py", "sqlalchemy_use.py"), at=T1)
    assert set(store.get_entities(modules.values())) == set(modules.values())  # a pass keeps them

    assert code.remove_unused_modules(PROJECT) == 1
    assert set(store.get_entities(modules.values())) == {modules["sqlalchemy"], modules["click"]}
    assert code.imports(PROJECT, "click_use.py", incoming=False, limit=10) == ["click"]
    assert code.remove_unused_modules(PROJECT) == 0
    assert code.remove_unused_modules("/elsewhere") == 0


def test_deleted_files_names_only_the_files_that_left_the_code(graphs: tuple[GraphStore, CodeGraph]) -> None:
    store, code = graphs
    save(code, {"app.py": APP, "util.py": UTIL})
    remember_about(store, file_key(PROJECT, "app.py"), EntityKind.FILE)
    save(code, {}, removed=("app.py",), at=T1)
    asked = [file_key(PROJECT, "app.py"), file_key(PROJECT, "util.py"), file_key(PROJECT, "nope.py")]
    assert code.deleted_files(asked) == {file_key(PROJECT, "app.py"): T1}
    assert code.deleted_files([]) == {}


def test_code_links_pair_memories_with_symbols_and_deleted_files(
    graphs: tuple[GraphStore, CodeGraph],
) -> None:
    store, code = graphs
    save(code, {"app.py": APP, "util.py": UTIL})
    remember_about(store, key("util.py", "Tool"), EntityKind.SYMBOL)
    remember_about(store, file_key(PROJECT, "util.py"), EntityKind.FILE)  # a live file: never stale
    remember_about(store, file_key(PROJECT, "app.py"), EntityKind.FILE)
    save(code, {}, removed=("app.py",), at=T1)
    found = {(memory_id, e.key, e.kind, e.name) for memory_id, e in code.code_links(100)}
    assert found == {
        (f"m-{key('util.py', 'Tool')}", key("util.py", "Tool"), EntityKind.SYMBOL, "Tool"),
        (f"m-{file_key(PROJECT, 'app.py')}", file_key(PROJECT, "app.py"), EntityKind.FILE, "app.py"),
    }
    assert len(code.code_links(1)) == 1


def test_touch_records_a_new_mtime(graphs: tuple[GraphStore, CodeGraph]) -> None:
    _, code = graphs
    save(code, {"util.py": UTIL})
    state = code.file_states(PROJECT)["util.py"]
    code.touch(PROJECT, [FileState("util.py", state.content_hash, state.size, 99)])
    assert code.file_states(PROJECT)["util.py"].mtime_ns == 99


def test_co_changes_keep_live_files_most_frequent_first(graphs: tuple[GraphStore, CodeGraph]) -> None:
    _, code = graphs
    save(code, {"app.py": APP, "util.py": UTIL, "x.py": parsed()})
    code.replace_co_changes(
        PROJECT, {("app.py", "util.py"): 2, ("x.py", "app.py"): 5, ("app.py", "gone.py"): 9}
    )
    assert code.co_changes(PROJECT, "app.py", 10) == [("x.py", 5), ("util.py", 2)]
    assert code.co_changes(PROJECT, "app.py", 1) == [("x.py", 5)]
    code.replace_co_changes(PROJECT, {("util.py", "x.py"): 1})
    assert code.co_changes(PROJECT, "app.py", 10) == []
    assert code.co_changes(PROJECT, "x.py", 10) == [("util.py", 1)]


def moved(old: tuple[str, str], new: tuple[str, str], *, same_body: bool = True) -> MovePlan:
    return MovePlan(symbols=[SymbolMove(*old, *new, "renamed", 1.0 if same_body else 0.9, same_body)])


def test_a_moved_symbol_takes_its_memories_and_keeps_its_body_age(
    graphs: tuple[GraphStore, CodeGraph],
) -> None:
    store, code = graphs
    save(code, {"util.py": UTIL})
    remember_about(store, key("util.py", "helper"), EntityKind.SYMBOL)
    renamed = parsed(function("assist", 1), function("Tool", 5), function("apply", 6, parent="Tool"))
    carried = save(
        code, {"util.py": renamed}, at=T1, moves=moved(("util.py", "helper"), ("util.py", "assist"))
    )
    assert carried == {key("util.py", "helper"): 1}
    assert store.memories_about([key("util.py", "assist")]) == {
        key("util.py", "assist"): [f"m-{key('util.py', 'helper')}"]
    }
    found = code.symbols([key("util.py", "helper"), key("util.py", "assist")])
    assert list(found) == [key("util.py", "assist")]  # the old symbol is gone, not "deleted"
    assert found[key("util.py", "assist")].body_changed_at is None  # a rename is no change
    assert store.get_entities([key("util.py", "helper")]) == {}


def test_a_symbol_moved_with_an_edit_is_marked_changed(graphs: tuple[GraphStore, CodeGraph]) -> None:
    store, code = graphs
    save(code, {"util.py": UTIL})
    remember_about(store, key("util.py", "helper"), EntityKind.SYMBOL)
    plan = moved(("util.py", "helper"), ("lib.py", "helper"), same_body=False)
    save(
        code,
        {"util.py": parsed(function("Tool", 5)), "lib.py": parsed(function("helper", 1))},
        at=T1,
        moves=plan,
    )
    [symbol] = code.symbols([key("lib.py", "helper")]).values()
    assert symbol.body_changed_at == T1 and symbol.deleted_at is None
    assert list(store.memories_about([key("lib.py", "helper")])) == [key("lib.py", "helper")]


def test_a_move_without_memories_just_stores_the_new_symbol(graphs: tuple[GraphStore, CodeGraph]) -> None:
    _, code = graphs
    save(code, {"util.py": UTIL})
    renamed = parsed(function("assist", 1), function("Tool", 5), function("apply", 6, parent="Tool"))
    carried = save(
        code, {"util.py": renamed}, at=T1, moves=moved(("util.py", "helper"), ("util.py", "assist"))
    )
    assert carried == {}
    assert list(code.symbols([key("util.py", "helper"), key("util.py", "assist")])) == [
        key("util.py", "assist")
    ]


def test_a_renamed_file_takes_its_memories(graphs: tuple[GraphStore, CodeGraph]) -> None:
    store, code = graphs
    save(code, {"app.py": APP, "util.py": UTIL})
    remember_about(store, file_key(PROJECT, "util.py"), EntityKind.FILE)
    plan = MovePlan(files={"util.py": "tools.py"})
    carried = save(code, {"tools.py": UTIL}, removed=("util.py",), at=T1, moves=plan)
    assert carried == {file_key(PROJECT, "util.py"): 1}
    assert code.deleted_files([file_key(PROJECT, "util.py")]) == {}  # not a deleted file: moved
    assert store.get_entities([file_key(PROJECT, "util.py")]) == {}
    assert store.memories_about([file_key(PROJECT, "tools.py")]) == {
        file_key(PROJECT, "tools.py"): [f"m-{file_key(PROJECT, 'util.py')}"]
    }


def test_a_rescan_keeps_the_edges_it_resolves_again_and_drops_the_others(
    graphs: tuple[GraphStore, CodeGraph],
) -> None:
    _, code = graphs
    save(code, {"app.py": APP, "util.py": UTIL})
    assert code.imports(PROJECT, "app.py", incoming=False, limit=9) == ["util.py", "requests"]
    # main calls helper only, its own file's now (util.py no longer imported); run is called by nothing
    app = parsed(
        function("main", 3),
        function("run", 8),
        function("helper", 12),
        calls=(CallRef("helper", None, 4, "main"),),
        imports=(ImportRef("requests", (), None, 2),),
    )
    save(code, {"app.py": app}, at=T1)
    calls = code.calls([key("app.py", "main")], incoming=False, limit=9)
    assert [(s.key, confidence) for s, _, confidence in calls] == [(key("app.py", "helper"), "same_file")]
    assert code.calls([key("util.py", "helper")], incoming=True, limit=9) == []
    assert code.imports(PROJECT, "app.py", incoming=False, limit=9) == ["requests"]
    save(code, {"app.py": APP}, at=T1 + timedelta(hours=1))  # and back
    calls = code.calls([key("app.py", "main")], incoming=False, limit=9)
    assert sorted((s.key, confidence) for s, _, confidence in calls) == [
        (key("app.py", "run"), "same_file"),
        (key("util.py", "helper"), "import"),
    ]


def _gitlab(store: GraphStore) -> GitLabGraph:
    """The GitLab graph beside ``store`` (as ``app.py`` wires it)."""
    if isinstance(store, KuzuGraphStore):
        return KuzuGitLabGraph(store)
    if isinstance(store, PostgresGraphStore):
        return PostgresGitLabGraph(store)
    assert isinstance(store, FakeGraphStore)
    return FakeGitLabGraph(store)


def merge_request_changing(gitlab: GitLabGraph, store: GraphStore, *symbols: str) -> str:
    """A merge request fetched from GitLab that changed ``util.py``'s ``symbols``: its key."""
    mr = target_key(EntityKind.MERGE_REQUEST, "group/proj", 12)
    store.upsert_entities([Entity(mr, EntityKind.MERGE_REQUEST, "group/proj!12", PROJECT)])
    alice = Person("alice", "Alice A", "https://gl/alice")
    data = MergeRequestData(
        title="Tools", state="merged", author=alice, labels=(), created_at=T0, updated_at=T0,
        description="", web_url="https://gl/group/proj/-/merge_requests/12", project="group/proj",
        iid=12, draft=False, assignees=(), reviewers=(), milestone=None, source_branch="tools",
        target_branch="main", merged_at=T0, changed_files=(ChangedFile("util.py", "util.py"),),
        changed_files_total=1, closes=(),
    )  # fmt: skip
    gitlab.apply(
        edit_for(
            GitLabAnswer(
                mr, data, local=("group/proj", PROJECT), hops=0, fetched_at=T0, next_attempt=T1,
                file_keys=[(file_key(PROJECT, "util.py"), "util.py")], symbol_keys=list(symbols),
            )
        )
    )  # fmt: skip
    return mr


def test_a_merge_requests_links_stay_on_the_symbols_a_rescan_finds_again(
    graphs: tuple[GraphStore, CodeGraph],
) -> None:
    store, code = graphs
    gitlab = _gitlab(store)
    save(code, {"app.py": APP, "util.py": UTIL})
    linked = [key("util.py", "helper"), key("util.py", "Tool")]
    mr = merge_request_changing(gitlab, store, *linked)
    assert gitlab.changed_symbols(mr) == sorted(linked)
    # every file changed (a line added at the end): every symbol as it was
    save(code, {"app.py": APP, "util.py": UTIL}, at=T1)
    assert gitlab.changed_symbols(mr) == sorted(linked)
    # a line added above Tool: it moved down, the same symbol
    lower = parsed(function("helper", 1), function("Tool", 6), function("apply", 7, parent="Tool"))
    save(code, {"util.py": lower}, at=T1 + timedelta(hours=1))
    assert gitlab.changed_symbols(mr) == sorted(linked)
    assert code.symbols([key("util.py", "Tool")])[key("util.py", "Tool")].start_line == 6
    calls = code.calls([key("app.py", "main")], incoming=False, limit=9)
    assert sorted(s.key for s, _, _ in calls) == [key("app.py", "run"), key("util.py", "helper")]
    # a symbol gone takes its link along (no memory is about it)
    save(code, {"util.py": parsed(function("helper", 1))}, at=T1 + timedelta(hours=2))
    assert gitlab.changed_symbols(mr) == [key("util.py", "helper")]
    assert list(code.symbols(linked)) == [key("util.py", "helper")]


def test_the_last_pass_head_is_kept(graphs: tuple[GraphStore, CodeGraph]) -> None:
    _, code = graphs
    assert code.scanned_head(PROJECT) is None
    save(code, {"util.py": UTIL}, head="a" * 40)
    save(code, {"app.py": APP}, at=T1)  # a pass outside git keeps what the last one saw
    assert code.scanned_head(PROJECT) == "a" * 40


def imported(store: GraphStore, entity_key: str, kind: EntityKind, name: str) -> str:
    """``entity_key`` as ``graphmem import`` stores it (an export's key, kind, name, project and
    title: nothing of the code), with a memory about it; the memory's id."""
    store.upsert_entities([Entity(entity_key, kind, name, PROJECT, "as exported")])
    remember_about(store, entity_key, kind)
    return f"m-{entity_key}"


# A pass of a few symbols writes them one way, one of many another (kuzu_code_inserts.FEW_COPY_ROWS)
PASS_SIZES = pytest.mark.parametrize("more", [{}, {"chain.py": CHAIN}], ids=["few", "many"])


@PASS_SIZES
def test_a_pass_takes_over_an_imported_symbol_with_its_memories(
    graphs: tuple[GraphStore, CodeGraph], more: dict[str, ParsedFile]
) -> None:
    store, code = graphs
    helper = key("util.py", "helper")
    memory = imported(store, helper, EntityKind.SYMBOL, "util.helper")
    save(code, {"app.py": APP, "util.py": UTIL, **more})
    found = code.symbols([helper])[helper]
    assert (found.path, found.qualified_name, found.name, found.start_line) == (
        "util.py",
        "helper",
        "helper",
        1,
    )
    assert (found.body_changed_at, found.deleted_at) == (None, None)  # first seen: not a changed body
    assert store.memories_about([helper]) == {helper: [memory]}
    entity = store.get_entities([helper])[helper]
    assert (entity.name, entity.title) == ("helper", "def helper()")
    assert [s.key for s in code.symbols_in(PROJECT, "util.py")] == [
        helper,
        key("util.py", "Tool"),
        key("util.py", "Tool.apply"),
    ]
    callers = code.calls([helper], incoming=True, limit=9)
    assert [(s.key, confidence) for s, _, confidence in callers] == [(key("app.py", "main"), "import")]
    # the code graph's now: a pass that no longer finds it keeps it, deleted, for its memory
    save(code, {"util.py": parsed(function("Tool", 5))}, at=T1)
    assert code.symbols([helper])[helper].deleted_at == T1
    assert store.memories_about([helper]) == {helper: [memory]}


@PASS_SIZES
def test_a_pass_takes_over_an_imported_file_with_its_memories(
    graphs: tuple[GraphStore, CodeGraph], more: dict[str, ParsedFile]
) -> None:
    store, code = graphs
    util = file_key(PROJECT, "util.py")
    memory = imported(store, util, EntityKind.FILE, "util.py")
    save(code, {"app.py": APP, "util.py": UTIL, **more})
    assert set(code.file_states(PROJECT)) == {"app.py", "util.py", *more}  # scanned: not parsed again
    entity = store.get_entities([util])[util]
    assert (entity.name, entity.title) == ("util.py", "")  # as the pass names a file
    assert code.imports(PROJECT, "util.py", incoming=True, limit=9) == ["app.py"]
    code.replace_co_changes(PROJECT, {("app.py", "util.py"): 2})
    assert code.co_changes(PROJECT, "app.py", 9) == [("util.py", 2)]
    assert store.memories_about([util]) == {util: [memory]}
    save(code, {}, removed=("util.py",), at=T1)
    assert code.deleted_files([util]) == {util: T1}
    assert store.memories_about([util]) == {util: [memory]}


def test_a_pass_takes_over_a_file_a_merge_request_named_first(graphs: tuple[GraphStore, CodeGraph]) -> None:
    store, code = graphs
    gitlab = _gitlab(store)
    mr = merge_request_changing(gitlab, store)  # fetched before any pass: util.py is GitLab's node
    save(code, {"app.py": APP, "util.py": UTIL})
    assert set(code.file_states(PROJECT)) == {"app.py", "util.py"}
    assert code.imports(PROJECT, "util.py", incoming=True, limit=9) == ["app.py"]
    assert [e.key for e, _, _ in gitlab.changed_by(file_key(PROJECT, "util.py"), 9)] == [mr]


def test_a_pass_takes_over_an_imported_external_module_under_another_name(
    graphs: tuple[GraphStore, CodeGraph],
) -> None:
    store, code = graphs
    requests = module_key(PROJECT, "requests")
    # an export edited by hand: the key of the module app.py imports, another name, no project
    store.upsert_entities([Entity(requests, EntityKind.EXTERNAL_MODULE, "Requests", None, "")])
    remember_about(store, requests, EntityKind.EXTERNAL_MODULE)
    save(code, {"app.py": APP, "util.py": UTIL})
    assert code.imports(PROJECT, "app.py", incoming=False, limit=9) == ["util.py", "requests"]
    entity = store.get_entities([requests])[requests]
    assert (entity.name, entity.project) == ("requests", PROJECT)
    save(code, {}, removed=("app.py",), at=T1)
    assert code.remove_unused_modules(PROJECT) == 0  # a memory is about it
    assert store.memories_about([requests]) == {requests: [f"m-{requests}"]}
