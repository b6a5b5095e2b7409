"""On a team's PostgreSQL store, an entity only a person's own global memories name is theirs
(docs/team.md, "Entities"): another person neither lists, counts nor finds it, until a memory
they see names it. Two people, each logged in as their own role, on one database (schema 15)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from support.stores import postgres_url
from support.team import on_postgres, writer_roles
from unit.adapters.test_code_graph_contract import PROJECT, function, parsed, save

from graphmem.adapters.postgres_code import PostgresCodeGraph
from graphmem.adapters.postgres_gitlab import PostgresGitLabGraph
from graphmem.adapters.postgres_migrate import SCHEMA_VERSION, migrate
from graphmem.adapters.postgres_store import PostgresGraphStore
from graphmem.core.codegraph import file_key
from graphmem.core.models import Category, Entity, EntityKind, MemoryRecord, Scope
from graphmem.core.timeparse import utc_now
from graphmem.service.memory import MemoryService

pytestmark = pytest.mark.integration

DIMENSION = 256
ISSUE = "Issue:acme/shop#42"
PRIVATE = "Waiting on acme/shop#42 before the refund change"


@dataclass
class Team:
    admin: PostgresGraphStore
    alice: MemoryService
    bob: MemoryService
    alice_store: PostgresGraphStore  # what alice's role reads, below the service
    bob_store: PostgresGraphStore
    admin_url: str


@pytest.fixture
def team(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Team]:
    admin_url = postgres_url(request)
    admin = PostgresGraphStore(admin_url, dimension=DIMENSION)  # the owner sizes the vector column
    alice_url, bob_url = writer_roles(admin_url, DIMENSION)
    urls = {"alice": alice_url, "bob": bob_url}
    alice, bob = (
        on_postgres(alice_url, tmp_path / "alice", DIMENSION),
        on_postgres(bob_url, tmp_path / "bob", DIMENSION),
    )
    stores = {name: PostgresGraphStore(url, dimension=DIMENSION) for name, url in urls.items()}
    team = Team(admin, alice, bob, stores["alice"], stores["bob"], admin_url)
    yield team
    for closing in (team.alice, team.bob, *stores.values(), admin):
        closing.close()


def seen(store: PostgresGraphStore, key: str) -> bool:
    """Whether the reads of entities by key and of them all show ``key`` to the store's role."""
    by_key = key in store.get_entities([key])
    assert by_key == (key in {e.key for e in store.all_entities()})
    return by_key


def test_an_entity_only_a_persons_global_memory_names_is_theirs_alone(team: Team) -> None:
    note = team.bob.remember(PRIVATE, scope="global")
    assert [e.key for e in note.entities] == [ISSUE]

    assert seen(team.bob_store, ISSUE) and team.bob.stats().entities.get("Issue") == 1
    assert not seen(team.alice_store, ISSUE)
    assert "Issue" not in team.alice.stats().entities
    named = team.bob_store.get_entities([ISSUE])[ISSUE].name
    assert [e.key for e in team.bob_store.find_entities(named, [EntityKind.ISSUE])] == [ISSUE]
    assert team.alice_store.find_entities(named, [EntityKind.ISSUE]) == []
    assert ISSUE not in {r.key for r in PostgresGitLabGraph(team.alice_store).all_rows()}  # nor queued
    assert ISSUE in {r.key for r in PostgresGitLabGraph(team.bob_store).all_rows()}
    assert seen(team.admin, ISSUE)  # an administrator sees every entity


def test_a_deleted_private_memory_leaves_its_entity_private(team: Team) -> None:
    note = team.bob.remember(PRIVATE, scope="global")
    team.bob.delete(note.memory.id)

    assert not seen(team.alice_store, ISSUE)
    assert seen(team.bob_store, ISSUE)


def test_a_memory_the_team_sees_makes_the_entity_the_teams(team: Team) -> None:
    team.bob.remember(PRIVATE, scope="global")
    shared = team.alice.remember(
        "The refund change waits on acme/shop#42", scope="project", project="/src/shop"
    ).memory.id
    assert seen(team.alice_store, ISSUE)

    team.alice.delete(shared)  # once the team's, it stays the team's
    assert seen(team.alice_store, ISSUE)


def test_a_persons_own_memory_about_anothers_private_entity_links_it_for_them(team: Team) -> None:
    team.bob.remember(PRIVATE, scope="global")
    mine = team.alice.remember("I review acme/shop#42 on Fridays", scope="global")

    assert [e.key for e in mine.entities] == [ISSUE]
    assert [e.key for e in team.alice.show(mine.memory.id).entities] == [ISSUE]
    assert seen(team.alice_store, ISSUE)
    with psycopg.connect(team.admin_url) as conn:  # still bob's: each sees it through their own memory
        assert conn.execute("SELECT owner FROM entities WHERE key = %s", (ISSUE,)).fetchone() == (
            team.bob_store.login_role().name,
        )


def _remember_about(store: PostgresGraphStore, memory_id: str, entity: Entity) -> None:
    now = utc_now()
    record = MemoryRecord(memory_id, f"about {entity.name}", Category.FACT, Scope.GLOBAL, None, now, now, now)
    store.add_memories([record])
    store.upsert_entities([entity])
    store.link_about([(memory_id, entity)])


def test_code_a_scan_stores_is_the_teams(team: Team) -> None:
    path = file_key(PROJECT, "ledger.py")
    _remember_about(team.bob_store, "mem_bob", Entity(path, EntityKind.FILE, "ledger.py", PROJECT))
    assert not seen(team.alice_store, path)

    save(PostgresCodeGraph(team.alice_store), {"ledger.py": parsed(function("post", 1))})  # alice's scan
    assert seen(team.alice_store, path)
    assert team.bob_store.about(["mem_bob"])["mem_bob"][0].key == path  # bob's link kept


def test_schema_15_makes_the_entities_of_private_memories_their_owners_and_rolls_back(team: Team) -> None:
    team.bob.remember(PRIVATE, scope="global")
    team.alice.remember("Reviews of !7 go to the payments team", scope="project", project="/src/shop")
    symbol = file_key(PROJECT, "util.py")
    save(PostgresCodeGraph(team.admin), {"util.py": parsed(function("helper", 1))})
    _remember_about(team.bob_store, "mem_bob", Entity(symbol, EntityKind.FILE, "util.py", PROJECT))

    assert migrate(team.admin_url, target=14).after == 14  # entities as before: everyone's
    with psycopg.connect(team.admin_url) as conn:
        columns = conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'entities'"
        )
        assert "owner" not in {row[0] for row in columns}
        assert conn.execute("SELECT count(*) FROM entities WHERE key = %s", (ISSUE,)).fetchone() == (1,)
    assert migrate(team.admin_url).after == SCHEMA_VERSION  # 15 and every version after it

    assert not seen(team.alice_store, ISSUE) and seen(team.bob_store, ISSUE)
    assert seen(team.alice_store, symbol)  # scanned code stays the team's
