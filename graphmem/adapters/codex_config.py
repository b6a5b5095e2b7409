"""Codex CLI's files that ``graphmem install codex`` changes: its ``config.toml`` and AGENTS.md.

In ``config.toml`` graphmem owns ``[mcp_servers.graphmem]`` (the MCP tools) and one hook group
per event it listens to under ``[hooks]`` (``SessionStart``, ``UserPromptSubmit``, ``Stop``,
``SessionEnd``): the groups whose command runs ``graphmem.integrations.codex_hook``
(``codex_ours``). Nothing else is touched: the file is edited with tomlkit, which keeps comments,
order and formatting, and a file that is not valid TOML stops the plan with its line and column.
The tables of ``mcp_servers`` or ``hooks`` may be anywhere in the file (a server the user
appended after another table) or dotted keys: graphmem edits each part where it is. Each plan is
checked on what its text says before anything is written: graphmem's entries all there (install)
or none left (uninstall), the user's settings as they were; the uninstall is checked again on
the file it wrote (``check_uninstalled``). AGENTS.md gets graphmem's marked section, shared with
OpenCode's install (``agents_md``: what the tools are for; never memory content).

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
from tomlkit.items import AoT, Item, Key, Table
from tomlkit.toml_document import TOMLDocument

from graphmem.adapters import agents_md, client_programs, codex_ours
from graphmem.adapters.client_files import read_client_file, reinstall_fix, remove_if_empty
from graphmem.adapters.codex_ours import HOOK_MODULE, HOOKS, SERVER_NAME, SERVERS, is_ours
from graphmem.adapters.opencode_config import FileChange
from graphmem.errors import IntegrationError

DATA_DIR_VARIABLE = "GRAPHMEM_DATA_DIR"
CONFIG_NAME = "config.toml"
AGENTS_NAME = "AGENTS.md"
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
    document, before = _parse(files.config, config or "")
    _set_server(document, before, entry, files.config)
    for event in HOOK_EVENTS:
        _set_hook(document, event, command, files.config)
    new_config = tomlkit.dumps(document)
    newline = "\r\n" if config is not None and "\r\n" in config else "\n"
    if newline != "\n":  # graphmem's lines end as the file's do
        new_config = re.sub(r"(?<!\r)\n", newline, new_config)
    if _last_is_ours(document):  # no blank line after the file's last table
        new_config = new_config.rstrip("\r\n") + newline
    codex_ours.check_install(files.config, before, new_config, HOOK_EVENTS)
    return [
        FileChange(files.config, config, new_config if new_config != (config or "") else config),
        FileChange(files.agents, agents, agents_md.with_client(agents, agents_md.CODEX, files.agents)),
    ]


def plan_uninstall(files: CodexFiles) -> list[FileChange]:
    """Remove ``[mcp_servers.graphmem]``, graphmem's hook groups (and the tables they leave
    empty) and graphmem's section of AGENTS.md; a file left with nothing is deleted. Entries of
    graphmem's it cannot remove (an inline table) stop the plan, saying which."""
    config = read_client_file(files.config, files.project)
    agents = read_client_file(files.agents, files.project)
    new_config = config
    if config is not None:
        document, before = _parse(files.config, config)
        last = _last_is_ours(document)
        if _remove(document):
            new_config = tomlkit.dumps(document)
            if last:  # the blank line tomlkit put before graphmem's tables at the end goes too
                new_config = new_config.rstrip("\r\n") + ("\r\n" if "\r\n" in config else "\n")
            if not new_config.strip():
                new_config = None
        codex_ours.check_uninstall(files.config, before, new_config)
    new_agents = agents_md.without_client(agents, agents_md.CODEX, files.agents)
    return [FileChange(files.config, config, new_config), FileChange(files.agents, agents, new_agents)]


def check_uninstalled(files: CodexFiles) -> None:
    """After the uninstall wrote its plan: the files, read back, hold nothing of graphmem's, else
    ``IntegrationError`` names what is left and what to do (the uninstall never says it is done
    while Codex would still start graphmem)."""
    config = read_client_file(files.config, files.project)
    left = codex_ours.ours_in(codex_ours.read(files.config, config)) if config is not None else []
    agents = read_client_file(files.agents, files.project)
    where = [f"{', '.join(left)} in {files.config}"] if left else []
    if agents is not None and agents_md.CODEX in agents_md.clients_in(agents, files.agents):
        where.append(f"its section of {files.agents}")
        left.append("its section")
    if where:
        raise IntegrationError(
            f"The uninstall left graphmem's {' and '.join(where)}: {codex_ours.by_hand(left)}, then run "
            "`graphmem doctor` to check."
        )


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
    """What ``graphmem install codex`` left in ``files``, wherever its tables are in the file; never
    raises."""
    try:
        _, config = _parse(files.config, read_client_file(files.config, files.project) or "")
        agents = read_client_file(files.agents, files.project) or ""
        section = agents_md.CODEX in agents_md.clients_in(agents, files.agents)
    except IntegrationError as exc:
        return Installed(files.config, False, (), False, str(exc))
    servers = config.get(SERVERS)
    server = isinstance(servers, Mapping) and SERVER_NAME in servers
    entry = servers.get(SERVER_NAME) if server and isinstance(servers, Mapping) else None
    names = entry.get("env_vars") if isinstance(entry, Mapping) else None
    passed = {_env_var_name(v) for v in names} if isinstance(names, list) else set()
    hooks = config.get(HOOKS)
    ours = {
        event: [group for group in groups if is_ours(group)]
        for event in HOOK_EVENTS
        if isinstance(hooks, Mapping) and isinstance(groups := hooks.get(event), list)
    }
    events = tuple(event for event in HOOK_EVENTS if ours.get(event))
    passes = not server or set(PASSED_VARIABLES) <= passed
    command = entry.get("command") if isinstance(entry, Mapping) else None
    commands = [
        h["command"]
        for event in events
        for group in ours[event]
        for h in group["hooks"]
        if isinstance(h, Mapping) and isinstance(h.get("command"), str)
    ]
    stale = [
        *client_programs.server_problems([command] if isinstance(command, str) else []),
        *client_programs.hook_problems(commands, HOOK_MODULE),
    ]
    return Installed(files.config, server, events, section, passes_environment=passes, stale=tuple(stale),
                     fix=reinstall_fix("codex", files.project))  # fmt: skip


# -- editing the document --------------------------------------------------------------
# tomlkit gives a top-level table (``mcp_servers``, ``hooks``) as several parts in the
# document's body when its tables are apart in the file (``[mcp_servers.a]``, another table,
# ``[mcp_servers.b]``) and one part per dotted key (``mcp_servers.a.command = "x"``). Reading
# them through its proxy (``document["mcp_servers"]``) merges them, but the proxy's hook lists
# are copies and its writes can drop a whole part with the other servers in it: graphmem edits
# each part where it is.

Part = tuple[Key, Item]


def _parse(path: Path, text: str) -> tuple[TOMLDocument, dict[str, Any]]:
    """The document to edit, and what it says (``codex_ours.read``: what graphmem checks)."""
    try:
        document = tomlkit.parse(text)
    except ParseError as exc:
        raise IntegrationError(
            f"{path} line {exc.line} column {exc.col} is not valid TOML ({_reason(exc)}). Fix it and "
            "run the command again; nothing was changed."
        ) from None
    except ValueError as exc:  # e.g. a key defined twice
        raise IntegrationError(
            f"{path} is not valid TOML ({exc}). Fix it and run the command again; nothing was changed."
        ) from None
    return document, codex_ours.read(path, text)


def _reason(exc: ParseError) -> str:
    message = str(exc)
    return message.split(" at line ", 1)[0]


def _parts(document: TOMLDocument, key: str) -> list[Part]:
    """The top-level parts of ``key``, in the file's order."""
    return [(name, item) for name, item in document.body if name is not None and name.key == key]


def _tables(document: TOMLDocument, key: str, path: Path) -> list[tuple[Key, Table]]:
    """The parts of ``key``; ``IntegrationError`` when one is not a table graphmem can add to."""
    tables = []
    for name, item in _parts(document, key):
        if not isinstance(item, Table):
            kind = _KINDS.get(type(item).__name__, "a value")
            raise IntegrationError(
                f"{key} in {path} is {kind}, not {_FORM[key]}: graphmem adds to those only. Write it "
                f"as {_FORM[key]} and run the command again; nothing was changed."
            )
        tables.append((name, item))
    return tables


_KINDS = {
    "String": "a string",
    "Integer": "a number",
    "Float": "a number",
    "Bool": "a boolean",
    "Array": "an array",
    "AoT": "an array of tables",
    "InlineTable": "an inline table ({...})",
    "DateTime": "a date",
    "Date": "a date",
    "Time": "a time",
}
_FORM = {SERVERS: "[mcp_servers.NAME] tables", HOOKS: "[[hooks.EVENT]] tables"}  # the forms graphmem edits


def _named(table: Table, name: str) -> list[Part]:
    """Where ``name`` is in ``table``'s body (twice when its tables are apart)."""
    return [(key, item) for key, item in table.value.body if key is not None and key.key == name]


def _add(document: TOMLDocument, parts: Sequence[tuple[Key, Table]], key: str, name: str, item: Item) -> None:
    """Add ``name`` to the last part of ``key`` that has a ``[key...]`` header (in a dotted key's
    part it would land amid the file's top-level keys), else to a new ``[key...]`` at the end."""
    headed = [table for part_key, table in parts if not part_key.is_dotted()]
    if not headed:
        created = tomlkit.table(is_super_table=True)
        document.append(key, created)
        created.append(name, item)
        return
    headed[-1].append(name, item)
    if document.body[-1][1] is not headed[-1]:
        # Amid the file, graphmem's table brings its own blank line after it and none before:
        # the uninstall takes both away and leaves the user's tables as they were written.
        first = item[0] if isinstance(item, AoT) else item
        first.trivia.indent = first.trivia.indent.lstrip("\n")


def _set_server(
    document: TOMLDocument, before: Mapping[str, Any], entry: Mapping[str, Any], path: Path
) -> None:
    """Write graphmem's keys of ``[mcp_servers.graphmem]``; the user's own keys there
    (``required = true``) and names they added to ``env_vars`` stay, after graphmem's. An entry
    written as one table is rewritten where it is; one of dotted keys or apart in the file is
    replaced by one table."""
    parts = _tables(document, SERVERS, path)
    servers = before.get(SERVERS)
    current = servers.get(SERVER_NAME) if isinstance(servers, Mapping) else None
    found = [(holder, key, item) for _, holder in parts for key, item in _named(holder, SERVER_NAME)]
    here = found[0][2] if len(found) == 1 and not found[0][1].is_dotted() else None
    in_place = isinstance(here, Table)  # one [mcp_servers.graphmem] table: rewritten where it is
    users: Mapping[str, Any] = (
        here if isinstance(here, Table) else current if isinstance(current, Mapping) else {}
    )
    wanted = dict(entry)
    if "env_vars" in wanted:
        ours = set(wanted["env_vars"])
        names = _plain(users.get("env_vars"))
        added = [v for v in names if _env_var_name(v) not in ours] if isinstance(names, list) else []
        wanted["env_vars"] = [*wanted["env_vars"], *added]
    kept = {key: value for key, value in users.items() if key not in SERVER_KEYS}
    if current == {**wanted, **{key: _plain(value) for key, value in kept.items()}}:
        return
    table = tomlkit.table()
    for key, value in wanted.items():
        table[key] = _toml_value(key, value)
    for key, value in kept.items():
        table[key] = value
    table.add(tomlkit.nl())
    if in_place:
        found[0][0][SERVER_NAME] = table
        return
    for holder in {id(holder): holder for holder, _, _ in found}.values():  # each part once
        del holder[SERVER_NAME]
    _add(document, parts, SERVERS, SERVER_NAME, table)


def _env_var_name(value: Any) -> str | None:
    """An ``env_vars`` entry's variable: Codex takes a name or ``{name = "...", source = "..."}``."""
    name = value.get("name") if isinstance(value, Mapping) else value
    return name if isinstance(name, str) else None


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


def _set_hook(document: TOMLDocument, event: str, command: str, path: Path) -> None:
    """Make graphmem's group the one of ``event`` it should be: in place of its older one, else
    after the user's groups of the event, wherever in the file their tables are."""
    parts = _tables(document, HOOKS, path)
    found = [(table, item) for _, table in parts for _, item in _named(table, event)]
    fragments = [(table, item) for table, item in found if isinstance(item, AoT)]
    if len(fragments) != len(found):
        raise IntegrationError(
            f"hooks.{event} in {path} is not an array of tables ([[hooks.{event}]]): "
            "change it to one and run the command again; nothing was changed."
        )
    wanted = _group(event, command)
    ours = [(groups, i) for _, groups in fragments for i, group in enumerate(groups) if is_ours(group)]
    if len(ours) == 1 and _plain(ours[0][0][ours[0][1]]) == _plain(wanted):
        return
    for groups, index in reversed(ours):
        del groups[index]
    target = ours[-1][0] if ours else fragments[-1][1] if fragments else None
    if not isinstance(target, AoT):
        created = tomlkit.aot()
        created.append(wanted)
        _add(document, parts, HOOKS, event, created)
        return
    target.append(wanted)
    for table, groups in fragments:
        if groups is not target and not groups:  # a part that held only graphmem's older group
            del table[event]


def _remove(document: TOMLDocument) -> bool:
    """Take graphmem's server and hook groups out of ``document``, in every part of its tables;
    whether anything was there."""
    removed = False
    servers = [table for _, table in _parts(document, SERVERS) if isinstance(table, Table)]
    for table in servers:
        if SERVER_NAME in table:
            del table[SERVER_NAME]
            removed = True
    if removed and all(not table and table.is_super_table() for table in servers):
        del document[SERVERS]  # no [mcp_servers] header of the user's
    hooks = [table for _, table in _parts(document, HOOKS) if isinstance(table, Table)]
    removed_hooks = False
    for table in hooks:
        for event in list(table.keys()):
            groups = table[event]
            if not isinstance(groups, AoT):
                continue
            ours = [i for i, group in enumerate(groups) if is_ours(group)]
            for index in reversed(ours):
                del groups[index]
            if ours:
                removed_hooks = True
                if not groups:
                    del table[event]
    if removed_hooks and all(not table and table.is_super_table() for table in hooks):
        del document[HOOKS]  # no [hooks] header of the user's
    return removed or removed_hooks


def _last_is_ours(document: TOMLDocument) -> bool:
    """Whether the file ends with graphmem's table (its server or one of its hook groups)."""
    if not document.body:
        return False
    key, table = document.body[-1]
    if key is None or key.key not in (SERVERS, HOOKS) or not isinstance(table, Table):
        return False
    named = [(name, item) for name, item in table.value.body if name is not None]
    if not named:
        return False
    name, last = named[-1]
    if key.key == SERVERS:
        return name.key == SERVER_NAME
    return isinstance(last, AoT) and bool(last) and is_ours(last[-1])


def _plain(value: Any) -> Any:
    """A tomlkit value as plain Python (for comparing what is there with what is wanted)."""
    unwrap = getattr(value, "unwrap", None)
    return unwrap() if callable(unwrap) else value
