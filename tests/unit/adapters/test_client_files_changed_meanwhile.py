"""A client's file written by the client between graphmem's read (the plan) and its write (``apply``)
is left as the client wrote it (``client_files.check_unchanged``); one nobody wrote is written."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from graphmem.adapters import claude_code_config, client_files, jsonc
from graphmem.adapters import opencode_config as oc
from graphmem.adapters.client_files import ChangedMeanwhile

COMMAND = ["/opt/graphmem/bin/graphmem", "mcp"]
ENTRY = oc.server_entry(COMMAND)
CLAUDE_ENTRY = claude_code_config.server_entry(COMMAND)
USER_CONFIG = '{\n  "theme": "dark"\n}\n'
CLIENTS_CONFIG = '{\n  "theme": "light",\n  "model": "anthropic/claude-sonnet-4"\n}\n'
USER_AGENTS = "# Shop\n\nRun `make test` before you commit.\n"


def test_a_config_the_client_wrote_after_the_plan_read_it_keeps_the_clients_text(tmp_path: Path) -> None:
    files = oc.project_files(tmp_path)
    files.config.write_text(USER_CONFIG, "utf-8")
    changes = oc.plan_install(files, ENTRY)
    files.config.write_text(CLIENTS_CONFIG, "utf-8")  # the client saves a setting meanwhile

    with pytest.raises(ChangedMeanwhile, match="changed after graphmem read it") as raised:
        oc.apply(changes)

    assert files.config.read_text("utf-8") == CLIENTS_CONFIG
    assert "Run the command again" in str(raised.value) and "nothing was changed" in str(raised.value)
    assert not files.agents.exists() and not files.plugin.exists()  # one changed file stops them all


def test_a_file_absent_when_read_and_created_meanwhile_is_not_overwritten(tmp_path: Path) -> None:
    files = oc.project_files(tmp_path)
    changes = oc.plan_install(files, ENTRY)
    files.agents.write_text(USER_AGENTS, "utf-8")

    with pytest.raises(ChangedMeanwhile, match=r"AGENTS\.md changed after graphmem read it"):
        oc.apply(changes)

    assert files.agents.read_text("utf-8") == USER_AGENTS
    assert not files.config.exists()


def test_a_file_the_uninstall_would_delete_stays_when_the_user_wrote_it_meanwhile(tmp_path: Path) -> None:
    files = oc.project_files(tmp_path)
    oc.apply(oc.plan_install(files, ENTRY))
    changes = oc.plan_uninstall(files)
    assert dict((change.path, change.action) for change in changes)[files.agents] == "deleted"
    written = files.agents.read_text("utf-8") + USER_AGENTS
    files.agents.write_text(written, "utf-8")

    with pytest.raises(ChangedMeanwhile):
        oc.apply(changes)

    assert files.agents.read_text("utf-8") == written
    assert jsonc.get_value(files.config.read_text("utf-8"), oc.MCP_PATH) == ENTRY  # nothing was changed


def test_each_file_is_checked_again_right_before_it_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = oc.project_files(tmp_path)
    files.config.write_text(USER_CONFIG, "utf-8")
    files.agents.write_text(USER_AGENTS, "utf-8")
    changes = oc.plan_install(files, ENTRY)
    replace = os.replace
    clients_agents = USER_AGENTS + "Deploy on Fridays.\n"

    def config_written_then_client_writes_agents(source: str, target: str) -> None:
        replace(source, target)
        if Path(target).name == files.config.name:
            files.agents.write_text(clients_agents, "utf-8")

    monkeypatch.setattr(os, "replace", config_written_then_client_writes_agents)
    with pytest.raises(ChangedMeanwhile) as raised:
        oc.apply(changes)

    assert files.agents.read_text("utf-8") == clients_agents
    assert jsonc.get_value(files.config.read_text("utf-8"), oc.MCP_PATH) == ENTRY
    assert f"already changed: {files.config}" in str(raised.value)
    assert not files.plugin.exists()


def test_files_nobody_wrote_since_the_plan_are_written(tmp_path: Path) -> None:
    files = oc.project_files(tmp_path)
    files.config.write_text(USER_CONFIG, "utf-8")
    files.agents.write_text(USER_AGENTS, "utf-8")

    oc.apply(oc.plan_install(files, ENTRY))

    config = files.config.read_text("utf-8")
    assert jsonc.get_value(config, oc.MCP_PATH) == ENTRY and jsonc.get_value(config, ("theme",)) == "dark"
    assert files.agents.read_text("utf-8").startswith(USER_AGENTS) and files.plugin.is_file()


def _state_file(path: Path, filler: str) -> str:
    """A Claude Code state file past ``MAX_CLIENT_FILE_BYTES``: only its stamp is compared."""
    text = json.dumps(
        {"projects": {"/shop": {"history": filler * (client_files.MAX_CLIENT_FILE_BYTES + 10)}}}
    )
    path.write_text(text, "utf-8")
    return text


def test_a_large_state_file_the_client_replaced_by_a_rename_is_kept(tmp_path: Path) -> None:
    home = tmp_path / "claude-home"
    home.mkdir()
    files = claude_code_config.global_files({"CLAUDE_CONFIG_DIR": str(home)})
    _state_file(files.servers, "a")
    read = files.servers.stat()
    changes = claude_code_config.plan_install(files, CLAUDE_ENTRY)
    fresh = home / ".claude.json.fresh"  # as Claude Code writes it: a new file renamed in place,
    clients = _state_file(fresh, "b")  # of the same size and with the same times
    os.utime(fresh, ns=(read.st_atime_ns, read.st_mtime_ns))
    os.replace(fresh, files.servers)

    with pytest.raises(ChangedMeanwhile, match=r"\.claude\.json changed after graphmem read it"):
        oc.apply(changes)

    assert files.servers.read_text("utf-8") == clients


def test_a_large_state_file_nobody_wrote_since_the_plan_is_written(tmp_path: Path) -> None:
    home = tmp_path / "claude-home"
    home.mkdir()
    files = claude_code_config.global_files({"CLAUDE_CONFIG_DIR": str(home)})
    _state_file(files.servers, "a")

    oc.apply(claude_code_config.plan_install(files, CLAUDE_ENTRY))

    state = json.loads(files.servers.read_text("utf-8"))
    assert "graphmem" in state["mcpServers"] and "/shop" in state["projects"]


def test_a_change_not_read_through_read_client_file_is_compared_as_text(tmp_path: Path) -> None:
    path = tmp_path / "AGENTS.md"
    path.write_text("model = two\n", "utf-8")  # as long as what the plan read: the text tells

    with pytest.raises(ChangedMeanwhile):
        oc.apply([oc.FileChange(path, "model = one\n", "model = three\n")])
    assert path.read_text("utf-8") == "model = two\n"

    oc.apply([oc.FileChange(path, "model = two\n", "model = three\n")])
    assert path.read_text("utf-8") == "model = three\n"
