"""``graphmem install claude-code`` touches only what it owns in Claude Code's files: the MCP
server ``mcpServers.graphmem`` and its own hook group per event; idempotent, reversible, and a
malformed file is left untouched with an error naming the line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphmem.adapters import claude_code_config as cc
from graphmem.adapters.opencode_config import apply
from graphmem.errors import IntegrationError

PYTHON = "/opt/graphmem/.venv/bin/python"
ENTRY = cc.server_entry(["/opt/graphmem/.venv/bin/graphmem", "mcp"])
THEIR_HOOK = {"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/audit.sh"}]}
SETTINGS = """{
  // the user's own
  "model": "opus",
  "hooks": {
    "UserPromptSubmit": [
      {"hooks": [{"type": "command", "command": "~/bin/prompt-log.sh"}]}
    ],
    "PreToolUse": [THEIRS]
  },
  "permissions": {"allow": ["Bash(make test)"]}
}
""".replace("THEIRS", json.dumps(THEIR_HOOK))
SERVERS = '{\n  "mcpServers": {\n    "github": {"command": "gh-mcp"}\n  }\n}\n'


@pytest.fixture
def files(tmp_path: Path) -> cc.ClaudeCodeFiles:
    return cc.project_files(tmp_path)


def install(files: cc.ClaudeCodeFiles) -> None:
    apply(cc.plan_install(files, ENTRY, python=PYTHON))


def test_install_adds_the_server_and_one_hook_group_per_event_keeping_everything_else(
    files: cc.ClaudeCodeFiles,
) -> None:
    files.settings.parent.mkdir()
    files.settings.write_text(SETTINGS)
    files.servers.write_text(SERVERS)
    install(files)
    servers = json.loads(files.servers.read_text())["mcpServers"]
    assert servers["github"] == {"command": "gh-mcp"} and servers["graphmem"] == ENTRY
    text = files.settings.read_text()
    assert "// the user's own" in text and '"permissions": {"allow": ["Bash(make test)"]}' in text
    settings = cc.jsonc.get_value(text, ())
    assert settings["hooks"]["PreToolUse"] == [THEIR_HOOK]
    prompt = settings["hooks"]["UserPromptSubmit"]
    assert prompt[0]["hooks"][0]["command"] == "~/bin/prompt-log.sh"
    assert (
        prompt[1]["hooks"][0]["command"]
        == f"{PYTHON} -P -m graphmem.integrations.claude_code user-prompt-submit"
    )
    assert set(settings["hooks"]) == {"PreToolUse", *cc.HOOK_EVENTS}
    assert cc.installed(files).complete


def test_install_twice_changes_nothing_and_uninstall_gives_the_files_back(files: cc.ClaudeCodeFiles) -> None:
    files.settings.parent.mkdir()
    files.settings.write_text(SETTINGS)
    files.servers.write_text(SERVERS)
    install(files)
    assert not any(change.changed for change in cc.plan_install(files, ENTRY, python=PYTHON))
    apply(cc.plan_uninstall(files))
    assert files.servers.read_text() == SERVERS
    assert cc.jsonc.get_value(files.settings.read_text(), ()) == cc.jsonc.get_value(SETTINGS, ())
    assert "// the user's own" in files.settings.read_text()
    assert cc.installed(files).describe() == "not installed"


def test_files_install_created_are_deleted_by_uninstall(files: cc.ClaudeCodeFiles) -> None:
    install(files)
    assert files.servers.exists() and files.settings.exists()
    apply(cc.plan_uninstall(files))
    assert not files.servers.exists() and not files.settings.exists()


def test_a_new_command_replaces_graphmems_own_group(files: cc.ClaudeCodeFiles, tmp_path: Path) -> None:
    install(files)
    apply(cc.plan_install(files, ENTRY, data_dir=tmp_path / "mem", python=PYTHON))
    groups = cc.jsonc.get_value(files.settings.read_text(), ("hooks", "Stop"))
    assert len(groups) == 1 and groups[0]["hooks"][0]["command"].endswith(
        f"stop --data-dir {tmp_path / 'mem'}"
    )


def test_a_malformed_settings_file_is_left_untouched_with_its_line(files: cc.ClaudeCodeFiles) -> None:
    files.settings.parent.mkdir()
    broken = '{\n  "model": "opus",\n  "hooks": {\n    "Stop": [\n}\n'
    files.settings.write_text(broken)
    with pytest.raises(IntegrationError, match=r"settings.json is not valid JSON \(line 5"):
        cc.plan_install(files, ENTRY, python=PYTHON)
    assert files.settings.read_text() == broken
    assert not files.servers.exists()
    assert "line 5" in cc.installed(files).describe()


def test_hooks_that_are_no_list_stop_the_plan(files: cc.ClaudeCodeFiles) -> None:
    files.settings.parent.mkdir()
    files.settings.write_text('{"hooks": {"Stop": "not a list"}}\n')
    with pytest.raises(IntegrationError, match=r"hooks\.Stop is not a list of hook groups"):
        cc.plan_install(files, ENTRY, python=PYTHON)


def test_the_global_files_follow_claude_config_dir(tmp_path: Path) -> None:
    moved = cc.global_files({"CLAUDE_CONFIG_DIR": str(tmp_path)})
    assert moved == cc.ClaudeCodeFiles(tmp_path / ".claude.json", tmp_path / "settings.json")
    home = cc.global_files({})
    assert home == cc.ClaudeCodeFiles(Path.home() / ".claude.json", Path.home() / ".claude" / "settings.json")


# A user's groups as people write them: one on a line, one spread out, a comment between.
USER_GROUPS = """{
  "hooks": {
    "Stop": [
      {"hooks": [{"type": "command", "command": "notify-send done"}]},
      // tell the team
      {
        "matcher": "",
        "hooks": [ { "type": "command",   "command": "~/bin/slack.sh" } ]
      }
    ],
    "SessionStart": [{"hooks": [{"type": "command", "command": "~/bin/hello.sh"}]}]
  }
}
"""


def test_install_leaves_the_users_hook_groups_byte_for_byte_and_uninstall_restores_the_file(
    files: cc.ClaudeCodeFiles,
) -> None:
    files.settings.parent.mkdir()
    files.settings.write_text(USER_GROUPS)

    install(files)
    installed = files.settings.read_text()
    apply(cc.plan_uninstall(files))

    stop = USER_GROUPS[USER_GROUPS.index('{"hooks": [{"type": "command", "command": "notify-send'):
                       USER_GROUPS.index("\n    ],")]  # fmt: skip
    assert stop in installed  # both groups and the comment, as the user wrote them
    assert '[{"hooks": [{"type": "command", "command": "~/bin/hello.sh"}]}, ' in installed
    groups = cc.jsonc.get_value(installed, ("hooks", "Stop"))
    assert [g["hooks"][0]["command"] for g in groups][:2] == ["notify-send done", "~/bin/slack.sh"]
    assert cc.is_ours(groups[2])
    assert files.settings.read_text() == USER_GROUPS


def test_an_upgrade_changes_only_graphmems_group(files: cc.ClaudeCodeFiles) -> None:
    files.settings.parent.mkdir()
    files.settings.write_text(USER_GROUPS)
    install(files)
    before = files.settings.read_text()

    apply(cc.plan_install(files, ENTRY, python="/opt/graphmem-2/.venv/bin/python"))

    after = files.settings.read_text()
    assert after.replace("/opt/graphmem-2/", "/opt/graphmem/") == before
