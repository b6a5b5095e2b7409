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


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        (
            '{"hooks": {"Stop": "not a list"}}',
            '"hooks.Stop" holds a string, where Claude Code expects a list',
        ),
        ('{"hooks": []}', '"hooks" holds a list, where Claude Code expects an object of hook events'),
        ('{"hooks": 5}', '"hooks" holds a number, where Claude Code expects an object'),
    ],
)
def test_hooks_of_the_wrong_kind_are_named_and_the_file_not_called_invalid_json(
    files: cc.ClaudeCodeFiles, settings: str, named: str
) -> None:
    files.settings.parent.mkdir()
    files.settings.write_text(settings + "\n")
    with pytest.raises(IntegrationError) as refused:
        cc.plan_install(files, ENTRY, python=PYTHON)
    assert str(refused.value).startswith(f"{files.settings}: {named}")
    assert "not valid JSON" not in str(refused.value)


@pytest.mark.parametrize(
    "settings", ['{"hooks": null}', '{"hooks": {"Stop": null}}', '{"hooks": null, "model": "opus"}']
)
def test_a_null_hooks_is_taken_as_absent_as_claude_code_takes_it(
    files: cc.ClaudeCodeFiles, settings: str
) -> None:
    # Claude Code 2.1.328 ignores a null "hooks" (or event), warning that it expects an object (a list).
    files.settings.parent.mkdir()
    files.settings.write_text(settings + "\n")

    install(files)

    assert cc.installed(files).complete
    assert cc.jsonc.get_value(files.settings.read_text(), ("model",)) == json.loads(settings).get("model")


def test_a_null_mcp_servers_is_taken_as_absent_and_one_of_the_wrong_kind_is_named(
    files: cc.ClaudeCodeFiles,
) -> None:
    files.servers.write_text('{"mcpServers": null}\n')
    install(files)
    assert cc.jsonc.get_value(files.servers.read_text(), cc.SERVER_PATH) == ENTRY

    files.servers.write_text('{"mcpServers": ["github"]}\n')
    with pytest.raises(
        IntegrationError, match=r'"mcpServers" holds a list, where Claude Code expects an object'
    ):
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
    assert cc.our_hooks(groups) == [(2, 0)]
    assert files.settings.read_text() == USER_GROUPS


def test_an_upgrade_changes_only_graphmems_group(files: cc.ClaudeCodeFiles) -> None:
    files.settings.parent.mkdir()
    files.settings.write_text(USER_GROUPS)
    install(files)
    before = files.settings.read_text()

    apply(cc.plan_install(files, ENTRY, python="/opt/graphmem-2/.venv/bin/python"))

    after = files.settings.read_text()
    assert after.replace("/opt/graphmem-2/", "/opt/graphmem/") == before


# -- the user's own hook in graphmem's group -------------------------------------------------

MY_HOOK = {"type": "command", "command": "echo my-own-prompt-hook"}


def ours(event: str, command: str = "") -> dict[str, object]:
    """graphmem's hook of ``event`` as install writes it (``command``: another command)."""
    return {"type": "command", "command": command or cc.hook_command(event, python=PYTHON), "timeout": 10}


def _add_my_hook(files: cc.ClaudeCodeFiles, timeout: int | None = None) -> None:
    """As a user edits the file: their hook added to graphmem's UserPromptSubmit group (and,
    with ``timeout``, graphmem's timeout changed)."""
    settings = json.loads(files.settings.read_text())
    group = settings["hooks"]["UserPromptSubmit"][0]
    group["hooks"].append(MY_HOOK)
    if timeout is not None:
        group["hooks"][0]["timeout"] = timeout
    files.settings.write_text(json.dumps(settings, indent=2) + "\n")


def test_install_again_keeps_the_users_hook_in_graphmems_group(files: cc.ClaudeCodeFiles) -> None:
    install(files)
    _add_my_hook(files)
    edited = files.settings.read_bytes()

    assert not any(change.changed for change in cc.plan_install(files, ENTRY, python=PYTHON))
    _add_my_hook(files, timeout=60)  # a second copy of the user's hook, and graphmem's timeout changed
    install(files)

    prompt = cc.jsonc.get_value(files.settings.read_text(), ("hooks", "UserPromptSubmit"))
    assert prompt[0]["hooks"] == [ours("user-prompt-submit"), MY_HOOK, MY_HOOK]
    assert edited != files.settings.read_bytes()


def test_uninstall_leaves_the_users_hook_and_its_group(files: cc.ClaudeCodeFiles) -> None:
    install(files)
    _add_my_hook(files)

    apply(cc.plan_uninstall(files))

    assert json.loads(files.settings.read_text()) == {"hooks": {"UserPromptSubmit": [{"hooks": [MY_HOOK]}]}}
    assert cc.installed(files).describe() == "not installed"


def test_a_users_group_with_graphmems_hook_in_it_loses_only_that_hook_byte_for_byte(
    files: cc.ClaudeCodeFiles,
) -> None:
    mine = (
        '{\n  "hooks": {\n    "Stop": [\n      {\n        "matcher": "",\n        "hooks": [\n'
        '          // mine first\n          {"type": "command", "command": "notify-send done"}\n'
        "        ]\n      }\n    ]\n  }\n}\n"
    )
    graphmems = json.dumps(ours("stop"))
    with_ours = mine.replace('"notify-send done"}\n', f'"notify-send done"}},\n          {graphmems}\n')
    files.settings.parent.mkdir()
    files.settings.write_text(with_ours)

    install(files)
    assert cc.jsonc.get_value(files.settings.read_text(), ("hooks", "Stop")) == cc.jsonc.get_value(
        with_ours, ("hooks", "Stop")
    )  # found where the user put it: no second group
    apply(cc.plan_uninstall(files))

    assert files.settings.read_text() == mine


def test_copies_of_graphmems_hook_become_one_and_uninstall_removes_them_all(
    files: cc.ClaudeCodeFiles,
) -> None:
    command = cc.hook_command("stop", python=PYTHON)
    copies = {
        "hooks": {"Stop": [{"hooks": [ours("stop")]}, {"hooks": [MY_HOOK, ours("stop", command + " ")]}]}
    }
    files.settings.parent.mkdir()
    files.settings.write_text(json.dumps(copies, indent=2) + "\n")

    install(files)
    assert cc.jsonc.get_value(files.settings.read_text(), ("hooks", "Stop")) == [
        {"hooks": [ours("stop")]},
        {"hooks": [MY_HOOK]},
    ]
    files.settings.write_text(json.dumps(copies, indent=2) + "\n")
    apply(cc.plan_uninstall(files))
    assert json.loads(files.settings.read_text()) == {"hooks": {"Stop": [{"hooks": [MY_HOOK]}]}}
