"""``graphmem install|uninstall codex`` and doctor on the layouts TOML allows a ``config.toml``:
``[mcp_servers.*]`` or ``[hooks.*]`` tables apart from each other (a server the user appended
after another table), dotted keys, values that are no table; and an uninstall that never says
it is done while graphmem's entries are left."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from support.client_cli import Invoke

from graphmem.adapters import codex_config, opencode_config

EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd")
HOOK_MODULE = "graphmem.integrations.codex_hook"
# The explorer's file: a server appended at the end, after another table.
SERVERS_APART = """\
model = "o4"

[mcp_servers.one]
command = "one"

[profiles.fast]
model = "o4-mini"

[mcp_servers.two]
command = "two"
"""


def write_config(project: Path, text: str) -> Path:
    path = project / ".codex" / "config.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(text.encode())
    return path


def config_of(path: Path) -> dict[str, object]:
    return tomllib.loads(path.read_text("utf-8"))


def ours_by_event(config: dict[str, object]) -> dict[str, int]:
    """How many of graphmem's hook groups each event has."""
    hooks = config.get("hooks", {})
    assert isinstance(hooks, dict)
    return {
        event: sum(HOOK_MODULE in str(group) for group in groups)
        for event, groups in hooks.items()
        if sum(HOOK_MODULE in str(group) for group in groups)
    }


def test_servers_apart_in_the_file_take_graphmem_in_and_out_byte_for_byte(
    invoke: Invoke, project: Path
) -> None:
    config_path = write_config(project, SERVERS_APART)

    installed = invoke("install", "codex", "--project", str(project))

    assert installed.exit_code == 0, installed.output
    config = config_of(config_path)
    assert set(config["mcp_servers"]) == {"one", "two", "graphmem"}  # type: ignore[arg-type]
    assert config["profiles"] == {"fast": {"model": "o4-mini"}} and config["model"] == "o4"
    assert ours_by_event(config) == dict.fromkeys(EVENTS, 1)
    assert codex_config.installed(codex_config.project_files(project)).complete
    assert "already installed" in invoke("install", "codex", "--project", str(project)).stderr

    removed = invoke("uninstall", "codex", "--project", str(project))

    assert removed.exit_code == 0, removed.output
    assert config_path.read_bytes() == SERVERS_APART.encode()
    assert "not installed" in invoke("uninstall", "codex", "--project", str(project)).stderr


def test_a_server_the_user_appends_after_another_table_does_not_keep_graphmem_in(
    invoke: Invoke, project: Path
) -> None:
    assert invoke("install", "codex", "--project", str(project)).exit_code == 0
    config_path = project / ".codex" / "config.toml"
    appended = '\n[profiles.fast]\nmodel = "o4-mini"\n\n[mcp_servers.more]\ncommand = "more"\n'
    with config_path.open("a", encoding="utf-8") as file:
        file.write(appended)
    assert codex_config.installed(codex_config.project_files(project)).complete
    assert "already installed" in invoke("install", "codex", "--project", str(project)).stderr

    removed = invoke("uninstall", "codex", "--project", str(project))

    assert removed.exit_code == 0, removed.output
    assert config_path.read_text("utf-8") == appended.lstrip("\n")  # all that is left is the user's
    assert codex_config.installed(codex_config.project_files(project)).describe() == "not installed"


def test_a_file_without_blank_lines_between_its_tables_comes_back_byte_for_byte(
    invoke: Invoke, project: Path
) -> None:
    text = '[mcp_servers.docs]\ncommand = "docs"\n[profiles.fast]\nmodel = "o4-mini"\n'
    config_path = write_config(project, text)

    assert invoke("install", "codex", "--project", str(project)).exit_code == 0

    assert 'command = "docs"\n[mcp_servers.graphmem]\n' in config_path.read_text("utf-8")  # no blank line
    assert invoke("uninstall", "codex", "--project", str(project)).exit_code == 0
    assert config_path.read_bytes() == text.encode()


USERS_STOP = '[[hooks.Stop]]\n[[hooks.Stop.hooks]]\ntype = "command"\ncommand = "notify-send done"\n'
GRAPHMEMS_OLD_STOP = (
    '[[hooks.Stop]]\n[[hooks.Stop.hooks]]\ntype = "command"\n'
    'command = "python -m graphmem.integrations.codex_hook"\n'
)


@pytest.mark.parametrize(
    "text",
    [
        # the user's hooks of two events, another table between them
        USERS_STOP + '\n[profiles.fast]\nmodel = "o4-mini"\n\n[[hooks.SessionStart]]\n'
        '[[hooks.SessionStart.hooks]]\ntype = "command"\ncommand = "echo hi"\n\n[projects.x]\nt = 1\n',
        # one event's tables apart, and no blank line between tables
        USERS_STOP
        + '[profiles.fast]\nmodel = "o4-mini"\n'
        + USERS_STOP.replace("notify-send done", "beep")
        + "[projects.x]\nt = 1\n",
    ],
    ids=["blank-lines", "compact"],
)
def test_hook_tables_apart_in_the_file_take_graphmem_in_and_out_byte_for_byte(
    invoke: Invoke, project: Path, text: str
) -> None:
    config_path = write_config(project, text)
    users = tomllib.loads(text)["hooks"]

    assert invoke("install", "codex", "--project", str(project)).exit_code == 0

    config = config_of(config_path)
    assert ours_by_event(config) == dict.fromkeys(EVENTS, 1)
    for event, groups in users.items():  # the user's own groups first, as they were
        assert config["hooks"][event][: len(groups)] == groups  # type: ignore[index]
    assert "already installed" in invoke("install", "codex", "--project", str(project)).stderr
    assert invoke("uninstall", "codex", "--project", str(project)).exit_code == 0
    assert config_path.read_bytes() == text.encode()


def test_an_older_graphmem_hook_apart_from_the_users_is_replaced_then_removed(
    invoke: Invoke, project: Path
) -> None:
    rest = '\n[profiles.fast]\nmodel = "o4-mini"\n\n'
    config_path = write_config(project, USERS_STOP + rest + GRAPHMEMS_OLD_STOP + "\n[projects.x]\nt = 1\n")

    assert invoke("install", "codex", "--project", str(project)).exit_code == 0

    assert ours_by_event(config_of(config_path)) == dict.fromkeys(EVENTS, 1)  # replaced, not doubled
    assert invoke("uninstall", "codex", "--project", str(project)).exit_code == 0
    assert config_path.read_text("utf-8") == USERS_STOP + rest + "[projects.x]\nt = 1\n"


def test_servers_in_dotted_keys_stay_where_they_are_and_graphmem_gets_a_table(
    invoke: Invoke, project: Path
) -> None:
    text = 'mcp_servers.docs.command = "docs"\nmodel = "o4"\n\n[profiles.fast]\nmodel = "o4-mini"\n'
    config_path = write_config(project, text)

    assert invoke("install", "codex", "--project", str(project)).exit_code == 0

    config = config_of(config_path)
    assert config["model"] == "o4"  # still the file's own, not a key of graphmem's server
    assert set(config["mcp_servers"]) == {"docs", "graphmem"}  # type: ignore[arg-type]
    assert config_path.read_text("utf-8").startswith(text)
    assert invoke("uninstall", "codex", "--project", str(project)).exit_code == 0
    assert config_path.read_bytes() == text.encode()


def test_a_graphmem_server_written_in_dotted_keys_is_replaced_by_a_table_and_removed(
    invoke: Invoke, project: Path
) -> None:
    users = 'model = "o4"\nmcp_servers.docs.command = "docs"\n'
    dotted = 'mcp_servers.graphmem.command = "/old/bin/graphmem"\nmcp_servers.graphmem.required = true\n'
    config_path = write_config(project, users + dotted)

    assert invoke("install", "codex", "--project", str(project)).exit_code == 0

    text = config_path.read_text("utf-8")
    assert "mcp_servers.graphmem." not in text and "[mcp_servers.graphmem]" in text
    server = config_of(config_path)["mcp_servers"]["graphmem"]  # type: ignore[index]
    assert server["command"] != "/old/bin/graphmem" and server["required"] is True  # the user's key kept
    assert invoke("uninstall", "codex", "--project", str(project)).exit_code == 0
    assert config_path.read_text("utf-8") == users

    config_path.write_text(users + dotted, "utf-8")  # as the user wrote it, never installed
    assert invoke("uninstall", "codex", "--project", str(project)).exit_code == 0
    assert config_path.read_text("utf-8") == users


@pytest.mark.parametrize(
    ("text", "kind"),
    [("mcp_servers = 5\n", "a number"), ('mcp_servers = { docs = { command = "d" } }\n', "an inline table")],
)
def test_a_servers_value_that_is_no_table_stops_the_install_saying_what_it_is(
    invoke: Invoke, project: Path, text: str, kind: str
) -> None:
    config_path = write_config(project, text)

    result = invoke("install", "codex", "--project", str(project))

    assert result.exit_code == 10, result.output
    assert f"mcp_servers in {config_path} is {kind}" in result.stderr
    assert "[mcp_servers.NAME] tables" in result.stderr
    assert config_path.read_text("utf-8") == text and not (project / "AGENTS.md").exists()


def test_an_entry_of_graphmems_the_uninstall_cannot_remove_stops_it_naming_the_entry(
    invoke: Invoke, project: Path
) -> None:
    text = 'mcp_servers = { graphmem = { command = "graphmem" } }\n'
    config_path = write_config(project, text)

    result = invoke("uninstall", "codex", "--project", str(project))

    assert result.exit_code == 10, result.output
    assert f"cannot remove its [mcp_servers.graphmem] from {config_path}" in result.stderr
    assert "delete it by hand" in result.stderr and "Restart Codex" not in result.stderr
    assert config_path.read_text("utf-8") == text


def test_an_uninstall_whose_edit_leaves_graphmem_in_writes_nothing(
    invoke: Invoke, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert invoke("install", "codex", "--project", str(project)).exit_code == 0
    config_path = project / ".codex" / "config.toml"
    before = config_path.read_text("utf-8")
    monkeypatch.setattr(codex_config, "_remove", lambda document: True)  # says it removed, did not

    result = invoke("uninstall", "codex", "--project", str(project))

    assert result.exit_code == 10, result.output
    assert "cannot remove its [mcp_servers.graphmem], [[hooks.SessionStart]]" in result.stderr
    assert HOOK_MODULE in result.stderr  # how to tell graphmem's hook groups
    assert "Restart Codex" not in result.stderr
    assert config_path.read_text("utf-8") == before and (project / "AGENTS.md").exists()


def test_an_uninstall_whose_files_still_hold_graphmem_once_written_says_so_and_not_done(
    invoke: Invoke, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert invoke("install", "codex", "--project", str(project)).exit_code == 0
    monkeypatch.setattr(opencode_config, "apply", lambda changes: None)  # a write that did not land

    result = invoke("uninstall", "codex", "--project", str(project))

    assert result.exit_code == 10, result.output
    config_path = project / ".codex" / "config.toml"
    assert "The uninstall left graphmem's [mcp_servers.graphmem], [[hooks.SessionStart]]" in result.stderr
    assert f"in {config_path} and its section of {project / 'AGENTS.md'}" in result.stderr
    assert "delete them by hand" in result.stderr and "graphmem doctor" in result.stderr
    assert "Restart Codex" not in result.stderr


def test_env_vars_of_any_shape_are_kept_and_doctor_reads_them(invoke: Invoke, project: Path) -> None:
    text = (
        '[mcp_servers.graphmem]\ncommand = "graphmem"\nenv_vars = [["NESTED"], 3, {name = ["X"]}, "MINE"]\n'
    )
    config_path = write_config(project, text)

    result = invoke("install", "codex", "--project", str(project))

    assert result.exit_code == 0, result.output
    names = config_of(config_path)["mcp_servers"]["graphmem"]["env_vars"]  # type: ignore[index]
    assert names[-4:] == [["NESTED"], 3, {"name": ["X"]}, "MINE"]
    assert codex_config.installed(codex_config.project_files(project)).complete
