"""``graphmem install|uninstall|doctor CLIENT``, in process: ``invoke`` runs the command with every
agent client's user folder in ``tmp_path`` (``support/client_cli.py``); ``project`` is an empty
project folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.client_cli import Invoke, client_cli


@pytest.fixture
def invoke(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Invoke:
    return client_cli(tmp_path, monkeypatch)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    directory = tmp_path / "shop"
    directory.mkdir()
    return directory
