"""What ``graphmem status`` says about GitLab when it is not set up, from a real service's status."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmem.adapters.embedders import HashEmbedder
from graphmem.app import open_memory
from graphmem.cli.gitlab import status_lines
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings


def test_without_a_token_status_says_how_to_configure_once(fake_memory: MemoryService) -> None:
    lines = status_lines(fake_memory.gitlab_status())
    assert len(lines) == 1
    assert lines[0].startswith("gitlab: not configured — set GRAPHMEM_GITLAB_TOKEN")
    assert lines[0].count("not configured") == 1


def test_turned_off_status_says_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHMEM_GITLAB_TOKEN", "glpat-unused")
    monkeypatch.setenv("GRAPHMEM_GITLAB__ENABLED", "false")
    memory = open_memory(load_settings(data_dir=tmp_path / "data"), embedder=HashEmbedder(64))
    try:
        assert status_lines(memory.gitlab_status()) == ["gitlab: off ([gitlab] enabled = false)"]
    finally:
        memory.close()
