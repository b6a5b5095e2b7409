"""What only the Kùzu code graph does: where the files' parses live, and moving them there.

The behaviour every code graph shares is tested once, in test_code_graph_contract.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from support.stores import new_kuzu

from graphmem.adapters import kuzu_code, kuzu_store
from graphmem.adapters.kuzu_code import KuzuCodeGraph
from graphmem.adapters.kuzu_schema import FILE_PARSE, SCHEMA_VERSION
from graphmem.adapters.kuzu_store import KuzuGraphStore
from graphmem.adapters.parse_store import PARSES_FILE
from graphmem.core.code import Definition, ParsedFile, parsed_to_json
from graphmem.core.code_moves import MovePlan
from graphmem.core.codegraph import CodeScan, FileState, ProjectCode, file_key, symbol_key
from graphmem.core.models import Category, Entity, EntityKind, MemoryRecord, Scope
from graphmem.errors import StoreError

PROJECT = "/src/proj"
T0 = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def store(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[KuzuGraphStore]:
    """A new, empty store: a copy of the process's template (``support/stores.py``)."""
    store = new_kuzu(tmp_path / "data", request, 8)
    yield store
    store.close()


def module(path: str, version: int) -> ParsedFile:
    """A file of 30 functions with long signatures: about 6 KB of JSON, as real modules parse."""
    definitions = tuple(
        Definition(
            "function",
            f"handle_{n}",
            f"handle_{n}",
            n * 5 + 1,
            n * 5 + 4,
            f"def handle_{n}(request: Request, session: Session, retries: int = {version}) -> Response",
            None,
            f"{path}-{n}-{version}",
            None,
        )
        for n in range(30)
    )
    return ParsedFile("python", definitions, (), (), (), 0)


def save_pass(code: KuzuCodeGraph, files: dict[str, ParsedFile], at: datetime) -> None:
    project = ProjectCode(PROJECT, code.load_parsed(PROJECT))
    project.files.update(files)
    changed = {path: (p, FileState(path, f"content-{path}-{at}", 10, 1)) for path, p in files.items()}
    code.save(CodeScan(PROJECT, changed, [], project, project.edges(), at, MovePlan(), None))


# Files a pass changes in the small pool (SMALL_POOL_BYTES) of the two tests below: what the
# store of schema 9 (41bb5ad^) failed on from 60 files in that pool (it passed 45), and schema 11
# (e3af6ae^) from 250 (it passed 225), as they did with a thousand files in the 512 MB pool of a
# real store. The store of today passes 400 and 500 there; in 32 MB Kùzu fails even 10 files.
# A third more than the least that failed (60 files): 80, where 120 cost a third more of its CPU.
CHANGED_FILES = 80
TWO_PROJECT_FILES = 300
SMALL_POOL_BYTES = 40 * 1024 * 1024


def test_a_pass_that_changes_many_files_again_keeps_every_parse(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With the parses updated in place in File (schema 9): Kùzu's pool full in the second
    # pass, or, when a checkpoint ran between the updates, most parses read back empty.
    monkeypatch.setattr(kuzu_store, "BUFFER_POOL_BYTES", SMALL_POOL_BYTES)
    store = new_kuzu(tmp_path / "data", request, 8)
    try:
        code = KuzuCodeGraph(store)
        paths = [f"pkg/mod{n}.py" for n in range(CHANGED_FILES)]
        for version in range(3):
            save_pass(code, {path: module(path, version) for path in paths}, T0 + timedelta(hours=version))

        loaded = code.load_parsed(PROJECT)
        assert sorted(loaded) == sorted(paths)
        assert all(loaded[path] == module(path, 2) for path in paths)
    finally:
        store.close()


def moved(parsed: ParsedFile, lines: int, docstring: str | None = None) -> ParsedFile:
    """``parsed`` as after ``lines`` lines were added above its definitions (and a docstring)."""
    definitions = tuple(
        replace(d, start_line=d.start_line + lines, end_line=d.end_line + lines, docstring=docstring)
        for d in parsed.definitions
    )
    return replace(parsed, definitions=definitions)


def test_symbols_that_memories_are_about_follow_their_code_across_passes(store: KuzuGraphStore) -> None:
    # 600 remembered symbols: more than one batch of updates (UPDATE_CHUNK)
    code = KuzuCodeGraph(store)
    paths = [f"pkg/mod{n}.py" for n in range(20)]
    first = {path: module(path, 1) for path in paths}
    save_pass(code, first, T0)
    keys = [symbol_key(PROJECT, path, d.qualified_name) for path in paths for d in first[path].definitions]
    records = [
        MemoryRecord(f"m{n}", "a note", Category.FACT, Scope.GLOBAL, None, T0, T0, T0, content_hash=f"h{n}")
        for n in range(len(keys))
    ]
    store.add_memories(records)
    store.link_about([(r.id, Entity(k, EntityKind.SYMBOL, k)) for r, k in zip(records, keys, strict=True)])

    save_pass(code, {path: moved(first[path], 3) for path in paths}, T0 + timedelta(hours=1))
    found = code.symbols(keys)
    assert len(found) == 600
    handle = found[symbol_key(PROJECT, "pkg/mod7.py", "handle_4")]
    assert (handle.start_line, handle.end_line, handle.docstring) == (24, 27, None)
    assert handle.signature.startswith("def handle_4(request: Request")
    assert handle.body_changed_at is None and handle.deleted_at is None

    later = T0 + timedelta(hours=2)
    second = {path: moved(first[path], 5, f"Handles {path}.") for path in paths[:10]}
    second["pkg/mod0.py"] = replace(second["pkg/mod0.py"], definitions=second["pkg/mod0.py"].definitions[1:])
    save_pass(code, second, later)
    found = code.symbols(keys)
    assert found[symbol_key(PROJECT, "pkg/mod3.py", "handle_2")].docstring == "Handles pkg/mod3.py."
    assert found[symbol_key(PROJECT, "pkg/mod3.py", "handle_2")].start_line == 16
    assert found[symbol_key(PROJECT, "pkg/mod15.py", "handle_2")].start_line == 14  # not in this pass
    assert found[symbol_key(PROJECT, "pkg/mod0.py", "handle_0")].deleted_at == later
    assert all(found[k].deleted_at is None for k in keys[1:])


def test_a_store_from_before_schema_10_has_its_parses_moved_out_of_file(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    data = tmp_path / "data"
    store = new_kuzu(data, request, 8)
    store.db.run("ALTER TABLE File ADD parsed STRING")  # as schema 9 had it: the parse in a column of File
    for path, parse, deleted in (("a.py", module("a.py", 1), None), ("gone.py", None, T0)):
        store.db.run(
            "CREATE (:File {key: $k, name: $p, project: $proj, title: '', path: $p, content_hash: 'h', "
            "parsed: $j, deleted_at: $d})",
            {
                "k": file_key(PROJECT, path),
                "p": path,
                "proj": PROJECT,
                "j": parsed_to_json(parse) if parse else None,
                "d": deleted,
            },
        )
    store.set_meta("schema_version", "9")
    store.close()

    store = KuzuGraphStore(data, dimension=8)
    try:
        code = KuzuCodeGraph(store)
        assert store.get_meta("schema_version") == str(SCHEMA_VERSION)
        assert code.load_parsed(PROJECT) == {"a.py": module("a.py", 1)}
        columns = {row[1] for row in store.db.rows("CALL table_info('File') RETURN *")}
        assert "parsed" not in columns and "path" in columns
        assert "FileParse" not in tables(store)  # moved on again by version 12
        save_pass(code, {"a.py": module("a.py", 2), "b.py": module("b.py", 2)}, T0)  # COPY File still fits
        assert code.load_parsed(PROJECT) == {"a.py": module("a.py", 2), "b.py": module("b.py", 2)}
    finally:
        store.close()


def tables(store: KuzuGraphStore) -> set[str]:
    return {row[1] for row in store.db.rows("CALL show_tables() RETURN *")}


def test_a_store_from_before_schema_12_has_its_parses_moved_out_of_kuzu(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    data = tmp_path / "data"
    store = new_kuzu(data, request, 8)
    store.db.run(FILE_PARSE)  # as schema 11 had it: the parses in Kùzu's FileParse
    for project, path in ((PROJECT, "a.py"), (PROJECT, "b.py"), ("/src/other", "a.py")):
        store.db.run(
            "CREATE (:File {key: $k, name: $p, project: $proj, title: '', path: $p, content_hash: 'h'})",
            {"k": file_key(project, path), "p": path, "proj": project},
        )
        store.db.run(
            "CREATE (:FileParse {key: $k, project: $proj, path: $p, parsed: $j})",
            {"k": file_key(project, path), "p": path, "proj": project, "j": parsed_to_json(module(path, 3))},
        )
    store.set_meta("schema_version", "11")
    store.close()

    store = KuzuGraphStore(data, dimension=8)
    try:
        code = KuzuCodeGraph(store)
        assert store.get_meta("schema_version") == str(SCHEMA_VERSION)
        assert "FileParse" not in tables(store)
        assert code.load_parsed(PROJECT) == {"a.py": module("a.py", 3), "b.py": module("b.py", 3)}
        assert code.load_parsed("/src/other", ["a.py"]) == {"a.py": module("a.py", 3)}
        assert set(code.file_states(PROJECT)) == {"a.py", "b.py"}
    finally:
        store.close()


def test_files_whose_parses_were_lost_are_scanned_again(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    data = tmp_path / "data"
    store = new_kuzu(data, request, 8)
    save_pass(KuzuCodeGraph(store), {"a.py": module("a.py", 1), "b.py": module("b.py", 1)}, T0)
    store.close()
    for lost in data.glob(f"{PARSES_FILE}*"):  # deleted by hand, or never restored from a backup
        lost.unlink()

    store = KuzuGraphStore(data, dimension=8)
    try:
        code = KuzuCodeGraph(store)
        assert code.file_states(PROJECT) == {}  # bootstrap parses every file again
        save_pass(code, {"a.py": module("a.py", 2), "b.py": module("b.py", 2)}, T0 + timedelta(hours=1))
        assert set(code.file_states(PROJECT)) == {"a.py", "b.py"}
        assert code.load_parsed(PROJECT)["b.py"] == module("b.py", 2)
    finally:
        store.close()


def test_two_projects_changing_every_file_keep_every_parse_in_a_small_pool(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With the parses in Kùzu (schema 11): the checkpoint after the second project's pass
    # needed more than the pool, and the pass failed ("The buffer pool is full").
    monkeypatch.setattr(kuzu_store, "BUFFER_POOL_BYTES", SMALL_POOL_BYTES)
    store = new_kuzu(tmp_path / "data", request, 8)
    try:
        paths = [f"pkg/mod{n}.py" for n in range(TWO_PROJECT_FILES)]
        for project in (PROJECT, "/src/copy"):
            code = KuzuCodeGraph(store)
            for version in range(2):
                files = {path: module(path, version) for path in paths}
                saved = ProjectCode(project, code.load_parsed(project))
                saved.files.update(files)
                changed = {p: (f, FileState(p, f"c-{p}-{version}", 10, version)) for p, f in files.items()}
                at = T0 + timedelta(hours=version)
                code.save(CodeScan(project, changed, [], saved, saved.edges(), at, MovePlan(), None))
        for project in (PROJECT, "/src/copy"):
            loaded = code.load_parsed(project)
            assert len(loaded) == TWO_PROJECT_FILES and loaded["pkg/mod9.py"] == module("pkg/mod9.py", 1)
    finally:
        store.close()


def test_a_damaged_parse_file_is_a_clear_error_that_says_what_to_do(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    data = tmp_path / "data"
    store = new_kuzu(data, request, 8)
    save_pass(KuzuCodeGraph(store), {"a.py": module("a.py", 1)}, T0)
    store.close()
    for written in data.glob(f"{PARSES_FILE}*"):
        written.write_bytes(b"not a database, " * 512)

    store = KuzuGraphStore(data, dimension=8)
    try:
        with pytest.raises(StoreError, match="Delete the file: the next `graphmem bootstrap` parses"):
            KuzuCodeGraph(store).load_parsed(PROJECT)
    finally:
        store.close()


def test_a_pass_whose_parses_cannot_be_stored_stores_no_file_as_scanned(
    store: KuzuGraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The parses are written beside the symbols; the file hashes wait for them.
    code = KuzuCodeGraph(store)

    def full_disk(project: str, dropped: object, parses: Iterator[tuple[str, str]]) -> None:
        next(iter(parses))
        raise StoreError("The files' parses could not be used: database or disk is full.")

    monkeypatch.setattr(store.parses, "replace", full_disk)
    with pytest.raises(StoreError, match="disk is full"):
        save_pass(code, {"a.py": module("a.py", 1), "b.py": module("b.py", 1)}, T0)

    assert code.file_states(PROJECT) == {}  # the next bootstrap parses both again
    assert code.scan_interrupted(PROJECT)


def edges_failing(*args: object, **kwargs: object) -> None:
    """``insert_edges`` failing: a pass stopped after its symbols were written."""
    raise StoreError("The edges could not be stored.")


def test_a_first_pass_is_stored_in_one_transaction(
    store: KuzuGraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Kùzu checkpoints after each COPY committed on its own, and once after a transaction's:
    # a pass that only adds commits once, so one that fails halfway stores none of its code.
    code = KuzuCodeGraph(store)

    monkeypatch.setattr(kuzu_code, "insert_edges", edges_failing)
    with pytest.raises(StoreError, match="edges"):
        save_pass(code, {"a.py": module("a.py", 1)}, T0)

    assert code.symbols_in(PROJECT, "a.py") == []
    assert code.file_states(PROJECT) == {}
    assert code.scan_interrupted(PROJECT)  # the mark is committed before the transaction


def test_a_first_pass_beyond_the_bound_commits_each_write(
    store: KuzuGraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # More new symbols than TOGETHER_MAX_SYMBOLS: each write commits on its own, as a re-scan's do.
    code = KuzuCodeGraph(store)

    monkeypatch.setattr(kuzu_code, "TOGETHER_MAX_SYMBOLS", 29)
    monkeypatch.setattr(kuzu_code, "insert_edges", edges_failing)
    with pytest.raises(StoreError, match="edges"):
        save_pass(code, {"a.py": module("a.py", 1)}, T0)

    assert len(code.symbols_in(PROJECT, "a.py")) == 30  # written before the edges failed
    assert code.scan_interrupted(PROJECT)
