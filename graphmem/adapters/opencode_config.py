"""OpenCode's files that ``graphmem install opencode`` changes: its config and AGENTS.md.

Installing is planned before anything is written: a list of ``FileChange`` (a file's
text before and after), which the CLI shows as a diff (``--dry-run``) or applies. An
invalid file stops the plan, so nothing is half-installed. The OpenCode plugin
(``graphmem/integrations/opencode/graphmem.js``, shipped in the package) is the third
file: copied into OpenCode's plugins directory, with the data dir baked in when
``--data-dir`` was given.

One layout serves OpenCode 1 and 2, so install never asks which one runs: both load every
``.js`` file of ``.opencode/plugins/`` (and of ``plugins/`` in the global config dir) with no
config entry, and the one plugin file carries both entry points; OpenCode 2 reads OpenCode 1's
``mcp.<name>`` entries (it migrates them). Nothing goes under OpenCode 2's ``plugins`` key,
which OpenCode 1 rejects as an unknown key. See docs/opencode.md.

The config is edited as text (``graphmem.adapters.jsonc``), so the user's comments,
trailing commas and formatting survive; files are replaced atomically, each only while it still
is the file the plan read (``client_files.check_unchanged``: a client may write it meanwhile).
Every file of a plan is read first (``client_files.read_client_file``): in a project, one that
links out of it stops the plan before anything is read or written.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
import shutil
import stat
import sys
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from importlib import resources
from pathlib import Path
from typing import Any

from graphmem.adapters import agents_md, client_programs, jsonc
from graphmem.adapters.client_files import check_unchanged, read_client_file, reinstall_fix
from graphmem.errors import IntegrationError, InvalidInputError

SCHEMA_URL = "https://opencode.ai/config.json"
SERVER_NAME = "graphmem"
MCP_PATH = ("mcp", SERVER_NAME)
# OpenCode's limit for listing a server's tools; `graphmem mcp` may first start the daemon.
MCP_TIMEOUT_MS = 10_000
DATA_DIR_VARIABLE = "GRAPHMEM_DATA_DIR"
CONFIG_NAMES = ("opencode.jsonc", "opencode.json")  # OpenCode prefers the first when both exist
AGENTS_NAME = "AGENTS.md"
PLUGIN_DIR = Path("plugins")  # under .opencode/ in a project, under the config dir globally
PLUGIN_NAME = "graphmem.js"
# The plugin's first line carries this: a file without it is the user's, never overwritten.
PLUGIN_MARKER = "graphmem plugin for OpenCode"
PLUGIN_DATA_DIR_LINE = "const INSTALLED_DATA_DIR = null;"
PLUGIN_VERSION = re.compile(r"\(graphmem-plugin (\d+)\)")
# The first plugin version with OpenCode 2's entry point (`setup`) beside OpenCode 1's (`server`).
DUAL_PLUGIN_VERSION = 2
# What diff prints after a last line that has no newline.
NO_NEWLINE_MARK = "\n\\ No newline at end of file\n"
EMPTY_CONFIG = '{\n  "$schema": "' + SCHEMA_URL + '"\n}\n'


@dataclass(frozen=True, slots=True)
class OpenCodeFiles:
    """Where one OpenCode scope (a project, or the user's global config) keeps what graphmem edits."""

    config: Path
    agents: Path
    plugin: Path
    project: Path | None = None  # what the files must stay inside; None: the user's own, links followed


def _config_in(directory: Path) -> Path:
    for name in CONFIG_NAMES:
        if (directory / name).is_file():
            return directory / name
    return directory / "opencode.json"


def project_files(directory: Path) -> OpenCodeFiles:
    """``DIR/opencode.jsonc`` (or ``opencode.json``) and ``DIR/AGENTS.md``."""
    plugin = directory / ".opencode" / PLUGIN_DIR / PLUGIN_NAME
    return OpenCodeFiles(_config_in(directory), directory / AGENTS_NAME, plugin, directory)


def global_files(environ: Mapping[str, str] | None = None) -> OpenCodeFiles:
    """The user's files in ``$XDG_CONFIG_HOME/opencode`` (default ``~/.config/opencode``)."""
    environ = os.environ if environ is None else environ
    base = Path(environ.get("XDG_CONFIG_HOME") or Path.home() / ".config").expanduser()
    directory = base / "opencode"
    return OpenCodeFiles(_config_in(directory), directory / AGENTS_NAME, directory / PLUGIN_DIR / PLUGIN_NAME)


def graphmem_command() -> list[str]:
    """The command a client runs for the stdio server, with an absolute path so its PATH does not
    matter. The client runs it in the project: ``python -m`` without ``-P`` would import a
    ``graphmem/`` folder of the project before graphmem (``graphmem/python_child.py``)."""
    found = shutil.which("graphmem")
    if found:
        return [str(Path(found).resolve()), "mcp"]
    script = Path(sys.executable).parent / ("graphmem.exe" if os.name == "nt" else "graphmem")
    if script.is_file():
        return [str(script), "mcp"]
    return [sys.executable, "-P", "-m", "graphmem", "mcp"]


def server_entry(command: Sequence[str], data_dir: Path | None = None) -> dict[str, Any]:
    """The ``mcp.graphmem`` member of OpenCode's config; ``data_dir`` pins the store."""
    entry: dict[str, Any] = {"type": "local", "command": list(command)}
    if data_dir is not None:
        entry["environment"] = {DATA_DIR_VARIABLE: str(data_dir.expanduser().resolve())}
    entry["enabled"] = True
    entry["timeout"] = MCP_TIMEOUT_MS
    return entry


def plugin_text(data_dir: Path | None = None) -> str:
    """The plugin file as installed: the packaged one, with ``data_dir`` baked in when given."""
    source = resources.files("graphmem") / "integrations" / "opencode" / PLUGIN_NAME
    text = source.read_text("utf-8")
    if data_dir is None:
        return text
    pinned = json.dumps(str(data_dir.expanduser().resolve()))
    return text.replace(PLUGIN_DATA_DIR_LINE, f"const INSTALLED_DATA_DIR = {pinned};", 1)


def is_our_plugin(text: str) -> bool:
    """Whether a file is graphmem's plugin (any version): its first line says so."""
    return PLUGIN_MARKER in text.split("\n", 1)[0]


@dataclass(frozen=True, slots=True)
class Installed:
    """What of graphmem one OpenCode scope holds, as ``graphmem doctor`` reports it."""

    files: OpenCodeFiles
    server: bool  # mcp.graphmem in the config
    plugin_version: int | None  # graphmem's plugin file and its version (None: none)
    plugin_current: bool  # the plugin file is the packaged one (its data dir aside)
    stale: tuple[str, ...] = ()  # what keeps the MCP server's program from running (client_programs)

    def describe(self) -> str:
        """One line: the MCP server, the plugin and which OpenCode versions it loads in."""
        if not self.server and self.plugin_version is None:
            return "not installed"
        parts = [f"MCP server in {self.files.config}" if self.server else "no MCP server entry"]
        if self.plugin_version is None:
            parts.append("no plugin")
        else:
            loads = "OpenCode 1 and 2" if self.plugin_version >= DUAL_PLUGIN_VERSION else "OpenCode 1 only"
            parts.append(
                f"plugin {self.files.plugin} (graphmem-plugin {self.plugin_version}, loads in {loads})"
            )
            if not self.plugin_current:
                parts.append(f"outdated: {reinstall_fix('opencode', self.files.project)}")
        if self.stale:
            parts.append(f"broken: {'; '.join(self.stale)}: {reinstall_fix('opencode', self.files.project)}")
        return "; ".join(parts)


def installed(files: OpenCodeFiles) -> Installed:
    """What graphmem installed in ``files`` (an unreadable or invalid file counts as none)."""
    try:
        config = read_client_file(files.config, files.project)
        plugin = read_client_file(files.plugin, files.project)
    except IntegrationError:
        config = plugin = None
    try:
        entry = jsonc.get_value(config, MCP_PATH) if config is not None else None
    except InvalidInputError:
        entry = None
    server = entry is not None
    command = entry.get("command") if isinstance(entry, dict) else None
    stale = client_programs.server_problems(command) if isinstance(command, list) else []
    version = None
    if plugin is not None and is_our_plugin(plugin):
        found = PLUGIN_VERSION.search(plugin.split("\n", 1)[0])
        version = int(found.group(1)) if found else 1
    current = plugin is not None and _without_data_dir(plugin) == plugin_text()
    return Installed(files, server, version, current, tuple(stale))


def _without_data_dir(text: str) -> str:
    return re.sub(
        r"^const INSTALLED_DATA_DIR = .*;$", PLUGIN_DATA_DIR_LINE, text, count=1, flags=re.MULTILINE
    )


# -- the plan ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file's text before and after; None for a file that is absent or to be deleted."""

    path: Path
    before: str | None
    after: str | None

    @property
    def changed(self) -> bool:
        return self.before != self.after

    @property
    def action(self) -> str:
        """``created``, ``updated``, ``deleted`` or ``unchanged``."""
        if not self.changed:
            return "unchanged"
        if self.before is None:
            return "created"
        return "deleted" if self.after is None else "updated"

    def diff(self) -> str:
        """A unified diff of the change (empty when nothing changes)."""
        lines = difflib.unified_diff(
            (self.before or "").splitlines(keepends=True),
            (self.after or "").splitlines(keepends=True),
            fromfile="/dev/null" if self.before is None else str(self.path),
            tofile="/dev/null" if self.after is None else str(self.path),
        )
        return "".join(line if line.endswith("\n") else line + NO_NEWLINE_MARK for line in lines)


def plan_install(
    files: OpenCodeFiles, entry: Mapping[str, Any], plugin: str | None = None
) -> list[FileChange]:
    """Set ``mcp.graphmem`` to ``entry`` in the config, write graphmem's section of AGENTS.md and
    the plugin file (``plugin``: its text; default: the packaged plugin, no data dir baked in).

    An older copy of the plugin is replaced; a different file of the same name that is not
    graphmem's stops the plan (nothing is written).
    """
    config = read_client_file(files.config, files.project)
    agents = read_client_file(files.agents, files.project)
    installed = read_client_file(files.plugin, files.project)
    if installed is not None and not is_our_plugin(installed):
        raise IntegrationError(
            f"{files.plugin} exists and is not graphmem's plugin: rename or remove it and run the "
            "command again; nothing was changed."
        )
    new_config = _edit_config(
        files.config, config or EMPTY_CONFIG, lambda text: jsonc.set_value(text, MCP_PATH, entry)
    )
    return [
        FileChange(files.config, config, new_config),
        FileChange(files.agents, agents, agents_md.with_client(agents, agents_md.OPENCODE, files.agents)),
        FileChange(files.plugin, installed, plugin_text() if plugin is None else plugin),
    ]


def plan_uninstall(files: OpenCodeFiles) -> list[FileChange]:
    """Remove ``mcp.graphmem`` (and an ``mcp`` it leaves empty), graphmem's section of AGENTS.md
    and graphmem's plugin file.

    A file left with nothing of its own (a config holding only ``$schema``, an empty
    AGENTS.md) is deleted. A plugin file that is not graphmem's is left alone.
    """
    config = read_client_file(files.config, files.project)
    agents = read_client_file(files.agents, files.project)
    new_config = config
    if config is not None:
        new_config = _edit_config(files.config, config, lambda text: jsonc.remove_value(text, MCP_PATH))
        if new_config != config and new_config == EMPTY_CONFIG:
            new_config = None
    new_agents = agents_md.without_client(agents, agents_md.OPENCODE, files.agents)
    plugin = read_client_file(files.plugin, files.project)
    new_plugin = None if plugin is not None and is_our_plugin(plugin) else plugin
    return [
        FileChange(files.config, config, new_config),
        FileChange(files.agents, agents, new_agents),
        FileChange(files.plugin, plugin, new_plugin),
    ]


def tidy(files: OpenCodeFiles) -> None:
    """After uninstall: nothing more goes. ``apply`` already removed the plugin folders that
    deleting graphmem's plugin left empty; OpenCode's config folders are OpenCode's."""


def _edit_config(path: Path, text: str, edit: Callable[[str], str]) -> str:
    try:
        return edit(text)
    except InvalidInputError as exc:
        raise IntegrationError(
            f"{path} is not valid JSON with comments ({exc}). Fix it and run the command again; "
            "nothing was changed."
        ) from None


# -- reading and writing --------------------------------------------------------------


def _writable(path: Path) -> None:
    target = path.resolve()
    directory = next((p for p in [target.parent, *target.parents] if p.exists()), None)
    if directory is not None and not directory.is_dir():
        raise IntegrationError(
            f"Cannot create {path}: {directory} is a file where a folder is needed. Rename or remove "
            f"{directory} (the client reads its files from a folder of that name) and run the command "
            "again; nothing was changed."
        )
    if target.exists() and not target.is_file():
        raise IntegrationError(
            f"Cannot change {path}: {target} is not a regular file. Move it away and run the command "
            "again; nothing was changed."
        )
    problem = None
    if target.exists() and not os.access(target, os.W_OK):
        problem = f"{target} is not a writable file"
    elif directory is not None and not os.access(directory, os.W_OK | os.X_OK):
        problem = f"cannot create files in {directory}"
    if problem is not None:
        raise IntegrationError(
            f"Cannot change {path}: {problem}. Fix its permissions (or run with --dry-run to see "
            "the change and make it by hand); nothing was changed."
        )


def _write(path: Path, text: str, ready: Callable[[], None]) -> None:
    """Replace ``path`` with ``text`` atomically (through its symlink), keeping its permissions;
    ``ready`` runs right before the rename and raises to leave the file as it is."""
    target = path.resolve()
    temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else None
        try:
            with temporary.open("x", encoding="utf-8", newline="") as handle:
                handle.write(text)
            if mode is not None:
                temporary.chmod(mode)
            ready()
            os.replace(temporary, target)
        finally:
            temporary.unlink(missing_ok=True)
    except OSError as exc:
        raise IntegrationError(
            f"Cannot write {path}: {exc.strerror or exc}. Check the permissions."
        ) from None


def _remove_empty_plugin_dirs(plugin: Path) -> None:
    """``plugins/`` (and a project's ``.opencode/``) when removing the plugin left them empty."""
    for directory in (plugin.parent, plugin.parent.parent):
        if directory.name in {PLUGIN_DIR.name, ".opencode"}:
            with contextlib.suppress(OSError):  # not empty: the user's files stay
                directory.rmdir()


def apply(changes: Iterable[FileChange]) -> None:
    """Write (or delete) every changed file, after checking that each one can be written and still
    is the file the plan read: first all of them (one changed meanwhile stops all), then each again
    right before it is replaced (``client_files.ChangedMeanwhile``)."""
    pending = [change for change in changes if change.changed]
    for change in pending:
        _writable(change.path)
    for change in pending:
        check_unchanged(change.path, change.before)
    done: list[Path] = []
    for change in pending:
        ready = partial(check_unchanged, change.path, change.before, tuple(done))
        if change.after is None and change.path.is_symlink():
            # What is left of it lives in the file the link names (AGENTS.md -> CLAUDE.md):
            # deleting the link would leave graphmem's part there, so the file is emptied.
            _write(change.path, "", ready)
        elif change.after is None:
            ready()
            try:
                change.path.unlink(missing_ok=True)
            except OSError as exc:
                raise IntegrationError(f"Cannot delete {change.path}: {exc.strerror or exc}.") from None
            if change.path.name == PLUGIN_NAME:
                _remove_empty_plugin_dirs(change.path)
        else:
            _write(change.path, change.after, ready)
        done.append(change.path)
