"""Learning from agent sessions: ``graphmem ingest opencode``."""

from __future__ import annotations

import os
from dataclasses import asdict
from datetime import datetime
from pathlib import Path

import click

from graphmem.cli import present
from graphmem.cli.options import json_option, when_option
from graphmem.cli.state import CliState, pass_state


@click.group()
def ingest() -> None:
    """Learn from the sessions of an agent client (today: OpenCode).

    \b
    Example:
        graphmem ingest opencode
        graphmem ingest opencode --since 7d --json
    """


@ingest.command()
@when_option(
    "--since",
    "WHEN",
    "Sessions changed since then (90m, 12h, 7d, 2w, today, an ISO date), whatever the cursor says.",
)
@click.option(
    "--db",
    "db_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="OpenCode's database (default: [ingest] opencode_db, OPENCODE_DB, the XDG data dir).",
)
@click.option(
    "--session",
    "session_id",
    metavar="ID",
    default=None,
    help="Ingest this one session now (ses_...), finished or not.",
)
@json_option
@pass_state
def opencode(
    state: CliState, since: datetime | None, db_path: Path | None, session_id: str | None, as_json: bool
) -> None:
    """Learn from finished OpenCode sessions: decisions, blockers, procedures, preferences,
    facts, and a summary event per session with the files and refs it touched.

    Reads OpenCode's own database read-only, from where the last run stopped; a
    session still being written is picked up by a later run. Secrets are redacted
    before anything is stored. A running daemon does this on its own every
    [ingest] interval_seconds (30 s by default).

    \b
    Example:
        $ graphmem ingest opencode --since 7d
        12 sessions read: 9 ingested, 2 unchanged, 1 still active
        memories: decision 4, procedure 2, preference 1, event 9 (1 repeated) in 0.8 s
    """
    show = present.progress_wanted() and not as_json

    def progress(done: int) -> None:
        if show:
            click.echo(f"\rsessions read: {done}", nl=False, err=True)

    try:
        report = state.service.ingest_opencode(
            db_path=_absolute(db_path) if db_path else None,
            since=since,
            session_id=session_id,
            progress=progress,
        )
    finally:
        if show:
            click.echo("", err=True)
    if as_json:
        present.echo_json(asdict(report))
        return
    waiting = f", {report.sessions_pending} still active" if report.sessions_pending else ""
    skipped = f", {report.sessions_skipped} skipped (the warnings say why)" if report.sessions_skipped else ""
    click.echo(
        f"{report.sessions_read} sessions read: {report.sessions_ingested} ingested, "
        f"{report.sessions_unchanged} unchanged{waiting}{skipped}"
    )
    learned = ", ".join(f"{category} {n}" for category, n in sorted(report.memories.items())) or "none new"
    repeated = f" ({report.reinforced} repeated)" if report.reinforced else ""
    click.echo(f"memories: {learned}{repeated} in {report.seconds} s")
    if report.llm_sessions or report.llm_fallbacks:
        click.echo(
            f"LLM extraction: {report.llm_sessions} sessions, {report.llm_fallbacks} fell back to the rules"
        )
    for problem in report.errors[: present.MAX_PROBLEMS_SHOWN]:
        click.echo(f"warning: {problem}", err=True)


def _absolute(path: Path) -> str:
    """``path`` as the daemon (whose folder is not this one) can find it: absolute, its symlinks
    resolved as far as they lead. ``os.path.realpath``, not ``Path.resolve``, which raises
    ``RuntimeError`` on a symlink loop; what is wrong with the path is the service's to say
    (``Ingester.locate``), the same with a daemon or without."""
    return os.path.realpath(path.expanduser())


COMMANDS = [ingest]
