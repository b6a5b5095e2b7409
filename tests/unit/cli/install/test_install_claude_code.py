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


# -- ~/.claude.json, Claude Code's state of megabytes -----------------------------------------

MIB = 1024 * 1024


def claude_state(history_chars: int, servers: dict[str, object] | None = None) -> dict[str, object]:
    """``~/.claude.json`` as Claude Code keeps it: every project's prompt history, pasted text included."""
    prompt = "fix the flaky test in checkout — café 🚀\n" * (history_chars // 40)
    state: dict[str, object] = {
        "numStartups": 412,
        "projects": {"/home/me/shop": {"history": [{"display": "fix it", "pastedContents": {"1": prompt}}]}},
    }
    if servers is not None:
        state["mcpServers"] = servers
    state["oauthAccount"] = {"emailAddress": "me@example.com"}
    return state


def written(path: Path, state: dict[str, object]) -> bytes:
    """``state`` written as Claude Code writes it (``JSON.stringify(state, null, 2)``), mode 0600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(state, indent=2, ensure_ascii=False))
    path.chmod(0o600)
    return path.read_bytes()


def test_uninstall_global_works_once_claude_code_grew_claude_json_past_a_mib(
    invoke: Invoke, tmp_path: Path
) -> None:
    home = tmp_path / "claude-home"
    written(home / ".claude.json", claude_state(0))
    assert invoke("install", "claude-code", "--global").exit_code == 0
    grown = json.loads((home / ".claude.json").read_text())  # Claude Code adds history, rewrites it
    grown["projects"] = claude_state(3 * MIB)["projects"]
    written(home / ".claude.json", grown)
    assert (home / ".claude.json").stat().st_size > 3 * MIB

    doctor = invoke("doctor").output
    gone = invoke("uninstall", "claude-code", "--global")

    assert f"claude-code (global): MCP server in {home}/.claude.json; hooks in" in doctor
    assert gone.exit_code == 0, gone.output
    assert f"updated {home}/.claude.json" in gone.output and f"deleted {home}/settings.json" in gone.output
    del grown["mcpServers"]
    assert (home / ".claude.json").read_text() == json.dumps(grown, indent=2, ensure_ascii=False)
    assert (home / ".claude.json").stat().st_mode & 0o777 == 0o600


def test_install_then_uninstall_global_gives_a_large_claude_json_back_byte_for_byte(
    invoke: Invoke, tmp_path: Path
) -> None:
    state = tmp_path / "claude-home" / ".claude.json"
    before = written(state, claude_state(3 * MIB, servers={"github": {"type": "stdio", "command": "gh-mcp"}}))

    installed = invoke("install", "claude-code", "--global")
    assert installed.exit_code == 0, installed.output
    assert json.loads(state.read_text())["mcpServers"]["graphmem"]["command"] == COMMAND[0]
    assert invoke("uninstall", "claude-code", "--global").exit_code == 0

    assert state.read_bytes() == before
    assert state.stat().st_mode & 0o777 == 0o600


def test_uninstall_removes_the_hooks_though_claude_json_cannot_be_read_and_says_what_is_left(
    invoke: Invoke, tmp_path: Path
) -> None:
    home = tmp_path / "claude-home"
    assert invoke("install", "claude-code", "--global").exit_code == 0
    broken = '{\n  "mcpServers": {\n    "graphmem": {"command": "graphmem"},\n'  # cut short
    (home / ".claude.json").write_text(broken)

    gone = invoke("uninstall", "claude-code", "--global")

    assert gone.exit_code == 10, gone.output
    assert f"deleted {home}/settings.json" in gone.output
    assert not (home / "settings.json").exists()
    assert (home / ".claude.json").read_text() == broken
    assert (
        f"error: {home}/.claude.json was left as it is: {home}/.claude.json is not valid JSON (line 4"
        in gone.output
    )
    assert (
        f"Only {home}/settings.json loses graphmem's hooks: once .claude.json is fixed, run "
        "`graphmem uninstall claude-code --global` again to remove graphmem's MCP server "
        "(mcpServers.graphmem) from it too." in gone.output
    )


def test_a_claude_json_over_its_own_bound_is_named_and_the_hooks_still_go(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graphmem.adapters import claude_code_servers

    monkeypatch.setattr(claude_code_servers, "MAX_STATE_FILE_BYTES", 2 * MIB)  # not 256 MiB of test data
    home = tmp_path / "claude-home"
    assert invoke("install", "claude-code", "--global").exit_code == 0
    written(home / ".claude.json", claude_state(3 * MIB, servers={}))

    doctor = invoke("doctor").output
    gone = invoke("uninstall", "claude-code", "--global")

    assert f"claude-code (global): cannot tell: {home}/.claude.json is over 2 MiB" in doctor
    assert gone.exit_code == 10 and f"deleted {home}/settings.json" in gone.output
    assert f"error: {home}/.claude.json was left as it is: {home}/.claude.json is over 2 MiB" in gone.output


# -- the user's hooks in graphmem's group; a hooks of another kind ------------------------------


def test_install_and_uninstall_keep_a_hook_the_user_added_to_graphmems_group(
    invoke: Invoke, project: Path
) -> None:
    assert invoke("install", "claude-code", "--project", str(project)).exit_code == 0
    path = project / ".claude" / "settings.json"
    settings = json.loads(path.read_text())
    group = settings["hooks"]["UserPromptSubmit"][0]
    mine = {"type": "command", "command": "echo my-own-prompt-hook"}
    group["hooks"] += [mine]
    group["hooks"][0]["timeout"] = 30
    path.write_text(json.dumps(settings, indent=2))

    again = invoke("install", "claude-code", "--project", str(project))
    after_install = json.loads(path.read_text())["hooks"]["UserPromptSubmit"]
    gone = invoke("uninstall", "claude-code", "--project", str(project))

    assert f"updated {path}" in again.output
    assert [hook["command"] for hook in after_install[0]["hooks"]][1:] == ["echo my-own-prompt-hook"]
    assert after_install[0]["hooks"][0]["timeout"] == 10
    assert gone.exit_code == 0 and f"updated {path}" in gone.output
    assert json.loads(path.read_text()) == {"hooks": {"UserPromptSubmit": [{"hooks": [mine]}]}}


def test_settings_whose_hooks_is_null_get_graphmems_hooks(invoke: Invoke, project: Path) -> None:
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text('{"hooks": null}\n')

    done = invoke("install", "claude-code", "--project", str(project))

    assert done.exit_code == 0, done.output
    doctor = invoke("--project", str(project), "doctor").output
    assert f"claude-code (project {project}): MCP server in {project}/.mcp.json; hooks in" in doctor
    assert "missing" not in doctor


def test_hooks_that_are_no_object_are_named_as_such(invoke: Invoke, project: Path) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text('{"hooks": "none yet"}\n')

    done = invoke("install", "claude-code", "--project", str(project))

    assert done.exit_code == 10
    assert (
        f'error: {path}: "hooks" holds a string, where Claude Code expects an object of hook events. Fix it '
        "(or remove the key) and run the command again; nothing was changed." in done.output
    )
    assert not (project / ".mcp.json").exists()
