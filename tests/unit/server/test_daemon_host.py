"""The address the daemon binds: ``[server] host`` and ``graphmem serve --host`` are refused in
one line (``ConfigError``, exit 9) when they are no address, before a daemon takes its lock or
is started in the background; an empty one is never every interface. ``_bind`` says a host no
socket takes (a name that does not resolve) in one line too, never with the socket's traceback.
Binding every interface on purpose (``0.0.0.0``, ``::``) with an API key still works. No daemon
runs: what would start or serve one fails the test instead."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from graphmem.cli.main import cli
from graphmem.errors import ConfigError
from graphmem.server import daemon, daemon_process
from graphmem.settings import load_settings

API_KEY = "s3cret-key"


class ReachedTheLock(Exception):
    """``serve`` went past its checks of the host: it would take the data dir's lock now."""


@pytest.fixture
def no_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    """``serve`` stops where it would take the daemon's lock, with ``ReachedTheLock``."""

    def reached(data_dir: Path) -> Any:
        raise ReachedTheLock(str(data_dir))

    monkeypatch.setattr(daemon, "_take_lock", reached)


@pytest.fixture
def no_daemon(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """What ``graphmem serve`` would run or start a daemon with, recorded instead of run."""
    started: list[tuple[Any, ...]] = []
    monkeypatch.setattr(daemon, "serve", lambda *args, **options: started.append(("serve", args, options)))
    monkeypatch.setattr(
        daemon_process, "spawn_detached", lambda *args, **options: started.append(("spawn", args, options))
    )
    return started


@pytest.mark.parametrize("host", ["", "a\0b", "http://graphmem.lan:9824/mcp", "127.0.0.1:9824", " ::1"])
def test_serve_refuses_an_explicit_host_that_is_no_address_before_its_lock(
    monkeypatch: pytest.MonkeyPatch, no_lock: None, host: str
) -> None:
    monkeypatch.setenv("GRAPHMEM_API_KEY", API_KEY)  # with a key, an empty host would be every interface

    with pytest.raises(ConfigError, match=r"^--host '") as raised:
        daemon.serve(load_settings(), host=host, port=0)

    assert "leave --host out for [server] host" in str(raised.value)


@pytest.mark.parametrize("host", ["0.0.0.0", "::"])
def test_every_interface_given_on_purpose_with_an_api_key_passes_the_checks(
    monkeypatch: pytest.MonkeyPatch, no_lock: None, host: str
) -> None:
    monkeypatch.setenv("GRAPHMEM_API_KEY", API_KEY)
    monkeypatch.setenv("GRAPHMEM_SERVER__HOST", host)

    with pytest.raises(ReachedTheLock):
        daemon.serve(load_settings(), port=0)
    with pytest.raises(ReachedTheLock):
        daemon.serve(load_settings(), host=host, port=0)


def ipv6_here() -> bool:
    try:
        with socket.socket(socket.AF_INET6):
            return True
    except OSError:
        return False


@pytest.mark.parametrize("host", ["0.0.0.0", "::"])
def test_every_interface_is_bound_as_given(monkeypatch: pytest.MonkeyPatch, host: str) -> None:
    monkeypatch.setenv("GRAPHMEM_API_KEY", API_KEY)
    monkeypatch.setenv("GRAPHMEM_SERVER__HOST", host)
    if host == "::" and not ipv6_here():
        pytest.skip("no IPv6 on this machine")

    sock = daemon._bind(load_settings().server.host, 0)
    try:
        assert sock.getsockname()[0] == host
    finally:
        sock.close()


@pytest.mark.parametrize(
    "host",
    [
        pytest.param("a\0b", id="a NUL"),  # CPython's TypeError
        pytest.param("\udc80.lan", id="a lone surrogate"),  # no encoding takes it
        pytest.param("é" * 300, id="no IDNA name"),
    ],
)
def test_a_host_the_socket_refuses_is_a_config_error_not_a_traceback(host: str) -> None:
    with pytest.raises(ConfigError, match="Set \\[server\\] host \\(or --host\\) to an IP address"):
        daemon._bind(host, 0)


def test_an_address_that_does_not_resolve_is_a_config_error_that_says_what_to_set() -> None:
    # An IPv6 address on an interface this machine does not have: the settings take it, the
    # resolver does not, with no name looked up anywhere.
    with pytest.raises(ConfigError) as raised:
        daemon._bind("::1%no-such-interface", 0)

    assert "'::1%no-such-interface' port 0: the address does not resolve" in str(raised.value)
    assert "Set [server] host (or --host) to an address of this machine" in str(raised.value)


@pytest.mark.parametrize("detach", [False, True], ids=["serve", "serve --detach"])
@pytest.mark.parametrize("host", ["", "a\0b", "https://graphmem.lan/", "[::1]"])
def test_the_host_flag_is_refused_as_the_setting_is_and_nothing_starts(
    tmp_path: Path, no_daemon: list[tuple[Any, ...]], host: str, detach: bool
) -> None:
    arguments = ["--data-dir", str(tmp_path / "data"), "serve", "--host", host]

    result = CliRunner().invoke(cli, arguments + (["--detach"] if detach else []))

    assert result.exit_code == ConfigError.exit_code, result.output
    assert result.output.startswith(f"error: --host {host!r} "), result.output
    assert "Traceback" not in result.output
    assert no_daemon == []


def test_an_empty_host_variable_stops_serve_with_the_variable_named(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, no_daemon: list[tuple[Any, ...]]
) -> None:
    monkeypatch.setenv("GRAPHMEM_API_KEY", API_KEY)
    monkeypatch.setenv("GRAPHMEM_SERVER__HOST", "")

    result = CliRunner().invoke(cli, ["--data-dir", str(tmp_path / "data"), "serve"])

    assert result.exit_code == ConfigError.exit_code, result.output
    assert "GRAPHMEM_SERVER__HOST holds '': host '' is empty" in result.output
    assert no_daemon == []
