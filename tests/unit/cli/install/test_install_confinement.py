"""``graphmem install CLIENT --project DIR`` on a project that may be a hostile clone: a file (or a
folder on its way) linking out of the project, a file too large to read, a file where a folder is
needed. Each is refused with exit 10, a message that says what to do, and nothing written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.client_cli import Invoke

CLIENTS = ("opencode", "claude-code", "codex")
ONE_MIB = 1024 * 1024  # the most graphmem reads of a client's file
# The first line of a file outside the project that no error may quote.
SECRET = "vaultkey:x:0:0:vaultkey:/root:/bin/bash\n"
# Each client's folder in a project, and a file graphmem writes under it.
FOLDERS = {
    "opencode": (".opencode", "plugins/graphmem.js"),
    "claude-code": (".claude", "settings.json"),
    "codex": (".codex", "config.toml"),
}
# Text that each file of a project's install holds once graphmem is installed in it.
INSTALLED = {
    "opencode.json": '{"mcp": {"graphmem": {"type": "local", "command": ["graphmem", "mcp"]}}}\n',
    ".mcp.json": '{"mcpServers": {"graphmem": {"type": "stdio", "command": "graphmem"}}}\n',
    "AGENTS.md": "# mine\n\n<!-- graphmem:start for opencode, codex -->\nold\n<!-- graphmem:end -->\n",
}


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the project, with files graphmem must never touch."""
    directory = tmp_path / "elsewhere"
    directory.mkdir()
    (directory / "bashrc").write_text("export PATH=$HOME/bin:$PATH\n")
    (directory / "passwd").write_text(SECRET)
    for name, text in INSTALLED.items():
        (directory / name).write_text(text)
    return directory


def snapshot(*folders: Path) -> dict[str, bytes | str]:
    """Every entry under ``folders``: a file's bytes, a link's target, a folder as such."""
    found: dict[str, bytes | str] = {}
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            if path.is_symlink():
                found[str(path)] = "-> " + os.readlink(path)
            elif path.is_dir():
                found[str(path)] = "folder"
            else:
                found[str(path)] = path.read_bytes()
    return found


# -- a symlink out of the project -----------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "client", "link", "target"),
    [
        ("install", "opencode", "opencode.json", "INSTALLED:opencode.json"),
        ("install", "opencode", "AGENTS.md", "bashrc"),
        ("install", "opencode", "opencode.json", "new.json"),  # a dangling link: install would create it
        ("install", "claude-code", ".mcp.json", "INSTALLED:.mcp.json"),
        ("install", "codex", "AGENTS.md", "bashrc"),
        ("uninstall", "opencode", "opencode.json", "INSTALLED:opencode.json"),
        ("uninstall", "opencode", "AGENTS.md", "INSTALLED:AGENTS.md"),
        ("uninstall", "claude-code", ".mcp.json", "INSTALLED:.mcp.json"),
        ("uninstall", "codex", "AGENTS.md", "INSTALLED:AGENTS.md"),
    ],
)
def test_a_file_linking_out_of_the_project_is_refused_and_nothing_is_written(
    invoke: Invoke, project: Path, outside: Path, command: str, client: str, link: str, target: str
) -> None:
    pointed = outside / target.removeprefix("INSTALLED:")
    (project / link).symlink_to(pointed)
    before = snapshot(project, outside)

    done = invoke(command, client, "--project", str(project))

    assert done.exit_code == 10, done.output
    assert f"{project / link} is a symlink to {pointed}, outside the project {project}" in done.output
    assert "remove the link" in done.output and "--global" in done.output
    assert snapshot(project, outside) == before


@pytest.mark.parametrize(
    ("command", "client"), [(c, client) for c in ("install", "uninstall") for client in CLIENTS]
)
def test_a_client_folder_linking_out_of_the_project_is_refused_and_nothing_is_written(
    invoke: Invoke, project: Path, outside: Path, command: str, client: str
) -> None:
    folder, inside = FOLDERS[client]
    elsewhere = outside / "dotfolder"
    (elsewhere / inside).parent.mkdir(parents=True)
    (elsewhere / inside).write_text(INSTALLED[".mcp.json"] if client == "claude-code" else "# theirs\n")
    (project / folder).symlink_to(elsewhere, target_is_directory=True)
    before = snapshot(project, outside)

    done = invoke(command, client, "--project", str(project))

    assert done.exit_code == 10, done.output
    assert f"{project / folder} is a symlink to {elsewhere}, outside the project {project}" in done.output
    assert snapshot(project, outside) == before


@pytest.mark.parametrize(("client", "link"), [("opencode", "opencode.json"), ("claude-code", ".mcp.json")])
def test_an_error_never_quotes_a_file_outside_the_project(
    invoke: Invoke, project: Path, outside: Path, client: str, link: str
) -> None:
    (project / link).symlink_to(outside / "passwd")

    done = invoke("install", client, "--project", str(project))
    doctor = invoke("--project", str(project), "doctor")

    assert done.exit_code == 10, done.output
    assert "vaultkey" not in done.output and "vaultkey" not in doctor.output
    assert (outside / "passwd").read_text() == SECRET


@pytest.mark.parametrize("client", ["opencode", "codex"])
def test_a_link_inside_the_project_is_followed(invoke: Invoke, project: Path, client: str) -> None:
    (project / "CLAUDE.md").write_text("# Shop\n")
    (project / "AGENTS.md").symlink_to("CLAUDE.md")

    done = invoke("install", client, "--project", str(project))

    assert done.exit_code == 0, done.output
    assert (project / "AGENTS.md").is_symlink()
    assert "<!-- graphmem:end -->" in (project / "CLAUDE.md").read_text()


@pytest.mark.parametrize("client", ["opencode", "codex"])
def test_uninstall_through_a_link_inside_the_project_takes_graphmems_part_out_of_its_file(
    invoke: Invoke, project: Path, client: str
) -> None:
    (project / "CLAUDE.md").write_text("")
    (project / "AGENTS.md").symlink_to("CLAUDE.md")
    assert invoke("install", client, "--project", str(project)).exit_code == 0

    done = invoke("uninstall", client, "--project", str(project))

    # The section lived in CLAUDE.md: deleting only the link left it there, for the agent to read.
    assert done.exit_code == 0, done.output
    assert (project / "AGENTS.md").is_symlink()
    assert "graphmem" not in (project / "CLAUDE.md").read_text()


# -- a file too large ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("client", "name"),
    [
        ("opencode", "opencode.json"),
        ("opencode", "AGENTS.md"),
        ("claude-code", ".mcp.json"),
        ("claude-code", ".claude/settings.json"),
        ("codex", ".codex/config.toml"),
        ("codex", "AGENTS.md"),
    ],
)
def test_a_file_over_the_bound_is_refused_and_nothing_is_written(
    invoke: Invoke, project: Path, client: str, name: str
) -> None:
    path = project / name
    path.parent.mkdir(exist_ok=True)
    filler = "a" * ONE_MIB  # with what surrounds it, just over the bound
    text = f'# "{filler}"\n' if name.endswith((".md", ".toml")) else f'{{"big": "{filler}"}}\n'
    path.write_text(text)
    before = snapshot(project)

    done = invoke("install", client, "--project", str(project))

    assert done.exit_code == 10, done.output
    assert f"{path} is over 1 MiB" in done.output
    assert snapshot(project) == before


# -- a file where a folder is needed ---------------------------------------------------------


@pytest.mark.parametrize("client", CLIENTS)
def test_a_file_in_the_way_of_the_clients_folder_is_named_and_nothing_is_written(
    invoke: Invoke, project: Path, client: str
) -> None:
    folder = project / FOLDERS[client][0]
    folder.write_text("not a folder\n")

    done = invoke("install", client, "--project", str(project))

    assert done.exit_code == 10, done.output
    assert f"{folder} is a file where a folder is needed" in done.output
    assert "permissions" not in done.output
    assert sorted(p.name for p in project.iterdir()) == [folder.name]
