"""A bootstrap on a team's PostgreSQL store never takes another person's links (docs/team.md,
"Scopes"). Row-level security hides Alice's global memories and their ``about`` rows from Bob;
a pass Bob ran once took a file or symbol only Alice remembered for one nobody does, removed
it, and the foreign key took her link with it. The code graph now asks
``graphmem_remembered()`` (schema 8): the node stays, marked deleted, Alice's memory is still
about it and flagged possibly stale, and Bob still sees nothing of her memory. Two writer
roles, each through the whole service, on one database."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from support.git_repo import commit, git, new_repo
from support.stores import postgres_url
from support.team import on_postgres, writer_roles

from graphmem.core.codegraph import file_key, module_key, symbol_key
from graphmem.core.models import Entity, EntityKind
from graphmem.errors import NotFoundError
from graphmem.service.memory import MemoryService

pytestmark = pytest.mark.integration

DIMENSION = 64
VOID_NOTE = "void() in src/ledger.py reverses a posting, never deletes it"
LEDGER = "def post(entry):\n    return entry.amount\n\n\ndef void(entry):\n    return -entry.amount\n"
POST_ONLY = LEDGER.split("\n\n\n")[0] + "\n"


@dataclass
class Team:
    admin_url: str
    alice: MemoryService
    bob: MemoryService
    checkout: Path
    project: str

    def about(self, memory_id: str) -> list[str]:
        """Every entity the memory is about, read as the owner (row-level security does not apply)."""
        with psycopg.connect(self.admin_url) as conn:
            rows = conn.execute(
                "SELECT entity_key FROM about WHERE memory_id = %s ORDER BY entity_key", (memory_id,)
            )
            return [str(r[0]) for r in rows.fetchall()]

    def symbol_deleted(self, key: str) -> bool | None:
        """Whether the code graph holds the symbol marked deleted (None: it holds no such symbol)."""
        with psycopg.connect(self.admin_url) as conn:
            row = conn.execute("SELECT deleted_at FROM code_symbols WHERE key = %s", (key,)).fetchone()
            return None if row is None else row[0] is not None


def _service(url: str, data_dir: Path, checkout: Path) -> MemoryService:
    memory = on_postgres(url, data_dir, DIMENSION)
    return memory.bound(str(checkout))  # as graphmem.open_memory binds the current directory's


@pytest.fixture
def team(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Team]:
    """Alice and Bob, writer roles of one database, each with a service in the same checkout
    (src/ledger.py with ``post`` and ``void``), its code graph built by Alice."""
    admin_url = postgres_url(request)
    alice_url, bob_url = writer_roles(admin_url, DIMENSION)
    checkout = new_repo(tmp_path / "shop")
    (checkout / "src").mkdir()
    commit(checkout, "src/ledger.py", LEDGER)
    alice = _service(alice_url, tmp_path / "alice", checkout)
    bob = _service(bob_url, tmp_path / "bob", checkout)
    project = alice.bootstrap(checkout, history=0).project
    yield Team(admin_url, alice, bob, checkout, project)
    alice.close()
    bob.close()


def _hidden_from_bob(team: Team, memory_id: str) -> None:
    with pytest.raises(NotFoundError):
        team.bob.show(memory_id)
    assert memory_id not in {m.id for m in team.bob.list(project=None)}


def test_a_file_only_another_person_remembers_is_kept_when_a_bootstrap_sees_it_go(team: Team) -> None:
    note = team.alice.remember(
        "Ledger rows are append-only, see src/ledger.py", scope="global", project=str(team.checkout)
    ).memory
    ledger = file_key(team.project, "src/ledger.py")
    assert note.scope.value == "global" and team.about(note.id) == [ledger]
    git(team.checkout, "rm", "-q", "src/ledger.py")
    git(team.checkout, "commit", "-q", "-m", "drop the ledger")

    assert team.bob.bootstrap(team.checkout, history=0).removed == 1

    assert team.about(note.id) == [ledger]  # Alice's link survived Bob's pass
    shown = team.alice.show(note.id)
    assert [e.key for e in shown.entities] == [ledger]
    assert shown.memory.stale and "src/ledger.py" in shown.memory.stale
    assert team.bob.code is not None and ledger in team.bob.code.deleted_files([ledger])
    _hidden_from_bob(team, note.id)


def test_a_symbol_only_another_person_remembers_is_kept_when_a_bootstrap_sees_it_go(team: Team) -> None:
    note = team.alice.remember(VOID_NOTE, scope="global", project=str(team.checkout)).memory
    void = symbol_key(team.project, "src/ledger.py", "void")
    assert void in team.about(note.id)
    commit(team.checkout, "src/ledger.py", POST_ONLY)  # void is gone, the file stays

    team.bob.bootstrap(team.checkout, history=0)

    assert void in team.about(note.id)
    assert team.symbol_deleted(void) is True
    assert team.symbol_deleted(symbol_key(team.project, "src/ledger.py", "post")) is False
    assert team.alice.show(note.id).memory.stale
    _hidden_from_bob(team, note.id)


def test_a_moved_symbol_takes_every_persons_links_and_shows_its_mover_only_their_own(team: Team) -> None:
    mine = team.alice.remember(VOID_NOTE, scope="global", project=str(team.checkout)).memory
    shared = team.bob.remember(
        "void() in src/ledger.py is audited", scope="project", project=str(team.checkout)
    ).memory
    old = symbol_key(team.project, "src/ledger.py", "void")
    new = symbol_key(team.project, "src/reversals.py", "void")
    assert old in team.about(mine.id) and old in team.about(shared.id)
    commit(team.checkout, "src/reversals.py", "def void(entry):\n    return -entry.amount\n")
    commit(team.checkout, "src/ledger.py", POST_ONLY)  # void moved, its body the same

    report = team.bob.bootstrap(team.checkout, history=0)

    assert report.moved_symbols == 1
    assert new in team.about(shared.id) and old not in team.about(shared.id)  # Bob's followed
    assert new in team.about(mine.id) and old not in team.about(mine.id)  # and Alice's, unseen
    assert team.symbol_deleted(old) is None  # nobody's memory is left on it: gone
    shown = team.alice.show(mine.id)
    assert new in [e.key for e in shown.entities] and not shown.memory.stale
    _hidden_from_bob(team, mine.id)


def test_a_renamed_file_takes_another_persons_links_along(team: Team) -> None:
    note = team.alice.remember(
        "Ledger rows are append-only, see src/ledger.py", scope="global", project=str(team.checkout)
    ).memory
    old, new = file_key(team.project, "src/ledger.py"), file_key(team.project, "src/journal.py")
    git(team.checkout, "mv", "src/ledger.py", "src/journal.py")
    git(team.checkout, "commit", "-q", "-m", "the ledger is a journal now")

    team.bob.bootstrap(team.checkout, history=0)

    assert team.about(note.id) == [new]
    assert [e.key for e in team.alice.show(note.id).entities] == [new]
    assert team.bob.code is not None and old not in team.bob.code.deleted_files([old])
    _hidden_from_bob(team, note.id)


def test_a_renamed_project_takes_another_persons_links_to_its_code_along(team: Team) -> None:
    note = team.alice.remember(VOID_NOTE, scope="global", project=str(team.checkout)).memory
    old = symbol_key(team.project, "src/ledger.py", "void")
    assert old in team.about(note.id)
    git(team.checkout, "config", "graphmem.project", "ledger")  # the repository's shared name

    report = team.bob.bootstrap(team.checkout, history=0)

    assert (report.project, report.renamed_from) == ("ledger", team.project)
    assert report.links_followed == 0  # Bob saw none of them
    assert symbol_key("ledger", "src/ledger.py", "void") in team.about(note.id)
    assert old not in team.about(note.id)
    _hidden_from_bob(team, note.id)


def test_an_unused_module_only_another_person_remembers_is_kept(team: Team) -> None:
    commit(team.checkout, "src/clients.py", "import requests\nimport yaml\n")
    team.alice.bootstrap(team.checkout, history=0)
    yaml, requests = module_key(team.project, "yaml"), module_key(team.project, "requests")
    note = team.alice.remember("yaml is pinned below 7", scope="global", project=str(team.checkout)).memory
    team.alice.store.link_about([(note.id, Entity(yaml, EntityKind.EXTERNAL_MODULE, "yaml"))])
    commit(team.checkout, "src/clients.py", "print('no imports')\n")
    team.bob.bootstrap(team.checkout, history=0)
    assert team.bob.code is not None

    assert team.bob.code.remove_unused_modules(team.project) == 1

    assert set(team.bob.store.get_entities([yaml, requests])) == {yaml}
    assert yaml in team.about(note.id)
    _hidden_from_bob(team, note.id)
