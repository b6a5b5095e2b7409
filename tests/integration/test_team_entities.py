"""On a team's PostgreSQL store, an entity only a person's own global memories name is theirs
(docs/team.md, "Entities"): another person neither lists, counts nor finds it, until a memory
they see names it. So is a file only a person's private MR changed, until a scan stores it, a
memory the team sees names it or the team's MR changes it. No one else's write (a memory, an
edit, an import, a ref asked to enrich) changes such an entity, and their own memory naming it
shows it to them without its project; a private write changes no team's entity either, only a
memory others see does (``core/entity_owners.py``). Two people, each logged in as
their own role, on one database (schema 15)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from support.stores import postgres_url
from support.team import on_postgres, writer_roles
from unit.adapters.test_code_graph_contract import PROJECT, function, parsed, save
from unit.adapters.test_gitlab_graph_contract import T0, issue_data, mr_data

from graphmem.adapters.postgres_code import PostgresCodeGraph
from graphmem.adapters.postgres_gitlab import PostgresGitLabGraph
from graphmem.adapters.postgres_migrate import SCHEMA_VERSION, migrate
from graphmem.adapters.postgres_store import PostgresGraphStore
from graphmem.core.codegraph import file_key
from graphmem.core.enrichment import target_key
from graphmem.core.entity_owners import changes
from graphmem.core.gitlab_edits import GitLabAnswer, edit_for
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


def _remember_about(
    store: PostgresGraphStore, memory_id: str, entity: Entity, project: str | None = None
) -> None:
    """A memory about ``entity`` written by ``store``'s role: its own global one, or with
    ``project`` a project memory (the team's)."""
    now = utc_now()
    scope = Scope.PROJECT if project else Scope.GLOBAL
    record = MemoryRecord(memory_id, f"about {entity.name}", Category.FACT, scope, project, now, now, now)
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


# -- a file a person's private MR changed --------------------------------------------------

BOBS_MR = target_key(EntityKind.MERGE_REQUEST, "acme/shop", 13)
TEAMS_MR = target_key(EntityKind.MERGE_REQUEST, "acme/shop", 12)
LEDGER = file_key(PROJECT, "ledger.py")


def changed_ledger(store: PostgresGraphStore, key: str) -> None:
    """The daemon of ``store``'s role stored GitLab's answer about the MR ``key``, which changed
    ledger.py of the checkout (as the enricher stores it)."""
    data = mr_data(project="acme/shop", iid=int(key.rpartition("!")[2]), closes=())
    local = ("acme/shop", PROJECT)
    answer = GitLabAnswer(
        key, data, 0, T0, T0 + timedelta(days=1), local=local, file_keys=[(LEDGER, "ledger.py")]
    )
    PostgresGitLabGraph(store).apply(edit_for(answer))


@pytest.fixture
def bobs_file(team: Team) -> Team:
    """Bob's daemon fetched his own MR !13, which only his global memory names: it changed
    ledger.py, which nothing else in the store named."""
    team.bob.remember("acme/shop!13 is my retry experiment, not for review", scope="global")
    changed_ledger(team.bob_store, BOBS_MR)
    return team


def owner_of(team: Team, key: str) -> object:
    with psycopg.connect(team.admin_url) as conn:
        row = conn.execute("SELECT owner FROM entities WHERE key = %s", (key,)).fetchone()
    assert row is not None
    return row[0]


def test_a_file_only_a_persons_private_mr_changed_is_theirs(bobs_file: Team) -> None:
    assert seen(bobs_file.bob_store, LEDGER)
    assert not seen(bobs_file.alice_store, LEDGER)
    assert bobs_file.alice_store.find_entities("ledger.py", [EntityKind.FILE]) == []
    assert "File" not in bobs_file.alice.stats().entities
    assert PostgresGitLabGraph(bobs_file.alice_store).changed_by(LEDGER, 10) == []
    assert [mr.key for mr, _, _ in PostgresGitLabGraph(bobs_file.bob_store).changed_by(LEDGER, 10)] == [
        BOBS_MR
    ]


def test_a_teammates_scan_makes_a_file_a_private_mr_changed_the_teams(bobs_file: Team) -> None:
    save(PostgresCodeGraph(bobs_file.alice_store), {"ledger.py": parsed(function("post", 1))})  # alice's scan

    assert seen(bobs_file.alice_store, LEDGER) and owner_of(bobs_file, LEDGER) is None
    assert PostgresGitLabGraph(bobs_file.alice_store).changed_by(LEDGER, 10) == []  # !13 is still bob's


def test_a_memory_the_team_sees_makes_a_file_a_private_mr_changed_the_teams(bobs_file: Team) -> None:
    ledger = Entity(LEDGER, EntityKind.FILE, "ledger.py", PROJECT)
    _remember_about(bobs_file.alice_store, "mem_alice", ledger, project=PROJECT)

    assert seen(bobs_file.alice_store, LEDGER) and owner_of(bobs_file, LEDGER) is None


def test_the_teams_mr_makes_a_file_a_private_mr_changed_the_teams(bobs_file: Team) -> None:
    bobs_file.alice.remember(
        "Reviews of acme/shop!12 go to the payments team", scope="project", project=PROJECT
    )
    changed_ledger(bobs_file.alice_store, TEAMS_MR)

    assert seen(bobs_file.alice_store, LEDGER) and owner_of(bobs_file, LEDGER) is None
    assert [mr.key for mr, _, _ in PostgresGitLabGraph(bobs_file.alice_store).changed_by(LEDGER, 10)] == [
        TEAMS_MR
    ]


def test_a_private_mr_leaves_a_file_another_persons_memory_names_theirs(team: Team) -> None:
    _remember_about(team.alice_store, "mem_alice", Entity(LEDGER, EntityKind.FILE, "ledger.py", PROJECT))
    team.bob.remember("acme/shop!13 is my retry experiment, not for review", scope="global")
    changed_ledger(team.bob_store, BOBS_MR)

    assert owner_of(team, LEDGER) == team.alice_store.login_role().name
    assert not seen(team.bob_store, LEDGER)


def test_the_teams_mr_makes_a_file_a_private_memory_names_the_teams_and_keeps_the_memory_hers(
    team: Team,
) -> None:
    _remember_about(team.alice_store, "mem_alice", Entity(LEDGER, EntityKind.FILE, "ledger.py", PROJECT))
    team.bob.remember("Reviews of acme/shop!12 go to the payments team", scope="project", project=PROJECT)
    changed_ledger(team.bob_store, TEAMS_MR)  # GitLab told Bob's daemon the path: it holds nothing of hers

    assert seen(team.bob_store, LEDGER) and owner_of(team, LEDGER) is None
    assert team.bob_store.about(["mem_alice"]) == {} and team.bob_store.get_memories(["mem_alice"]) == {}


# -- a person's write naming another person's private entity ---------------------------------

BOBS_CHECKOUT = "/home/bob/shop"
ALICES_CHECKOUT = "/src/shop"


def stored(team: Team, key: str) -> tuple[object, ...]:
    """The entity's row as stored (name, project, title, owner), whoever's it is."""
    with psycopg.connect(team.admin_url) as conn:
        row = conn.execute(
            "SELECT name, project, title, owner FROM entities WHERE key = %s", (key,)
        ).fetchone()
    assert row is not None
    return tuple(row)


def _fetched_by_bob(team: Team) -> tuple[object, ...]:
    """#42 as stored once Bob's daemon saved GitLab's answer for it (its title)."""
    data = issue_data(project="acme/shop", iid=42, title="Refunds round the wrong way", epic=None)
    answer = GitLabAnswer(ISSUE, replace(data, related_merge_requests=()), 0, T0, T0 + timedelta(days=1))
    PostgresGitLabGraph(team.bob_store).apply(edit_for(answer))
    return stored(team, ISSUE)


@pytest.fixture
def bobs_issue(team: Team) -> tuple[object, ...]:
    """Bob's own global memory, written in his checkout, names #42, his alone; his daemon fetched
    GitLab's title of it. Its row as stored."""
    team.bob.remember(PRIVATE, scope="global", project=BOBS_CHECKOUT)
    row = _fetched_by_bob(team)
    assert row == (
        "acme/shop#42",
        BOBS_CHECKOUT,
        "Refunds round the wrong way",
        team.bob_store.login_role().name,
    )
    return row


def test_a_persons_own_memory_naming_anothers_private_entity_leaves_their_row_as_it_is(
    team: Team, bobs_issue: tuple[object, ...]
) -> None:
    mine = team.alice.remember("I review acme/shop#42 on Fridays", scope="global", project=ALICES_CHECKOUT)

    assert stored(team, ISSUE) == bobs_issue
    assert [e.key for e in team.alice.show(mine.memory.id).entities] == [ISSUE]  # linked all the same


def test_a_persons_own_memory_naming_anothers_private_entity_learns_nothing_of_it(
    team: Team, bobs_issue: tuple[object, ...]
) -> None:
    mine = team.alice.remember("I review acme/shop#42 on Fridays", scope="global", project=ALICES_CHECKOUT)

    store = team.alice_store  # where Bob's memory was written is his: not in any read of hers
    shown = [
        *team.alice.show(mine.memory.id).entities,
        *store.about([mine.memory.id])[mine.memory.id],
        store.get_entities([ISSUE])[ISSUE],
        *store.find_entities("acme/shop#42", [EntityKind.ISSUE]),
        *(e for e in store.all_entities() if e.key == ISSUE),
    ]
    assert len(shown) == 5 and {e.project for e in shown} == {None}
    assert PostgresGitLabGraph(store).rows([ISSUE])[ISSUE].project is None  # nor in the queue's rows
    assert team.bob_store.get_entities([ISSUE])[ISSUE].project == BOBS_CHECKOUT
    assert team.admin.get_entities([ISSUE])[ISSUE].project == BOBS_CHECKOUT


def test_editing_ones_memory_to_name_anothers_private_entity_leaves_their_row_as_it_is(
    team: Team, bobs_issue: tuple[object, ...]
) -> None:
    mine = team.alice.remember("I review the refund change on Fridays", scope="global")
    team.alice.edit(mine.memory.id, text="I review acme/shop#42 on Fridays", project=ALICES_CHECKOUT)

    assert stored(team, ISSUE) == bobs_issue
    assert [e.key for e in team.alice.show(mine.memory.id).entities] == [ISSUE]
    assert [e.kind.value for e in team.alice.history(mine.memory.id)][:1] == ["edit"]  # audited as ever


def test_an_import_naming_anothers_private_entity_leaves_their_row_as_it_is(
    team: Team, bobs_issue: tuple[object, ...]
) -> None:
    entity = {"type": "entity", "key": ISSUE, "kind": "Issue", "name": "#42", "project": ALICES_CHECKOUT,
              "title": "Not what GitLab says"}  # fmt: skip
    memory = {"type": "memory", "id": "mem_imported_42", "text": "I review acme/shop#42 on Fridays",
              "category": "fact", "scope": "global", "created_at": "2026-11-01",
              "entities": [ISSUE]}  # fmt: skip
    header = {"type": "header", "format": "graphmem-export", "version": 1}
    summary = team.alice.import_text("\n".join(json.dumps(line) for line in (header, entity, memory)))

    assert summary.memories_added == 1
    assert stored(team, ISSUE) == bobs_issue
    assert [e.key for e in team.alice_store.about(["mem_imported_42"])["mem_imported_42"]] == [ISSUE]


def test_asking_to_enrich_anothers_private_entity_one_sees_leaves_their_row_as_it_is(
    team: Team, bobs_issue: tuple[object, ...]
) -> None:
    team.alice.remember("I review acme/shop#42 on Fridays", scope="global")  # she is shown it
    PostgresGitLabGraph(team.alice_store).queue([Entity(ISSUE, EntityKind.ISSUE, "#42", ALICES_CHECKOUT)])

    assert stored(team, ISSUE) == bobs_issue


def test_a_persons_own_write_still_renames_their_own_entity(
    team: Team, bobs_issue: tuple[object, ...]
) -> None:
    team.bob.remember("The refund change still waits on acme/shop#42", scope="global", project="/srv/shop")

    assert stored(team, ISSUE) == ("acme/shop#42", "/srv/shop", *bobs_issue[2:])


def test_a_memory_the_team_sees_publishes_the_entity_as_that_memory_names_it(
    team: Team, bobs_issue: tuple[object, ...]
) -> None:
    team.alice.remember("The refund change waits on acme/shop#42", scope="project", project=ALICES_CHECKOUT)

    # the team's now, holding what the team's memory says of it (and GitLab's title, which goes with it)
    assert stored(team, ISSUE) == ("acme/shop#42", ALICES_CHECKOUT, "Refunds round the wrong way", None)


# -- a person's private write naming the team's entity ---------------------------------------


@pytest.fixture
def teams_issue(team: Team) -> tuple[object, ...]:
    """Bob's project memory, written in his checkout, makes #42 the team's; his daemon fetched
    GitLab's title of it. Its row as stored."""
    team.bob.remember("The refund change waits on acme/shop#42", scope="project", project=BOBS_CHECKOUT)
    row = _fetched_by_bob(team)
    assert row == ("acme/shop#42", BOBS_CHECKOUT, "Refunds round the wrong way", None)
    return row


def test_a_private_memory_naming_the_teams_entity_leaves_its_row_as_it_is(
    team: Team, teams_issue: tuple[object, ...]
) -> None:
    mine = team.alice.remember("I review acme/shop#42 on Fridays", scope="global", project=ALICES_CHECKOUT)

    assert stored(team, ISSUE) == teams_issue
    assert [e.key for e in team.alice.show(mine.memory.id).entities] == [ISSUE]  # linked all the same
    assert team.bob_store.get_entities([ISSUE])[ISSUE].project == BOBS_CHECKOUT  # what the team is shown


def test_editing_a_private_memory_to_name_the_teams_entity_leaves_its_row_as_it_is(
    team: Team, teams_issue: tuple[object, ...]
) -> None:
    mine = team.alice.remember("I review the refund change on Fridays", scope="global")
    team.alice.edit(mine.memory.id, text="I review acme/shop#42 on Fridays", project=ALICES_CHECKOUT)

    assert stored(team, ISSUE) == teams_issue
    assert [e.key for e in team.alice.show(mine.memory.id).entities] == [ISSUE]


def _import_about_42(team: Team, scope: str) -> None:
    entity = {"type": "entity", "key": ISSUE, "kind": "Issue", "name": "#42", "project": ALICES_CHECKOUT,
              "title": "Not what GitLab says"}  # fmt: skip
    memory = {"type": "memory", "id": "mem_imported_42", "text": "I review acme/shop#42 on Fridays",
              "category": "fact", "scope": scope, "created_at": "2026-11-01", "entities": [ISSUE],
              **({"project": ALICES_CHECKOUT} if scope == "project" else {})}  # fmt: skip
    header = {"type": "header", "format": "graphmem-export", "version": 1}
    summary = team.alice.import_text("\n".join(json.dumps(line) for line in (header, entity, memory)))
    assert summary.memories_added == 1
    assert [e.key for e in team.alice_store.about(["mem_imported_42"])["mem_imported_42"]] == [ISSUE]


def test_an_import_of_a_private_memory_naming_the_teams_entity_leaves_its_row_as_it_is(
    team: Team, teams_issue: tuple[object, ...]
) -> None:
    _import_about_42(team, "global")

    assert stored(team, ISSUE) == teams_issue


def test_an_import_of_a_memory_the_team_sees_names_the_teams_entity_as_it_says(
    team: Team, teams_issue: tuple[object, ...]
) -> None:
    _import_about_42(team, "project")

    assert stored(team, ISSUE) == ("#42", ALICES_CHECKOUT, "Not what GitLab says", None)


def test_asking_to_enrich_the_teams_entity_leaves_its_row_as_it_is(
    team: Team, teams_issue: tuple[object, ...]
) -> None:
    PostgresGitLabGraph(team.alice_store).queue([Entity(ISSUE, EntityKind.ISSUE, "#42", ALICES_CHECKOUT)])

    assert stored(team, ISSUE) == teams_issue


def test_a_memory_the_team_sees_still_renames_the_teams_entity(
    team: Team, teams_issue: tuple[object, ...]
) -> None:
    team.alice.remember("Refunds wait on acme/shop#42", scope="project", project=ALICES_CHECKOUT)

    assert stored(team, ISSUE) == ("acme/shop#42", ALICES_CHECKOUT, *teams_issue[2:])


@pytest.mark.parametrize("shared", [False, True], ids=["private write", "shared write"])
@pytest.mark.parametrize("held_by", ["the team", "the writer", "another person"])
def test_a_write_changes_a_stored_entity_as_core_decides(team: Team, held_by: str, shared: bool) -> None:
    key = target_key(EntityKind.ISSUE, "acme/shop", 77)
    before = Entity(key, EntityKind.ISSUE, "acme/shop#77", "/src/before", "Before")
    writer = {"the team": team.alice_store, "the writer": team.alice_store, "another person": team.bob_store}
    _remember_about(writer[held_by], "mem_first", before, project=PROJECT if held_by == "the team" else None)
    owner = stored(team, key)[3]
    assert owner is None or isinstance(owner, str)

    after = Entity(key, EntityKind.ISSUE, "#77", "/src/after", "After")
    _remember_about(team.alice_store, "mem_after", after, project=PROJECT if shared else None)

    changed = stored(team, key)[:3] == ("#77", "/src/after", "After")
    assert changed == changes(owner, team.alice_store.login_role().name, shared=shared)
    assert stored(team, key)[3] == (None if shared else owner)  # a shared write makes it the team's
