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


# -- [server] host: the address the daemon binds ------------------------------------------


@pytest.mark.parametrize(
    "host",
    [
        *["127.0.0.1", "::1", "0.0.0.0", "::", "localhost", "graphmem.lan", "graphmem.lan.", "fe80::1%eth0"],
        "db_1.internal",
        pytest.param("a" * 63 + ".lan", id="a 63-letter label"),
        pytest.param(".".join(["a" * 63] * 4)[:253], id="253 characters"),
    ],
)
def test_an_address_or_a_host_name_is_the_host_as_given(monkeypatch: pytest.MonkeyPatch, host: str) -> None:
    monkeypatch.setenv("GRAPHMEM_SERVER__HOST", host)
    assert load_settings().server.host == host


def test_an_empty_host_variable_is_refused_not_every_interface(monkeypatch: pytest.MonkeyPatch) -> None:
    # As GRAPHMEM_DATA_DIR= (the current directory), an empty host means something to the socket
    # (every interface): refused, naming the variable, never read as unset.
    monkeypatch.setenv("GRAPHMEM_API_KEY", "s3cret-key")
    monkeypatch.setenv("GRAPHMEM_SERVER__HOST", "")
    with pytest.raises(ConfigError) as raised:
        load_settings()
    said = str(raised.value)
    assert "GRAPHMEM_SERVER__HOST holds ''" in said
    assert "is empty, which would listen on every interface" in said
    assert "Fix the variable, or unset it for the default" in said


def test_a_nul_in_the_config_files_host_is_a_config_error_naming_the_key(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text('api_key = "s3cret-key"\n[server]\nhost = "a\\u0000b"\n', "utf-8")
    monkeypatch.setenv("GRAPHMEM_CONFIG", str(config))
    with pytest.raises(ConfigError) as raised:
        load_settings()
    said = str(raised.value)
    assert "server.host: host 'a\\x00b' holds a blank or a control character" in said
    assert str(config) in said


@pytest.mark.parametrize(
    ("host", "problem"),
    [
        (" 127.0.0.1", "holds a blank or a control character"),
        ("graphmem.lan\n", "holds a blank or a control character"),
        ("\u200bgraphmem.lan", "holds a blank or a control character"),  # zero-width space
        ("http://graphmem.lan:9824/mcp", "is a URL, not an address"),
        ("user@graphmem.lan", "is a URL, not an address"),
        ("[::1]", "has brackets"),
        ("127.0.0.1:9824", "holds a port"),
        ("1:2:3", "is no IPv6 address"),
        ("127.1", "ends in a number"),  # the resolver reads 127.0.0.1
        ("0", "ends in a number"),  # the resolver reads 0.0.0.0: every interface
        ("0x7f000001", "ends in a number"),
        ("999.1.1.1", "ends in a number"),
        ("graphmem..lan", "is neither an IP address nor a host name"),
        ("-graphmem.lan", "is neither an IP address nor a host name"),
        pytest.param("a" * 64 + ".lan", "is neither an IP address nor a host name", id="a 64-letter label"),
        ("café.lan", "is neither an IP address nor a host name"),
        ("<broadcast>", "is neither an IP address nor a host name"),  # the socket's own name
        pytest.param("a." * 126 + "ab", "is over 253 characters", id="254 characters"),
        pytest.param("a" * 100_000, "is over 253 characters", id="100,000 characters"),
    ],
)
def test_a_host_no_socket_should_bind_is_a_config_error_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, host: str, problem: str
) -> None:
    monkeypatch.setenv("GRAPHMEM_SERVER__HOST", host)
    with pytest.raises(ConfigError, match="GRAPHMEM_SERVER__HOST holds ") as raised:
        load_settings()
    assert problem in str(raised.value)
    assert len(str(raised.value)) < 1000  # a long value is cut where it is shown
