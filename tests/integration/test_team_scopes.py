"""Scopes on a team's PostgreSQL store (docs/team.md, "Scopes"): a global memory is its
writer's alone, a project memory everyone's. Two people, each logged in as their own role,
use one database through the whole service: nothing of one's global memories reaches the
other through any read path, nor can the other change it; the database itself refuses a
hand-written query (row-level security)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from support.postgres import PostgresServer
from support.team import Team, on_postgres, two_writers, writer_roles

from graphmem.adapters.postgres_migrate import SCHEMA_VERSION, migrate
from graphmem.adapters.postgres_store import PostgresGraphStore
from graphmem.core.models import Status
from graphmem.core.ports import Visibility
from graphmem.errors import NotFoundError, StoreError
from graphmem.service.memory import MemoryService

pytestmark = pytest.mark.integration

DIMENSION = 256
PROJECT = "/src/shop"
PRIVATE = "Alice keeps her dotfiles in a bare repository called cfgvault"
SHARED = "The shop's cfgvault service signs every release artifact"


@pytest.fixture
def team(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Team]:
    with two_writers(request, tmp_path, DIMENSION) as team:
        yield team


def exported(memory: MemoryService) -> str:
    out = io.StringIO()
    memory.export(out, project=None)
    return out.getvalue()


def test_a_global_memory_is_seen_by_its_writer_and_no_one_else(team: Team) -> None:
    mine = team.alice.remember(PRIVATE, category="preference", scope="global").memory
    shared = team.alice.remember(SHARED, category="fact", scope="project", project=PROJECT).memory
    team.alice.embed_pending()
    team.bob.embed_pending()

    def ids(memory: MemoryService) -> set[str]:
        return {hit.memory.id for hit in memory.recall("cfgvault bare repository", project=PROJECT).hits}

    assert ids(team.alice) == {mine.id, shared.id}
    assert ids(team.bob) == {shared.id}
    assert {m.id for m in team.bob.list(project=PROJECT)} == {shared.id}
    assert {m.id for m in team.bob.list(project=None)} == set()
    assert team.bob.stats().total == 1 and team.alice.stats().total == 2
    context = team.bob.get_context("cfgvault", project=PROJECT, max_tokens=2000)
    seen = {item.hit.memory.id for items in context.groups.values() for item in items}
    assert seen == {shared.id}
    boot = team.bob.boot_context(project=PROJECT)
    assert PRIVATE not in json.dumps(boot, default=str)
    bob_export = exported(team.bob)
    assert PRIVATE not in bob_export and mine.id not in bob_export and shared.id in bob_export
    assert PRIVATE in exported(team.alice)


def test_nothing_of_a_private_memory_reaches_another_through_its_links_or_history(team: Team) -> None:
    shared = team.alice.remember(SHARED, category="fact", scope="project", project=PROJECT).memory
    mine = team.alice.remember(PRIVATE, category="preference", scope="global").memory
    team.alice.link(shared.id, mine.id, "related")
    team.alice.edit(mine.id, text=PRIVATE + " on her laptop")
    team.alice.embed_pending()
    team.bob.embed_pending()
    with pytest.raises(NotFoundError):
        team.bob.show(mine.id)
    with pytest.raises(NotFoundError):
        team.bob.history(mine.id)
    assert [link.target for link in team.bob.show(shared.id).links] == []
    assert mine.id in {link.target for link in team.alice.show(shared.id).links}
    hits = team.bob.recall("signs every release artifact", project=PROJECT).hits
    assert [hit.memory.id for hit in hits] == [shared.id]  # the graph walk stops at what Bob may see
    assert mine.id not in exported(team.bob)


def test_another_user_cannot_change_a_private_memory(team: Team) -> None:
    mine = team.alice.remember(PRIVATE, category="preference", scope="global").memory
    theirs = team.bob.remember(SHARED, category="fact", scope="project", project=PROJECT).memory
    before = exported(team.alice)
    for change in (
        lambda: team.bob.edit(mine.id, text="Bob was here"),
        lambda: team.bob.archive(mine.id),
        lambda: team.bob.delete(mine.id),
        lambda: team.bob.remember("Dotfiles live in chezmoi now", category="preference", supersedes=mine.id),
        lambda: team.bob.link(mine.id, theirs.id, "related"),
    ):
        with pytest.raises(NotFoundError, match=mine.id):
            change()
    assert exported(team.alice).splitlines()[1:] == before.splitlines()[1:]  # the header has a time


def test_a_project_memory_is_everyones_to_read_and_change(team: Team) -> None:
    shared = team.alice.remember(SHARED, category="fact", scope="project", project=PROJECT).memory
    team.bob.edit(shared.id, text=SHARED + " with sigstore")
    assert team.alice.show(shared.id).memory.text.endswith("with sigstore")
    assert [e.kind.value for e in team.alice.history(shared.id)][:1] == ["edit"]


def test_an_import_belongs_to_the_user_who_imports_it(team: Team, tmp_path: Path) -> None:
    team.alice.remember(PRIVATE, category="preference", scope="global")
    text = exported(team.alice)
    with psycopg.connect(team.admin_url, autocommit=True) as conn:
        conn.execute("DELETE FROM memories")
    summary = team.bob.import_text(text)
    assert summary.memories_added == 1
    assert [m.text for m in team.bob.list(project=None)] == [PRIVATE]
    assert team.alice.list(project=None) == []


def test_the_database_itself_hides_a_private_memory_from_a_hand_written_query(team: Team) -> None:
    team.alice.remember(PRIVATE, category="preference", scope="global")
    team.alice.remember(SHARED, category="fact", scope="project", project=PROJECT)
    with psycopg.connect(team.bob_url) as conn:
        assert [r[0] for r in conn.execute("SELECT text FROM memories").fetchall()] == [SHARED]
        events = conn.execute("SELECT count(*) FROM memory_events WHERE after::text LIKE '%dotfiles%'")
        assert events.fetchone() == (0,)
        assert conn.execute("UPDATE memories SET text = 'x' WHERE scope = 'global'").rowcount == 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(
                "INSERT INTO memories (id, text, category, scope, created_at, updated_at, valid_from, "
                "status, content_hash, source, trust, terms, owner) VALUES ('mem_x', 'x', 'fact', "
                "'global', now(), now(), now(), 'active', 'h', 'user', 'normal', '', %s)",
                (team.role(team.alice_url),),
            )


def hand_inserted(url: str, scope: str, project: str | None) -> None:
    """A memory of ``url``'s role with ``scope`` and ``project``, inserted by its psql session."""
    conn = psycopg.connect(url)
    try:
        conn.execute(
            "INSERT INTO memories (id, text, category, scope, project, created_at, updated_at, valid_from, "
            "status, content_hash, source, trust, terms) VALUES ('mem_0000000000000bad', "
            "'Deploy the ledger on Fridays', 'directive', %s, %s, now(), now(), now(), 'active', 'h', "
            "'user', 'normal', '')",
            (scope, project),
        )
        conn.commit()
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("scope", "project"), [("team", None), ("Global", None), ("bogus", PROJECT), ("project", None)]
)
def test_a_writer_cannot_write_a_scope_graphmem_does_not_know_to_reach_everyone(
    team: Team, scope: str, project: str | None
) -> None:
    """Before schema 22 Bob's row was seen by all (its scope is not 'global'), and read as a
    global memory: in Alice's recall and injected block in every project."""
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="graphmem_scoped"):
        hand_inserted(team.bob_url, scope, project)

    assert team.alice.list(project=PROJECT, statuses=list(Status)) == []
    hand_inserted(team.bob_url, "project", PROJECT)  # graphmem's scopes stay his to write
    assert [m.id for m in team.alice.list(project=PROJECT, statuses=list(Status))] == ["mem_0000000000000bad"]


def test_a_writer_cannot_take_a_project_memorys_project_away(team: Team) -> None:
    """Before schema 22 his project memory, its project set to NULL by hand, was in every
    project's recall of every teammate."""
    his = team.bob.remember(SHARED, category="fact", scope="project", project=PROJECT).memory
    conn = psycopg.connect(team.bob_url)
    try:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="only an administrator takes"):
            conn.execute("UPDATE memories SET project = NULL WHERE id = %s", (his.id,))
        conn.rollback()
        conn.execute("UPDATE memories SET project = '/src/other' WHERE id = %s", (his.id,))  # a move is his
        conn.commit()
    finally:
        conn.close()

    assert team.alice.show(his.id).memory.project == "/src/other"


def test_rolled_back_to_21_a_writer_writes_any_scope_again(team: Team) -> None:
    assert migrate(team.admin_url, target=21).after == 21
    hand_inserted(team.bob_url, "team", None)
    assert migrate(team.admin_url).after == SCHEMA_VERSION  # a row from before is kept as it is

    assert team.alice.show("mem_0000000000000bad").memory.text == "Deploy the ledger on Fridays"


def test_global_memories_from_before_the_migration_stay_everyones(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    url = postgres_server.new_database()
    migrate(url, target=5)
    before = on_postgres_at_five(url)
    migrate(url)
    _, bob_url = writer_roles(url, DIMENSION)
    bob = on_postgres(bob_url, tmp_path / "bob", DIMENSION)
    try:
        assert [m.text for m in bob.list(project=None)] == [before]
        bob.remember(PRIVATE, category="preference", scope="global")
        with pytest.raises(StoreError, match=r"only the role that owns graphmem's tables \(postgres\) may"):
            migrate(bob_url, target=5)  # rolling back is the owner's, never a writer's
    finally:
        bob.close()


def on_postgres_at_five(url: str) -> str:
    """A global memory written before schema 6, with plain SQL (this graphmem needs 6)."""
    text = "Team-wide: every service logs in JSON"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO memories (id, text, category, scope, created_at, updated_at, valid_from, status, "
            "content_hash, source, trust, terms) VALUES ('mem_0123456789abcdef', %s, 'directive', 'global', "
            "now(), now(), now(), 'active', 'h', 'user', 'normal', '')",
            (text,),
        )
    return text


def test_importing_an_id_another_user_holds_is_refused_and_keeps_nothing(team: Team) -> None:
    team.alice.remember(PRIVATE, category="preference", scope="global")
    with pytest.raises(StoreError, match="taken by a memory you cannot see") as refused:
        team.bob.import_text(exported(team.alice))
    assert "?" not in str(refused.value).split(" taken")[0]  # no id it cannot name
    assert "graphmem export --project --to .graphmem" in str(refused.value)
    assert team.bob.list(project=None) == []


def test_a_read_only_bot_sees_project_memories_and_no_ones_global_ones(team: Team) -> None:
    team.alice.remember(PRIVATE, category="preference", scope="global")
    shared = team.alice.remember(SHARED, category="fact", scope="project", project=PROJECT).memory
    bot = team.admin_url.rsplit("/", 1)[1] + "_bot"
    with psycopg.connect(team.admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {bot} LOGIN")
        conn.execute(f"GRANT USAGE ON SCHEMA public TO {bot}")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {bot}")
    reader = PostgresGraphStore(team.admin_url.replace("postgres@", f"{bot}@"), dimension=DIMENSION)
    try:
        seen = reader.list_memories(Visibility(PROJECT, frozenset(Status)), limit=10)
        assert [m.id for m in seen] == [shared.id]
    finally:
        reader.close()


def test_a_role_under_row_level_security_reads_the_word_statistics_instead_of_counting(team: Team) -> None:
    for i in range(30):
        team.alice.remember(
            f"The shop deploys service number {i} on fridays", scope="project", project=PROJECT
        )
    with psycopg.connect(team.admin_url, autocommit=True) as conn:
        conn.execute("ANALYZE memories")
    alice = PostgresGraphStore(team.alice_url, dimension=DIMENSION)
    try:
        stats = alice.text._read_stats()
    finally:
        alice.close()
    assert not stats.counted and stats.rows >= 30
    assert stats.shares.get("deploi", 0.0) > 0.5  # "deploys", stemmed
