"""MemoryWriter, the one door for writing memories, on a real Kùzu store in tmp_path."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

import numpy as np
import pytest

from graphmem.adapters.kuzu_store import KuzuGraphStore
from graphmem.core.dedup import memory_hash
from graphmem.core.keys import file_key, memory_id
from graphmem.core.models import Category, Entity, EntityKind, Link, LinkKind, MemoryRecord, Scope, Status
from graphmem.core.ports import Visibility
from graphmem.errors import ConflictError, InvalidInputError, NotFoundError
from graphmem.service.inputs import MemoryEdit
from graphmem.service.mentions import Mentions
from graphmem.service.redacting import RedactingStore
from graphmem.service.semantic import SemanticIndex
from graphmem.service.writer import MemoryWriter

T0 = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
TOKEN = "glpat-" + "l9guXCYJmdQFTvffexLP"


class Bookkeeping:
    """Records what the writer tells the semantic index (stands in for SemanticIndex)."""

    loaded = True

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def added(self, ids: Sequence[str] = (), *, source: str | None = None) -> None:
        self.calls.append(("added",))

    def will_change(self, ids: Sequence[str]) -> None:
        self.calls.append(("will_change", *ids))

    def stored(self, ids: Sequence[str], vectors: object) -> None:
        self.calls.append(("stored", *ids))

    def status_changed(self, memory_id: str, status: Status) -> None:
        self.calls.append(("status_changed", memory_id, status.value))

    def text_changed(self, memory_id: str) -> None:
        self.calls.append(("text_changed", memory_id))

    def removed(self, memory_id: str) -> None:
        self.calls.append(("removed", memory_id))

    def reset(self) -> None:
        self.calls.append(("reset",))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[KuzuGraphStore]:
    kuzu = KuzuGraphStore(tmp_path / "data", dimension=8)
    yield kuzu
    kuzu.close()


@pytest.fixture
def index() -> Bookkeeping:
    return Bookkeeping()


@pytest.fixture
def writer(store: KuzuGraphStore, index: Bookkeeping) -> MemoryWriter:
    return MemoryWriter(
        store, cast(SemanticIndex, index), Mentions(None, lambda project: None), clock=lambda: T0
    )


def fact(text: str, *, project: str = "/p", seed: str | None = None) -> MemoryRecord:
    return MemoryRecord(
        id=memory_id(seed),
        text=text,
        category=Category.FACT,
        scope=Scope.PROJECT,
        project=project,
        created_at=T0,
        updated_at=T0,
        valid_from=T0,
        source="bootstrap:" + (seed or text),
        content_hash=memory_hash(Scope.PROJECT, project, text),
    )


def test_the_writer_guards_the_store_it_is_given(writer: MemoryWriter) -> None:
    assert isinstance(writer.store, RedactingStore)


def test_remember_redacts_before_it_stores_and_says_how_much(writer: MemoryWriter) -> None:
    result = writer.remember(f"Deploy with {TOKEN}", project="/p")

    stored = writer.store.get_memories([result.memory.id])[result.memory.id]
    assert TOKEN not in stored.text and result.redacted == 1
    assert stored.content_hash == memory_hash(Scope.PROJECT, "/p", stored.text)


def test_remember_twice_reinforces_the_first_memory(writer: MemoryWriter, index: Bookkeeping) -> None:
    first = writer.remember("The build uses uv.", project="/p")
    again = writer.remember("The build uses uv.", project="/p")

    assert again.created is False and again.duplicate_of == first.memory.id
    assert again.memory.reinforced == 1
    assert index.calls == [("added",)]  # a reinforcement adds nothing to embed


def test_a_fact_is_compared_only_with_memories_that_may_repeat_it(
    writer: MemoryWriter, store: KuzuGraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer.remember("The build caches wheels in CI.", project="/p")
    asked: list[int] = []
    matches = store.text_matches

    def text_matches(
        query: str, visibility: Visibility, limit: int, *, holding: Sequence[object] = ()
    ) -> object:
        asked.append(len(holding))
        return matches(query, visibility, limit, holding=holding)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "text_matches", text_matches)

    # Reworded: each of its content words is held in some form, so it reinforces.
    again = writer.remember("The builds cached the wheels in CI.", project="/p")
    # "sccache" is in no memory: no memory can be its near-duplicate.
    new = writer.remember("The build caches wheels with sccache in CI.", project="/p")
    # A decision may replace an older one on its subject with fewer words in common.
    writer.remember("We decided on sccache for the build.", category="decision", project="/p")

    assert again.created is False and new.created is True
    assert asked == [4, 5, 0]  # builds, cached, wheels, ci; and sccache


def test_remember_refuses_a_project_scope_without_a_project(writer: MemoryWriter) -> None:
    with pytest.raises(InvalidInputError, match="needs a project"):
        writer.remember("Use tabs.", scope="project", project=None)


def test_a_bulk_add_redacts_what_bootstrap_read(writer: MemoryWriter, index: Bookkeeping) -> None:
    record = fact(f"CI token: {TOKEN}", seed="README.md#ci")
    file = Entity(file_key("/p", "README.md"), EntityKind.FILE, "README.md", "/p")

    writer.add([record], about=[(record.id, file)])

    stored = writer.store.get_memories([record.id])[record.id]
    assert TOKEN not in stored.text
    assert [e.key for e in writer.store.about([record.id])[record.id]] == [file.key]
    assert index.calls == [("added",)]


def test_edit_rewrites_the_text_and_marks_its_vector_stale(writer: MemoryWriter, index: Bookkeeping) -> None:
    memory = writer.remember("Billing runs on Postgres 15.", project="/p").memory

    edited = writer.edit(memory.id, MemoryEdit(f"Billing runs on Postgres 16, password {TOKEN}."))

    assert TOKEN not in edited.text and "Postgres 16" in edited.text
    assert edited.content_hash == memory_hash(Scope.PROJECT, "/p", edited.text)
    assert index.calls[-2:] == [("will_change", memory.id), ("text_changed", memory.id)]


def test_a_status_change_is_told_to_the_index(writer: MemoryWriter, index: Bookkeeping) -> None:
    memory = writer.remember("Flaky test in CI.", category="blocker", project="/p").memory

    archived = writer.set_status(memory.id, Status.ARCHIVED, allowed_from=Status)

    assert archived.status is Status.ARCHIVED
    assert index.calls[-2:] == [("will_change", memory.id), ("status_changed", memory.id, "archived")]


def test_a_status_change_from_a_state_not_allowed_is_a_conflict(writer: MemoryWriter) -> None:
    memory = writer.remember("Flaky test in CI.", category="blocker", project="/p").memory

    assert writer.set_status(memory.id, Status.ACTIVE, allowed_from=()).status is Status.ACTIVE  # no change
    writer.set_status(memory.id, Status.RESOLVED, allowed_from=(Status.ACTIVE,))
    with pytest.raises(ConflictError, match="is resolved"):
        writer.set_status(memory.id, Status.ARCHIVED, allowed_from=(Status.ACTIVE,))


def test_supersede_closes_the_older_memory_and_links_the_two(
    writer: MemoryWriter, index: Bookkeeping
) -> None:
    older = writer.remember("We deploy with Fabric.", category="decision", project="/p").memory
    newer = writer.remember("We deploy with Ansible.", category="decision", project="/p").memory

    writer.supersede(newer, older, T0)

    assert writer.get(older.id).status is Status.SUPERSEDED
    assert Link(newer.id, older.id, LinkKind.SUPERSEDES, T0) in writer.store.links([older.id])
    assert ("status_changed", older.id, "superseded") in index.calls


def test_delete_removes_the_memory_and_its_vector(writer: MemoryWriter, index: Bookkeeping) -> None:
    memory = writer.remember("Temporary note.", project="/p").memory

    writer.delete(memory.id)

    assert index.calls[-2:] == [("will_change", memory.id), ("removed", memory.id)]
    with pytest.raises(NotFoundError):
        writer.get(memory.id)


def test_vectors_brought_by_the_caller_are_noted_before_and_stored_after(
    writer: MemoryWriter, index: Bookkeeping
) -> None:
    records = [fact("Imported one."), fact("Imported two.")]

    writer.add(records, vectors=np.eye(2, 8, dtype=np.float32))
    writer.set_vectors([records[0].id], np.eye(1, 8, dtype=np.float32))

    ids = tuple(r.id for r in records)
    assert index.calls == [
        ("will_change", *ids),
        ("stored", *ids),
        ("will_change", records[0].id),
        ("stored", records[0].id),
    ]
    assert writer.store.count_vectors() == 2


def test_a_session_chains_its_turns(writer: MemoryWriter) -> None:
    first = writer.remember("Turn one: we looked at the cache.", project="/p", session="ses_1").memory
    second = writer.remember(
        "Turn two: the cache key lacks the locale.", project="/p", session="ses_1"
    ).memory

    assert (first.id, second.id) in writer.store.next_pairs([first.id])


def test_attach_stores_the_entities_and_links_them(writer: MemoryWriter) -> None:
    memory = writer.remember("Session summary.", project="/p").memory
    session = Entity("Session:ses_9", EntityKind.SESSION, "ses_9", "/p")

    writer.attach([(memory.id, session)])

    assert writer.store.get_entities([session.key])
    assert session.key in {e.key for e in writer.store.about([memory.id])[memory.id]}


def test_a_stable_seed_mints_the_same_id() -> None:
    assert fact("a", seed="README.md#x").id == fact("b", seed="README.md#x").id


# -- supersession: only another choice on the same subject -------------------------------------

SEND_STATUS = "Prefer res.sendStatus() over res.status().send() for bare status codes in lib/response.js"
JSON_OBJECTS = "Prefer res.json() over res.send() when responding with objects in lib/response.js handlers"


def test_a_preference_about_another_call_of_the_same_file_supersedes_nothing(
    writer: MemoryWriter, tmp_path: Path
) -> None:
    root = tmp_path / "express"
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "response.js").write_text("module.exports = {}\n", "utf-8")
    older = writer.remember(SEND_STATUS, category="preference", project=str(root))

    newer = writer.remember(JSON_OBJECTS, category="preference", project=str(root))

    assert "lib/response.js" in [e.name for e in newer.entities]  # the two share the file...
    assert newer.superseded == () and newer.supersessions == ()  # ...and are two subjects
    assert writer.get(older.memory.id).status is Status.ACTIVE


def test_another_choice_on_the_same_subject_supersedes_and_names_the_event_that_undoes_it(
    writer: MemoryWriter,
) -> None:
    older = writer.remember("Prefer yarn over npm", category="preference", project="/p")

    newer = writer.remember("Prefer pnpm over npm", category="preference", project="/p")

    [done] = newer.supersessions
    assert (done.memory_id, done.text, done.automatic) == (older.memory.id, "Prefer yarn over npm", True)
    assert writer.get(older.memory.id).status is Status.SUPERSEDED
    writer.history.undo(done.event_id)
    assert writer.get(older.memory.id).status is Status.ACTIVE


def test_an_agents_memory_without_a_project_is_refused_and_nothing_is_stored(writer: MemoryWriter) -> None:
    with pytest.raises(InvalidInputError, match="belongs to the project"):
        writer.remember("hello", source="mcp")

    assert writer.store.all_memories() == []


def test_an_agents_memory_is_kept_in_its_project_whatever_scope_it_asks(writer: MemoryWriter) -> None:
    stored = writer.remember("Prefer tabs", category="preference", scope="global", project="/p", source="mcp")

    assert (stored.memory.scope, stored.memory.project) == (Scope.PROJECT, "/p")


def test_a_preference_about_a_file_of_the_project_stays_in_the_project(
    writer: MemoryWriter, git_project: str
) -> None:
    about_code = writer.remember(
        "Prefer early returns in src/app.py", category="preference", project=git_project
    )
    everywhere = writer.remember(
        "Prefer early returns over nested ifs", category="preference", project=git_project
    )
    asked = writer.remember(
        "Prefer tabs in src/app.py", category="preference", scope="global", project=git_project
    )

    assert (about_code.memory.scope, about_code.memory.project) == (Scope.PROJECT, git_project)
    assert (everywhere.memory.scope, everywhere.memory.project) == (Scope.GLOBAL, None)
    assert asked.memory.scope is Scope.GLOBAL  # what the user asked for
