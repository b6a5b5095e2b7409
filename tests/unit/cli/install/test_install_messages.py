"""What ``graphmem install|uninstall CLIENT`` says, worded once for every client: the hint after a
change, and the line when there was nothing to change."""

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
