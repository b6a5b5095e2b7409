"""Codex CLI's files that ``graphmem install codex`` changes: its ``config.toml`` and AGENTS.md.

In ``config.toml`` graphmem owns ``[mcp_servers.graphmem]`` (the MCP tools) and one hook group
per event it listens to under ``[hooks]`` (``SessionStart``, ``UserPromptSubmit``, ``Stop``,
``SessionEnd``): the groups whose command runs ``graphmem.integrations.codex_hook``. Nothing else
is touched: the file is edited with tomlkit, which keeps comments, order and formatting, and a
file that is not valid TOML stops the plan with its line and column. AGENTS.md gets graphmem's
marked section, shared with OpenCode's install (``agents_md``: what the tools are for; never
memory content).

Installing is planned before anything is written, as ``FileChange`` lists the CLI shows
(``--dry-run``) or applies (``opencode_config.apply``: atomic, permissions kept). A project's file
that links out of the project stops the plan before it is read (``client_files``).
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import ParseError
from tomlkit.items import AoT, Table
from tomlkit.toml_document import TOMLDocument

from graphmem.adapters import agents_md, client_programs
from graphmem.adapters.client_files import read_client_file, reinstall_fix, remove_if_empty
from graphmem.adapters.opencode_config import FileChange
from graphmem.errors import IntegrationError

SERVER_NAME = "graphmem"
DATA_DIR_VARIABLE = "GRAPHMEM_DATA_DIR"
CONFIG_NAME = "config.toml"
AGENTS_NAME = "AGENTS.md"
HOOK_MODULE = "graphmem.integrations.codex_hook"
# The events graphmem's hook answers: the boot context (SessionStart), each turn's recall
# (UserPromptSubmit), and learning from the session when a turn ends or the session does.
HOOK_EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd")
# Codex kills a hook after this many seconds; the hook itself gives up well before. Codex 0.169
# allows a SessionEnd hook 3 s at most (it clamps a longer timeout, with a warning).
HOOK_TIMEOUT_S = 10
SESSION_END_TIMEOUT_S = 3
# How long Codex waits for `graphmem mcp` to list its tools (it may start the daemon first).
MCP_STARTUP_TIMEOUT_S = 20
# Codex starts an MCP server with a short whitelist of its environment (HOME, PATH, USER, LANG,
# TMPDIR...; codex-rs/rmcp-client/src/utils.rs), while hooks get all of it. These are passed on
# by name (`env_vars`) so that `graphmem mcp`, and the daemon it starts, find the same store,
# config, model cache and clients' session folders as the hooks; the settings' own variables
# (``graphmem.settings.environment_variables``) come after them.
PASSED_VARIABLES = (
    DATA_DIR_VARIABLE,
    "GRAPHMEM_CONFIG",
    "XDG_DATA_HOME",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "HF_HOME",
    "CODEX_HOME",
    "CLAUDE_CONFIG_DIR",
    "OPENCODE_DB",
)
# The keys of [mcp_servers.graphmem] graphmem writes; any other (`required = true`) is the user's.
SERVER_KEYS = ("command", "args", "env", "env_vars", "startup_timeout_sec")


@dataclass(frozen=True, slots=True)
class CodexFiles:
    """Where one Codex scope (a project, or the user's ``CODEX_HOME``) keeps what graphmem edits."""

    config: Path
    agents: Path
    project: Path | None = None  # what the files must stay inside; None: the user's own, links followed


def codex_home(environ: Mapping[str, str] | None = None) -> Path:
    """``$CODEX_HOME``, else ``~/.codex``."""
    environ = os.environ if environ is None else environ
    return Path(environ.get("CODEX_HOME") or Path.home() / ".codex").expanduser()


def project_files(directory: Path) -> CodexFiles:
    """``DIR/.codex/config.toml`` (read when the project is trusted) and ``DIR/AGENTS.md``."""
    return CodexFiles(directory / ".codex" / CONFIG_NAME, directory / AGENTS_NAME, directory)


def global_files(environ: Mapping[str, str] | None = None) -> CodexFiles:
    """``$CODEX_HOME/config.toml`` and ``$CODEX_HOME/AGENTS.md``."""
    home = codex_home(environ)
    return CodexFiles(home / CONFIG_NAME, home / AGENTS_NAME)


def server_entry(
    command: Sequence[str], data_dir: Path | None = None, settings_variables: Sequence[str] = ()
) -> dict[str, Any]:
    """``[mcp_servers.graphmem]``: the stdio server; ``data_dir`` pins the store. ``env_vars``
    names what Codex passes on from its environment: ``PASSED_VARIABLES``, then
    ``settings_variables`` (names, never values: the file may be committed)."""
    entry: dict[str, Any] = {"command": command[0], "args": list(command[1:])}
    if data_dir is not None:
        entry["env"] = {DATA_DIR_VARIABLE: str(data_dir.expanduser().resolve())}
    entry["env_vars"] = list(dict.fromkeys([*PASSED_VARIABLES, *settings_variables]))
    entry["startup_timeout_sec"] = MCP_STARTUP_TIMEOUT_S
    return entry


def hook_command(data_dir: Path | None = None, python: str | None = None) -> str:
    """The shell command Codex runs for each event: this Python, isolated from the project's own
    modules (``-P``: a ``graphmem/`` folder in the working directory is never imported)."""
    words = [python or sys.executable, "-P", "-m", HOOK_MODULE]
    if data_dir is not None:
        words += ["--data-dir", str(data_dir.expanduser().resolve())]
    return shlex.join(words)


def is_ours(group: Mapping[str, Any]) -> bool:
    """Whether a hook group is graphmem's: one of its hooks runs graphmem's Codex hook."""
    hooks = group.get("hooks")
    if not isinstance(hooks, list):
        return False
    return any(isinstance(h, Mapping) and HOOK_MODULE in str(h.get("command", "")) for h in hooks)


def _group(event: str, command: str) -> Table:
    hook = tomlkit.table()
    hook["type"] = "command"
    hook["command"] = command
    hook["timeout"] = SESSION_END_TIMEOUT_S if event == "SessionEnd" else HOOK_TIMEOUT_S
    hook.add(tomlkit.nl())  # a blank line before the table that follows
    handlers = tomlkit.aot()
    handlers.append(hook)
    group = tomlkit.table()
    group["hooks"] = handlers
    return group


# -- the plan ---------------------------------------------------------------------------


def plan_install(files: CodexFiles, entry: Mapping[str, Any], command: str) -> list[FileChange]:
    """Set ``[mcp_servers.graphmem]`` to ``entry`` and graphmem's hook group of each event to
    run ``command``, and write graphmem's section of AGENTS.md. What is already so stays as it
    is (running it twice changes nothing)."""
    config = read_client_file(files.config, files.project)
    agents = read_client_file(files.agents, files.project)
    document = _parse(files.config, config or "")
    _set_server(document, entry)
    for event in HOOK_EVENTS:
        _set_hook(document, event, command)
    new_config = tomlkit.dumps(document)
    newline = "\r\n" if config is not None and "\r\n" in config else "\n"
    if newline != "\n":  # graphmem's lines end as the file's do
        new_config = re.sub(r"(?<!\r)\n", newline, new_config)
    if _last_is_ours(document):  # no blank line after the file's last table
        new_config = new_config.rstrip("\r\n") + newline
    return [
        FileChange(files.config, config, new_config if new_config != (config or "") else config),
        FileChange(files.agents, agents, agents_md.with_client(agents, agents_md.CODEX, files.agents)),
    ]


def plan_uninstall(files: CodexFiles) -> list[FileChange]:
    """Remove ``[mcp_servers.graphmem]``, graphmem's hook groups (and the tables they leave
    empty) and graphmem's section of AGENTS.md; a file left with nothing is deleted."""
    config = read_client_file(files.config, files.project)
    agents = read_client_file(files.agents, files.project)
    new_config = config
    if config is not None:
        document = _parse(files.config, config)
        last = _last_is_ours(document)
        if _remove(document):
            new_config = tomlkit.dumps(document)
            if last:  # the blank line tomlkit put before graphmem's tables at the end goes too
                new_config = new_config.rstrip("\r\n") + ("\r\n" if "\r\n" in config else "\n")
            if not new_config.strip():
                new_config = None
    new_agents = agents_md.without_client(agents, agents_md.CODEX, files.agents)
    return [FileChange(files.config, config, new_config), FileChange(files.agents, agents, new_agents)]


def tidy(files: CodexFiles) -> None:
    """After uninstall: a project's ``.codex/`` folder left empty goes too (``install`` made it for
    its config.toml); one with anything in it stays, and so does ``$CODEX_HOME``, Codex's own."""
    remove_if_empty(files.config.parent, ".codex", files.project)


@dataclass(frozen=True, slots=True)
class Installed:
    """What of graphmem a Codex scope holds (for ``graphmem doctor``)."""

    config: Path
    server: bool
    hooks: tuple[str, ...]  # the events graphmem's hook is set for
    section: bool
    problem: str = ""  # the config cannot be read
    passes_environment: bool = True  # the server's env_vars name PASSED_VARIABLES (older installs did not)
    stale: tuple[str, ...] = ()  # what keeps the programs the config names from running (client_programs)
    fix: str = ""  # what to run when it is incomplete or broken (client_files.reinstall_fix)

    @property
    def complete(self) -> bool:
        return (
            self.server and self.passes_environment and set(self.hooks) == set(HOOK_EVENTS) and self.section
        )

    def describe(self) -> str:
        """One line for ``graphmem doctor``."""
        if self.problem:
            return self.problem
        if not (self.server or self.hooks or self.section):
            return "not installed"
        parts = [f"MCP server in {self.config}" if self.server else "no MCP server entry"]
        if self.server and not self.passes_environment:
            parts[0] += " (Codex does not pass it GRAPHMEM_DATA_DIR, CODEX_HOME...)"
        parts.append(f"hooks: {', '.join(self.hooks)}" if self.hooks else "no hooks")
        parts.append("AGENTS.md section" if self.section else "no AGENTS.md section")
        parts.extend(f"broken: {problem}" for problem in self.stale)
        if self.stale:
            return "; ".join(parts) + f": {self.fix}"
        return "; ".join(parts) + ("" if self.complete else f"; incomplete: {self.fix}")


def installed(files: CodexFiles) -> Installed:
    """What ``graphmem install codex`` left in ``files``; never raises."""
    try:
        document = _parse(files.config, read_client_file(files.config, files.project) or "")
        agents = read_client_file(files.agents, files.project) or ""
        section = agents_md.CODEX in agents_md.clients_in(agents, files.agents)
    except IntegrationError as exc:
        return Installed(files.config, False, (), False, str(exc))
    servers = document.get("mcp_servers")
    server = isinstance(servers, Mapping) and SERVER_NAME in servers
    entry = _plain(servers.get(SERVER_NAME)) if server and isinstance(servers, Mapping) else None
    names = entry.get("env_vars") if isinstance(entry, Mapping) else None
    passed = {_env_var_name(v) for v in names} if isinstance(names, list) else set()
    hooks = document.get("hooks")
    events = tuple(
        event
        for event in HOOK_EVENTS
        if isinstance(hooks, Mapping)
        and isinstance(hooks.get(event), list)
        and any(isinstance(g, Mapping) and is_ours(g) for g in hooks[event])
    )
    passes = not server or set(PASSED_VARIABLES) <= passed
    command = entry.get("command") if isinstance(entry, Mapping) else None
    ours = [
        str(h.get("command"))
        for event in events
        for g in hooks[event]  # type: ignore[index]
        if isinstance(g, Mapping) and is_ours(g)
        for h in g["hooks"]
        if isinstance(h, Mapping) and isinstance(h.get("command"), str)
    ]
    stale = [
        *client_programs.server_problems([command] if isinstance(command, str) else []),
        *client_programs.hook_problems(ours, HOOK_MODULE),
    ]
    return Installed(files.config, server, events, section, passes_environment=passes, stale=tuple(stale),
                     fix=reinstall_fix("codex", files.project))  # fmt: skip


# -- editing the document --------------------------------------------------------------


def _parse(path: Path, text: str) -> TOMLDocument:
    try:
        return tomlkit.parse(text)
    except ParseError as exc:
        raise IntegrationError(
            f"{path} line {exc.line} column {exc.col} is not valid TOML ({_reason(exc)}). Fix it and "
            "run the command again; nothing was changed."
        ) from None
    except ValueError as exc:  # e.g. a key defined twice
        raise IntegrationError(
            f"{path} is not valid TOML ({exc}). Fix it and run the command again; nothing was changed."
        ) from None


def _reason(exc: ParseError) -> str:
    message = str(exc)
    return message.split(" at line ", 1)[0]


def _table(parent: TOMLDocument | Table, key: str, path: str) -> Table:
    found = parent.get(key)
    if found is None:
        created = tomlkit.table(is_super_table=True)
        parent[key] = created
        return created
    if not isinstance(found, Table):
        raise IntegrationError(
            f"{path} in Codex's config.toml is a value, not a [{path}] table: write it as one and "
            "run the command again; nothing was changed."
        )
    return found


def _set_server(document: TOMLDocument, entry: Mapping[str, Any]) -> None:
    """Write graphmem's keys of ``[mcp_servers.graphmem]``; the user's own keys there
    (``required = true``) and names they added to ``env_vars`` stay, after graphmem's."""
    servers = _table(document, "mcp_servers", "mcp_servers")
    current = servers.get(SERVER_NAME)
    users = current if isinstance(current, Table) else tomlkit.table()
    wanted = dict(entry)
    if "env_vars" in wanted:
        ours = set(wanted["env_vars"])
        added = [v for v in _plain(users.get("env_vars", [])) if _env_var_name(v) not in ours]
        wanted["env_vars"] = [*wanted["env_vars"], *added]
    kept = {key: value for key, value in users.items() if key not in SERVER_KEYS}
    if current is not None and _plain(current) == {**_plain(wanted), **_plain(kept)}:
        return
    table = tomlkit.table()
    for key, value in wanted.items():
        table[key] = _toml_value(key, value)
    for key, value in kept.items():
        table[key] = value
    table.add(tomlkit.nl())
    if current is not None:
        servers[SERVER_NAME] = table
    else:
        servers.append(SERVER_NAME, table)


def _env_var_name(value: Any) -> Any:
    """An ``env_vars`` entry's variable: Codex takes a name or ``{name = "...", source = "..."}``."""
    return value.get("name") if isinstance(value, Mapping) else value


def _toml_value(key: str, value: Any) -> Any:
    if isinstance(value, Mapping):
        inline = tomlkit.inline_table()
        inline.update(value)
        return inline
    if key == "env_vars":  # one name a line: a long list stays readable
        names = tomlkit.array().multiline(True)
        names.extend(value)
        return names
    return value


def _set_hook(document: TOMLDocument, event: str, command: str) -> None:
    hooks = _table(document, "hooks", "hooks")
    groups = hooks.get(event)
    wanted = _group(event, command)
    if groups is None:
        created = tomlkit.aot()
        created.append(wanted)
        hooks.append(event, created)
        return
    if not isinstance(groups, AoT):
        raise IntegrationError(
            f"hooks.{event} in Codex's config.toml is not an array of tables ([[hooks.{event}]]): "
            "change it to one and run the command again; nothing was changed."
        )
    ours = [i for i, group in enumerate(groups) if is_ours(group)]
    if len(ours) == 1 and _plain(groups[ours[0]]) == _plain(wanted):
        return
    for index in reversed(ours):
        del groups[index]
    groups.append(wanted)


def _remove(document: TOMLDocument) -> bool:
    """Take graphmem's server and hook groups out of ``document``; whether anything was there."""
    removed = False
    servers = document.get("mcp_servers")
    if isinstance(servers, Table) and SERVER_NAME in servers:
        del servers[SERVER_NAME]
        removed = True
        if not servers and servers.is_super_table():  # no [mcp_servers] header of the user's
            del document["mcp_servers"]
    hooks = document.get("hooks")
    if isinstance(hooks, Table):
        for event in list(hooks.keys()):
            groups = hooks[event]
            if not isinstance(groups, AoT):
                continue
            ours = [i for i, group in enumerate(groups) if is_ours(group)]
            for index in reversed(ours):
                del groups[index]
                removed = True
            if ours and not groups:
                del hooks[event]
        if removed and not hooks and hooks.is_super_table():
            del document["hooks"]
    return removed


def _last_is_ours(document: TOMLDocument) -> bool:
    """Whether the file ends with graphmem's table (its server or one of its hook groups)."""
    keys = list(document.keys())
    if not keys or keys[-1] not in ("mcp_servers", "hooks"):
        return False
    table = document[keys[-1]]
    if not isinstance(table, Table) or not table:
        return False
    name, last = list(table.items())[-1]
    if keys[-1] == "mcp_servers":
        return bool(name == SERVER_NAME)
    return isinstance(last, AoT) and bool(last) and is_ours(last[-1])


def _plain(value: Any) -> Any:
    """A tomlkit value as plain Python (for comparing what is there with what is wanted)."""
    unwrap = getattr(value, "unwrap", None)
    return unwrap() if callable(unwrap) else value
