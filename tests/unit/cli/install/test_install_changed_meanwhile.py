"""``graphmem install|uninstall CLIENT`` when the client writes its file between graphmem's read and
its write: the client's text stays, nothing is written, and the command exits 10 saying to run it
again. The client writes in a wrapper of ``opencode_config.apply``: after the plan, before the write."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from support.client_cli import Invoke

from graphmem.adapters import opencode_config

# Each client's file (in the project), what the user had in it, what the client writes meanwhile.
CLIENT_FILES = [
    ("opencode", "opencode.json", '{\n  "theme": "dark"\n}\n', '{\n  "theme": "light"\n}\n'),
    ("codex", ".codex/config.toml", 'model = "o3"\n', 'model = "o3"\napproval_policy = "never"\n'),
    ("claude-code", ".mcp.json", '{\n  "mcpServers": {}\n}\n', '{\n  "mcpServers": {}, "x": 1\n}\n'),
]
MEANWHILE = "changed after graphmem read it: the client (or you) wrote it meanwhile"


def client_writes_before_apply(monkeypatch: pytest.MonkeyPatch, write: Callable[[], None]) -> None:
    apply = opencode_config.apply

    def written_meanwhile(changes: Sequence[opencode_config.FileChange]) -> None:
        write()
        apply(changes)

    monkeypatch.setattr(opencode_config, "apply", written_meanwhile)


@pytest.mark.parametrize(("client", "name", "users", "clients"), CLIENT_FILES)
def test_install_keeps_what_the_client_wrote_meanwhile_and_exits_10(
    invoke: Invoke,
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    client: str,
    name: str,
    users: str,
    clients: str,
) -> None:
    path = project / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(users, "utf-8")
    client_writes_before_apply(monkeypatch, lambda: path.write_text(clients, "utf-8"))

    done = invoke("install", client, "--project", str(project))

    assert done.exit_code == 10, done.output
    assert f"{path} {MEANWHILE}" in done.stderr
    assert "Run the command again" in done.stderr and "nothing was changed" in done.stderr
    assert path.read_text("utf-8") == clients
    assert sorted(p for p in project.rglob("*") if p.is_file()) == [path]  # no other file written


@pytest.mark.parametrize("client", [client for client, _, _, _ in CLIENT_FILES])
def test_install_keeps_a_file_the_client_created_meanwhile(
    invoke: Invoke, project: Path, monkeypatch: pytest.MonkeyPatch, client: str
) -> None:
    path = project / "AGENTS.md" if client != "claude-code" else project / ".mcp.json"
    client_writes_before_apply(monkeypatch, lambda: path.write_text("{}\n", "utf-8"))

    done = invoke("install", client, "--project", str(project))

    assert done.exit_code == 10 and f"{path} {MEANWHILE}" in done.stderr
    assert path.read_text("utf-8") == "{}\n"


@pytest.mark.parametrize("client", [client for client, _, _, _ in CLIENT_FILES])
def test_uninstall_keeps_a_file_it_would_delete_when_the_client_wrote_it_meanwhile(
    invoke: Invoke, project: Path, monkeypatch: pytest.MonkeyPatch, client: str
) -> None:
    assert invoke("install", client, "--project", str(project)).exit_code == 0
    made = {p: p.read_text("utf-8") for p in project.rglob("*") if p.is_file()}
    first = sorted(made)[0]
    client_writes_before_apply(monkeypatch, lambda: first.write_text(made[first] + "\n", "utf-8"))

    done = invoke("uninstall", client, "--project", str(project))

    assert done.exit_code == 10 and f"{first} {MEANWHILE}" in done.stderr
    assert {p: p.read_text("utf-8") for p in project.rglob("*") if p.is_file()} == {
        **made,
        first: made[first] + "\n",
    }


def test_a_global_install_keeps_claude_codes_state_written_meanwhile(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "claude-home" / ".claude.json"
    state.parent.mkdir()
    state.write_text('{"numStartups": 1}\n', "utf-8")
    client_writes_before_apply(monkeypatch, lambda: state.write_text('{"numStartups": 2}\n', "utf-8"))

    done = invoke("install", "claude-code", "--global")

    assert done.exit_code == 10 and f"{state} {MEANWHILE}" in done.stderr
    assert state.read_text("utf-8") == '{"numStartups": 2}\n'
    assert not (tmp_path / "claude-home" / "settings.json").exists()


@pytest.mark.parametrize(("client", "name", "users", "clients"), CLIENT_FILES)
def test_install_writes_a_file_nobody_wrote_meanwhile(
    invoke: Invoke, project: Path, client: str, name: str, users: str, clients: str
) -> None:
    path = project / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(users, "utf-8")

    done = invoke("install", client, "--project", str(project))

    assert done.exit_code == 0, done.output
    assert f"updated {path}" in done.stdout and "graphmem" in path.read_text("utf-8")
