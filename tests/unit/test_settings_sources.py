"""A ``GRAPHMEM_*`` variable of every shape that the settings refuse is a ``ConfigError`` naming
it, what it holds (bounded, never a secret) and how to write it: never another exception."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from graphmem.cli.main import cli
from graphmem.errors import ConfigError
from graphmem.settings import load_settings

NO_USER = "~graphmem-no-such-user"
# A message says the problem in a line, whatever the variable holds.
MAX_MESSAGE_CHARS = 1000

SHAPES = {
    "a list not in JSON": ("GRAPHMEM_SERVER__ALLOWED_HOSTS", "graphmem.lan"),
    "a list of broken JSON": ("GRAPHMEM_SERVER__ALLOWED_ORIGINS", '["https://tools.example.com"'),
    "a list nested too deep to decode": ("GRAPHMEM_SERVER__ALLOWED_HOSTS", "[" * 100_000),
    "an empty list": ("GRAPHMEM_SERVER__ALLOWED_HOSTS", ""),
    "a section of broken JSON": ("GRAPHMEM_RECALL", '{"limit": "x"'),
    "a section not in JSON": ("GRAPHMEM_SERVER", "graphmem.lan"),
    "an empty section": ("GRAPHMEM_DEDUP", ""),
    "a section of JSON with a wrong value": ("GRAPHMEM_RECALL", '{"limit": "x"}'),
    "a word for a number": ("GRAPHMEM_RECALL__LIMIT", "x"),
    "an infinite number": ("GRAPHMEM_RECALL__LIMIT", "1e999"),
    "not a number": ("GRAPHMEM_SERVER__START_TIMEOUT_SECONDS", "nan"),
    "a negative number": ("GRAPHMEM_SERVER__PORT", "-1"),
    "an empty number": ("GRAPHMEM_RATE_LIMIT", ""),
    "a very long number": ("GRAPHMEM_RATE_LIMIT", "9" * 100_000),
    "neither yes nor no": ("GRAPHMEM_EMBEDDING__QUANTIZED_QUERIES", "maybe"),
    "an empty yes or no": ("GRAPHMEM_INGEST__ENABLED", ""),
    "an empty model": ("GRAPHMEM_EMBEDDING__MODEL", ""),
    "a very long plan": ("GRAPHMEM_RECALL__PLAN", "x" * 100_000),
    "a data dir in the home of no user": ("GRAPHMEM_DATA_DIR", f"{NO_USER}/memory"),
    "a data dir with a name too long": ("GRAPHMEM_DATA_DIR", "/tmp/" + "d" * 300),
    "a token file in the home of no user": ("GRAPHMEM_GITLAB__TOKEN_FILE", f"{NO_USER}/token"),
    "a certificate in the home of no user": ("GRAPHMEM_STORE__SSLROOTCERT", f"{NO_USER}/ca.pem"),
    "a session database in the home of no user": ("GRAPHMEM_INGEST__OPENCODE_DB", f"{NO_USER}/oc.db"),
    "a variable in lower case": ("graphmem_recall__limit", "x"),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_variable_the_settings_refuse_is_a_config_error_naming_it(
    shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    variable, value = SHAPES[shape]
    monkeypatch.setenv(variable, value)

    with pytest.raises(ConfigError) as raised:
        load_settings()

    said = str(raised.value)
    assert variable in said
    assert len(said) < MAX_MESSAGE_CHARS and "\n" not in said


def test_a_list_not_in_json_says_how_to_write_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHMEM_SERVER__ALLOWED_HOSTS", "graphmem.lan")

    with pytest.raises(ConfigError) as raised:
        load_settings()

    assert "GRAPHMEM_SERVER__ALLOWED_HOSTS holds 'graphmem.lan'" in str(raised.value)
    assert """GRAPHMEM_SERVER__ALLOWED_HOSTS='["graphmem.lan"]'""" in str(raised.value)


def test_a_section_not_in_json_says_how_to_write_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHMEM_RECALL", '{"limit": "x"')

    with pytest.raises(ConfigError) as raised:
        load_settings()

    assert """GRAPHMEM_RECALL='{"plan": "hybrid"}'""" in str(raised.value)
    assert "GRAPHMEM_RECALL__PLAN=hybrid" in str(raised.value)


def test_a_very_long_value_is_shown_cut_with_its_length(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHMEM_RECALL__PLAN", "fancy" * 20_000)

    with pytest.raises(ConfigError) as raised:
        load_settings()

    assert "(100,000 characters)" in str(raised.value)
    assert len(str(raised.value)) < MAX_MESSAGE_CHARS


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("GRAPHMEM_GITLAB", '{"token": "hunter2"'),
        ("GRAPHMEM_GITLAB", '{"token": "hunter2", "ttl_seconds": "soon"}'),
        ("GRAPHMEM_STORE", '{"password": "hunter2"'),
        ("GRAPHMEM_STORE__URL", "mysql://root:hunter2@db/x"),
    ],
)
def test_a_variable_that_may_hold_a_secret_is_named_but_never_shown(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)

    with pytest.raises(ConfigError) as raised:
        load_settings()

    assert variable in str(raised.value)
    assert "hunter2" not in str(raised.value)


def test_a_value_from_the_config_file_is_named_by_its_key_beside_a_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[recall]\nlimit = -5\n", "utf-8")
    monkeypatch.setenv("GRAPHMEM_CONFIG", str(config))
    monkeypatch.setenv("GRAPHMEM_RECALL__PLAN", "fancy")

    with pytest.raises(ConfigError) as raised:
        load_settings()

    said = str(raised.value)
    assert "recall.limit: Input should be greater than or equal to 1" in said
    assert "GRAPHMEM_RECALL__PLAN holds 'fancy': unknown recall plan 'fancy'" in said
    assert str(config) in said


@pytest.mark.parametrize("command", ["list", "stats", "serve"])
def test_every_command_says_a_variable_not_in_json_in_one_line_and_exits_9(
    command: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("GRAPHMEM_SERVER__ALLOWED_HOSTS", "graphmem.lan")

    result = CliRunner().invoke(cli, ["--data-dir", str(tmp_path / "data"), command])

    assert result.exit_code == 9, result.output
    assert result.stderr.startswith("error: Invalid settings (GRAPHMEM_SERVER__ALLOWED_HOSTS holds")
    assert len(result.stderr.splitlines()) == 1
