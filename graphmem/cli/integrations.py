"""Commands that connect graphmem to agent clients: install, uninstall, doctor.

They edit the client's files only; they never open the memory store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

import click

from graphmem.cli import present
from graphmem.cli.state import CliState, pass_state

if TYPE_CHECKING:
    from graphmem.adapters.opencode_config import FileChange

F = TypeVar("F", bound=Callable[..., Any])
# How long `doctor` waits for the daemon's /health: a daemon starting, loading its model or in
# an import on a busy machine answers in seconds, and one that gives no answer is not called gone.
DOCTOR_WAIT_S = 10.0


def scope_options(func: F) -> F:
    """``--global``, ``--project DIR`` and ``--dry-run``, shared by install and uninstall."""
    func = click.option(
        "--dry-run", is_flag=True, help="Print the diff of each file to change; write nothing."
    )(func)
    func = click.option(
        "--project",
        "project_dir",
        type=click.Path(exists=True, file_okay=False, path_type=Path),
        default=None,
        help="The project directory (default: the git toplevel of the current directory, or the directory).",
    )(func)
    return click.option(
        "--global", "use_global", is_flag=True, help="The user's config, for every project, instead."
    )(func)


def project_directory(state: CliState, use_global: bool, project_dir: Path | None) -> Path | None:
    """The project the options name (``--project DIR``, else the current one); None with ``--global``."""
    from graphmem.adapters.git import checkout_root

    if use_global and project_dir is not None:
        raise click.UsageError("--global and --project cannot be used together: choose one.")
    if use_global:
        return None
    if project_dir is not None:
        return project_dir.resolve()
    # The group's --project (a path inside the project) also picks the project here: the
    # checkout's own toplevel, a worktree's included, where the client reads its config.
    start = (state.project_path or Path.cwd()).expanduser().resolve()
    directory = start if start.is_dir() else start.parent
    return checkout_root(directory) or directory


def carry_out(
    changes: Sequence[FileChange],
    *,
    dry_run: bool,
    hint: str,
    nothing: str,
    check: Callable[[], None] | None = None,
) -> None:
    """Show the changes as diffs (dry run), or apply them and say what happened to each file.
    ``check`` reads the files back once written and raises when they do not say what was meant:
    its error, and not the ``hint`` of a success, is then the last word."""
    from graphmem.adapters.opencode_config import apply

    changed = [change for change in changes if change.changed]
    if dry_run:
        for change in changed:
            click.echo(change.diff(), nl=False)
        files = "1 file" if len(changed) == 1 else f"{len(changed)} files"
        present.note(f"dry run: {files} would change; nothing was written." if changed else nothing)
        return
    apply(changes)
    for change in changes:
        click.echo(f"{change.action} {change.path}")
    if check is not None:
        check()
    present.note(hint if changed else nothing)


class Described(Protocol):
    """What of graphmem a client's scope holds, as ``graphmem doctor`` says it."""

    def describe(self) -> str: ...


class ClientConfig(Protocol):
    """What each client's adapter (``graphmem.adapters.<client>_config``) offers the commands:
    the files of a scope, the uninstall's plan and the tidying after it, what is installed."""

    def project_files(self, directory: Path) -> Any: ...
    def global_files(self) -> Any: ...
    def plan_uninstall(self, files: Any) -> list[FileChange]: ...
    def tidy(self, files: Any) -> None: ...
    def installed(self, files: Any) -> Described: ...


@dataclass(frozen=True, slots=True)
class Client:
    """An agent client graphmem installs into: what install, uninstall and doctor do alike for
    each (the files a scope names, what they say, the uninstall, the doctor's two lines)."""

    name: str  # as the messages name it: "Claude Code"
    command: str  # the subcommand of install and uninstall, and doctor's name for it
    adapter: str  # the module of graphmem.adapters that reads and edits its files
    installed_hint: str  # what the user does after an install
    uninstalled_hint: str  # ... and after an uninstall

    def config(self) -> ClientConfig:
        """The client's adapter, imported when a command needs it (not when the CLI starts)."""
        return cast("ClientConfig", import_module(f"graphmem.adapters.{self.adapter}"))

    def files(self, state: CliState, use_global: bool, project_dir: Path | None) -> Any:
        """The client's files of the scope the options name: global, ``--project DIR``, or this project."""
        directory = project_directory(state, use_global, project_dir)
        config = self.config()
        return config.global_files() if directory is None else config.project_files(directory)

    def install(self, changes: Sequence[FileChange], *, dry_run: bool) -> None:
        """``carry_out`` an install into the client's files."""
        nothing = f"graphmem is already installed for {self.name} here; nothing changed."
        carry_out(changes, dry_run=dry_run, hint=self.installed_hint, nothing=nothing)

    def uninstall(
        self,
        state: CliState,
        use_global: bool,
        project_dir: Path | None,
        dry_run: bool,
        check: Callable[[Any], None] | None = None,
    ) -> None:
        """``carry_out`` the uninstall from the scope's files, then (not on a dry run) remove what
        install made and the uninstall left empty. ``check``, given the files, raises when what
        was written still holds graphmem's entries. A file the plan could not read keeps graphmem
        in it alone: the other files' changes are made, then its error is raised (``PartlyPlanned``)."""
        from graphmem.adapters.client_files import PartlyPlanned

        files = self.files(state, use_global, project_dir)
        config = self.config()
        nothing = f"graphmem is not installed for {self.name} here; nothing changed."
        try:
            changes, left = config.plan_uninstall(files), None
        except PartlyPlanned as exc:
            changes, left = exc.changes, exc  # they change something: the hint, then the error
        carry_out(
            changes,
            dry_run=dry_run,
            hint=self.uninstalled_hint,
            nothing=nothing,
            check=None if check is None else lambda: check(files),
        )
        if not dry_run:
            config.tidy(files)
        if left is not None:
            raise left

    def doctor(self, state: CliState) -> Iterator[str]:
        """What graphmem installed for the client, in this project and globally."""
        config = self.config()
        project = project_directory(state, False, None) or Path.cwd()
        found = config.installed(config.project_files(project))
        yield f"{self.command} (project {project}): {found.describe()}"
        yield f"{self.command} (global): {config.installed(config.global_files()).describe()}"


if TYPE_CHECKING:  # each adapter module is a ClientConfig: mypy checks it here
    from graphmem.adapters import claude_code_config, codex_config, opencode_config

    _ADAPTERS: tuple[ClientConfig, ...] = (opencode_config, codex_config, claude_code_config)

OPENCODE = Client(
    "OpenCode",
    "opencode",
    "opencode_config",
    installed_hint="Restart OpenCode; `opencode mcp list` should show graphmem connected.",
    uninstalled_hint="Restart OpenCode to drop graphmem's tools.",
)
CODEX = Client(
    "Codex",
    "codex",
    "codex_config",
    installed_hint="Restart Codex and trust graphmem's hooks when it asks (`/hooks`); a project's "
    ".codex/config.toml is read once you trust the project. `codex mcp list` should show graphmem.",
    uninstalled_hint="Restart Codex to drop graphmem's tools and hooks.",
)
CLAUDE_CODE = Client(
    "Claude Code",
    "claude-code",
    "claude_code_config",
    installed_hint="Restart Claude Code; `claude mcp list` should show graphmem connected.",
    uninstalled_hint="Restart Claude Code to drop graphmem's tools and hooks.",
)


@click.group()
def install() -> None:
    """Connect graphmem to an agent client (OpenCode, Claude Code, Codex): its MCP server entry, instructions
    and plugin or hooks.

    \b
    Example:
        graphmem install opencode
        graphmem install codex
        graphmem install opencode --global --dry-run
    """


@install.command(OPENCODE.command)
@scope_options
@pass_state
def install_opencode(state: CliState, use_global: bool, project_dir: Path | None, dry_run: bool) -> None:
    """Add graphmem to OpenCode: the MCP server in opencode.json(c), a section in AGENTS.md,
    and the plugin that injects memory before each model call (.opencode/plugins/graphmem.js).

    Comments and other settings in the config are kept. Running it again changes
    nothing; after an upgrade it updates what changed. With the global --data-dir, the
    server gets GRAPHMEM_DATA_DIR and the plugin has the data dir baked in. A plugin file
    of the same name that is not graphmem's stops the command (nothing is written).

    \b
    Example:
        $ graphmem install opencode
        created /home/me/shop/opencode.json
        updated /home/me/shop/AGENTS.md
        created /home/me/shop/.opencode/plugins/graphmem.js
        Restart OpenCode; `opencode mcp list` should show graphmem connected.
    """
    from graphmem.adapters import opencode_config

    files = OPENCODE.files(state, use_global, project_dir)
    entry = opencode_config.server_entry(opencode_config.graphmem_command(), state.data_dir)
    plugin = opencode_config.plugin_text(state.data_dir)
    OPENCODE.install(opencode_config.plan_install(files, entry, plugin), dry_run=dry_run)


@click.group()
def uninstall() -> None:
    """Disconnect graphmem from an agent client (OpenCode, Claude Code, Codex); memories are kept.

    \b
    Example:
        graphmem uninstall opencode
        graphmem uninstall opencode --global
    """


@uninstall.command(OPENCODE.command)
@scope_options
@pass_state
def uninstall_opencode(state: CliState, use_global: bool, project_dir: Path | None, dry_run: bool) -> None:
    """Remove graphmem's MCP server, AGENTS.md section and plugin from OpenCode's files.

    An mcp object left empty goes too, and so does a file left with nothing of its
    own. A plugin file that is not graphmem's is left alone. The memory store is not
    touched.

    \b
    Example:
        $ graphmem uninstall opencode
        updated /home/me/shop/opencode.json
        deleted /home/me/shop/AGENTS.md
        deleted /home/me/shop/.opencode/plugins/graphmem.js
        Restart OpenCode to drop graphmem's tools.
    """
    OPENCODE.uninstall(state, use_global, project_dir, dry_run)


@install.command(CODEX.command)
@scope_options
@pass_state
def install_codex(state: CliState, use_global: bool, project_dir: Path | None, dry_run: bool) -> None:
    """Add graphmem to Codex CLI: the MCP server and the memory hooks in .codex/config.toml
    ($CODEX_HOME/config.toml with --global), and a section in AGENTS.md.

    The hooks give the model the boot context once per session and each message what
    graphmem recalls for it, and teach graphmem from each session when it ends. Comments,
    order and other settings of config.toml are kept; running it again changes nothing.

    \b
    Example:
        $ graphmem install codex
        created /home/me/shop/.codex/config.toml
        updated /home/me/shop/AGENTS.md
    """
    from graphmem.adapters import codex_config, opencode_config
    from graphmem.settings import environment_variables

    files = CODEX.files(state, use_global, project_dir)
    command = opencode_config.graphmem_command()
    entry = codex_config.server_entry(command, state.data_dir, environment_variables())
    CODEX.install(
        codex_config.plan_install(files, entry, codex_config.hook_command(state.data_dir)), dry_run=dry_run
    )


@uninstall.command(CODEX.command)
@scope_options
@pass_state
def uninstall_codex(state: CliState, use_global: bool, project_dir: Path | None, dry_run: bool) -> None:
    """Remove graphmem's MCP server, hooks and AGENTS.md section from Codex's files; memories are kept.

    \b
    Example:
        $ graphmem uninstall codex
        deleted /home/me/shop/.codex/config.toml
        deleted /home/me/shop/AGENTS.md
    """
    from graphmem.adapters import codex_config

    CODEX.uninstall(state, use_global, project_dir, dry_run, check=codex_config.check_uninstalled)


@install.command(CLAUDE_CODE.command)
@scope_options
@pass_state
def install_claude_code(state: CliState, use_global: bool, project_dir: Path | None, dry_run: bool) -> None:
    """Add graphmem to Claude Code: the MCP server in .mcp.json (~/.claude.json with --global) and
    the memory hooks in .claude/settings.json (~/.claude/settings.json).

    The hooks give the model the boot context once per session and each prompt what graphmem
    recalls for it, keep what matters through compaction, and teach graphmem from each session's
    transcript. Other settings, hooks and servers are kept; running it again changes nothing.

    \b
    Example:
        $ graphmem install claude-code
        created /home/me/shop/.mcp.json
        created /home/me/shop/.claude/settings.json
    """
    from graphmem.adapters import claude_code_config, opencode_config

    files = CLAUDE_CODE.files(state, use_global, project_dir)
    entry = claude_code_config.server_entry(opencode_config.graphmem_command(), state.data_dir)
    CLAUDE_CODE.install(claude_code_config.plan_install(files, entry, state.data_dir), dry_run=dry_run)


@uninstall.command(CLAUDE_CODE.command)
@scope_options
@pass_state
def uninstall_claude_code(state: CliState, use_global: bool, project_dir: Path | None, dry_run: bool) -> None:
    """Remove graphmem's MCP server and hooks from Claude Code's files; memories are kept.

    \b
    Example:
        $ graphmem uninstall claude-code
        deleted /home/me/shop/.mcp.json
        deleted /home/me/shop/.claude/settings.json
    """
    CLAUDE_CODE.uninstall(state, use_global, project_dir, dry_run)


def doctor_daemon(state: CliState) -> Iterator[str]:
    """Whether the daemon of graphmem's data dir runs and answers."""
    from graphmem.locate import locate
    from graphmem.server.daemon_process import NoAnswer, find_daemon, health

    data_dir = locate(state.data_dir).data_dir
    info = find_daemon(data_dir)
    if info is None:
        yield f"daemon: not running for {data_dir} (a client's `graphmem mcp` starts it, or `graphmem serve`)"
        return
    answer = health(info, DOCTOR_WAIT_S)
    if answer is NoAnswer.SILENT:
        yield (
            f"daemon: pid {info.pid} at {info.url} gave no answer in {DOCTOR_WAIT_S:g} s (busy or hung): "
            "run `graphmem doctor` again, and `graphmem stop` if it still gives none"
        )
    elif answer is NoAnswer.GONE:
        yield f"daemon: pid {info.pid} does not answer at {info.url}: run `graphmem stop`"
    else:  # not healthy: e.g. its team store cannot be reached (it serves; each call says so)
        why = f", not healthy: {'; '.join(answer)}" if answer else ""
        yield f"daemon: reachable at {info.url} (pid {info.pid}, data dir {data_dir}){why}"


# One check per line group of `graphmem doctor`: the daemon, then each client.
DOCTOR_CHECKS: tuple[Callable[[CliState], Iterator[str]], ...] = (
    doctor_daemon,
    OPENCODE.doctor,
    CLAUDE_CODE.doctor,
    CODEX.doctor,
)


@click.command()
@pass_state
def doctor(state: CliState) -> None:
    """Say what graphmem installed in each agent client and whether its daemon is reachable.

    It reads the clients' files and asks the daemon's /health; it changes nothing. A config
    whose graphmem or hook Python is gone (a moved or deleted virtualenv) is marked broken,
    with the install command that fixes it.

    \b
    Example:
        $ graphmem doctor
        daemon: reachable at http://127.0.0.1:9824 (pid 4242, data dir /home/me/.local/share/graphmem)
        opencode (project /home/me/shop): MCP server in /home/me/shop/opencode.json; plugin
        /home/me/shop/.opencode/plugins/graphmem.js (graphmem-plugin 2, loads in OpenCode 1 and 2)
        opencode (global): not installed
    """
    for check in DOCTOR_CHECKS:
        for line in check(state):
            click.echo(line)


COMMANDS = (install, uninstall, doctor)
