"""Commands that connect graphmem to agent clients: install, uninstall, doctor.

They edit the client's files only; they never open the memory store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from graphmem.cli import present
from graphmem.cli.state import CliState, pass_state

if TYPE_CHECKING:
    from graphmem.adapters.claude_code_config import ClaudeCodeFiles
    from graphmem.adapters.codex_config import CodexFiles
    from graphmem.adapters.opencode_config import FileChange, OpenCodeFiles

F = TypeVar("F", bound=Callable[..., Any])

INSTALLED_HINT = "Restart OpenCode; `opencode mcp list` should show graphmem connected."


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


def opencode_files(state: CliState, use_global: bool, project_dir: Path | None) -> OpenCodeFiles:
    """The files of the scope the options name: global, ``--project DIR``, or the current project."""
    from graphmem.adapters import opencode_config

    directory = project_directory(state, use_global, project_dir)
    return opencode_config.global_files() if directory is None else opencode_config.project_files(directory)


def carry_out(changes: Sequence[FileChange], *, dry_run: bool, hint: str, nothing: str) -> None:
    """Show the changes as diffs (dry run), or apply them and say what happened to each file."""
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
    present.note(hint if changed else nothing)


def install_into(client: str, changes: Sequence[FileChange], *, dry_run: bool, hint: str) -> None:
    """``carry_out`` an install into ``client``'s files; ``hint`` says what the user does next."""
    nothing = f"graphmem is already installed for {client} here; nothing changed."
    carry_out(changes, dry_run=dry_run, hint=hint, nothing=nothing)


def uninstall_from(
    client: str,
    changes: Sequence[FileChange],
    *,
    dry_run: bool,
    hint: str,
    tidy: Callable[[], None] | None = None,
) -> None:
    """``carry_out`` an uninstall from ``client``'s files; ``hint`` says what the user does next.
    ``tidy`` then removes what install made and the uninstall left empty (not on a dry run)."""
    nothing = f"graphmem is not installed for {client} here; nothing changed."
    carry_out(changes, dry_run=dry_run, hint=hint, nothing=nothing)
    if tidy is not None and not dry_run:
        tidy()


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


@install.command("opencode")
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

    files = opencode_files(state, use_global, project_dir)
    entry = opencode_config.server_entry(opencode_config.graphmem_command(), state.data_dir)
    plugin = opencode_config.plugin_text(state.data_dir)
    install_into(
        "OpenCode", opencode_config.plan_install(files, entry, plugin), dry_run=dry_run, hint=INSTALLED_HINT
    )


@click.group()
def uninstall() -> None:
    """Disconnect graphmem from an agent client (OpenCode, Claude Code, Codex); memories are kept.

    \b
    Example:
        graphmem uninstall opencode
        graphmem uninstall opencode --global
    """


@uninstall.command("opencode")
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
    from graphmem.adapters import opencode_config

    files = opencode_files(state, use_global, project_dir)
    uninstall_from(
        "OpenCode",
        opencode_config.plan_uninstall(files),
        dry_run=dry_run,
        hint="Restart OpenCode to drop graphmem's tools.",
    )


CODEX_INSTALLED_HINT = (
    "Restart Codex and trust graphmem's hooks when it asks (`/hooks`); a project's .codex/config.toml "
    "is read once you trust the project. `codex mcp list` should show graphmem."
)


def codex_files(state: CliState, use_global: bool, project_dir: Path | None) -> CodexFiles:
    """Codex's files of the scope the options name: ``$CODEX_HOME`` (``--global``) or the project."""
    from graphmem.adapters import codex_config

    directory = project_directory(state, use_global, project_dir)
    return codex_config.global_files() if directory is None else codex_config.project_files(directory)


@install.command("codex")
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

    files = codex_files(state, use_global, project_dir)
    command = opencode_config.graphmem_command()
    entry = codex_config.server_entry(command, state.data_dir, environment_variables())
    install_into(
        "Codex",
        codex_config.plan_install(files, entry, codex_config.hook_command(state.data_dir)),
        dry_run=dry_run,
        hint=CODEX_INSTALLED_HINT,
    )


@uninstall.command("codex")
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

    files = codex_files(state, use_global, project_dir)
    uninstall_from(
        "Codex",
        codex_config.plan_uninstall(files),
        dry_run=dry_run,
        hint="Restart Codex to drop graphmem's tools and hooks.",
        tidy=partial(codex_config.tidy, files),
    )


def claude_code_files(state: CliState, use_global: bool, project_dir: Path | None) -> ClaudeCodeFiles:
    """Claude Code's files of the scope the options name: global, ``--project DIR``, or this project."""
    from graphmem.adapters import claude_code_config

    directory = project_directory(state, use_global, project_dir)
    return (
        claude_code_config.global_files()
        if directory is None
        else claude_code_config.project_files(directory)
    )


@install.command("claude-code")
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

    files = claude_code_files(state, use_global, project_dir)
    entry = claude_code_config.server_entry(opencode_config.graphmem_command(), state.data_dir)
    install_into(
        "Claude Code",
        claude_code_config.plan_install(files, entry, state.data_dir),
        dry_run=dry_run,
        hint="Restart Claude Code; `claude mcp list` should show graphmem connected.",
    )


@uninstall.command("claude-code")
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
    from graphmem.adapters import claude_code_config

    files = claude_code_files(state, use_global, project_dir)
    uninstall_from(
        "Claude Code",
        claude_code_config.plan_uninstall(files),
        dry_run=dry_run,
        hint="Restart Claude Code to drop graphmem's tools and hooks.",
        tidy=partial(claude_code_config.tidy, files),
    )


def doctor_claude_code(state: CliState) -> Iterator[str]:
    """What graphmem installed for Claude Code, in this project and globally."""
    from graphmem.adapters import claude_code_config

    project = project_directory(state, False, None) or Path.cwd()
    found = claude_code_config.installed(claude_code_config.project_files(project))
    yield f"claude-code (project {project}): {found.describe()}"
    found = claude_code_config.installed(claude_code_config.global_files())
    yield f"claude-code (global): {found.describe()}"


def doctor_daemon(state: CliState) -> Iterator[str]:
    """Whether the daemon of graphmem's data dir runs and answers."""
    from graphmem.locate import locate
    from graphmem.server.daemon_process import find_daemon, health

    data_dir = locate(state.data_dir).data_dir
    info = find_daemon(data_dir)
    reasons = None if info is None else health(info)
    if info is None:
        yield f"daemon: not running for {data_dir} (a client's `graphmem mcp` starts it, or `graphmem serve`)"
    elif reasons is None:
        yield f"daemon: pid {info.pid} does not answer at {info.url}: run `graphmem stop`"
    else:  # not healthy: e.g. its team store cannot be reached (it serves; each call says so)
        why = f", not healthy: {'; '.join(reasons)}" if reasons else ""
        yield f"daemon: reachable at {info.url} (pid {info.pid}, data dir {data_dir}){why}"


def doctor_opencode(state: CliState) -> Iterator[str]:
    """What graphmem installed for OpenCode, in this project and globally."""
    from graphmem.adapters import opencode_config

    project = project_directory(state, False, None) or Path.cwd()
    found = opencode_config.inspect(opencode_config.project_files(project))
    yield f"opencode (project {project}): {found.describe()}"
    yield f"opencode (global): {opencode_config.inspect(opencode_config.global_files()).describe()}"


def doctor_codex(state: CliState) -> Iterator[str]:
    """What graphmem installed for Codex, in this project and in ``$CODEX_HOME``."""
    from graphmem.adapters import codex_config

    project = project_directory(state, False, None) or Path.cwd()
    found = codex_config.installed(codex_config.project_files(project))
    yield f"codex (project {project}): {found.describe()}"
    yield f"codex (global): {codex_config.installed(codex_config.global_files()).describe()}"


# One check per line group of `graphmem doctor`: the daemon, then each client.
DOCTOR_CHECKS: tuple[Callable[[CliState], Iterator[str]], ...] = (
    doctor_daemon,
    doctor_opencode,
    doctor_claude_code,
    doctor_codex,
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
