"""``codex_config.server_entry``: what ``[mcp_servers.graphmem]`` asks Codex to pass on."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmem.adapters import codex_config
from graphmem.settings import environment_variables, load_settings

COMMAND = ["/opt/graphmem/bin/graphmem", "mcp"]


def test_the_entry_names_the_locations_first_then_each_setting_once() -> None:
    entry = codex_config.server_entry(COMMAND, None, ["GRAPHMEM_RECALL__LIMIT", "GRAPHMEM_DATA_DIR"])

    names = entry["env_vars"]
    assert names[: len(codex_config.PASSED_VARIABLES)] == list(codex_config.PASSED_VARIABLES)
    assert names[len(codex_config.PASSED_VARIABLES) :] == ["GRAPHMEM_RECALL__LIMIT"]
    assert {"GRAPHMEM_DATA_DIR", "GRAPHMEM_CONFIG", "XDG_DATA_HOME", "CODEX_HOME"} <= set(names)


def test_a_pinned_data_dir_is_a_fixed_value_and_still_passes_the_names(tmp_path: Path) -> None:
    entry = codex_config.server_entry(COMMAND, tmp_path / "mem")

    assert entry["env"] == {"GRAPHMEM_DATA_DIR": str((tmp_path / "mem").resolve())}
    assert "CODEX_HOME" in entry["env_vars"]


def test_the_settings_variables_are_the_ones_the_settings_read(monkeypatch: pytest.MonkeyPatch) -> None:
    names = environment_variables()
    monkeypatch.setenv("GRAPHMEM_RECALL__LIMIT", "7")
    monkeypatch.setenv("GRAPHMEM_SERVER__PORT", "9911")

    settings = load_settings()

    assert (settings.recall.limit, settings.server.port) == (7, 9911)
    assert {"GRAPHMEM_RECALL__LIMIT", "GRAPHMEM_SERVER__PORT", "GRAPHMEM_DATA_DIR", "GITLAB_TOKEN"} <= set(
        names
    )
    assert len(names) == len(set(names))
