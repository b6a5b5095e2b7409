"""OpenCode's config and AGENTS.md, planned and written in real files under ``tmp_path``."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from graphmem.adapters import agents_md, jsonc
from graphmem.adapters import opencode_config as oc
from graphmem.errors import IntegrationError

COMMAND = ["/opt/graphmem/bin/graphmem", "mcp"]
ENTRY = oc.server_entry(COMMAND)

OTHER_SETTINGS = {"$schema": oc.SCHEMA_URL, "model": "anthropic/claude-sonnet-4", "autoupdate": False}
COMMENTED_JSONC = """\
{
  // my model; do not change
  "model": "anthropic/claude-sonnet-4",
  /* servers I use */
  "mcp": {
    "docs": {"type": "remote", "url": "https://example.invalid/mcp"}, // read-only
  },
  "theme": "dark", // trailing comma follows
}
"""
USER_AGENTS = "# Shop\n\nRun `make test` before you commit.\n"
# The start marker of a section written before the marker named its clients.
OLD_START = "<!-- graphmem:start -->"


def install(directory: Path, entry: dict[str, object] = ENTRY) -> list[oc.FileChange]:
    changes = oc.plan_install(oc.project_files(directory), entry)
    oc.apply(changes)
    return changes


def uninstall(directory: Path) -> list[oc.FileChange]:
    changes = oc.plan_uninstall(oc.project_files(directory))
    oc.apply(changes)
    return changes


def actions(changes: list[oc.FileChange]) -> list[tuple[str, str]]:
    return [(change.action, change.path.name) for change in changes]


# -- where the files are ------------------------------------------------------------


def test_project_config_is_opencode_json_when_there_is_none(tmp_path: Path) -> None:
    assert oc.project_files(tmp_path) == oc.OpenCodeFiles(
        tmp_path / "opencode.json",
        tmp_path / "AGENTS.md",
        tmp_path / ".opencode" / "plugins" / "graphmem.js",
        project=tmp_path,
    )


def test_project_config_prefers_an_existing_opencode_jsonc(tmp_path: Path) -> None:
    (tmp_path / "opencode.json").write_text("{}", "utf-8")
    (tmp_path / "opencode.jsonc").write_text("{}", "utf-8")

    assert oc.project_files(tmp_path).config == tmp_path / "opencode.jsonc"


def test_global_files_live_under_xdg_config_home(tmp_path: Path) -> None:
    files = oc.global_files({"XDG_CONFIG_HOME": str(tmp_path)})

    assert files == oc.OpenCodeFiles(
        tmp_path / "opencode" / "opencode.json",
        tmp_path / "opencode" / "AGENTS.md",
        tmp_path / "opencode" / "plugins" / "graphmem.js",
    )


def test_global_files_default_to_dot_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))

    assert oc.global_files({}).agents == tmp_path / ".config" / "opencode" / "AGENTS.md"


# -- what the server entry is -------------------------------------------------------------


def test_server_entry_runs_graphmem_mcp_with_a_timeout() -> None:
    assert ENTRY == {"type": "local", "command": COMMAND, "enabled": True, "timeout": 10000}


def test_server_entry_pins_the_data_dir_as_an_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)

    entry = oc.server_entry(COMMAND, Path("store"))

    assert entry["environment"] == {"GRAPHMEM_DATA_DIR": str(tmp_path.resolve() / "store")}


def test_graphmem_command_is_the_resolved_script_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "graphmem"
    script.write_text("#!/bin/sh\n", "utf-8")
    (tmp_path / "link").symlink_to(script)
    monkeypatch.setattr(oc.shutil, "which", lambda name: str(tmp_path / "link"))

    assert oc.graphmem_command() == [str(script.resolve()), "mcp"]


def test_graphmem_command_falls_back_to_the_script_beside_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "graphmem").write_text("#!/bin/sh\n", "utf-8")
    monkeypatch.setattr(oc.shutil, "which", lambda name: None)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))

    assert oc.graphmem_command() == [str(tmp_path / "graphmem"), "mcp"]


def test_graphmem_command_falls_back_to_python_dash_m(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(oc.shutil, "which", lambda name: None)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))

    # -P: the client runs it in the project, whose graphmem/ folder must not be imported instead
    assert oc.graphmem_command() == [str(tmp_path / "python"), "-P", "-m", "graphmem", "mcp"]


# -- install ------------------------------------------------------------------------------


def test_install_in_a_fresh_project_creates_both_files(tmp_path: Path) -> None:
    changes = install(tmp_path)

    assert actions(changes) == [
        ("created", "opencode.json"),
        ("created", "AGENTS.md"),
        ("created", "graphmem.js"),
    ]
    config = json.loads((tmp_path / "opencode.json").read_text("utf-8"))
    assert config == {"$schema": oc.SCHEMA_URL, "mcp": {"graphmem": ENTRY}}
    agents = (tmp_path / "AGENTS.md").read_text("utf-8")
    assert agents == agents_md.section({"opencode"}) + "\n"


def test_install_keeps_the_other_settings_of_an_existing_json(tmp_path: Path) -> None:
    (tmp_path / "opencode.json").write_text(json.dumps(OTHER_SETTINGS, indent=2) + "\n", "utf-8")

    install(tmp_path)

    config = json.loads((tmp_path / "opencode.json").read_text("utf-8"))
    assert config == {**OTHER_SETTINGS, "mcp": {"graphmem": ENTRY}}


def test_install_changes_a_jsonc_only_where_the_member_goes(tmp_path: Path) -> None:
    path = tmp_path / "opencode.jsonc"
    path.write_text(COMMENTED_JSONC, "utf-8")

    install(tmp_path)

    inserted = (
        '    "graphmem": {\n'
        '      "type": "local",\n'
        '      "command": ["/opt/graphmem/bin/graphmem", "mcp"],\n'
        '      "enabled": true,\n'
        '      "timeout": 10000\n'
        "    },\n"
    )
    expected = COMMENTED_JSONC.replace("// read-only\n", "// read-only\n" + inserted)
    assert path.read_text("utf-8") == expected
    assert not (tmp_path / "opencode.json").exists()


def test_install_twice_changes_nothing_the_second_time(tmp_path: Path) -> None:
    (tmp_path / "opencode.jsonc").write_text(COMMENTED_JSONC, "utf-8")
    (tmp_path / "AGENTS.md").write_text(USER_AGENTS, "utf-8")
    install(tmp_path)
    written = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}

    again = install(tmp_path)

    assert actions(again) == [
        ("unchanged", "opencode.jsonc"),
        ("unchanged", "AGENTS.md"),
        ("unchanged", "graphmem.js"),
    ]
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == written


def test_install_updates_a_stale_entry_and_section(tmp_path: Path) -> None:
    install(tmp_path, oc.server_entry(["/old/graphmem", "mcp"]))
    agents = tmp_path / "AGENTS.md"
    agents.write_text(
        "intro\n\n" + OLD_START + "\nold advice\n" + agents_md.SECTION_END + "\n\noutro\n", "utf-8"
    )

    changes = install(tmp_path)

    assert actions(changes) == [
        ("updated", "opencode.json"),
        ("updated", "AGENTS.md"),
        ("unchanged", "graphmem.js"),
    ]
    assert jsonc.get_value((tmp_path / "opencode.json").read_text("utf-8"), oc.MCP_PATH) == ENTRY
    text = agents.read_text("utf-8")
    assert text == "intro\n\n" + agents_md.section({"opencode"}) + "\n\noutro\n"
    assert "old advice" not in text and "`graphmem_<tool>`" in text


def test_install_appends_the_section_after_the_users_agents_md(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text(USER_AGENTS, "utf-8")

    install(tmp_path)

    text = (tmp_path / "AGENTS.md").read_text("utf-8")
    assert text == USER_AGENTS + "\n" + agents_md.section({"opencode"}) + "\n"


def test_the_section_names_every_tool_and_stays_short() -> None:
    tools = [
        "get_boot_context",
        "get_context",
        "recall",
        "remember",
        "update_memory",
        "session_start",
        "session_heartbeat",
        "session_end",
        "claim_item",
        "release_item",
        "delete_memory",
        "memory_status",
        "export_memories",
        "import_memories",
    ]

    body = agents_md.section_body({"opencode", "codex"})
    assert [tool for tool in tools if f"`{tool}`" not in body] == []
    assert "`graphmem_<tool>`" in body and "`mcp__graphmem__<tool>`" in body
    assert len(body.splitlines()) + 2 <= 25


def test_install_keeps_windows_line_endings(tmp_path: Path) -> None:
    (tmp_path / "opencode.json").write_bytes(b'{\r\n  "model": "x"\r\n}\r\n')
    (tmp_path / "AGENTS.md").write_bytes(b"# Shop\r\n")

    install(tmp_path)

    for name in ("opencode.json", "AGENTS.md"):
        data = (tmp_path / name).read_bytes()
        assert data.count(b"\n") == data.count(b"\r\n"), name


# -- uninstall ------------------------------------------------------------------------------


def test_uninstall_gives_back_the_original_jsonc_and_agents_md(tmp_path: Path) -> None:
    (tmp_path / "opencode.jsonc").write_text(COMMENTED_JSONC, "utf-8")
    (tmp_path / "AGENTS.md").write_text(USER_AGENTS, "utf-8")
    install(tmp_path)

    changes = uninstall(tmp_path)

    assert actions(changes) == [
        ("updated", "opencode.jsonc"),
        ("updated", "AGENTS.md"),
        ("deleted", "graphmem.js"),
    ]
    assert (tmp_path / "opencode.jsonc").read_text("utf-8") == COMMENTED_JSONC
    assert (tmp_path / "AGENTS.md").read_text("utf-8") == USER_AGENTS


def test_uninstall_gives_back_a_json_without_mcp_exactly(tmp_path: Path) -> None:
    original = json.dumps(OTHER_SETTINGS, indent=2) + "\n"
    (tmp_path / "opencode.json").write_text(original, "utf-8")
    install(tmp_path)

    uninstall(tmp_path)

    assert (tmp_path / "opencode.json").read_text("utf-8") == original


def test_uninstall_removes_an_mcp_object_it_leaves_empty(tmp_path: Path) -> None:
    (tmp_path / "opencode.json").write_text('{\n  "model": "x",\n  "mcp": {}\n}\n', "utf-8")
    install(tmp_path)

    uninstall(tmp_path)

    assert (tmp_path / "opencode.json").read_text("utf-8") == '{\n  "model": "x"\n}\n'


def test_uninstall_after_a_fresh_install_deletes_what_install_created(tmp_path: Path) -> None:
    install(tmp_path)

    changes = uninstall(tmp_path)

    assert actions(changes) == [
        ("deleted", "opencode.json"),
        ("deleted", "AGENTS.md"),
        ("deleted", "graphmem.js"),
    ]
    assert list(tmp_path.iterdir()) == []


def test_uninstall_twice_changes_nothing_the_second_time(tmp_path: Path) -> None:
    (tmp_path / "opencode.jsonc").write_text(COMMENTED_JSONC, "utf-8")
    install(tmp_path)
    uninstall(tmp_path)

    again = uninstall(tmp_path)

    assert actions(again) == [
        ("unchanged", "opencode.jsonc"),
        ("unchanged", "AGENTS.md"),
        ("unchanged", "graphmem.js"),
    ]


def test_uninstall_keeps_a_config_that_never_had_graphmem(tmp_path: Path) -> None:
    (tmp_path / "opencode.json").write_text(oc.EMPTY_CONFIG, "utf-8")

    changes = uninstall(tmp_path)

    assert actions(changes)[0] == ("unchanged", "opencode.json")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a\n\nSECTION\n\nb\n", "a\n\nb\n"),
        ("a\nSECTION\nb\n", "a\nb\n"),
        ("SECTION\n\nb\n", "b\n"),
        ("a\n\n\nSECTION\n", "a\n\n"),
        ("SECTION", ""),
    ],
)
def test_removing_the_section_takes_its_blank_line_and_keeps_the_rest(text: str, expected: str) -> None:
    section = OLD_START + "\nbody\n" + agents_md.SECTION_END

    changed = agents_md.without_client(text.replace("SECTION", section), "opencode", Path("AGENTS.md"))

    assert (changed or "") == expected


# -- errors --------------------------------------------------------------------------------


def test_an_invalid_config_is_an_error_naming_file_and_line_and_nothing_changes(tmp_path: Path) -> None:
    broken = '{\n  "model": "x"\n  "theme": "dark"\n}\n'
    (tmp_path / "opencode.json").write_text(broken, "utf-8")

    with pytest.raises(IntegrationError) as raised:
        install(tmp_path)

    assert str(tmp_path / "opencode.json") in str(raised.value) and "line 3" in str(raised.value)
    assert (tmp_path / "opencode.json").read_text("utf-8") == broken
    assert not (tmp_path / "AGENTS.md").exists()


def test_uninstall_of_an_invalid_config_is_an_error_too(tmp_path: Path) -> None:
    (tmp_path / "opencode.json").write_text('{"mcp": {"graphmem": }}', "utf-8")

    with pytest.raises(IntegrationError, match="line 1, column 22"):
        uninstall(tmp_path)


def test_a_config_that_is_not_utf8_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "opencode.json").write_bytes(b'{"model": "\xff"}')

    with pytest.raises(IntegrationError, match="not UTF-8"):
        install(tmp_path)


def test_a_section_that_is_never_closed_is_an_error(tmp_path: Path) -> None:
    text = "# Shop\n\n" + OLD_START + "\nhalf a section\n"
    (tmp_path / "AGENTS.md").write_text(text, "utf-8")

    with pytest.raises(IntegrationError, match=r"line 3 .* never closes it"):
        install(tmp_path)
    assert (tmp_path / "AGENTS.md").read_text("utf-8") == text


def test_a_read_only_file_is_an_error_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "AGENTS.md").write_text(USER_AGENTS, "utf-8")
    agents = str((tmp_path / "AGENTS.md").resolve())
    real_access = os.access
    monkeypatch.setattr(oc.os, "access", lambda path, mode: str(path) != agents and real_access(path, mode))
    changes = oc.plan_install(oc.project_files(tmp_path), ENTRY)

    with pytest.raises(IntegrationError, match=r"AGENTS\.md is not a writable file"):
        oc.apply(changes)
    assert not (tmp_path / "opencode.json").exists()


def test_a_config_dir_that_cannot_be_created_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "config").write_text("a file, not a directory", "utf-8")
    changes = oc.plan_install(oc.global_files({"XDG_CONFIG_HOME": str(tmp_path / "config")}), ENTRY)

    with pytest.raises(IntegrationError, match="config is a file where a folder is needed"):
        oc.apply(changes)


def test_a_failed_replace_is_an_error_and_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "opencode.json").write_text("{}\n", "utf-8")

    def refuse(source: object, target: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(oc.os, "replace", refuse)

    with pytest.raises(IntegrationError, match=r"Cannot write .*opencode\.json: Permission denied"):
        install(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["opencode.json"]
    assert (tmp_path / "opencode.json").read_text("utf-8") == "{}\n"


# -- writing ---------------------------------------------------------------------------------


def test_writing_keeps_the_file_mode(tmp_path: Path) -> None:
    path = tmp_path / "opencode.json"
    path.write_text("{}\n", "utf-8")
    path.chmod(0o640)

    install(tmp_path)

    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_a_global_file_is_written_through_its_symlink_into_a_dotfiles_repository(tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "opencode.json").write_text("{}\n", "utf-8")
    config = tmp_path / "xdg" / "opencode"
    config.mkdir(parents=True)
    (config / "opencode.json").symlink_to(dotfiles / "opencode.json")

    oc.apply(oc.plan_install(oc.global_files({"XDG_CONFIG_HOME": str(tmp_path / "xdg")}), ENTRY))

    assert (config / "opencode.json").is_symlink()
    assert jsonc.get_value((dotfiles / "opencode.json").read_text("utf-8"), oc.MCP_PATH) == ENTRY


def test_a_project_file_linking_inside_the_project_is_written_through_its_symlink(tmp_path: Path) -> None:
    (tmp_path / "CLAUDE.md").write_text(USER_AGENTS, "utf-8")
    (tmp_path / "AGENTS.md").symlink_to("CLAUDE.md")

    install(tmp_path)

    assert (tmp_path / "AGENTS.md").is_symlink()
    assert (tmp_path / "CLAUDE.md").read_text("utf-8").startswith(USER_AGENTS)
    assert agents_md.clients_in((tmp_path / "CLAUDE.md").read_text("utf-8"), tmp_path) == {"opencode"}


def test_diff_shows_a_created_file_against_dev_null(tmp_path: Path) -> None:
    change = oc.FileChange(tmp_path / "AGENTS.md", None, "hello\n")

    assert change.diff().splitlines() == [
        "--- /dev/null",
        f"+++ {tmp_path / 'AGENTS.md'}",
        "@@ -0,0 +1 @@",
        "+hello",
    ]


def test_diff_marks_a_last_line_without_newline(tmp_path: Path) -> None:
    change = oc.FileChange(tmp_path / "a.json", "{}", "{ }")

    assert "\\ No newline at end of file" in change.diff()


def test_inspect_reads_what_install_wrote_and_takes_a_broken_config_for_none(tmp_path: Path) -> None:
    files = oc.project_files(tmp_path)
    assert oc.installed(files).describe() == "not installed"

    install(tmp_path)
    found = oc.installed(files)
    assert (found.server, found.plugin_version, found.plugin_current) == (True, 2, True)

    files.config.write_text('{"mcp": {"graphmem": ', "utf-8")  # cut short
    broken = oc.installed(files)
    assert (broken.server, broken.plugin_version) == (False, 2)
    assert broken.describe().startswith("no MCP server entry; plugin ")


def test_a_plugin_file_of_the_users_own_is_no_plugin_of_graphmems(tmp_path: Path) -> None:
    files = oc.project_files(tmp_path)
    files.plugin.parent.mkdir(parents=True)
    files.plugin.write_text("export default { id: 'mine', setup() {} };\n", "utf-8")

    assert oc.installed(files).plugin_version is None
