"""graphmem migrate on a real PostgreSQL database, and what the CLI says when the configured
store cannot be used: one line, the right exit code, never a traceback or the password."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from support.postgres import PostgresServer

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
