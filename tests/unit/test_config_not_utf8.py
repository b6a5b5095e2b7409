"""A config file that is not UTF-8 (TOML must be) is a ``ConfigError`` naming the file and the
byte, from the light reading (``locate``) and the full settings alike: never a traceback."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from graphmem.errors import ConfigError
from graphmem.locate import locate
from graphmem.settings import load_settings


@pytest.fixture
def config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in os.environ:
        if name.upper().startswith("GRAPHMEM_"):
            monkeypatch.delenv(name)
    path = tmp_path / "config.toml"
    monkeypatch.setenv("GRAPHMEM_CONFIG", str(path))
    return path


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (b"\xff\xfe = 1\n", "byte 0 is 0xff"),
        (b'data_dir = "/x"\n# caf\xe9\n', "byte 21 is 0xe9"),  # Latin-1, not UTF-8
    ],
)
def test_a_config_file_that_is_not_utf8_is_a_config_error(config: Path, raw: bytes, says: str) -> None:
    config.write_bytes(raw)
    expected = re.escape(f"{config} is not UTF-8 text ({says}): save it as UTF-8.")

    with pytest.raises(ConfigError, match=expected):
        locate()
    with pytest.raises(ConfigError, match=expected):
        load_settings()
