"""graphmem migrate on a real PostgreSQL database, what the CLI says when the configured
store cannot be used: one line, the right exit code, never a traceback or the password (a
writer who comes before the owner is told who runs what, and how), the role ``graphmem stats``
says it logs in with (the writer and read-only roles of docs/team.md), and what ``remember``
says of a global memory there: only its writer sees it."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner, Result
from support.postgres import PostgresServer
from support.stores import MIGRATED, postgres_url
from support.team import role_of, writer_roles

from graphmem.adapters.embedders import HashEmbedder
from graphmem.adapters.postgres_migrate import SCHEMA_VERSION
from graphmem.app import open_memory
from graphmem.cli import main
from graphmem.cli.main import cli
from graphmem.errors import StoreMismatchError
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def test_migrate_applies_the_schema_says_its_version_and_rolls_back(
    postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = postgres_server.new_database()
    monkeypatch.setenv("GRAPHMEM_STORE_URL", url)

    code, out, _ = run("migrate")
    assert code == 0
    assert out.splitlines()[-1].endswith(
        f"is at schema version {SCHEMA_VERSION} (this graphmem: {SCHEMA_VERSION})"
    )
    assert out.startswith("applied 1: ")

    assert run("migrate")[1].startswith("nothing to do")
    code, out, _ = run("migrate", "--to", "0")
    assert code == 0 and out.startswith(f"rolled back {SCHEMA_VERSION}: ")
    assert "\nrolled back 1: " in out
    assert "is at schema version 0" in run("migrate", "--status")[1]


def test_migrate_without_a_postgresql_store_says_how_to_set_one() -> None:
    code, _, err = run("migrate")
    assert code == 9  # ConfigError
    assert "GRAPHMEM_STORE_URL" in err


def test_a_store_that_is_down_is_one_line_without_the_password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHMEM_STORE_URL", "postgresql://graphmem@127.0.0.1:1/graphmem")
    monkeypatch.setenv("GRAPHMEM_STORE_PASSWORD", "hunter2")
    code, out, err = run("recall", "which database")
    assert code == 5  # StoreError
    assert err.startswith(
        "error: Cannot connect to the PostgreSQL store at postgresql://graphmem@127.0.0.1:1/"
    )
    assert "Traceback" not in err and "hunter2" not in out + err


def test_an_unmigrated_store_points_at_migrate(
    postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRAPHMEM_STORE_URL", postgres_server.new_database())
    code, _, err = run("list")
    assert code == 7  # StoreMismatchError
    assert "Run `graphmem migrate`" in err


def _role(admin_url: str, name: str, group: str) -> str:
    """A login role ``name`` in ``group`` (created with its grants from docs/team.md if new); its URL."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (group,)).fetchall():
            conn.execute(f"CREATE ROLE {group} NOLOGIN")
            conn.execute(f"GRANT USAGE ON SCHEMA public TO {group}")
            if group.startswith("writer_"):
                conn.execute(
                    f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {group}"
                )
                conn.execute(f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {group}")
            else:
                conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {group}")
        conn.execute(f"CREATE ROLE {name} LOGIN PASSWORD 'hunter2' IN ROLE {group}")
    return admin_url.replace("postgres@", f"{name}@")


@pytest.fixture
def team_store(postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """A migrated database the owner has run a first command on (as docs/team.md says to do
    once), and the CLI's data dir in ``tmp_path``; the owner's URL."""
    url = postgres_server.new_database(MIGRATED)
    monkeypatch.setenv("GRAPHMEM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("GRAPHMEM_STORE_PASSWORD", "hunter2")
    monkeypatch.setenv("GRAPHMEM_STORE_URL", url)
    assert run("stats")[0] == 0  # the owner's first command records the model, sizes the vectors
    return url


@pytest.mark.parametrize(
    ("person", "group", "writes", "may"),
    [("alice", "writer", True, "reads and writes"), ("bot", "reader", False, "read-only")],
    ids=["a person in the writer role", "a bot in the read-only role"],
)
def test_stats_on_a_team_store_names_the_role_it_logs_in_with_and_whether_it_may_write(
    team_store: str, monkeypatch: pytest.MonkeyPatch, person: str, group: str, writes: bool, may: str
) -> None:
    database = team_store.rsplit("/", 1)[1]
    login = f"{person}_{database}"
    monkeypatch.setenv("GRAPHMEM_STORE_URL", _role(team_store, login, f"{group}_{database}"))

    code, out, err = run("stats")
    data = json.loads(run("stats", "--json")[1])

    assert code == 0, err
    assert out.splitlines()[-1] == f"role: {login} ({may}; global memories: {login}'s own)"
    assert data["role"] == {"name": login, "writes": writes, "sees_all": False}
    assert "hunter2" not in out + err


def test_stats_on_a_team_store_says_the_owner_sees_everyones_global_memories(
    team_store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRAPHMEM_STORE_URL", team_store)  # the test server's superuser owns the tables

    data = json.loads(run("stats", "--json")[1])

    assert data["role"] == {"name": "postgres", "writes": True, "sees_all": True}


def test_stats_on_the_embedded_store_says_nothing_of_a_role(tmp_path: Path) -> None:
    code, out, err = run("--data-dir", str(tmp_path / "data"), "stats")
    data = json.loads(run("--data-dir", str(tmp_path / "data"), "stats", "--json")[1])

    assert code == 0, err
    assert "role" not in out
    assert data["role"] is None


# -- a writer who comes before the owner (docs/team.md, "Setting it up") ------------------------


@pytest.fixture
def owned(
    postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> tuple[str, str]:
    """A new database as docs/team.md sets one up, before the owner ran anything: owned by an
    owner role, with a writer role granted what the owner's tables will be; their URLs."""
    admin = postgres_server.new_database()
    database = admin.rsplit("/", 1)[1]
    owner, writer = f"owner_{database}", f"alice_{database}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {owner} LOGIN")
        conn.execute(f"ALTER DATABASE {database} OWNER TO {owner}")
        conn.execute(f"CREATE ROLE {writer} LOGIN")
        conn.execute(f"GRANT USAGE ON SCHEMA public TO {writer}")
        conn.execute(
            f"ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA public "
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {writer}"
        )
        conn.execute(
            f"ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA public "
            f"GRANT USAGE, SELECT ON SEQUENCES TO {writer}"
        )
    monkeypatch.setenv("GRAPHMEM_DATA_DIR", str(tmp_path / "data"))
    return admin.replace("postgres@", f"{owner}@"), admin.replace("postgres@", f"{writer}@")


def as_role(url: str, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str, str]:
    monkeypatch.setenv("GRAPHMEM_STORE_URL", url)
    return run(*args)


def test_a_writer_before_the_owner_migrated_is_told_the_owner_applies_the_schema_and_how(
    owned: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    owner, writer = owned

    code, _, err = as_role(writer, monkeypatch, "stats")

    assert code == 7  # StoreMismatchError, as for any schema to apply
    assert "has no graphmem schema yet" in err
    assert f"only the role that owns the database ({role_of(owner)}) may apply it" in err
    assert f"`GRAPHMEM_STORE_URL={owner} graphmem migrate`" in err
    assert "grants" not in err


def test_a_writers_migrate_of_a_new_database_says_the_owner_applies_it_and_changes_nothing(
    owned: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    owner, writer = owned

    code, _, err = as_role(writer, monkeypatch, "migrate")

    assert code == 5
    assert err.startswith(f"error: The store at {writer} has no graphmem schema yet, and only the role")
    assert f"`GRAPHMEM_STORE_URL={owner} graphmem migrate` as {role_of(owner)}" in err
    assert "grants" not in err and "permission denied" not in err
    assert as_role(writer, monkeypatch, "migrate", "--status")[1].startswith(
        f"{writer} is at schema version 0"
    )


def test_a_writers_migrate_of_an_older_schema_names_the_owner_and_the_command(
    owned: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    owner, writer = owned
    assert as_role(owner, monkeypatch, "migrate", "--to", str(SCHEMA_VERSION - 1))[0] == 0

    stats = as_role(writer, monkeypatch, "stats")[2]
    code, _, err = as_role(writer, monkeypatch, "migrate")

    owns = (
        f"only the role that owns graphmem's tables ({role_of(owner)}) may migrate it, not {role_of(writer)}"
    )
    assert owns in stats and f"`GRAPHMEM_STORE_URL={owner} graphmem migrate`" in stats
    assert code == 5
    assert f"is at schema version {SCHEMA_VERSION - 1}, and {owns}" in err
    assert f"`GRAPHMEM_STORE_URL={owner} graphmem migrate`" in err
    assert "grants" not in err


def test_a_writers_migrate_of_a_schema_up_to_date_has_nothing_to_do(
    owned: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    owner, writer = owned
    assert as_role(owner, monkeypatch, "migrate")[0] == 0

    code, out, err = as_role(writer, monkeypatch, "migrate")

    assert code == 0, err
    assert out.startswith("nothing to do\n")


def test_a_writer_before_the_owners_first_command_is_told_to_run_one_as_the_owner(
    owned: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    owner, writer = owned
    assert as_role(owner, monkeypatch, "migrate")[0] == 0

    code, _, err = as_role(writer, monkeypatch, "stats")

    assert code == 7
    assert "is not set up for an embedding model yet" in err
    assert f"Run `GRAPHMEM_STORE_URL={owner} graphmem stats` as {role_of(owner)}" in err
    assert "grants" not in err
    assert as_role(owner, monkeypatch, "stats")[0] == 0
    assert as_role(writer, monkeypatch, "stats")[0] == 0  # then the writer's commands go through


# -- a global memory on a team's store is its writer's own (docs/team.md, "Scopes") -------------

DIMENSION = 64


@pytest.fixture
def as_writer(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, git_project: str
) -> Callable[..., Result]:
    """``graphmem ARGS`` in ``git_project`` as ``who`` ("alice" or "bob"): each a writer role of
    one team's store, with the hash embedder."""
    urls = dict(zip(("alice", "bob"), writer_roles(postgres_url(request), DIMENSION), strict=True))
    runner = CliRunner()

    def invoke(who: str, *args: str, input: str | None = None) -> Result:
        def factory(data_dir: Path | None, *, check_model: bool = True) -> MemoryService:
            settings = load_settings(data_dir=data_dir, store={"url": urls[who]})
            return open_memory(settings, embedder=HashEmbedder(DIMENSION))

        monkeypatch.setattr(main, "SERVICE_FACTORY", factory)
        where = ["--data-dir", str(tmp_path / who), "--project", git_project]
        return runner.invoke(main.cli, [*where, *args], input=input)

    return invoke


def shared_by(note: str) -> list[str]:
    """The words of the command a note gives in backticks, without ``graphmem``."""
    return shlex.split(note.split("`")[1])[1:]


def test_a_preference_stored_global_on_a_team_store_says_teammates_do_not_see_it_and_how_to_share_it(
    as_writer: Callable[..., Result],
) -> None:
    told = as_writer("alice", "remember", "-c", "preference", "Prefer early returns over nested ifs")
    mine = told.stdout.strip()

    assert told.exit_code == 0, told.output
    assert "global: only you see this preference, in every project; your teammates do not" in told.stderr
    assert "every project sees this" not in told.stderr
    share = shared_by(told.stderr)
    assert share == [
        "remember", "--scope", "project", "--category", "preference", "--supersedes", mine,
        "Prefer early returns over nested ifs",
    ]  # fmt: skip
    assert "Prefer early returns" not in as_writer("bob", "list").stdout  # before: Alice's own

    shared = as_writer("alice", *share)

    assert shared.exit_code == 0, shared.output
    assert "Prefer early returns over nested ifs" in as_writer("bob", "list").stdout
    assert "only you see" not in shared.stderr


def test_a_long_preference_on_a_team_store_is_shared_with_its_text_on_standard_input(
    as_writer: Callable[..., Result],
) -> None:
    text = "Prefer early returns over nested ifs.\nGuard clauses first, then the happy path.\n"

    told = as_writer("alice", "remember", "-c", "preference", "-", input=text)
    share = shared_by(told.stderr)
    shared = as_writer("alice", *share, input=text)

    assert told.stderr.rstrip().endswith("-` with its text on standard input")
    assert share[-1] == "-"
    assert shared.exit_code == 0, shared.output
    assert "Guard clauses first" in as_writer("bob", "list").stdout


def test_a_writers_reindex_to_a_model_of_another_dimension_is_refused_and_keeps_the_teams_vectors(
    request: pytest.FixtureRequest, tmp_path: Path, git_project: str
) -> None:
    alice, _ = writer_roles(postgres_url(request), DIMENSION)
    settings = load_settings(data_dir=tmp_path / "alice", store={"url": alice})
    memory = open_memory(settings, embedder=HashEmbedder(DIMENSION))
    memory.remember("Payments retry three times with backoff", project=git_project)
    memory.embed_pending()
    vectors = memory.store.count_vectors()
    memory.close()
    assert vectors == 1

    # `graphmem reindex` opens the store as here: a writer may not resize the team's vectors.
    with pytest.raises(StoreMismatchError, match="graphmem reindex"):
        open_memory(settings, embedder=HashEmbedder(2 * DIMENSION), check_model=False).reindex()

    again = open_memory(settings, embedder=HashEmbedder(DIMENSION))
    assert again.store.count_vectors() == vectors  # the team's vectors are all there
    again.close()
