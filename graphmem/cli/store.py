"""``graphmem migrate``: the schema of a team's PostgreSQL store (docs/team.md)."""

from __future__ import annotations

import click

from graphmem.cli.state import CliState, pass_state


@click.command()
@click.option(
    "--to",
    "target",
    type=click.IntRange(min=0),
    default=None,
    help="Migrate up or roll back to this schema version (default: the newest this graphmem knows).",
)
@click.option("--status", "show_status", is_flag=True, help="Only say the schema's version.")
@pass_state
def migrate(state: CliState, target: int | None, show_status: bool) -> None:
    """Apply the PostgreSQL store's schema migrations ([store] url or GRAPHMEM_STORE_URL).

    Each step runs in one transaction; --to N rolls back to version N (0 drops graphmem's
    tables and what they hold). The embedded store needs none of this: it migrates itself.

    \b
    Example:
        $ GRAPHMEM_STORE_URL=postgresql://graphmem@db.internal/graphmem graphmem migrate
        applied 1: memories, their edges, entities and history
        applied 2: the code graph: files, symbols and their edges
        applied 3: GitLab: merge requests, issues, epics, people and their edges
        applied 4: the branch a memory was written on
        applied 5: agent sessions and their claims
        ...
        postgresql://graphmem@db.internal:5432/graphmem is at schema version 23 (this graphmem: 23)
        $ graphmem migrate --status
        postgresql://graphmem@db.internal:5432/graphmem is at schema version 23 (this graphmem: 23)
    """
    from graphmem.app import migrate_store, store_schema
    from graphmem.settings import load_settings

    settings = load_settings(data_dir=state.data_dir)
    if not show_status:
        report = migrate_store(settings, target)
        for version, summary, up in report.applied:
            click.echo(f"{'applied' if up else 'rolled back'} {version}: {summary}")
        if not report.applied:
            click.echo("nothing to do")
    where, version, known = store_schema(settings)
    click.echo(f"{where} is at schema version {version} (this graphmem: {known})")


COMMANDS = (migrate,)
