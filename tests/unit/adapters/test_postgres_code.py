"""The PostgreSQL code graph beside other writers: a code scan that removes what nobody
remembers never takes a link another process makes at the same moment (``postgres_code.py``,
``PostgresGraph.remembered``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from support.stores import postgres_url

from graphmem.adapters.postgres_code import PostgresCodeGraph
from graphmem.adapters.postgres_store import PostgresGraphStore
from graphmem.core.code import Definition, ParsedFile
from graphmem.core.code_moves import MovePlan
from graphmem.core.codegraph import CodeScan, FileState, ProjectCode, file_key, symbol_key
from graphmem.core.models import Category, Entity, EntityKind, MemoryRecord, Scope

PROJECT = "/src/proj"
T0 = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
# Seconds a writer is given to finish or to wait for a lock
SETTLE_S = 2.0


def _done_or_waiting(thread: threading.Thread, store: PostgresGraphStore) -> None:
    """Return once ``thread`` is done or its statement waits for another transaction's lock
    (looked at every 10 ms, for at most ``SETTLE_S``): waiting out the whole time cost each
    test 2 s."""
    deadline = time.monotonic() + SETTLE_S
    with psycopg.connect(store.db._conninfo, autocommit=True) as watcher:
        while thread.is_alive() and time.monotonic() < deadline:
            waiting = watcher.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND wait_event_type = 'Lock'"
            ).fetchone()
            if waiting and waiting[0]:
                return
            time.sleep(0.01)


def _parsed(*names: str) -> ParsedFile:
    definitions = tuple(
        Definition("function", n, n, i * 3 + 1, i * 3 + 2, f"def {n}()", None, f"hash-{n}", None)
        for i, n in enumerate(names)
    )
    return ParsedFile("python", definitions, (), (), (), 0)


def _save(
    code: PostgresCodeGraph, files: dict[str, ParsedFile], removed: tuple[str, ...], at: datetime
) -> None:
    project = ProjectCode(PROJECT, code.load_parsed(PROJECT))
    for path in removed:
        project.files.pop(path, None)
    project.files.update(files)
    changed = {path: (p, FileState(path, f"content-{path}-{at}", 10, 1)) for path, p in files.items()}
    code.save(CodeScan(PROJECT, changed, list(removed), project, project.edges(), at, MovePlan(), None))


@pytest.fixture
def stores(request: pytest.FixtureRequest) -> Iterator[tuple[PostgresGraphStore, PostgresGraphStore]]:
    url = postgres_url(request)
    scanner, writer = PostgresGraphStore(url, dimension=8), PostgresGraphStore(url, dimension=8)
    yield scanner, writer
    scanner.close()
    writer.close()


@pytest.mark.parametrize(
    ("kept", "removed", "entity"),
    [
        (
            {"util.py": _parsed("apply")},
            (),
            Entity(symbol_key(PROJECT, "util.py", "helper"), EntityKind.SYMBOL, "helper"),
        ),
        ({}, ("util.py",), Entity(file_key(PROJECT, "util.py"), EntityKind.FILE, "util.py")),
    ],
    ids=["removed symbol", "removed file"],
)
def test_a_link_made_while_a_scan_removes_its_entity_is_kept(
    stores: tuple[PostgresGraphStore, PostgresGraphStore],
    monkeypatch: pytest.MonkeyPatch,
    kept: dict[str, ParsedFile],
    removed: tuple[str, ...],
    entity: Entity,
) -> None:
    scanner, writer = stores
    code = PostgresCodeGraph(scanner)
    _save(code, {"util.py": _parsed("helper", "apply")}, (), T0)
    note = MemoryRecord("m1", "helper retries twice", Category.FACT, Scope.PROJECT, PROJECT, T0, T0, T0)
    writer.add_memories([note])
    failed: list[BaseException] = []

    def link() -> None:  # another developer's remember, as service/writer.py stores it
        try:
            with writer.transaction():
                writer.upsert_entities([entity])
                writer.link_about([(note.id, entity)])
        except BaseException as exc:  # reported by the test below
            failed.append(exc)

    linking = threading.Thread(target=link)
    remembered = scanner.remembered

    def checked_then_linked(keys: list[str]) -> set[str]:
        found = remembered(keys)  # nobody's memory is about the entity: the scan will remove it
        if not linking.is_alive() and not failed and entity.key in keys:
            linking.start()  # the link is made now, between the check and the removal
            _done_or_waiting(linking, scanner)  # it waits for the scan's transaction (or is done)
        return found

    monkeypatch.setattr(scanner, "remembered", checked_then_linked)
    _save(code, kept, removed, T0 + timedelta(hours=1))
    linking.join()
    assert not failed
    assert writer.memories_about([entity.key]) == {entity.key: [note.id]}
    assert [e.key for e in writer.about([note.id])[note.id]] == [entity.key]
