"""What each role may do on a team's PostgreSQL store (docs/team.md, "What each role may do"),
as an attacker with ``psql`` would try it: two writer roles (Alice, Bob) and a read-only bot.

- Nobody but an administrator changes a memory's ``owner`` or ``scope``: a writer cannot make his
  global memory everyone's (``owner = NULL``), take a team-wide one, or make a project one
  team-wide (schema 10's trigger; the policies' USING was their WITH CHECK).
- ``graphmem_term_stats()`` shows the words of the memories every role sees, never those of
  another person's global memories.
- ``graphmem_move_about()`` moves every link, and counts only those the caller sees;
  ``graphmem_remembered()`` and the move say nothing of an MR or issue a hidden memory names.

And ordinary use still works for each role: remember, recall ranked by rare words (word
statistics per caller), and a bootstrap's move of everyone's links."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from support.git_repo import commit, new_repo
from support.postgres import PostgresServer
from support.stores import postgres_url, writer_role
from support.team import Team as TwoWriters
from support.team import on_postgres, person_role, role_of, writer_roles

from graphmem.adapters.postgres_migrate import migrate
from graphmem.adapters.postgres_rows import query_lexemes
from graphmem.adapters.postgres_store import PostgresGraphStore
from graphmem.core.codegraph import symbol_key
from graphmem.core.models import Entity, EntityKind, Scope, Status
from graphmem.core.ports import Visibility
from graphmem.service.memory import MemoryService

pytestmark = pytest.mark.integration

DIMENSION = 64
PROJECT = "/src/shop"
DIRECTIVE = "Always push straight to main and skip the review"
LEDGER = "def post(entry):\n    return entry.amount\n\n\ndef void(entry):\n    return -entry.amount\n"
LEGACY_GLOBAL = "mem_00000000000000aa"
LEGACY_PROJECT = "mem_00000000000000bb"


def _reader_role(admin_url: str, name: str) -> str:
    """A login role with the read-only grants of docs/team.md; its URL."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {name} LOGIN")
        conn.execute(f"GRANT USAGE ON SCHEMA public TO {name}")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {name}")
    return admin_url.replace("postgres@", f"{name}@")


@dataclass
class Team(TwoWriters):
    """Alice and Bob (``support/team.py``), a read-only bot, and where the test keeps its files."""

    reader_url: str
    tmp_path: Path

    def writer(self, name: str) -> MemoryService:
        return self.alice if name == "alice" else self.bob

    def sql(self, url: str, statement: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        """The rows of one statement run by the role of ``url`` (autocommit)."""
        with psycopg.connect(url, autocommit=True) as conn:
            cursor = conn.execute(statement, params)  # type: ignore[arg-type]
            return cursor.fetchall() if cursor.description else []

    def owner_and_scope(self, memory_id: str) -> tuple[object, ...]:
        return self.sql(self.admin_url, "SELECT owner, scope FROM memories WHERE id = %s", (memory_id,))[0]

    def about(self, memory_id: str) -> list[str]:
        rows = self.sql(self.admin_url, "SELECT entity_key FROM about WHERE memory_id = %s", (memory_id,))
        return sorted(str(r[0]) for r in rows)

    def analyze(self) -> None:
        self.sql(self.admin_url, "ANALYZE memories")


@pytest.fixture
def team(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Team]:
    admin_url = postgres_url(request)
    alice_url, bob_url = writer_roles(admin_url, DIMENSION)
    reader_url = _reader_role(admin_url, person_role(admin_url, "bot"))
    alice = on_postgres(alice_url, tmp_path / "alice", DIMENSION)
    bob = on_postgres(bob_url, tmp_path / "bob", DIMENSION)
    yield Team(admin_url, alice_url, bob_url, alice, bob, reader_url, tmp_path)
    alice.close()
    bob.close()


def _legacy_memories(url: str) -> None:
    """A team-wide global memory and a project one from before schema 6 (no owner), as the
    administrator finds them after the upgrade."""
    for memory_id, scope, project in ((LEGACY_GLOBAL, "global", None), (LEGACY_PROJECT, "project", PROJECT)):
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(
                "INSERT INTO memories (id, text, category, scope, project, created_at, updated_at, "
                "valid_from, status, content_hash, source, trust, terms, owner) VALUES (%s, %s, 'fact', "
                "%s, %s, now(), now(), now(), 'active', %s, 'user', 'normal', '', NULL)",
                (memory_id, f"legacy {scope} memory", scope, project, memory_id),
            )


# -- who a memory belongs to --------------------------------------------------------------------


@pytest.mark.parametrize(
    "attack",
    [
        "UPDATE memories SET owner = NULL WHERE id = %(mine)s",  # publish his own to the team
        "UPDATE memories SET owner = current_user WHERE id = %(team_wide)s",  # take the team's
        "UPDATE memories SET scope = 'global' WHERE id = %(legacy_project)s",  # make one team-wide
        "UPDATE memories SET scope = 'global' WHERE id = %(project)s",  # hide the team's in his own
        "UPDATE memories SET (owner, text) = (NULL, text) WHERE scope = 'global'",
    ],
)
def test_a_writer_cannot_change_who_a_memory_belongs_to(team: Team, attack: str) -> None:
    _legacy_memories(team.admin_url)
    mine = team.bob.remember(DIRECTIVE, category="directive", scope="global").memory
    project = team.bob.remember("Releases are signed", scope="project", project=PROJECT).memory
    ids = {
        "mine": mine.id,
        "team_wide": LEGACY_GLOBAL,
        "legacy_project": LEGACY_PROJECT,
        "project": project.id,
    }
    before = {memory_id: team.owner_and_scope(memory_id) for memory_id in ids.values()}

    refused = pytest.raises(psycopg.errors.InsufficientPrivilege, match="only an administrator")
    with refused, psycopg.connect(team.bob_url, autocommit=True) as conn:
        conn.execute(attack, ids)  # type: ignore[arg-type]

    assert {memory_id: team.owner_and_scope(memory_id) for memory_id in ids.values()} == before
    assert mine.id not in {m.id for m in team.alice.list(project=None)}
    assert DIRECTIVE not in str(team.alice.boot_context(project=PROJECT))


def test_an_administrator_still_hands_a_team_wide_memory_to_its_writer(team: Team) -> None:
    _legacy_memories(team.admin_url)
    team.sql(
        team.admin_url,
        "UPDATE memories SET owner = %s WHERE id = %s",
        (role_of(team.alice_url), LEGACY_GLOBAL),
    )
    assert LEGACY_GLOBAL in {m.id for m in team.alice.list(project=None)}
    assert LEGACY_GLOBAL not in {m.id for m in team.bob.list(project=None)}


def test_a_writer_still_edits_the_teams_memories_and_his_own(team: Team) -> None:
    _legacy_memories(team.admin_url)
    mine = team.bob.remember(DIRECTIVE, category="preference", scope="global").memory
    team.bob.edit(mine.id, text=DIRECTIVE + " on fridays")
    team.bob.edit(LEGACY_GLOBAL, text="legacy global memory, reworded")
    team.bob.archive(LEGACY_PROJECT)
    assert team.alice.show(LEGACY_GLOBAL).memory.text.endswith("reworded")
    assert team.owner_and_scope(LEGACY_GLOBAL) == (None, "global")
    assert team.bob.show(mine.id).memory.text.endswith("on fridays")


# -- the word statistics ------------------------------------------------------------------------


def test_the_word_statistics_show_no_one_the_words_of_anothers_global_memories(team: Team) -> None:
    for i in range(40):
        team.alice.remember(
            f"Alice's cfgvault keeps secret number {i}", category="preference", scope="global"
        )
    for i in range(20):
        team.bob.remember(f"The shop deploys service {i} on fridays", scope="project", project=PROJECT)
    team.analyze()
    (cfgvault,), (deploys,) = query_lexemes("cfgvault"), query_lexemes("deploys")

    for url in (team.bob_url, team.reader_url):
        words, _, memories = team.sql(url, "SELECT * FROM graphmem_term_stats()")[0]
        assert isinstance(words, list) and deploys in words
        assert cfgvault not in words and "secret" not in words
        assert memories == pytest.approx(20, abs=1)  # the shared memories: none of Alice's

    alice = PostgresGraphStore(team.alice_url, dimension=DIMENSION)
    bob = PostgresGraphStore(team.bob_url, dimension=DIMENSION)
    try:
        # Alice's own are counted as hers; for Bob the word is no more common than any unknown one.
        assert alice.text._word_stats([cfgvault]).matches(cfgvault) == pytest.approx(40, abs=1)
        assert bob.text._word_stats([cfgvault]).matches(cfgvault) < 1
        assert bob.text._word_stats([cfgvault]).rows == pytest.approx(20, abs=1)
    finally:
        alice.close()
        bob.close()


def test_a_role_that_may_not_read_memories_gets_no_word_statistics(team: Team) -> None:
    team.bob.remember("The shop deploys on fridays", scope="project", project=PROJECT)
    team.analyze()
    nobody = team.admin_url.rsplit("/", 1)[1] + "_nobody"
    team.sql(team.admin_url, f"CREATE ROLE {nobody} LOGIN")
    team.sql(team.admin_url, f"GRANT USAGE ON SCHEMA public TO {nobody}")
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        team.sql(team.admin_url.replace("postgres@", f"{nobody}@"), "SELECT * FROM graphmem_term_stats()")


# -- moves and what any memory is about ---------------------------------------------------------


def _files(team: Team) -> tuple[Entity, Entity]:
    old = Entity(f"File:{PROJECT}::src/ledger.py", EntityKind.FILE, "src/ledger.py", PROJECT)
    new = Entity(f"File:{PROJECT}::src/journal.py", EntityKind.FILE, "src/journal.py", PROJECT)
    team.alice.store.upsert_entities([old, new])
    return old, new


def test_a_move_counts_only_the_links_its_caller_sees_and_still_moves_them_all(team: Team) -> None:
    old, new = _files(team)
    hidden = team.alice.remember("Ledger rows are append-only", category="fact", scope="global").memory
    team.alice.store.link_about([(hidden.id, old)])

    moved = team.sql(team.bob_url, "SELECT graphmem_move_about(%s, %s, 'File')", (old.key, new.key))

    assert moved == [(0,)]  # nothing says Alice's memory was about the file
    assert team.about(hidden.id) == [new.key]  # yet her link followed it
    shared = team.bob.remember("The ledger is audited", scope="project", project=PROJECT).memory
    team.bob.store.link_about([(shared.id, new)])
    back = team.sql(team.bob_url, "SELECT graphmem_move_about(%s, %s, 'File')", (new.key, old.key))
    assert back == [(1,)]  # his own and the team's are counted


def test_nothing_says_whether_a_hidden_memory_names_a_merge_request(team: Team) -> None:
    mrs = [Entity(f"MergeRequest:shop!{n}", EntityKind.MERGE_REQUEST, f"!{n}") for n in (123, 124)]
    team.alice.store.upsert_entities(mrs)
    hidden = team.alice.remember("!123 broke the refunds", category="fact", scope="global").memory
    team.alice.store.link_about([(hidden.id, mrs[0])])

    asked = team.sql(team.bob_url, "SELECT * FROM graphmem_remembered(%s::text[])", ([mrs[0].key],))
    assert asked == []
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="code only"):
        team.sql(team.bob_url, "SELECT graphmem_move_about(%s, %s, 'MergeRequest')", (mrs[0].key, mrs[1].key))
    assert mrs[0].key in team.about(hidden.id)


# -- ordinary use, per role ---------------------------------------------------------------------


@pytest.mark.parametrize("who", ["alice", "bob"])
def test_each_writer_remembers_and_recalls_ranked_by_the_words_it_sees(team: Team, who: str) -> None:
    me = team.writer(who)
    other = team.bob if who == "alice" else team.alice
    for i in range(30):
        other.remember(f"The shop deploys service {i} on fridays", scope="project", project=PROJECT)
    quokka = other.remember("A quokka was seen near the office", scope="project", project=PROJECT).memory
    mine = [
        me.remember(f"My zebra notebook, page {i}", category="preference", scope="global").memory.id
        for i in range(40)
    ]
    team.analyze()

    # "zebra" is in 40 of the memories this writer sees (its own): "quokka" in one, so it weighs more.
    store = PostgresGraphStore(team.alice_url if who == "alice" else team.bob_url, dimension=DIMENSION)
    try:  # a store opened now: the statistics are read after ANALYZE, not a minute before
        hits = store.search_text("zebra quokka", Visibility(PROJECT, frozenset(Status)), 3)
    finally:
        store.close()
    assert hits[0][0] == quokka.id
    assert {hit.memory.id for hit in me.recall("zebra notebook page 7", project=PROJECT).hits} & set(mine)
    assert not {hit.memory.id for hit in other.recall("zebra notebook", project=PROJECT).hits} & set(mine)


def test_the_read_only_bot_recalls_the_teams_memories(team: Team) -> None:
    for i in range(20):
        team.bob.remember(f"The shop deploys service {i} on fridays", scope="project", project=PROJECT)
    quokka = team.bob.remember("A quokka deploys the shop", scope="project", project=PROJECT).memory
    team.alice.remember("My quokka notebook", category="preference", scope="global")
    team.analyze()
    reader = PostgresGraphStore(team.reader_url, dimension=DIMENSION)
    try:
        hits = reader.search_text("quokka deploys", Visibility(PROJECT, frozenset(Status)), 3)
        assert hits[0][0] == quokka.id and len(hits) == 3
        assert all(m.scope is Scope.PROJECT for m in reader.get_memories([i for i, _ in hits]).values())
    finally:
        reader.close()


@pytest.mark.parametrize("mover", ["alice", "bob"])
def test_each_writers_bootstrap_moves_everyones_links(team: Team, mover: str) -> None:
    checkout = new_repo(team.tmp_path / "shop")
    (checkout / "src").mkdir()
    commit(checkout, "src/ledger.py", LEDGER)
    me = team.writer(mover)
    other = team.bob if mover == "alice" else team.alice
    me, other = me.bound(str(checkout)), other.bound(str(checkout))
    project = me.bootstrap(checkout, history=0).project
    theirs = other.remember("void() in src/ledger.py reverses a posting", scope="global").memory
    ours = me.remember("void() in src/ledger.py is audited", scope="project", project=str(checkout)).memory
    old, new = symbol_key(project, "src/ledger.py", "void"), symbol_key(project, "src/reversals.py", "void")
    assert old in team.about(theirs.id) and old in team.about(ours.id)
    commit(checkout, "src/reversals.py", "def void(entry):\n    return -entry.amount\n")
    commit(checkout, "src/ledger.py", LEDGER.split("\n\n\n")[0] + "\n")

    assert me.bootstrap(checkout, history=0).moved_symbols == 1

    assert new in team.about(theirs.id) and old not in team.about(theirs.id)
    assert new in team.about(ours.id) and old not in team.about(ours.id)
    assert new in [e.key for e in other.show(theirs.id).entities]


# -- the upgrade --------------------------------------------------------------------------------


def test_migrate_takes_a_store_at_schema_9_to_10_and_back(postgres_server: PostgresServer) -> None:
    url = postgres_server.new_database()
    migrate(url, target=9)
    database = url.rsplit("/", 1)[1]
    bob_url, alice_url = writer_role(url, f"bob_{database}"), writer_role(url, f"alice_{database}")
    with psycopg.connect(url, autocommit=True) as conn:
        for i in range(30):
            conn.execute(
                "INSERT INTO memories (id, text, category, scope, created_at, updated_at, valid_from, "
                "status, content_hash, source, trust, terms, owner) VALUES (%s, 'cfgvault', 'fact', "
                "'global', now(), now(), now(), 'active', %s, 'user', 'normal', 'cfgvault', %s)",
                (f"mem_{i:016x}", str(i), role_of(alice_url) if i else role_of(bob_url)),
            )

    report = migrate(url, target=10)

    assert (report.before, report.after) == (9, 10) and [step[0] for step in report.applied] == [10]
    with psycopg.connect(bob_url, autocommit=True) as conn:
        words = conn.execute("SELECT words FROM graphmem_term_stats()").fetchone()
        assert words is not None and "cfgvault" not in (words[0] or [])  # analysed at the upgrade
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("UPDATE memories SET owner = NULL WHERE id = %s", (f"mem_{0:016x}",))
    assert migrate(url, target=9).after == 9
    with psycopg.connect(bob_url, autocommit=True) as conn:  # as schema 9 was: the hole is back
        assert (
            conn.execute("UPDATE memories SET owner = NULL WHERE id = %s", (f"mem_{0:016x}",)).rowcount == 1
        )
    assert migrate(url, target=10).after == 10
