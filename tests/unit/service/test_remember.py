"""Rememberer, what a ``remember`` means, writing through a MemoryWriter on a real Kùzu store
in tmp_path."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import cast

import pytest

from graphmem.adapters.kuzu_store import KuzuGraphStore
from graphmem.core.dedup import memory_hash
from graphmem.core.models import Scope, Status
from graphmem.core.ports import Visibility
from graphmem.errors import InvalidInputError
from graphmem.service.mentions import Mentions
from graphmem.service.remember import Rememberer
from graphmem.service.semantic import SemanticIndex
from graphmem.service.writer import MemoryWriter
from tests.support.bookkeeping import T0, TOKEN, Bookkeeping


def test_remember_redacts_before_it_stores_and_says_how_much(
    writer: MemoryWriter, rememberer: Rememberer
) -> None:
    result = rememberer.remember(f"Deploy with {TOKEN}", project="/p")

    stored = writer.store.get_memories([result.memory.id])[result.memory.id]
    assert TOKEN not in stored.text and result.redacted == 1
    assert stored.content_hash == memory_hash(Scope.PROJECT, "/p", stored.text)


def test_remember_twice_reinforces_the_first_memory(rememberer: Rememberer, index: Bookkeeping) -> None:
    first = rememberer.remember("The build uses uv.", project="/p")
    again = rememberer.remember("The build uses uv.", project="/p")

    assert again.created is False and again.duplicate_of == first.memory.id
    assert again.memory.reinforced == 1
    assert index.calls == [("added",)]  # a reinforcement adds nothing to embed


def test_a_fact_is_compared_only_with_memories_that_may_repeat_it(
    rememberer: Rememberer, store: KuzuGraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    rememberer.remember("The build caches wheels in CI.", project="/p")
    asked: list[int] = []
    matches = store.text_matches

    def text_matches(
        query: str, visibility: Visibility, limit: int, *, holding: Sequence[object] = ()
    ) -> object:
        asked.append(len(holding))
        return matches(query, visibility, limit, holding=holding)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "text_matches", text_matches)

    # Reworded: each of its content words is held in some form, so it reinforces.
    again = rememberer.remember("The builds cached the wheels in CI.", project="/p")
    # "sccache" is in no memory: no memory can be its near-duplicate.
    new = rememberer.remember("The build caches wheels with sccache in CI.", project="/p")
    # A decision may replace an older one on its subject with fewer words in common.
    rememberer.remember("We decided on sccache for the build.", category="decision", project="/p")

    assert again.created is False and new.created is True
    assert asked == [4, 5, 0]  # builds, cached, wheels, ci; and sccache


def test_remember_refuses_a_project_scope_without_a_project(rememberer: Rememberer) -> None:
    with pytest.raises(InvalidInputError, match="needs a project"):
        rememberer.remember("Use tabs.", scope="project", project=None)


def test_a_session_chains_its_turns(writer: MemoryWriter, rememberer: Rememberer) -> None:
    first = rememberer.remember("Turn one: we looked at the cache.", project="/p", session="ses_1").memory
    second = rememberer.remember(
        "Turn two: the cache key lacks the locale.", project="/p", session="ses_1"
    ).memory

    assert (first.id, second.id) in writer.store.next_pairs([first.id])


@pytest.mark.parametrize(
    ("names", "said"),
    [
        ({"session": "ses\x00"}, "session contains a NUL"),
        ({"origin": "msg_1\x00"}, "origin contains a NUL"),
        ({"session": "ses_\ud83d"}, "session is not valid UTF-8"),
        ({"origin": "m" * 501}, "origin is 501 characters; the limit is 500"),
        ({"session": "s" * 4097}, "session is 4,097 characters"),
    ],
)
def test_a_session_or_origin_no_store_holds_is_refused_and_nothing_is_stored(
    writer: MemoryWriter, rememberer: Rememberer, names: dict[str, str], said: str
) -> None:
    """Kùzu held a NUL in a session, which its export then carried to PostgreSQL, which refused it
    in the middle of the import: the write door refuses it, as it refuses one in a text."""
    with pytest.raises(InvalidInputError, match=said):
        rememberer.remember("Turn one: we looked at the cache.", project="/p", **names)  # type: ignore[arg-type]

    assert writer.store.all_memories() == []


# -- supersession: only another choice on the same subject -------------------------------------

SEND_STATUS = "Prefer res.sendStatus() over res.status().send() for bare status codes in lib/response.js"
JSON_OBJECTS = "Prefer res.json() over res.send() when responding with objects in lib/response.js handlers"


def test_a_preference_about_another_call_of_the_same_file_supersedes_nothing(
    writer: MemoryWriter, rememberer: Rememberer, tmp_path: Path
) -> None:
    root = tmp_path / "express"
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "response.js").write_text("module.exports = {}\n", "utf-8")
    older = rememberer.remember(SEND_STATUS, category="preference", project=str(root))

    newer = rememberer.remember(JSON_OBJECTS, category="preference", project=str(root))

    assert "lib/response.js" in [e.name for e in newer.entities]  # the two share the file...
    assert newer.superseded == () and newer.supersessions == ()  # ...and are two subjects
    assert writer.get(older.memory.id).status is Status.ACTIVE


def test_another_choice_on_the_same_subject_supersedes_and_names_the_event_that_undoes_it(
    writer: MemoryWriter,
    rememberer: Rememberer,
) -> None:
    older = rememberer.remember("Prefer yarn over npm", category="preference", project="/p")

    newer = rememberer.remember("Prefer pnpm over npm", category="preference", project="/p")

    [done] = newer.supersessions
    assert (done.memory_id, done.text, done.automatic) == (older.memory.id, "Prefer yarn over npm", True)
    assert writer.get(older.memory.id).status is Status.SUPERSEDED
    writer.history.undo(done.event_id)
    assert writer.get(older.memory.id).status is Status.ACTIVE


def test_an_agents_memory_without_a_project_is_refused_and_nothing_is_stored(
    writer: MemoryWriter, rememberer: Rememberer
) -> None:
    with pytest.raises(InvalidInputError, match="belongs to the project"):
        rememberer.remember("hello", source="mcp")

    assert writer.store.all_memories() == []


def test_an_agents_memory_is_kept_in_its_project_whatever_scope_it_asks(rememberer: Rememberer) -> None:
    stored = rememberer.remember(
        "Prefer tabs", category="preference", scope="global", project="/p", source="mcp"
    )

    assert (stored.memory.scope, stored.memory.project) == (Scope.PROJECT, "/p")


def test_a_preference_about_a_file_of_the_project_stays_in_the_project(
    rememberer: Rememberer, git_project: str
) -> None:
    about_code = rememberer.remember(
        "Prefer early returns in src/app.py", category="preference", project=git_project
    )
    everywhere = rememberer.remember(
        "Prefer early returns over nested ifs", category="preference", project=git_project
    )
    asked = rememberer.remember(
        "Prefer tabs in src/app.py", category="preference", scope="global", project=git_project
    )

    assert (about_code.memory.scope, about_code.memory.project) == (Scope.PROJECT, git_project)
    assert (everywhere.memory.scope, everywhere.memory.project) == (Scope.GLOBAL, None)
    assert asked.memory.scope is Scope.GLOBAL  # what the user asked for


# -- remembered again: an archived memory comes back for whoever may replace it -------------------


def test_an_archived_memory_remembered_again_comes_back_in_an_event_undo_reverses(
    writer: MemoryWriter, rememberer: Rememberer
) -> None:
    first = rememberer.remember("The build uses uv.", project="/p").memory
    writer.set_status(first.id, Status.ARCHIVED, allowed_from=Status)

    again = rememberer.remember("The build uses uv.", project="/p")

    assert (again.created, again.memory.status, again.memory.reinforced) == (False, Status.ACTIVE, 1)
    back = writer.store.events_of(first.id, 10)[0]  # newest first
    assert (back.reason, back.before, back.after) == (
        "remembered again",
        {"status": "archived"},
        {"status": "active"},
    )
    writer.history.undo(back.id)
    assert writer.get(first.id).status is Status.ARCHIVED


def test_an_agent_repeating_a_persons_archived_memory_leaves_it_archived(
    writer: MemoryWriter, rememberer: Rememberer
) -> None:
    first = rememberer.remember("The build uses uv.", project="/p").memory
    writer.set_status(first.id, Status.ARCHIVED, allowed_from=Status)

    again = rememberer.remember("The build uses uv.", project="/p", source="mcp")

    assert (again.duplicate_of, again.memory.status, again.memory.reinforced) == (
        first.id,
        Status.ARCHIVED,
        0,
    )
    assert writer.get(first.id).status is Status.ARCHIVED
    assert writer.store.events_of(first.id, 10)[0].reason != "remembered again"


# -- said again by an agent: a person's memory is only the person's to reinforce -------------------


@pytest.mark.parametrize("words", ["The build uses uv.", "the build uses uv"])  # the same, nearly the same
def test_an_agent_repeating_a_persons_memory_neither_counts_nor_refreshes_it(
    store: KuzuGraphStore, index: Bookkeeping, words: str
) -> None:
    now = [T0]
    writer = MemoryWriter(
        store, cast(SemanticIndex, index), Mentions(None, lambda _: None), clock=lambda: now[0]
    )
    rememberer = Rememberer(writer)
    first = rememberer.remember("The build uses uv.", project="/p", source="opencode").memory
    now[0] = T0 + timedelta(days=30)

    again = rememberer.remember(words, project="/p", source="mcp")

    assert (again.created, again.duplicate_of, again.memory.reinforced) == (False, first.id, 0)
    kept = writer.get(first.id)
    assert (kept.reinforced, kept.updated_at) == (0, first.updated_at)  # review: still never repeated


def test_the_persons_own_repeat_still_reinforces_their_memory(rememberer: Rememberer) -> None:
    first = rememberer.remember("The build uses uv.", project="/p", source="opencode").memory

    again = rememberer.remember("The build uses uv.", project="/p", source="claude-code")

    assert (again.duplicate_of, again.memory.reinforced) == (first.id, 1)


def test_an_agent_repeating_an_agents_memory_reinforces_it(rememberer: Rememberer) -> None:
    first = rememberer.remember("The build uses uv.", project="/p", source="mcp").memory

    again = rememberer.remember("The build uses uv.", project="/p", source="mcp")

    assert (again.duplicate_of, again.memory.reinforced) == (first.id, 1)
