"""Settings the daemon's guard reads: the API key, allowed hosts and origins."""

from __future__ import annotations

import pytest

from graphmem.errors import ConfigError
from graphmem.settings import load_settings


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
