"""``graphmem install opencode`` and ``graphmem uninstall opencode``, in process, on real files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.client_cli import COMMAND, Invoke

from graphmem.adapters import agents_md, jsonc, opencode_config

ENTRY = {"type": "local", "command": COMMAND, "enabled": True, "timeout": 10000}
DOCS = Path(__file__).resolve().parents[4] / "docs" / "opencode.md"
HINT = "Restart OpenCode; `opencode mcp list` should show graphmem connected."
PLUGIN = Path(".opencode") / "plugins" / "graphmem.js"
USER_JSONC = """\
{
  // shared with the team
  "model": "anthropic/claude-sonnet-4",
  "share": "disabled", /* no links */
}
"""


def config_of(path: Path) -> object:
    return json.loads(path.read_text("utf-8"))


def test_install_in_a_fresh_project_creates_the_config_agents_md_and_plugin(
    invoke: Invoke, project: Path
) -> None:
    result = invoke("install", "opencode", "--project", str(project))

    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"created {project / 'opencode.json'}",
        f"created {project / 'AGENTS.md'}",
        f"created {project / PLUGIN}",
    ]
    assert (project / PLUGIN).read_text("utf-8") == opencode_config.plugin_text()
    assert result.stderr.strip() == HINT
    assert config_of(project / "opencode.json") == {
        "$schema": "https://opencode.ai/config.json",
        "mcp": {"graphmem": ENTRY},
    }
    assert "`graphmem_<tool>`" in (project / "AGENTS.md").read_text("utf-8")


def test_install_again_says_nothing_changed(invoke: Invoke, project: Path) -> None:
    invoke("install", "opencode", "--project", str(project))

    again = invoke("install", "opencode", "--project", str(project))

    assert again.exit_code == 0
    assert again.stdout.splitlines() == [
        f"unchanged {project / 'opencode.json'}",
        f"unchanged {project / 'AGENTS.md'}",
        f"unchanged {project / PLUGIN}",
    ]
    assert "already installed" in again.stderr


def test_install_keeps_a_jsonc_with_comments_apart_from_the_new_member(invoke: Invoke, project: Path) -> None:
    (project / "opencode.jsonc").write_text(USER_JSONC, "utf-8")

    result = invoke("install", "opencode", "--project", str(project))

    assert result.stdout.splitlines()[0] == f"updated {project / 'opencode.jsonc'}"
    text = (project / "opencode.jsonc").read_text("utf-8")
    head = USER_JSONC.removesuffix("}\n")
    assert text.startswith(head + '  "mcp": {\n    "graphmem": {\n')
    assert text.endswith("    }\n  },\n}\n")


def test_install_with_data_dir_pins_it_in_the_environment(
    invoke: Invoke, project: Path, tmp_path: Path
) -> None:
    invoke("--data-dir", str(tmp_path / "store"), "install", "opencode", "--project", str(project))

    entry = jsonc.get_value((project / "opencode.json").read_text("utf-8"), ("mcp", "graphmem"))
    assert entry["environment"] == {"GRAPHMEM_DATA_DIR": str((tmp_path / "store").resolve())}
    pinned = json.dumps(str((tmp_path / "store").resolve()))
    assert f"const INSTALLED_DATA_DIR = {pinned};" in (project / PLUGIN).read_text("utf-8")


def test_install_without_data_dir_leaves_the_plugin_to_find_the_default(
    invoke: Invoke, project: Path
) -> None:
    invoke("install", "opencode", "--project", str(project))

    assert "const INSTALLED_DATA_DIR = null;" in (project / PLUGIN).read_text("utf-8")


def test_install_updates_an_outdated_copy_of_the_plugin(invoke: Invoke, project: Path) -> None:
    (project / PLUGIN).parent.mkdir(parents=True)
    old = "// graphmem plugin for OpenCode (graphmem-plugin 0).\nexport const GraphmemPlugin = () => ({});\n"
    (project / PLUGIN).write_text(old, "utf-8")

    result = invoke("install", "opencode", "--project", str(project))

    assert result.exit_code == 0, result.output
    assert f"updated {project / PLUGIN}" in result.stdout.splitlines()
    assert (project / PLUGIN).read_text("utf-8") == opencode_config.plugin_text()


def test_install_stops_at_a_users_own_file_named_like_the_plugin(invoke: Invoke, project: Path) -> None:
    (project / PLUGIN).parent.mkdir(parents=True)
    mine = "export const Mine = async () => ({});\n"
    (project / PLUGIN).write_text(mine, "utf-8")

    result = invoke("install", "opencode", "--project", str(project))

    assert result.exit_code == 10
    assert f"{project / PLUGIN} exists and is not graphmem's plugin" in result.stderr
    assert "rename or remove it" in result.stderr
    assert (project / PLUGIN).read_text("utf-8") == mine
    assert not (project / "opencode.json").exists() and not (project / "AGENTS.md").exists()


def test_uninstall_leaves_a_users_own_file_named_like_the_plugin(invoke: Invoke, project: Path) -> None:
    (project / PLUGIN).parent.mkdir(parents=True)
    (project / PLUGIN).write_text("export const Mine = async () => ({});\n", "utf-8")

    result = invoke("uninstall", "opencode", "--project", str(project))

    assert result.exit_code == 0, result.output
    assert (project / PLUGIN).is_file()


def test_install_defaults_to_the_git_toplevel_of_the_current_directory(
    invoke: Invoke, git_project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(Path(git_project) / "src")

    result = invoke("install", "opencode")

    assert result.exit_code == 0, result.output
    assert (Path(git_project) / "opencode.json").is_file()
    assert not (Path(git_project) / "src" / "opencode.json").exists()


def test_install_outside_git_uses_the_current_directory(
    invoke: Invoke, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)

    invoke("install", "opencode")

    assert (project / "opencode.json").is_file()


def test_install_follows_the_global_project_option(invoke: Invoke, git_project: str) -> None:
    result = invoke("--project", str(Path(git_project) / "src" / "app.py"), "install", "opencode")

    assert result.exit_code == 0, result.output
    assert (Path(git_project) / "AGENTS.md").is_file()


def test_install_global_writes_under_xdg_config_home(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("install", "opencode", "--global")

    directory = tmp_path / "xdg" / "opencode"
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"created {directory / 'opencode.json'}",
        f"created {directory / 'AGENTS.md'}",
        f"created {directory / 'plugins' / 'graphmem.js'}",
    ]
    assert config_of(directory / "opencode.json") == {
        "$schema": "https://opencode.ai/config.json",
        "mcp": {"graphmem": ENTRY},
    }


def test_dry_run_prints_a_diff_and_writes_nothing(invoke: Invoke, project: Path) -> None:
    (project / "opencode.jsonc").write_text(USER_JSONC, "utf-8")

    result = invoke("install", "opencode", "--project", str(project), "--dry-run")

    assert result.exit_code == 0, result.output
    assert f"--- {project / 'opencode.jsonc'}" in result.stdout
    assert '+    "graphmem": {' in result.stdout
    assert f"+++ {project / 'AGENTS.md'}" in result.stdout and "--- /dev/null" in result.stdout
    assert f"+++ {project / PLUGIN}" in result.stdout
    assert '+export default { id: "graphmem", setup, server };' in result.stdout
    assert "3 files would change" in result.stderr and "nothing was written" in result.stderr
    assert (project / "opencode.jsonc").read_text("utf-8") == USER_JSONC
    assert not (project / "AGENTS.md").exists() and not (project / ".opencode").exists()


def test_uninstall_gives_back_the_users_files(invoke: Invoke, project: Path) -> None:
    (project / "opencode.jsonc").write_text(USER_JSONC, "utf-8")
    (project / "AGENTS.md").write_text("# Shop\n\nBe kind.\n", "utf-8")
    invoke("install", "opencode", "--project", str(project))

    result = invoke("uninstall", "opencode", "--project", str(project))

    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"updated {project / 'opencode.jsonc'}",
        f"updated {project / 'AGENTS.md'}",
        f"deleted {project / PLUGIN}",
    ]
    assert (project / "opencode.jsonc").read_text("utf-8") == USER_JSONC
    assert (project / "AGENTS.md").read_text("utf-8") == "# Shop\n\nBe kind.\n"


def test_uninstall_after_a_fresh_install_deletes_every_file(invoke: Invoke, project: Path) -> None:
    invoke("install", "opencode", "--project", str(project))

    result = invoke("uninstall", "opencode", "--project", str(project))

    assert result.stdout.splitlines() == [
        f"deleted {project / 'opencode.json'}",
        f"deleted {project / 'AGENTS.md'}",
        f"deleted {project / PLUGIN}",
    ]
    assert list(project.iterdir()) == []


def test_uninstall_again_says_nothing_changed(invoke: Invoke, project: Path) -> None:
    result = invoke("uninstall", "opencode", "--project", str(project))

    assert result.exit_code == 0
    assert "not installed" in result.stderr
    assert list(project.iterdir()) == []


def test_uninstall_dry_run_writes_nothing(invoke: Invoke, project: Path) -> None:
    invoke("install", "opencode", "--project", str(project))
    before = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}

    result = invoke("uninstall", "opencode", "--project", str(project), "--dry-run")

    assert '-    "graphmem": {' in result.stdout and "+++ /dev/null" in result.stdout
    assert {p: p.read_bytes() for p in project.rglob("*") if p.is_file()} == before


def test_global_and_project_together_is_a_usage_error(invoke: Invoke, project: Path) -> None:
    result = invoke("install", "opencode", "--global", "--project", str(project))

    assert result.exit_code == 2
    assert "--global and --project cannot be used together" in result.stderr
    assert list(project.iterdir()) == []


def test_a_project_that_does_not_exist_is_a_usage_error(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("uninstall", "opencode", "--project", str(tmp_path / "nowhere"))

    assert result.exit_code == 2
    assert "does not exist" in result.stderr


def test_an_invalid_config_is_an_error_and_nothing_is_written(invoke: Invoke, project: Path) -> None:
    broken = '{\n  "model": "x",\n  "share": disabled\n}\n'
    (project / "opencode.json").write_text(broken, "utf-8")

    result = invoke("install", "opencode", "--project", str(project))

    assert result.exit_code == 10
    assert result.stderr.startswith(f"error: {project / 'opencode.json'} is not valid JSON with comments")
    assert "line 3, column 12" in result.stderr
    assert (project / "opencode.json").read_text("utf-8") == broken
    assert not (project / "AGENTS.md").exists()


def test_a_file_where_the_config_dir_should_be_is_named_as_in_the_way(invoke: Invoke, tmp_path: Path) -> None:
    (tmp_path / "xdg").write_text("a file where the config dir should be", "utf-8")

    result = invoke("install", "opencode", "--global")

    assert result.exit_code == 10
    assert result.stderr.startswith("error: Cannot create ")
    assert f"{tmp_path / 'xdg'} is a file where a folder is needed. Rename or remove" in result.stderr


def test_docs_show_the_agents_md_section_that_install_writes() -> None:
    section = agents_md.section({"opencode"}) + "\n"

    assert "```markdown\n" + section + "```" in DOCS.read_text("utf-8")


def test_doctor_says_what_is_installed_where_and_that_no_daemon_runs(
    invoke: Invoke, project: Path, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    before = invoke("--data-dir", str(data_dir), "--project", str(project), "doctor")
    invoke("install", "opencode", "--project", str(project))

    after = invoke("--data-dir", str(data_dir), "--project", str(project), "doctor")

    assert before.exit_code == after.exit_code == 0, after.output
    assert f"opencode (project {project}): not installed" in before.stdout
    assert f"daemon: not running for {data_dir}" in after.stdout
    assert (
        f"opencode (project {project}): MCP server in {project / 'opencode.json'}; plugin {project / PLUGIN} "
        "(graphmem-plugin 2, loads in OpenCode 1 and 2)" in after.stdout
    )
    assert "opencode (global): not installed" in after.stdout
    assert not data_dir.exists()  # doctor changes nothing


def test_doctor_calls_a_plugin_that_loads_only_in_opencode_1_outdated(invoke: Invoke, project: Path) -> None:
    (project / PLUGIN).parent.mkdir(parents=True)
    (project / PLUGIN).write_text("// graphmem plugin for OpenCode (graphmem-plugin 1).\n", "utf-8")

    result = invoke("--project", str(project), "doctor")

    assert (
        f"no MCP server entry; plugin {project / PLUGIN} (graphmem-plugin 1, loads in OpenCode 1 only); "
        "outdated: run `graphmem install opencode` again" in result.stdout
    )


def test_doctor_tells_a_global_outdated_plugin_to_install_globally(
    invoke: Invoke, project: Path, tmp_path: Path
) -> None:
    plugin = tmp_path / "xdg" / "opencode" / "plugins" / "graphmem.js"
    plugin.parent.mkdir(parents=True)
    plugin.write_text("// graphmem plugin for OpenCode (graphmem-plugin 1).\n", "utf-8")

    result = invoke("--project", str(project), "doctor")

    assert (
        f"opencode (global): no MCP server entry; plugin {plugin} (graphmem-plugin 1, loads in OpenCode "
        "1 only); outdated: run `graphmem install opencode --global` again" in result.stdout
    )


def test_a_plugin_installed_with_a_data_dir_is_current() -> None:
    pinned = opencode_config.plugin_text(Path("/srv/graphmem"))

    assert pinned != opencode_config.plugin_text()
    assert opencode_config._without_data_dir(pinned) == opencode_config.plugin_text()


def test_doctor_names_a_server_whose_graphmem_is_gone_and_the_fix(invoke: Invoke, project: Path) -> None:
    assert invoke("install", "opencode", "--project", str(project)).exit_code == 0
    config = project / "opencode.json"
    config.write_text(config.read_text().replace(COMMAND[0], "/gone/venv/bin/graphmem"))

    doctor = invoke("--project", str(project), "doctor").stdout

    assert (
        "broken: the MCP server's /gone/venv/bin/graphmem does not exist: "
        "run `graphmem install opencode` again" in doctor
    )
