"""Claude Code's files that ``graphmem install claude-code`` changes.

Two files per scope (``@anthropic-ai/claude-code@2.1.328``):

==============  ===================================  ===========================================
scope           MCP servers (``mcpServers.graphmem``)  hooks (``hooks.<Event>``)
==============  ===================================  ===========================================
project         ``<project>/.mcp.json``                ``<project>/.claude/settings.json``
global          ``~/.claude.json``                     ``~/.claude/settings.json``
==============  ===================================  ===========================================

(``$CLAUDE_CONFIG_DIR`` replaces ``~/.claude`` and holds ``.claude.json`` then.) graphmem owns
``mcpServers.graphmem`` and, under each event of ``hooks``, the hooks whose command runs
``graphmem.integrations.claude_code`` (not the group around one: a user who adds a hook of their
own beside graphmem's keeps it); every other key, hook and server is kept. The files are edited
as text (``graphmem.adapters.jsonc``): formatting and order survive. Install adds graphmem's hook
in a group of its own, last in the event's array, or rewrites it where it is; uninstall removes
it, and a group (an event, ``hooks``) it leaves empty. ``~/.claude.json``, Claude Code's state of
up to 100 MB, is edited by ``claude_code_servers``. A file that is not valid JSON stops the plan
with its line and column, and nothing is written; so does a ``hooks`` (or ``mcpServers``) that
holds something other than an object. One that holds ``null`` is taken as absent, as Claude Code
takes it (2.1.328 ignores the key, with a warning on each start), and replaced.

Installing is planned before anything is written, as ``FileChange`` lists the CLI shows
(``--dry-run``) or applies (``opencode_config.apply``: atomic, permissions kept). A project's file
that links out of the project stops the plan before it is read (``client_files``). An uninstall
that cannot read one of the two files still plans the other (``client_files.PartlyPlanned``).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from graphmem.adapters import claude_code_servers, client_programs, jsonc
from graphmem.adapters.claude_code_transcripts import CONFIG_DIR_VARIABLE, config_dir
from graphmem.adapters.client_files import (
    MAX_CLIENT_FILE_BYTES,
    PartlyPlanned,
    read_client_file,
    reinstall_fix,
    remove_if_empty,
)
from graphmem.adapters.opencode_config import FileChange
from graphmem.errors import IntegrationError, InvalidInputError

SERVER_NAME = "graphmem"
SERVER_PATH = (claude_code_servers.SERVERS, SERVER_NAME)
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


def is_ours(hook: Any) -> bool:
    """Whether a hook (an item of a group's ``hooks``) is graphmem's: it runs graphmem's Claude Code hook."""
    return isinstance(hook, Mapping) and HOOK_MODULE in str(hook.get("command", ""))


def our_hooks(groups: Any) -> list[tuple[int, int]]:
    """Where graphmem's hooks are in an event's groups: (group, hook) indexes, in order."""
    if not isinstance(groups, list):
        return []
    return [
        (g, h) for g, group in enumerate(groups) for h, hook in enumerate(_hooks_of(group)) if is_ours(hook)
    ]


def _hooks_of(group: Any) -> list[Any]:
    hooks = group.get("hooks") if isinstance(group, Mapping) else None
    return hooks if isinstance(hooks, list) else []


def _hook(command: str) -> dict[str, Any]:
    return {"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S}


# -- the plan ---------------------------------------------------------------------------


def plan_install(
    files: ClaudeCodeFiles, entry: Mapping[str, Any], data_dir: Path | None = None, python: str | None = None
) -> list[FileChange]:
    """Set ``mcpServers.graphmem`` to ``entry`` and graphmem's hook of each event (where it is, or
    in a group of its own after the event's other groups)."""
    servers = _read_servers(files)
    settings = read_client_file(files.settings, files.project)
    new_servers = _edit(
        files.servers,
        servers or "{}\n",
        lambda text: claude_code_servers.edited(text, partial(_with_server, entry=entry)),
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
    """Remove ``mcpServers.graphmem`` and graphmem's hooks (a group, an event, ``hooks`` or
    ``mcpServers`` left empty goes too; a file left as ``{}`` that install created is deleted).

    A file that cannot be read or is not JSON raises ``PartlyPlanned`` with the other's changes
    when there are any (``IntegrationError`` otherwise): one does not keep graphmem in the other.
    """
    servers = _planned(lambda: _servers_uninstalled(files))
    settings = _planned(lambda: _settings_uninstalled(files))
    if isinstance(servers, IntegrationError) or isinstance(settings, IntegrationError):
        raise _partly(files, servers, settings)
    return [servers, settings]


_SERVER_PART = "graphmem's MCP server (mcpServers.graphmem)"
_HOOKS_PART = "graphmem's hooks"


def _servers_uninstalled(files: ClaudeCodeFiles) -> FileChange:
    servers = _read_servers(files)
    if servers is None:
        return FileChange(files.servers, None, None)
    new = _edit(files.servers, servers, lambda text: claude_code_servers.edited(text, _without_server))
    return FileChange(
        files.servers, servers, None if new != servers and _empty(new, claude_code_servers.value) else new
    )


def _settings_uninstalled(files: ClaudeCodeFiles) -> FileChange:
    settings = read_client_file(files.settings, files.project)
    if settings is None:
        return FileChange(files.settings, None, None)
    new = settings
    for event in HOOK_EVENTS:
        new = _edit(files.settings, new, partial(_without_hook, event=event))
    return FileChange(files.settings, settings, None if new != settings and _empty(new) else new)


def _planned(plan: Callable[[], FileChange]) -> FileChange | IntegrationError:
    try:
        return plan()
    except IntegrationError as exc:
        return exc


def _partly(
    files: ClaudeCodeFiles, servers: FileChange | IntegrationError, settings: FileChange | IntegrationError
) -> IntegrationError:
    """What an uninstall that could not plan one of the files raises: ``PartlyPlanned`` with the
    other's change, saying why the one stayed and how to finish; the error alone when the other
    changes nothing (or could not be planned either)."""
    if isinstance(servers, IntegrationError):
        left, done, ours, other = servers, settings, _SERVER_PART, _HOOKS_PART
    else:
        assert isinstance(settings, IntegrationError)
        left, done, ours, other = settings, servers, _HOOKS_PART, _SERVER_PART
    if isinstance(done, IntegrationError) or not done.changed:
        return left
    path = files.settings if done.path == files.servers else files.servers
    why = str(left).removesuffix("; nothing was changed.").removesuffix(".")
    scope = " --global" if files.project is None else f" --project {files.project}"
    return PartlyPlanned(
        f"{path} was left as it is: {why}. Only {done.path} loses {other}: once {path.name} is "
        f"fixed, run `graphmem uninstall claude-code{scope}` again to remove {ours} from it too.",
        [done],
    )


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
        servers = _edit(
            files.servers,
            _read_servers(files) or "{}",
            lambda text: claude_code_servers.value(text, SERVER_PATH),
        )
        settings = read_client_file(files.settings, files.project) or "{}"
        hooks = {event: _parsed(files.settings, settings, ("hooks", event)) for event in HOOK_EVENTS}
    except IntegrationError as exc:
        return Installed(files, False, (), str(exc))
    events = tuple(e for e, groups in hooks.items() if our_hooks(groups))
    command = servers.get("command") if isinstance(servers, Mapping) else None
    ours = [groups[g]["hooks"][h]["command"] for groups in hooks.values() for g, h in our_hooks(groups)]
    stale = [
        *client_programs.server_problems([command] if isinstance(command, str) else []),
        *client_programs.hook_problems((c for c in ours if isinstance(c, str)), HOOK_MODULE),
    ]
    return Installed(files, servers is not None, events, stale=tuple(stale))


# -- editing the text -------------------------------------------------------------------


class _WrongShape(InvalidInputError):
    """Valid JSON, with something other than what Claude Code reads where graphmem writes."""


def _read_servers(files: ClaudeCodeFiles) -> str | None:
    """The MCP server file's text: ``~/.claude.json``, Claude Code's state, may be 100 MB."""
    bound = claude_code_servers.MAX_STATE_FILE_BYTES if files.project is None else MAX_CLIENT_FILE_BYTES
    return read_client_file(files.servers, files.project, most=bound)


def _object_or_none(text: str, path: Sequence[str], expected: str) -> Mapping[str, Any] | None:
    """The object at ``path``: None when absent or ``null`` (Claude Code ignores a ``null``, as if
    absent); ``_WrongShape`` when it is something else."""
    found = jsonc.get_value(text, path)
    if found is None or isinstance(found, dict):
        return found
    raise _WrongShape(f'"{".".join(path)}" holds {_kind(found)}, where Claude Code expects {expected}')


def _with_server(text: str, entry: Mapping[str, Any]) -> str:
    if _object_or_none(text, SERVER_PATH[:1], "an object of MCP servers") is None:  # absent or null
        return jsonc.set_value(text, SERVER_PATH[:1], {SERVER_NAME: entry})
    return jsonc.set_value(text, SERVER_PATH, entry)


def _without_server(text: str) -> str:
    return jsonc.remove_value(text, SERVER_PATH)


def _with_hook(text: str, event: str, command: str) -> str:
    """graphmem's hook of ``event`` set to ``command``: where it is (the user's hooks beside it
    kept), else in a group of its own after the event's groups; a second copy goes."""
    if _object_or_none(text, ("hooks",), "an object of hook events") is None:  # absent or null
        return jsonc.set_value(text, ("hooks",), {event: [{"hooks": [_hook(command)]}]})
    path = ("hooks", event)
    groups = jsonc.get_value(text, path)
    if groups is None:  # absent or null
        return jsonc.set_value(text, path, [{"hooks": [_hook(command)]}])
    if not isinstance(groups, list):
        raise _WrongShape(
            f'"hooks.{event}" holds {_kind(groups)}, where Claude Code expects a list of hook groups'
        )
    found = our_hooks(groups)
    if not found:
        return jsonc.append_item(text, path, {"hooks": [_hook(command)]})
    text = _without_ours(text, event, keep=1)
    group, hook = found[0]
    return jsonc.replace_item(text, (*path, group, "hooks"), hook, _hook(command))


def _without_hook(text: str, event: str) -> str:
    """``hooks.<event>`` without graphmem's hooks: a group left empty goes, and the event (and
    ``hooks``) when nothing else is left."""
    path = ("hooks", event)
    groups = jsonc.get_value(text, path)
    found = our_hooks(groups)
    if not found:
        return text
    if len(found) == sum(len(_hooks_of(group)) for group in groups) and all(_hooks_of(g) for g in groups):
        return jsonc.remove_value(text, path)  # nothing of the user's in it
    return _without_ours(text, event, keep=0)


def _without_ours(text: str, event: str, keep: int) -> str:
    """``text`` without graphmem's hooks of ``event`` but the first ``keep``, the last first (the
    indexes of those before stay right); a group left with no hook goes."""
    path = ("hooks", event)
    while True:
        groups = jsonc.get_value(text, path)
        found = our_hooks(groups)[keep:]
        if not found:
            return text
        group, hook = found[-1]
        if len(_hooks_of(groups[group])) == 1:
            text = jsonc.remove_item(text, path, group)
        else:
            text = jsonc.remove_item(text, (*path, group, "hooks"), hook)


def _kind(value: Any) -> str:
    """How a message names a JSON value that is neither an object nor ``null``."""
    if isinstance(value, bool):
        return json.dumps(value)  # true, false
    if isinstance(value, str | list):
        return "a string" if isinstance(value, str) else "a list"
    return "a number"


def _edit(path: Path, text: str, edit: Callable[[str], Any]) -> Any:
    try:
        result = edit(text)
    except _WrongShape as exc:
        raise IntegrationError(
            f"{path}: {exc}. Fix it (or remove the key) and run the command again; nothing was changed."
        ) from None
    except claude_code_servers.TooLarge as exc:
        raise IntegrationError(
            f"{path}: {exc}, so graphmem does not edit it: check that it is the file you mean; "
            "nothing was changed."
        ) from None
    except InvalidInputError as exc:
        raise IntegrationError(
            f"{path} is not valid JSON ({exc}). Fix it and run the command again; nothing was changed."
        ) from None
    return result


def _parsed(path: Path, text: str, where: Sequence[str]) -> Any:
    return _edit(path, text, lambda t: jsonc.get_value(t, where))


def _empty(text: str, read: Callable[[str, Sequence[str]], Any] = jsonc.get_value) -> bool:
    """Whether ``text`` holds nothing (``read``: how to read it; a 100 MB file, not with jsonc)."""
    try:
        return read(text, ()) in ({}, None)
    except InvalidInputError:
        return False
