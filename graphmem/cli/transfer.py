"""Commands that move memories in and out of the store: export, import."""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

import click

from graphmem.cli import present
from graphmem.cli.state import CliState, pass_state


@click.command()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "markdown"], case_sensitive=False),
    default="jsonl",
    show_default=True,
    help="jsonl round-trips through import; markdown is for reading.",
)
@click.option(
    "-o",
    "--output",
    type=click.File("w", encoding="utf-8", lazy=False),
    default="-",
    help="File to write (default: stdout).",
)
@click.option(
    "--all-projects", is_flag=True, help="Every project's memories, not only this project's and global ones."
)
@pass_state
def export(state: CliState, fmt: str, output: TextIO, all_projects: bool) -> None:
    """Write memories with their entities and links to a file or stdout.

    Outside a git project, and with --all-projects, every memory is exported.

    \b
    Example:
        $ graphmem export -o memories.jsonl
        exported 42 memories, 19 entities, 7 links
    """
    summary = state.service.export(output, project=None if all_projects else state.project, fmt=fmt.lower())
    present.exported(summary)


@click.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--dry-run", is_flag=True, help="Check the file and report; change nothing.")
@pass_state
def import_(state: CliState, file: Path, dry_run: bool) -> None:
    """Read memories from FILE, a jsonl export; if any line is invalid nothing is imported.

    Memories already in the store (same id, or same text in the same scope) are
    skipped, so importing a file twice changes nothing.

    \b
    Example:
        $ graphmem import memories.jsonl
        imported 39 memories (3 already present), 19 entities, 7 links from 71 records
    """
    service = state.service
    total = 0
    if present.progress_wanted() and not dry_run:
        # A checking pass sizes the progress bar; embedding dominates the cost anyway.
        total = service.import_file(file, project=state.project, dry_run=True).memories_added
    with present.progress("importing", total) as callback:
        summary = service.import_file(file, project=state.project, dry_run=dry_run, progress=callback)
    present.imported(summary)


COMMANDS = (export, import_)
