"""``graphmem install claude-code``, ``graphmem uninstall claude-code`` and doctor's line, in
process, on real files; the memory store is never opened."""

from __future__ import annotations

import json
from pathlib import Path

from support.client_cli import COMMAND, Invoke


def test_dry_run_shows_the_diff_and_writes_nothing(invoke: Invoke, project: Path) -> None:
    done = invoke("install", "claude-code", "--project", str(project), "--dry-run")
    assert done.exit_code == 0, done.output
    assert f"+++ {project}/.mcp.json" in done.output and '"graphmem": {' in done.output
    assert "graphmem.integrations.claude_code user-prompt-submit" in done.output
    assert "dry run: 2 files would change; nothing was written." in done.output
    assert list(project.iterdir()) == []


def test_install_twice_then_uninstall_leaves_the_project_as_it_was(invoke: Invoke, project: Path) -> None:
    first = invoke("install", "claude-code", "--project", str(project))
    assert first.exit_code == 0 and f"created {project}/.claude/settings.json" in first.output
    servers = json.loads((project / ".mcp.json").read_text())["mcpServers"]
    assert servers["graphmem"] == {"type": "stdio", "command": COMMAND[0], "args": ["mcp"]}
    again = invoke("install", "claude-code", "--project", str(project))
    assert "graphmem is already installed for Claude Code here; nothing changed." in again.output
    doctor = invoke("--project", str(project), "doctor")
    assert f"claude-code (project {project}): MCP server in {project}/.mcp.json; hooks in" in doctor.output
    gone = invoke("uninstall", "claude-code", "--project", str(project))
    assert gone.exit_code == 0 and f"deleted {project}/.mcp.json" in gone.output
    assert list(project.iterdir()) == []


def test_global_install_writes_claude_codes_own_files(invoke: Invoke, tmp_path: Path) -> None:
    done = invoke("--data-dir", str(tmp_path / "mem"), "install", "claude-code", "--global")
    assert done.exit_code == 0, done.output
    home = tmp_path / "claude-home"
    entry = json.loads((home / ".claude.json").read_text())["mcpServers"]["graphmem"]
    assert entry["env"] == {"GRAPHMEM_DATA_DIR": str((tmp_path / "mem").resolve())}
    settings = (home / "settings.json").read_text()
    assert f"stop --data-dir {(tmp_path / 'mem').resolve()}" in settings


def test_a_malformed_settings_file_stops_install_naming_its_line(invoke: Invoke, project: Path) -> None:
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text('{\n  "hooks": {,\n}\n')
    done = invoke("install", "claude-code", "--project", str(project))
    assert done.exit_code != 0
    assert "settings.json is not valid JSON (line 2" in done.output
    assert not (project / ".mcp.json").exists()
