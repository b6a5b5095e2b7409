"""A config file, or a secret's file (``token_file``, ``password_file``), that is no regular file
or is far longer than one is a ``ConfigError`` naming it, from the light reading (``locate``)
and the full settings alike: a FIFO is not waited on for a writer, a device not read without end.
Each case would hang or fill the memory before the reader checked what it opened."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphmem.errors import ConfigError
from graphmem.locate import MAX_CONFIG_BYTES, locate
from graphmem.settings import load_settings

pytestmark = pytest.mark.timeout(60)  # a FIFO waited on fails the test instead of holding the run


@pytest.fixture(autouse=True)
def no_graphmem_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in os.environ:
        if name.upper().startswith("GRAPHMEM_"):
            monkeypatch.delenv(name)


@pytest.fixture(params=["fifo", "device", "folder", "too-long"])
def not_a_config(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A path where a config file is expected, and what the error says of it."""
    path = tmp_path / "config.toml"
    if request.param == "fifo":
        os.mkfifo(path)  # its open would wait for a writer
    elif request.param == "device":
        path = Path("/dev/zero")  # its reads never end
    elif request.param == "folder":
        path.mkdir()
    else:
        path.write_bytes(b"# " + b"x" * MAX_CONFIG_BYTES + b"\n")
    said = {"too-long": "over 1,024 KiB", "folder": "(a folder, not a file)"}
    yield path, said.get(request.param, "(not a regular file: a pipe, device or socket)")


def test_a_config_file_that_is_no_regular_file_or_too_long_is_a_config_error(
    not_a_config: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, says = not_a_config
    monkeypatch.setenv("GRAPHMEM_CONFIG", str(path))

    for read in (locate, load_settings):
        with pytest.raises(ConfigError) as raised:
            read()
        assert str(path) in str(raised.value) and says in str(raised.value)


@pytest.mark.parametrize("variable", ["GRAPHMEM_GITLAB__TOKEN_FILE", "GRAPHMEM_STORE__PASSWORD_FILE"])
def test_a_secrets_file_that_is_no_regular_file_or_too_long_is_a_config_error(
    not_a_config: tuple[Path, str], monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    path, says = not_a_config
    monkeypatch.setenv(variable, str(path))
    if variable == "GRAPHMEM_STORE__PASSWORD_FILE":
        monkeypatch.setenv("GRAPHMEM_STORE_URL", "postgresql://graphmem@db.internal/graphmem")

    with pytest.raises(ConfigError) as raised:
        load_settings()
    assert str(path) in str(raised.value) and says in str(raised.value)
