"""graphmem migrate on a real PostgreSQL database, what the CLI says when the configured
store cannot be used: one line, the right exit code, never a traceback or the password, and
the role ``graphmem stats`` says it logs in with (the writer and read-only roles of docs/team.md)."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from support.postgres import PostgresServer
from support.stores import MIGRATED

from graphmem.adapters.postgres_migrate import SCHEMA_VERSION
from graphmem.cli.main import cli


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
