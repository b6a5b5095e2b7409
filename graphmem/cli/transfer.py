"""Commands that move memories in and out of the store: export, import."""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

import click
from click.core import ParameterSource

from graphmem.cli import present
from graphmem.cli.state import CliState, pass_state

if TYPE_CHECKING:
    from graphmem.service.results import ImportSummary


@click.command()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "markdown"], case_sensitive=False),
    default="jsonl",
    show_default=True,
    help="jsonl round-trips through import; markdown is for reading (with --to: only MEMORY.md).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
    default="-",
    help="File to write (default: stdout).",
)
@click.option(
    "--all-projects", is_flag=True, help="Every project's memories, not only this project's and global ones."
)
@click.option(
    "--project",
    "repository",
    is_flag=True,
    help="Only what the project (global --project PATH, else the current directory) shares with its "
    "team, with project-relative paths (no global memories).",
)
@click.option(
    "--to",
    "directory",
    type=click.Path(file_okay=False, path_type=Path, resolve_path=True),
    default=None,
    help="Write the project export into this folder as memories.jsonl and MEMORY.md (implies --project).",
)
@click.option(
    "--force",
    is_flag=True,
    help="With --to: replace DIR/memories.jsonl even when it holds memories this store lacks or has an "
    "older copy of (a teammate's, not imported yet), or is invalid; without it the export stops and says "
    "to run `graphmem import DIR` first.",
)
@click.pass_context
def export(
    ctx: click.Context,
    fmt: str,
    output: Path,
    all_projects: bool,
    repository: bool,
    directory: Path | None,
    force: bool,
) -> None:
    """Write memories with their entities and links to a file, stdout or a folder.

    Outside a git project, and with --all-projects, every memory is exported.

    -o FILE is written whole or not at all (a new file beside it, renamed over
    it). It must be a regular file or a new name: a FIFO, device, socket or
    symbolic link is refused before the store is opened, and a link is left as
    it is. To write into a pipe or device, export to stdout and redirect it.

    With --project, only the memories this project shares with its team:
    project-scope, not archived, not low-trust, no conversation, nothing
    `graphmem bootstrap` makes from the repository itself; paths are
    project-relative and the output is the same bytes for the same memories.
    With --to DIR, that export goes to DIR/memories.jsonl and a generated
    DIR/MEMORY.md: commit them, and teammates `graphmem import DIR`.

    \b
    Example:
        $ graphmem export -o memories.jsonl
        exported 42 memories, 19 entities, 7 links
        $ graphmem export --project --to .graphmem/
        exported 12 memories, 5 entities, 2 links to /home/me/shop/.graphmem: wrote memories.jsonl, MEMORY.md
    """
    state: CliState = ctx.obj
    if all_projects and (repository or directory is not None):
        raise click.UsageError("--all-projects exports every project: it cannot go with --project or --to.")
    if directory is not None and ctx.get_parameter_source("output") is not ParameterSource.DEFAULT:
        raise click.UsageError("Give --to (a folder) or --output (a file), not both.")
    if force and directory is None:
        raise click.UsageError("--force only applies to --to.")
    from graphmem.service.file_access import check_user_file, write_user_file

    if directory is not None:
        _export_to_folder(state, directory, fmt.lower(), force)
        return
    if str(output) != "-":
        check_user_file(output)  # a FIFO, device or link refused before the store is opened
    project = None if all_projects else state.project
    buffer = io.StringIO()
    summary = state.service.export(buffer, project=project, fmt=fmt.lower(), repository=repository)
    if str(output) == "-":
        click.echo(buffer.getvalue(), nl=False)
    else:
        write_user_file(output, buffer.getvalue())  # the CLI writes where the user says
    present.exported(summary)


def _export_to_folder(state: CliState, directory: Path, fmt: str, force: bool) -> None:
    """The project's shared memories into ``directory``: written by the CLI (the user chose the
    folder), from the text the service (or the daemon) renders."""
    from graphmem.service.file_access import REPOSITORY_FILE, read_if_present, write_user_folder
    from graphmem.service.repository_export import folder_label

    current = None if force or fmt != "jsonl" else read_if_present(directory / REPOSITORY_FILE)
    shared = state.service.export_repository(
        project=state.project,
        fmt=fmt,
        force=force,
        current=current,
        folder=folder_label(directory, state.project or ""),
    )
    from graphmem.adapters.data_dir import user_umask

    # Files meant to be committed: made as the user's umask makes files (git records no more).
    written, unchanged = write_user_folder(directory, shared.files, 0o666 & ~user_umask())
    present.note(
        f"exported {present.quantity(shared.memories, 'memory', 'memories')}, "
        f"{present.quantity(shared.entities, 'entity', 'entities')}, "
        f"{present.quantity(shared.links, 'link', 'links')} to {directory}: "
        + (f"wrote {', '.join(Path(p).name for p in written)}" if written else "")
        + ("; " if written and unchanged else "")
        + (f"{', '.join(Path(p).name for p in unchanged)} unchanged" if unchanged else "")
    )


@click.command("import")
@click.argument("path", metavar="FILE|DIR", type=click.Path(path_type=Path))
@click.option("--dry-run", is_flag=True, help="Check the file and report; change nothing.")
@pass_state
def import_(state: CliState, path: Path, dry_run: bool) -> None:
    """Read memories from a jsonl export FILE, or DIR/memories.jsonl; all valid or nothing imported.

    Memories already in the store (same id, or same text in the same scope) are
    skipped, so importing a file twice changes nothing; a memory whose id is
    present but whose copy in the file is newer (a teammate resolved or
    superseded it) is updated. Project-relative paths of a `--project` export
    are re-rooted at this project's checkout.

    \b
    Example:
        $ graphmem import memories.jsonl
        imported 39 memories (3 already present), 19 entities, 7 links from 71 records
        $ git pull && graphmem import .graphmem/
        imported 2 memories (10 already present, 1 updated), 3 entities, 1 link from 18 records
    """
    from graphmem.service.file_access import read_user_file

    # The CLI reads what the user names; the service gets its bytes, and decodes a line at a time.
    file, data = read_user_file(path)
    name = _named(file)
    service = state.service
    total = 0
    if present.progress_wanted() and not dry_run:
        # A checking pass sizes the progress bar; embedding dominates the cost anyway.
        total = service.import_text(data, name=name, project=state.project, dry_run=True).memories_added
    with present.progress("importing", total) as callback:
        summary = service.import_text(
            data, name=name, project=state.project, dry_run=dry_run, progress=callback
        )
    _imported(summary)


def _named(file: Path) -> str:
    """The name an import of ``file`` goes by (its memories' ``import:NAME``, its errors): the
    file's absolute path, with or without a daemon, whatever its size, as the daemon names a file
    an agent imports. The path as typed (``../all.jsonl``) would mean nothing once the shell that
    typed it has moved on, and a base name alone would make every team's ``.graphmem/`` import
    ``memories.jsonl``."""
    try:
        return str(file.resolve())
    except (OSError, RuntimeError):  # a link loop, a working directory gone since the file was read
        return str(file)


def _imported(summary: ImportSummary) -> None:
    verb = "would import" if summary.dry_run else "imported"
    updated = f", {summary.memories_updated} updated" if summary.memories_updated else ""
    click.echo(
        f"{verb} {present.quantity(summary.memories_added, 'memory', 'memories')} "
        f"({summary.memories_skipped} already present{updated}), "
        f"{present.quantity(summary.entities, 'entity', 'entities')}, "
        f"{present.quantity(summary.links, 'link', 'links')} "
        f"from {present.quantity(summary.records, 'record', 'records')}"
    )
    if summary.proposed:
        rules = present.quantity(summary.proposed, "directive or preference", "directives and preferences")
        click.echo(
            f"{rules} {'would arrive' if summary.dry_run else 'arrived'} as proposals: an import never "
            "makes a rule. `graphmem review` lists them; `graphmem confirm ID` makes one yours."
        )
    if summary.changes_proposed:
        changes = present.quantity(summary.changes_proposed, "change", "changes")
        arrived = "would arrive" if summary.dry_run else "arrived"
        click.echo(
            f"{changes} to memories you wrote or confirmed {arrived} "
            "as proposals beside them: yours stay in force. `graphmem review` lists them; "
            "`graphmem confirm ID` takes one."
        )
    if summary.links_refused:
        links = present.quantity(summary.links_refused, "link", "links")
        click.echo(
            f"{links} {'would be' if summary.dry_run else 'were'} left out: each would supersede a memory "
            "you wrote or confirmed, which only you replace (`graphmem link NEW OLD --kind supersedes`), "
            "or hide one your team sees behind one only you see."
        )


COMMANDS = (export, import_)
