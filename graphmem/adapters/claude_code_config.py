"""Claude Code's files that ``graphmem install claude-code`` changes.

Two files per scope (``@anthropic-ai/claude-code@2.1.328``):

==============  ===================================  ===========================================
scope           MCP servers (``mcpServers.graphmem``)  hooks (``hooks.<Event>``)
==============  ===================================  ===========================================
project         ``<project>/.mcp.json``                ``<project>/.claude/settings.json``
global          ``~/.claude.json``                     ``~/.claude/settings.json``
==============  ===================================  ===========================================

(``$CLAUDE_CONFIG_DIR`` replaces ``~/.claude`` and holds ``.claude.json`` then.) graphmem owns
``mcpServers.graphmem`` and, under each event of ``hooks``, the groups whose command runs
``graphmem.integrations.claude_code``; every other key, hook and server is kept. The files are
edited as text (``graphmem.adapters.jsonc``): formatting and order survive; in an event's array
only graphmem's item is added, replaced or removed (last), the user's groups keep their bytes.
A file that is not valid JSON stops the plan with its line and column, and nothing is written.

Installing is planned before anything is written, as ``FileChange`` lists the CLI shows
(``--dry-run``) or applies (``opencode_config.apply``: atomic, permissions kept). A project's file
that links out of the project stops the plan before it is read (``client_files``).
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from graphmem.adapters import client_programs, jsonc
from graphmem.adapters.claude_code_transcripts import CONFIG_DIR_VARIABLE, config_dir
from graphmem.adapters.client_files import read_client_file, reinstall_fix, remove_if_empty
from graphmem.adapters.opencode_config import FileChange
from graphmem.errors import IntegrationError, InvalidInputError

SERVER_NAME = "graphmem"
SERVER_PATH = ("mcpServers", SERVER_NAME)
DATA_DIR_VARIABLE = "GRAPHMEM_DATA_DIR"
HOOK_MODULE = "graphmem.integrations.claude_code"
# Each event graphmem listens to, and the argument its hook command gets.
HOOK_EVENTS = {
    "SessionStart": "session-start",
    "UserPromptSubmit": "user-prompt-submit",
    "PreCompact": "pre-compact",
    "Stop": "stop",
    "SessionEnd": "session-end",
}
# Claude Code stops a hook after this many seconds; the hook gives up well before.
HOOK_TIMEOUT_S = 10


@dataclass(frozen=True, slots=True)
class ClaudeCodeFiles:
    """The files of one scope: where the MCP server goes, and where the hooks go."""

    servers: Path
    settings: Path
    project: Path | None = None  # what the files must stay inside; None: the user's own, links followed


def project_files(directory: Path) -> ClaudeCodeFiles:
    return ClaudeCodeFiles(directory / ".mcp.json", directory / ".claude" / "settings.json", directory)


def global_files(environ: Mapping[str, str] | None = None) -> ClaudeCodeFiles:
    """The user's own: ``~/.claude.json`` and ``~/.claude/settings.json``; with ``$CLAUDE_CONFIG_DIR``,
    both in that folder."""
    env = os.environ if environ is None else environ
    folder = config_dir(env)
    moved = bool(env.get(CONFIG_DIR_VARIABLE, "").strip())
    return ClaudeCodeFiles(
        folder / ".claude.json" if moved else Path.home() / ".claude.json", folder / "settings.json"
    )


def server_entry(command: Sequence[str], data_dir: Path | None = None) -> dict[str, Any]:
    """``mcpServers.graphmem``: the stdio server; ``data_dir`` pins the store."""
    entry: dict[str, Any] = {"type": "stdio", "command": command[0], "args": list(command[1:])}
    if data_dir is not None:
        entry["env"] = {DATA_DIR_VARIABLE: str(data_dir.expanduser().resolve())}
    return entry


def hook_command(event: str, data_dir: Path | None = None, python: str | None = None) -> str:
    """The shell command Claude Code runs for ``event`` (``session-start``...): this Python,
    isolated from the project's own modules (``-P``)."""
    words = [python or sys.executable, "-P", "-m", HOOK_MODULE, event]
    if data_dir is not None:
        words += ["--data-dir", str(data_dir.expanduser().resolve())]
    return shlex.join(words)


def is_ours(group: Any) -> bool:
    """Whether a hook group is graphmem's: one of its hooks runs graphmem's Claude Code hook."""
    hooks = group.get("hooks") if isinstance(group, Mapping) else None
    if not isinstance(hooks, list):
        return False
    return any(isinstance(h, Mapping) and HOOK_MODULE in str(h.get("command", "")) for h in hooks)


def _group(command: str) -> dict[str, Any]:
    return {"hooks": [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S}]}


# -- the plan ---------------------------------------------------------------------------


def plan_install(
    files: ClaudeCodeFiles, entry: Mapping[str, Any], data_dir: Path | None = None, python: str | None = None
) -> list[FileChange]:
    """Set ``mcpServers.graphmem`` to ``entry`` and graphmem's hook group of each event (other
    groups of the event kept, before it)."""
    servers = read_client_file(files.servers, files.project)
    settings = read_client_file(files.settings, files.project)
    new_servers = _edit(
        files.servers, servers or "{}\n", lambda text: jsonc.set_value(text, SERVER_PATH, entry)
    )
    new_settings = settings or "{}\n"
    for event, argument in HOOK_EVENTS.items():
        command = hook_command(argument, data_dir, python)
        new_settings = _edit(files.settings, new_settings, partial(_with_hook, event=event, command=command))
    return [
        FileChange(files.servers, servers, new_servers),
        FileChange(files.settings, settings, new_settings),
    ]


def plan_uninstall(files: ClaudeCodeFiles) -> list[FileChange]:
    """Remove ``mcpServers.graphmem`` and graphmem's hook groups (an event, ``hooks`` or
    ``mcpServers`` left empty goes too; a file left as ``{}`` that install created is deleted)."""
    servers = read_client_file(files.servers, files.project)
    settings = read_client_file(files.settings, files.project)
    new_servers = servers
    if servers is not None:
        new_servers = _edit(files.servers, servers, lambda text: jsonc.remove_value(text, SERVER_PATH))
        new_servers = None if new_servers != servers and _empty(new_servers) else new_servers
    new_settings = settings
    if settings is not None:
        for event in HOOK_EVENTS:
            new_settings = _edit(files.settings, new_settings or "{}", partial(_without_hook, event=event))
        new_settings = None if new_settings != settings and _empty(new_settings or "") else new_settings
    return [
        FileChange(files.servers, servers, new_servers),
        FileChange(files.settings, settings, new_settings),
    ]


def tidy(files: ClaudeCodeFiles) -> None:
    """After uninstall: a project's ``.claude/`` folder left empty goes too (the user's files stay);
    ``~/.claude`` (or ``$CLAUDE_CONFIG_DIR``) stays, Claude Code's own, as Codex's home does."""
    remove_if_empty(files.settings.parent, ".claude", files.project)


@dataclass(frozen=True, slots=True)
class Installed:
    """What of graphmem a Claude Code scope holds (for ``graphmem doctor``)."""

    files: ClaudeCodeFiles
    server: bool
    hooks: tuple[str, ...]  # the events graphmem's hook is set for
    problem: str = ""  # a file cannot be read
    stale: tuple[str, ...] = ()  # what keeps the programs the files name from running (client_programs)

    @property
    def complete(self) -> bool:
        return self.server and set(self.hooks) == set(HOOK_EVENTS)

    def describe(self) -> str:
        if self.problem:
            return f"cannot tell: {self.problem}"
        if not self.server and not self.hooks:
            return "not installed"
        parts = [f"MCP server in {self.files.servers}" if self.server else "no MCP server"]
        missing = [e for e in HOOK_EVENTS if e not in self.hooks]
        parts.append(
            f"hooks in {self.files.settings}" + (f" (missing {', '.join(missing)})" if missing else "")
            if self.hooks
            else "no hooks"
        )
        parts.extend(f"broken: {problem}" for problem in self.stale)
        if self.complete and not self.stale:
            return "; ".join(parts)
        return "; ".join(parts) + f": {reinstall_fix('claude-code', self.files.project)}"


def installed(files: ClaudeCodeFiles) -> Installed:
    """What ``graphmem install claude-code`` left in ``files``; never raises."""
    try:
        servers = _parsed(files.servers, read_client_file(files.servers, files.project) or "{}", SERVER_PATH)
        settings = read_client_file(files.settings, files.project) or "{}"
        hooks = {event: _parsed(files.settings, settings, ("hooks", event)) for event in HOOK_EVENTS}
    except IntegrationError as exc:
        return Installed(files, False, (), str(exc))
    events = tuple(
        e for e, groups in hooks.items() if isinstance(groups, list) and any(is_ours(g) for g in groups)
    )
    command = servers.get("command") if isinstance(servers, Mapping) else None
    ours = [h for groups in hooks.values() if isinstance(groups, list) for g in groups if is_ours(g)
            for h in g["hooks"] if isinstance(h, Mapping) and isinstance(h.get("command"), str)]  # fmt: skip
    stale = [
        *client_programs.server_problems([command] if isinstance(command, str) else []),
        *client_programs.hook_problems((h["command"] for h in ours), HOOK_MODULE),
    ]
    return Installed(files, servers is not None, events, stale=tuple(stale))


# -- editing the text -------------------------------------------------------------------


def _with_hook(text: str, event: str, command: str) -> str:
    """graphmem's group last in ``hooks.<event>``; the user's groups keep their bytes and order."""
    path = ("hooks", event)
    groups = jsonc.get_value(text, path)
    if groups is None:
        return jsonc.set_value(text, path, [_group(command)])
    if not isinstance(groups, list):
        raise InvalidInputError(f"hooks.{event} is not a list of hook groups")
    ours = [i for i, g in enumerate(groups) if is_ours(g)]
    if ours == [len(groups) - 1]:  # in its place already: only its own text may change
        return jsonc.replace_item(text, path, ours[0], _group(command))
    for index in reversed(ours):
        text = jsonc.remove_item(text, path, index)
    return jsonc.append_item(text, path, _group(command))


def _without_hook(text: str, event: str) -> str:
    """``hooks.<event>`` without graphmem's groups (the event goes when nothing else is left)."""
    path = ("hooks", event)
    groups = jsonc.get_value(text, path)
    if not isinstance(groups, list) or not any(is_ours(g) for g in groups):
        return text
    if all(is_ours(g) for g in groups):
        return jsonc.remove_value(text, path)
    for index in reversed([i for i, g in enumerate(groups) if is_ours(g)]):
        text = jsonc.remove_item(text, path, index)
    return text


def _edit(path: Path, text: str, edit: Callable[[str], Any]) -> Any:
    try:
        result = edit(text)
    except InvalidInputError as exc:
        raise IntegrationError(
            f"{path} is not valid JSON ({exc}). Fix it and run the command again; nothing was changed."
        ) from None
    return result


def _parsed(path: Path, text: str, where: Sequence[str]) -> Any:
    return _edit(path, text, lambda t: jsonc.get_value(t, where))


def _empty(text: str) -> bool:
    try:
        return jsonc.get_value(text, ()) in ({}, None)
    except InvalidInputError:
        return False
