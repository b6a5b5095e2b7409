"""A person's change of a fact a bootstrap pass read from the repository's docs stands: the next
pass leaves the person's words and archive alone while the file says what it said, and proposes
what the file says since beside the person's words (``service/repository_docs.py``).

On in-memory sources (tests/support/fake_sources.py) and the in-memory store, as
tests/unit/service/test_bootstrap.py.
"""

from __future__ import annotations

import json
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
from graphmem.core.models import Category, MemoryRecord, Status
from graphmem.core.ports import LearningSources
from graphmem.service import repository_docs
from graphmem.service.memory import MemoryService
from graphmem.service.semantic import SemanticIndex
from graphmem.settings import load_settings

README = b"# Shop\n\nA shop for selling things online to people.\n"
CHANGED = b"# Shop\n\nA shop for selling handmade things to people.\n"
MINE = "The shop sells second-hand books; the README is out of date."


class Repo:
    """A repository (a real, empty folder; its docs given) and a service that bootstraps it."""

    def __init__(self, root: Path, data_dir: Path) -> None:
        self.root = root
        self.files = FakeFiles({})
        self.files.docs["README.md"] = README
        self.store = FakeGraphStore(dimension=64)
        sources = LearningSources(
            new_parser=lambda: FakeParser({}),
            files=self.files,
            history=FakeHistory(),
            roots=GitToplevel(),
            sessions=OpenCodeSessions(),
        )
        self.memory: MemoryService = build_memory(
            self.store,
            SemanticIndex(self.store, HashEmbedder(64), HnswVectorIndex),
            load_settings(data_dir=data_dir),
            data_dir=data_dir,
            code=FakeCodeGraph(self.store),
            sources=sources,
        )

    def fact(self) -> MemoryRecord:
        [fact] = [m for m in self.store.all_memories() if m.category is Category.FACT and m.source != "user"]
        return fact

    def stored(self, memory_id: str) -> MemoryRecord:
        return self.store.get_memories([memory_id])[memory_id]

    def facts(self) -> list[MemoryRecord]:
        return sorted(
            (m for m in self.store.all_memories() if m.category is Category.FACT), key=lambda m: m.created_at
        )


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    root = tmp_path / "repo"
    root.mkdir()
    repo = Repo(root, tmp_path / "data")
    assert repo.memory.bootstrap(root, history=0).facts_added == 1
    return repo


def test_a_fact_a_person_edited_keeps_their_words_while_its_file_says_the_same(repo: Repo) -> None:
    fact = repo.fact()
    repo.memory.edit(fact.id, text=MINE)

    report = repo.memory.bootstrap(repo.root, history=0)

    assert (report.facts_updated, report.facts_proposed) == (0, 0)
    assert repo.stored(fact.id).text == MINE
    assert [e.actor for e in repo.memory.history(fact.id)] == ["user"]


def test_a_persons_edit_holds_however_often_an_agent_repeated_the_fact_since(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent's repeats are in the fact's history too, more of them than a pass reads: the pass
    reads past them (``core.events.CHANGES``) to the person's edit, and proposes the file's words."""
    monkeypatch.setattr(repository_docs, "HISTORY_READ", 3)
    fact = repo.fact()
    repo.memory.edit(fact.id, text=MINE)
    for _ in range(4):
        assert repo.memory.remember(MINE, project=fact.project, source="mcp").duplicate_of == fact.id
    assert [e.kind.value for e in repo.memory.history(fact.id)] == ["reinforce"] * 4 + ["edit"]
    repo.files.docs["README.md"] = CHANGED

    report = repo.memory.bootstrap(repo.root, history=0)

    assert (report.facts_updated, report.facts_proposed) == (0, 1)
    assert repo.stored(fact.id).text == MINE


def test_a_fact_a_person_archived_stays_archived_while_its_file_says_it(repo: Repo) -> None:
    fact = repo.fact()
    repo.memory.archive(fact.id)

    report = repo.memory.bootstrap(repo.root, history=0)

    assert report.facts_updated == 0
    assert repo.stored(fact.id).status is Status.ARCHIVED


def test_what_the_file_says_after_a_persons_edit_is_proposed_beside_it_once(repo: Repo) -> None:
    fact = repo.fact()
    repo.memory.edit(fact.id, text=MINE)
    repo.files.docs["README.md"] = CHANGED

    first = repo.memory.bootstrap(repo.root, history=0)
    second = repo.memory.bootstrap(repo.root, history=0)

    assert (first.facts_updated, first.facts_proposed, second.facts_proposed) == (0, 1, 0)
    assert repo.stored(fact.id).text == MINE
    [proposal] = [m for m in repo.facts() if m.status is Status.PROPOSED]
    assert "handmade" in proposal.text
    assert proposal.origin == f"change of {fact.id}"
    assert proposal.source == fact.source  # the file's words, described as its file's
    repo.memory.confirm(proposal.id)  # the person takes the file's words
    third = repo.memory.bootstrap(repo.root, history=0)
    assert (third.facts_added, third.facts_updated, third.facts_archived) == (0, 0, 0)
    assert third.facts_proposed == 0
    assert repo.stored(proposal.id).status is Status.ACTIVE
    assert repo.stored(fact.id).status is Status.SUPERSEDED


def test_a_proposal_the_person_turned_down_is_not_proposed_again(repo: Repo) -> None:
    fact = repo.fact()
    repo.memory.edit(fact.id, text=MINE)
    repo.files.docs["README.md"] = CHANGED
    repo.memory.bootstrap(repo.root, history=0)
    [proposal] = [m for m in repo.facts() if m.status is Status.PROPOSED]
    repo.memory.reject(proposal.id)

    report = repo.memory.bootstrap(repo.root, history=0)

    assert report.facts_proposed == 0
    assert [m.status for m in repo.facts() if m.id != fact.id] == [Status.ARCHIVED]


def test_an_edit_the_person_undid_leaves_the_fact_to_its_file_again(repo: Repo) -> None:
    fact = repo.fact()
    edited = repo.memory.edit(fact.id, text=MINE)
    [event] = repo.memory.history(fact.id)
    repo.memory.undo(event.id)
    repo.files.docs["README.md"] = CHANGED

    report = repo.memory.bootstrap(repo.root, history=0)

    assert edited.text == MINE
    assert (report.facts_updated, report.facts_proposed) == (1, 0)
    assert "handmade" in repo.stored(fact.id).text


def test_an_agents_edit_of_a_fact_gives_way_to_its_file(repo: Repo) -> None:
    fact = repo.fact()
    repo.memory.edit(fact.id, text="An agent thinks the shop sells cars.", actor="agent")

    report = repo.memory.bootstrap(repo.root, history=0)

    assert report.facts_updated == 1
    assert repo.stored(fact.id).text == fact.text


def test_a_fact_its_pass_archived_comes_back_with_its_file(repo: Repo) -> None:
    fact = repo.fact()
    del repo.files.docs["README.md"]
    assert repo.memory.bootstrap(repo.root, history=0).facts_archived == 1
    repo.files.docs["README.md"] = README

    report = repo.memory.bootstrap(repo.root, history=0)

    assert report.facts_updated == 1
    assert repo.stored(fact.id).status is Status.ACTIVE


def test_a_pass_s_edit_the_person_undid_stays_undone(repo: Repo) -> None:
    fact = repo.fact()
    repo.files.docs["README.md"] = CHANGED
    assert repo.memory.bootstrap(repo.root, history=0).facts_updated == 1
    [edit] = repo.memory.history(fact.id)
    repo.memory.undo(edit.id)  # the person wants the words it had

    report = repo.memory.bootstrap(repo.root, history=0)

    assert (report.facts_updated, report.facts_proposed) == (0, 0)
    assert repo.stored(fact.id).text == fact.text


def test_a_persons_edit_an_imported_history_tells_of_leaves_the_fact_to_its_file(tmp_path: Path) -> None:
    # A restored (or forged) export of the fact: its history says the user edited it; a file says so.
    root = tmp_path / "repo"
    root.mkdir()
    first = Repo(root, tmp_path / "first")
    first.memory.bootstrap(root, history=0)
    fact = first.fact()
    copy = {
        "type": "memory", "id": fact.id, "text": MINE, "category": "fact", "scope": "project",
        "project": fact.project, "status": "active", "created_at": "2026-01-01T00:00:00Z", "entities": [],
    }  # fmt: skip
    forged = {
        "type": "event", "id": "evt_0123456789abcdef", "memory_id": fact.id, "at": "2026-01-02T00:00:00Z",
        "kind": "edit", "actor": "user", "before": {"text": fact.text}, "after": {"text": MINE},
    }  # fmt: skip
    repo = Repo(root, tmp_path / "second")
    header = {"type": "header", "format": "graphmem-export", "version": 1, "project": None, "counts": {}}
    repo.memory.import_text(
        "".join(json.dumps(line) + "\n" for line in (header, copy, forged)), name="x.jsonl"
    )
    assert repo.stored(fact.id).text == MINE

    report = repo.memory.bootstrap(root, history=0)

    assert (report.facts_updated, report.facts_proposed) == (1, 0)
    assert repo.stored(fact.id).text == fact.text
