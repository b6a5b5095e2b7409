"""``graphmem install claude-code``, ``graphmem uninstall claude-code`` and doctor's line, in
process, on real files; the memory store is never opened."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.client_cli import COMMAND, HOOK_PYTHON, Invoke


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


def test_doctor_names_a_moved_virtualenv_and_the_fix(invoke: Invoke, project: Path, tmp_path: Path) -> None:
    assert invoke("install", "claude-code", "--project", str(project)).exit_code == 0
    healthy = invoke("--project", str(project), "doctor").output
    settings = project / ".claude" / "settings.json"
    settings.write_text(settings.read_text().replace(HOOK_PYTHON, str(tmp_path / "moved" / "bin" / "python")))
    servers = project / ".mcp.json"
    servers.write_text(servers.read_text().replace(COMMAND[0], str(tmp_path / "moved" / "bin" / "graphmem")))

    moved = invoke("--project", str(project), "doctor").output

    assert "broken" not in healthy
    assert f"broken: the MCP server's {tmp_path}/moved/bin/graphmem does not exist" in moved
    assert f"broken: the hooks' {tmp_path}/moved/bin/python does not exist" in moved
    assert "run `graphmem install claude-code` again" in moved


def test_doctor_names_a_python_that_has_no_graphmem(invoke: Invoke, project: Path, tmp_path: Path) -> None:
    assert invoke("install", "claude-code", "--project", str(project)).exit_code == 0
    venv = tmp_path / "rebuilt"  # a virtualenv made again without graphmem
    (venv / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    rebuilt = venv / "bin" / "python"
    rebuilt.parent.mkdir()
    rebuilt.write_text("#!/bin/sh\nexit 1\n")
    rebuilt.chmod(0o755)
    settings = project / ".claude" / "settings.json"
    settings.write_text(settings.read_text().replace(HOOK_PYTHON, str(rebuilt)))

    doctor = invoke("--project", str(project), "doctor").output

    assert f"broken: the hooks' {rebuilt} has no graphmem.integrations.claude_code" in doctor


def test_doctor_never_runs_a_program_the_projects_config_names(
    invoke: Invoke, project: Path, tmp_path: Path
) -> None:
    assert invoke("install", "claude-code", "--project", str(project)).exit_code == 0
    ran = tmp_path / "ran"
    planted = project / "tools" / "python"  # the repository's own program, as its config names it
    planted.parent.mkdir()
    planted.write_text(f"#!/bin/sh\ntouch {ran}\n")
    planted.chmod(0o755)
    settings = project / ".claude" / "settings.json"
    settings.write_text(settings.read_text().replace(HOOK_PYTHON, str(planted)))

    result = invoke("--project", str(project), "doctor")

    assert result.exit_code in (0, 1) and not ran.exists()


def test_uninstall_global_leaves_claude_codes_own_folder(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")  # ~/.claude, as Codex's ~/.codex
    claude = tmp_path / "home" / ".claude"
    assert invoke("install", "claude-code", "--global").exit_code == 0
    assert (claude / "settings.json").is_file()

    assert invoke("uninstall", "claude-code", "--global").exit_code == 0

    assert claude.is_dir() and list(claude.iterdir()) == []  # Claude Code's home, empty or not
