"""What ``graphmem install|uninstall|doctor`` do alike for every client (``cli.integrations.Client``):
the hint after a change, the line when there was nothing to change, an uninstall that leaves the
project as it was (a dry run: untouched), doctor's two lines a client."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.client_cli import Invoke

CLIENTS = [
    ("opencode", "OpenCode", "Restart OpenCode to drop graphmem's tools."),
    ("codex", "Codex", "Restart Codex to drop graphmem's tools and hooks."),
    ("claude-code", "Claude Code", "Restart Claude Code to drop graphmem's tools and hooks."),
]


@pytest.mark.parametrize(("client", "name", "dropped"), CLIENTS)
def test_each_client_is_named_in_what_install_and_uninstall_say(
    invoke: Invoke, project: Path, client: str, name: str, dropped: str
) -> None:
    assert invoke("install", client, "--project", str(project)).exit_code == 0

    again = invoke("install", client, "--project", str(project))
    gone = invoke("uninstall", client, "--project", str(project))
    none = invoke("uninstall", client, "--project", str(project))

    assert f"graphmem is already installed for {name} here; nothing changed." in again.stderr
    assert dropped in gone.stderr
    assert f"graphmem is not installed for {name} here; nothing changed." in none.stderr


@pytest.mark.parametrize("client", [client for client, _, _ in CLIENTS])
def test_uninstall_takes_away_all_install_made_in_the_project_and_a_dry_run_nothing(
    invoke: Invoke, project: Path, client: str
) -> None:
    assert invoke("install", client, "--project", str(project)).exit_code == 0
    made = sorted(path.relative_to(project) for path in project.rglob("*"))

    assert invoke("uninstall", client, "--project", str(project), "--dry-run").exit_code == 0
    assert sorted(path.relative_to(project) for path in project.rglob("*")) == made
    assert invoke("uninstall", client, "--project", str(project)).exit_code == 0
    assert made and list(project.iterdir()) == []  # the client's folder install made went too


def test_doctor_names_each_client_in_this_project_then_globally(invoke: Invoke, project: Path) -> None:
    lines = invoke("--project", str(project), "doctor").stdout.splitlines()

    here = f"(project {project.resolve()})"
    assert [line.split(": ", 1)[0] for line in lines] == [
        "daemon",
        f"opencode {here}",
        "opencode (global)",
        f"claude-code {here}",
        "claude-code (global)",
        f"codex {here}",
        "codex (global)",
    ]
