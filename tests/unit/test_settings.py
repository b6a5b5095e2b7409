"""Settings the daemon's guard reads: the API key, allowed hosts and origins."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmem.errors import ConfigError
from graphmem.settings import RecallSettings, Settings, descriptions, load_settings


@pytest.mark.parametrize("blank", ["", "   ", "\t\n"])
def test_a_blank_api_key_is_no_key(monkeypatch: pytest.MonkeyPatch, blank: str) -> None:
    monkeypatch.setenv("GRAPHMEM_API_KEY", blank)
    assert load_settings().api_key is None


def test_an_api_key_loses_surrounding_blanks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHMEM_API_KEY", "  s3cret-key\n")
    key = load_settings().api_key
    assert key is not None and key.get_secret_value() == "s3cret-key"


def test_allowed_hosts_and_origins_are_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHMEM_SERVER__ALLOWED_HOSTS", '["graphmem.lan"]')
    monkeypatch.setenv("GRAPHMEM_SERVER__ALLOWED_ORIGINS", '["https://tools.example.com"]')
    server = load_settings().server
    assert server.allowed_hosts == ["graphmem.lan"]
    assert server.allowed_origins == ["https://tools.example.com"]


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("GRAPHMEM_SERVER__ALLOWED_ORIGINS", '["tools.example.com"]'),
        ("GRAPHMEM_SERVER__ALLOWED_ORIGINS", '["https://tools.example.com/path"]'),
        ("GRAPHMEM_SERVER__ALLOWED_HOSTS", '["http://graphmem.lan"]'),
        ("GRAPHMEM_SERVER__ALLOWED_HOSTS", '[" "]'),
    ],
)
def test_malformed_allowed_entries_are_config_errors(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError, match="allowed_"):
        load_settings()


# -- [store]: a team's PostgreSQL store ---------------------------------------------------


def test_without_a_store_url_the_store_is_the_embedded_one() -> None:
    assert load_settings().store.url is None


def test_the_store_url_and_password_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHMEM_STORE_URL", " postgresql://graphmem@db.internal/graphmem ")
    monkeypatch.setenv("GRAPHMEM_STORE_PASSWORD", "pa ss")
    store = load_settings().store
    assert store.url == "postgresql://graphmem@db.internal/graphmem"
    assert store.password_value == "pa ss"
    assert "pa ss" not in repr(store)


def test_the_store_password_can_come_from_a_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    secret = tmp_path / "pg-password"
    secret.write_text("s3cret\n", "utf-8")
    monkeypatch.setenv("GRAPHMEM_STORE__PASSWORD_FILE", str(secret))
    monkeypatch.setenv("GRAPHMEM_STORE__SSLMODE", "verify-full")
    monkeypatch.setenv("GRAPHMEM_STORE__SSLROOTCERT", "/etc/ssl/db-ca.pem")
    store = load_settings().store
    assert store.password_value == "s3cret"
    assert store.tls == {
        "sslmode": "verify-full",
        "sslrootcert": "/etc/ssl/db-ca.pem",
        "sslcert": None,
        "sslkey": None,
    }


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("GRAPHMEM_STORE_URL", "mysql://root:hunter2@db/x", "must start with postgresql://"),
        ("GRAPHMEM_STORE__SSLMODE", "always", "sslmode must be one of"),
        ("GRAPHMEM_STORE__PASSWORD_FILE", "/nonexistent/pg-password", "cannot read the password file"),
    ],
)
def test_bad_store_settings_are_config_errors_that_never_show_the_password(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, said: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError, match=said) as raised:
        load_settings()
    assert "hunter2" not in str(raised.value)


def test_unknown_sections_and_keys_are_ignored_with_the_setting_they_are_closest_to(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from graphmem.settings import unknown_settings

    config = tmp_path / "config.toml"
    config.write_text('datadir = "x"\n[recal]\nlimit = 3\n[recall]\nlimt = 4\n[zzz]\n', "utf-8")
    monkeypatch.setenv("GRAPHMEM_CONFIG", str(config))

    assert load_settings().recall.limit == 10
    assert unknown_settings() == [
        f"datadir in {config} names no setting and is ignored (did you mean data_dir?)",
        f"[recal] in {config} names no setting and is ignored (did you mean [recall]?)",
        f"[recall] limt in {config} names no setting and is ignored (did you mean limit?)",
        f"[zzz] in {config} names no setting and is ignored (known: data_dir, embedding, recall, dedup, "
        "server, ingest, bootstrap, extraction, plugin, gitlab, store, api_key, rate_limit)",
    ]


def test_each_settings_description_is_the_docstring_under_its_field() -> None:
    said = descriptions(Settings)

    assert said["rate_limit"].startswith("HTTP requests per minute the daemon accepts")
    assert "\n" in said["rate_limit"]  # as written, indentation cleaned
    assert "server" not in said  # a section has its class docstring, not one under the field
    assert descriptions(RecallSettings).keys() <= RecallSettings.model_fields.keys()
    assert all(descriptions(RecallSettings).values())
