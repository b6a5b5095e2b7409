"""``graphmem install codex`` and ``graphmem uninstall codex``, in process, on real files."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from support.client_cli import COMMAND, HOOK_PYTHON, Invoke

from graphmem.adapters import agents_md, codex_config
from graphmem.settings import environment_variables

HOOK = f"{HOOK_PYTHON} -P -m graphmem.integrations.codex_hook"
# A user's config.toml as people write them: comments, another server, a hook of their own.
USER_TOML = """\
# my Codex settings
model = "gpt-5.5"  # the default model
approval_policy = "on-request"

[mcp_servers.docs]
command = "docs-server"
args = ["--stdio"]

[[hooks.Stop]]
[[hooks.Stop.hooks]]
type = "command"
command = "notify-send done"

[projects."/home/me/shop"]
trust_level = "trusted"
"""


def config_of(path: Path) -> dict[str, object]:
    return tomllib.loads(path.read_text("utf-8"))


def hook_groups(config: dict[str, object], event: str) -> list[object]:
    hooks = config["hooks"]
    assert isinstance(hooks, dict)
    groups = hooks[event]
    assert isinstance(groups, list)
    return groups


def test_install_in_a_fresh_project_writes_the_server_the_hooks_and_agents_md(
    invoke: Invoke, project: Path
) -> None:
    result = invoke("install", "codex", "--project", str(project))

    assert result.exit_code == 0, result.output
    config_path = project / ".codex" / "config.toml"
    assert result.stdout.splitlines() == [f"created {config_path}", f"created {project / 'AGENTS.md'}"]
    config = config_of(config_path)
    assert config["mcp_servers"] == {
        "graphmem": {
            "command": COMMAND[0],
            "args": ["mcp"],
            "env_vars": list(codex_config.server_entry(COMMAND, None, environment_variables())["env_vars"]),
            "startup_timeout_sec": 20,
        }
    }
    for event, timeout in (("SessionStart", 10), ("UserPromptSubmit", 10), ("Stop", 10), ("SessionEnd", 3)):
        assert hook_groups(config, event) == [
            {"hooks": [{"type": "command", "command": HOOK, "timeout": timeout}]}
        ], event
    agents = (project / "AGENTS.md").read_text("utf-8")
    assert "`recall`" in agents and "not instructions" in agents
    assert "trust graphmem's hooks" in result.stderr


def test_install_keeps_the_users_comments_order_servers_and_hooks_and_uninstall_restores_the_file(
    invoke: Invoke, project: Path
) -> None:
    config_path = project / ".codex" / "config.toml"
    config_path.parent.mkdir()
    config_path.write_text(USER_TOML, "utf-8")

    installed = invoke("install", "codex", "--project", str(project))

    assert installed.exit_code == 0, installed.output
    text = config_path.read_text("utf-8")
    assert text.startswith(USER_TOML.split("[[hooks.Stop]]")[0])  # comments and order kept
    assert "# the default model" in text and 'trust_level = "trusted"' in text
    config = config_of(config_path)
    assert set(config["mcp_servers"]) == {"docs", "graphmem"}  # type: ignore[arg-type]
    stop = hook_groups(config, "Stop")
    assert stop[0] == {"hooks": [{"type": "command", "command": "notify-send done"}]}
    assert len(stop) == 2

    removed = invoke("uninstall", "codex", "--project", str(project))

    assert removed.exit_code == 0, removed.output
    assert config_path.read_text("utf-8") == USER_TOML
    assert not (project / "AGENTS.md").exists()


def test_install_twice_changes_nothing_and_uninstall_of_a_fresh_install_deletes_what_it_created(
    invoke: Invoke, project: Path
) -> None:
    assert invoke("install", "codex", "--project", str(project)).exit_code == 0
    before = (project / ".codex" / "config.toml").read_text("utf-8")

    again = invoke("install", "codex", "--project", str(project))

    assert again.exit_code == 0, again.output
    assert "already installed for Codex" in again.stderr
    assert (project / ".codex" / "config.toml").read_text("utf-8") == before

    gone = invoke("uninstall", "codex", "--project", str(project))

    assert gone.exit_code == 0, gone.output
    assert list(project.iterdir()) == []  # no config.toml, no AGENTS.md, no empty .codex/ folder
    assert "not installed for Codex" in invoke("uninstall", "codex", "--project", str(project)).stderr


def test_dry_run_prints_the_diff_and_writes_nothing(invoke: Invoke, project: Path) -> None:
    config_path = project / ".codex" / "config.toml"
    config_path.parent.mkdir()
    config_path.write_text(USER_TOML, "utf-8")

    result = invoke("install", "codex", "--project", str(project), "--dry-run")

    assert result.exit_code == 0, result.output
    assert f"+++ {config_path}" in result.stdout
    assert "+[mcp_servers.graphmem]" in result.stdout
    assert "+[[hooks.UserPromptSubmit]]" in result.stdout
    assert "dry run: 2 files would change" in result.stderr
    assert config_path.read_text("utf-8") == USER_TOML
    assert not (project / "AGENTS.md").exists()


def test_a_malformed_config_is_left_untouched_with_the_line_named(invoke: Invoke, project: Path) -> None:
    config_path = project / ".codex" / "config.toml"
    config_path.parent.mkdir()
    broken = 'model = "gpt-5.5"\n\n[mcp_servers.docs\ncommand = "x"\n'
    config_path.write_text(broken, "utf-8")

    for verb in ("install", "uninstall"):
        result = invoke(verb, "codex", "--project", str(project))

        assert result.exit_code == 10, result.output
        assert f"{config_path} line 3" in result.stderr
        assert "Traceback" not in result.output
        assert config_path.read_text("utf-8") == broken
    assert not (project / "AGENTS.md").exists()


def test_a_key_of_the_wrong_shape_stops_the_install(invoke: Invoke, project: Path) -> None:
    config_path = project / ".codex" / "config.toml"
    config_path.parent.mkdir()
    config_path.write_text('hooks = "none"\n', "utf-8")

    result = invoke("install", "codex", "--project", str(project))

    assert result.exit_code == 10, result.output
    assert f"hooks in {config_path} is a string, not [[hooks.EVENT]] tables" in result.stderr
    assert config_path.read_text("utf-8") == 'hooks = "none"\n'


def test_global_installs_into_codex_home_with_the_data_dir_pinned(invoke: Invoke, tmp_path: Path) -> None:
    data_dir = tmp_path / "mem"

    result = invoke("--data-dir", str(data_dir), "install", "codex", "--global")

    assert result.exit_code == 0, result.output
    home = tmp_path / "codex-home"
    config = config_of(home / "config.toml")
    server = config["mcp_servers"]["graphmem"]  # type: ignore[index]
    assert server["env"] == {"GRAPHMEM_DATA_DIR": str(data_dir.resolve())}
    [group] = hook_groups(config, "UserPromptSubmit")
    assert group["hooks"][0]["command"] == f"{HOOK} --data-dir {data_dir.resolve()}"  # type: ignore[index]
    assert (home / "AGENTS.md").is_file()
    assert invoke("install", "codex", "--global", "--project", str(tmp_path)).exit_code == 2


def test_an_older_graphmem_hook_is_replaced_not_doubled(invoke: Invoke, project: Path) -> None:
    config_path = project / ".codex" / "config.toml"
    config_path.parent.mkdir()
    old = (
        '[[hooks.Stop]]\n[[hooks.Stop.hooks]]\ntype = "command"\n'
        'command = "python -m graphmem.integrations.codex_hook"\n'
    )
    config_path.write_text(old, "utf-8")

    assert invoke("install", "codex", "--project", str(project)).exit_code == 0

    [stop] = hook_groups(config_of(config_path), "Stop")
    assert stop == {"hooks": [{"type": "command", "command": HOOK, "timeout": 10}]}


def test_what_is_installed_is_described_for_doctor(invoke: Invoke, project: Path) -> None:
    files = codex_config.project_files(project)
    assert codex_config.installed(files).describe() == "not installed"

    assert invoke("install", "codex", "--project", str(project)).exit_code == 0

    found = codex_config.installed(files)
    assert found.complete
    assert found.describe() == (
        f"MCP server in {files.config}; hooks: SessionStart, UserPromptSubmit, Stop, SessionEnd; "
        "AGENTS.md section"
    )
    files.agents.unlink()
    assert codex_config.installed(files).describe().endswith("incomplete: run `graphmem install codex` again")
    files.config.write_text("[mcp_servers\n", "utf-8")
    assert "line 1" in codex_config.installed(files).describe()


def test_doctor_has_a_line_for_codex_in_the_project_and_globally(invoke: Invoke, project: Path) -> None:
    before = invoke("--project", str(project), "doctor")
    invoke("install", "codex", "--project", str(project))

    after = invoke("--project", str(project), "doctor")

    assert before.exit_code == after.exit_code == 0, after.output
    assert f"codex (project {project}): not installed" in before.stdout
    config = project / ".codex" / "config.toml"
    assert f"codex (project {project}): MCP server in {config}; hooks: SessionStart" in after.stdout
    assert "codex (global): not installed" in after.stdout


def test_a_config_with_windows_line_endings_keeps_them_and_comes_back_as_it_was(
    invoke: Invoke, project: Path
) -> None:
    config_path = project / ".codex" / "config.toml"
    config_path.parent.mkdir()
    original = USER_TOML.replace("\n", "\r\n").encode()
    config_path.write_bytes(original)

    assert invoke("install", "codex", "--project", str(project)).exit_code == 0

    installed = config_path.read_bytes()
    assert installed.count(b"\n") == installed.count(b"\r\n")  # no line of graphmem's ends otherwise
    assert invoke("install", "codex", "--project", str(project)).exit_code == 0
    assert config_path.read_bytes() == installed
    assert invoke("uninstall", "codex", "--project", str(project)).exit_code == 0
    assert config_path.read_bytes() == original


def test_with_opencode_agents_md_keeps_one_section_for_both_and_each_uninstall_leaves_the_other(
    invoke: Invoke, project: Path
) -> None:
    agents = project / "AGENTS.md"
    agents.write_text("# Shop\n", "utf-8")
    assert invoke("install", "opencode", "--project", str(project)).exit_code == 0
    opencodes = agents.read_text("utf-8")

    assert invoke("install", "codex", "--project", str(project)).exit_code == 0
    both = agents.read_text("utf-8")
    assert both == "# Shop\n\n" + agents_md.section({"opencode", "codex"}) + "\n"
    assert "`graphmem_<tool>`" in both and "`mcp__graphmem__<tool>`" in both

    assert invoke("uninstall", "opencode", "--project", str(project)).exit_code == 0
    assert agents.read_text("utf-8") == "# Shop\n\n" + agents_md.section({"codex"}) + "\n"
    assert codex_config.installed(codex_config.project_files(project)).section

    assert invoke("install", "opencode", "--project", str(project)).exit_code == 0
    assert agents.read_text("utf-8") == both
    assert invoke("uninstall", "codex", "--project", str(project)).exit_code == 0
    assert agents.read_text("utf-8") == opencodes
    assert not codex_config.installed(codex_config.project_files(project)).section
    assert invoke("uninstall", "opencode", "--project", str(project)).exit_code == 0
    assert agents.read_text("utf-8") == "# Shop\n"


def test_the_server_is_passed_graphmems_variables_from_codexs_environment_by_name(
    invoke: Invoke, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Codex starts an MCP server with a short whitelist of its environment (HOME, PATH, USER...):
    # what the hooks see (the data dir, the config, Codex's own folder) must be named to reach it.
    monkeypatch.setenv("GRAPHMEM_DATA_DIR", "/home/me/private-memory")

    assert invoke("install", "codex", "--project", str(project)).exit_code == 0

    text = (project / ".codex" / "config.toml").read_text("utf-8")
    server = config_of(project / ".codex" / "config.toml")["mcp_servers"]["graphmem"]  # type: ignore[index]
    wanted = {"GRAPHMEM_DATA_DIR", "GRAPHMEM_CONFIG", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"}
    wanted |= {"CODEX_HOME", "CLAUDE_CONFIG_DIR", "GRAPHMEM_RECALL__LIMIT", "GRAPHMEM_STORE_URL"}
    assert wanted <= set(server["env_vars"])
    assert "env" not in server  # names only: a value of the user's never goes into the file
    assert "/home/me/private-memory" not in text


def test_install_again_keeps_the_users_own_server_keys_and_names_and_uninstall_removes_the_entry(
    invoke: Invoke, project: Path
) -> None:
    config_path = project / ".codex" / "config.toml"
    config_path.parent.mkdir()
    older = (  # what an older graphmem wrote, with `required = true` and a name the user added
        '[mcp_servers.graphmem]\ncommand = "/old/bin/graphmem"\nargs = ["mcp"]\n'
        'env_vars = ["OPENAI_API_KEY", "GRAPHMEM_DATA_DIR"]\nstartup_timeout_sec = 20\nrequired = true\n'
    )
    config_path.write_text(older, "utf-8")

    assert invoke("install", "codex", "--project", str(project)).exit_code == 0

    server = config_of(config_path)["mcp_servers"]["graphmem"]  # type: ignore[index]
    assert server["command"] == COMMAND[0]
    assert server["required"] is True
    assert server["env_vars"][0] == "GRAPHMEM_DATA_DIR"
    assert server["env_vars"].count("GRAPHMEM_DATA_DIR") == 1
    assert server["env_vars"][-1] == "OPENAI_API_KEY"
    before = config_path.read_text("utf-8")
    assert "already installed" in invoke("install", "codex", "--project", str(project)).stderr
    assert config_path.read_text("utf-8") == before

    assert invoke("uninstall", "codex", "--project", str(project)).exit_code == 0
    assert not config_path.exists()


def test_doctor_says_when_an_older_install_does_not_pass_the_environment(
    invoke: Invoke, project: Path
) -> None:
    assert invoke("install", "codex", "--project", str(project)).exit_code == 0
    files = codex_config.project_files(project)
    text = files.config.read_text("utf-8")
    start = text.index("env_vars = [")
    files.config.write_text(text[:start] + text[text.index("]\n", start) + 2 :], "utf-8")

    found = codex_config.installed(files)

    assert not found.complete
    assert "Codex does not pass it GRAPHMEM_DATA_DIR" in found.describe()
    assert found.describe().endswith("run `graphmem install codex` again")


def test_doctor_names_hooks_whose_python_is_gone_and_the_fix(invoke: Invoke, tmp_path: Path) -> None:
    assert invoke("install", "codex", "--global").exit_code == 0
    config = tmp_path / "codex-home" / "config.toml"
    config.write_text(config.read_text().replace(HOOK_PYTHON, "/gone/venv/bin/python"))

    doctor = invoke("doctor").stdout

    assert "codex (global): MCP server in" in doctor
    assert (
        "broken: the hooks' /gone/venv/bin/python does not exist: run `graphmem install codex --global` again"
        in doctor
    )


def test_uninstall_keeps_a_codex_folder_that_holds_the_users_files(invoke: Invoke, project: Path) -> None:
    (project / ".codex").mkdir()
    (project / ".codex" / "notes.md").write_text("mine\n", "utf-8")
    assert invoke("install", "codex", "--project", str(project)).exit_code == 0

    assert invoke("uninstall", "codex", "--project", str(project)).exit_code == 0

    assert [p.name for p in (project / ".codex").iterdir()] == ["notes.md"]


def test_uninstall_global_leaves_codex_home(invoke: Invoke, tmp_path: Path) -> None:
    assert invoke("install", "codex", "--global").exit_code == 0

    assert invoke("uninstall", "codex", "--global").exit_code == 0

    assert (tmp_path / "codex-home").is_dir() and not (tmp_path / "codex-home" / "config.toml").exists()


def test_uninstall_global_leaves_codexs_own_folder_in_home(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CODEX_HOME")  # ~/.codex, as Claude Code's ~/.claude
    codex = tmp_path / "home" / ".codex"
    assert invoke("install", "codex", "--global").exit_code == 0
    assert (codex / "config.toml").is_file()

    assert invoke("uninstall", "codex", "--global").exit_code == 0

    assert codex.is_dir() and list(codex.iterdir()) == []  # Codex's home, empty or not
