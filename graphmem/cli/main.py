"""The ``graphmem`` group: global options, the shared state, error presentation."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import click

from graphmem.cli import (
    bench,
    code,
    gitlab,
    ingest,
    integrations,
    maintenance,
    memories,
    retrieval,
    server,
    transfer,
)
from graphmem.cli.present import error
from graphmem.cli.state import CliState, ServiceFactory, open_default_service
from graphmem.errors import GraphmemError

# Tests set this to build the service with a fake embedder; None means the real one.
SERVICE_FACTORY: ServiceFactory | None = None


class GraphmemGroup(click.Group):
    """Presents graphmem's own errors as one line and exits with their code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except GraphmemError as exc:
            error(exc)
            ctx.exit(exc.exit_code)


def configure_logging(verbosity: int) -> None:
    """Log graphmem's messages to stderr: -v for info, -vv for debug."""
    if verbosity <= 0:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger = logging.getLogger("graphmem")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO if verbosity == 1 else logging.DEBUG)


@click.group(cls=GraphmemGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the store lives (default: GRAPHMEM_DATA_DIR, the config file, or the user data dir).",
)
@click.option(
    "--project",
    "project_path",
    type=click.Path(exists=True, path_type=Path),
    default=None,
    help="A path inside the project; its git toplevel is the project (default: the current directory).",
)
@click.option("-v", "--verbose", count=True, help="Log to stderr: -v info, -vv debug.")
@click.version_option(package_name="graphmem", prog_name="graphmem")
@click.pass_context
def cli(ctx: click.Context, data_dir: Path | None, project_path: Path | None, verbose: int) -> None:
    """Local knowledge-graph memory for coding agents.

    Remember decisions, blockers and facts as you work; recall them later by
    meaning, words, or the files, MRs and issues they are about.

    \b
    Example:
        graphmem remember -c decision "We use Kùzu for the graph store"
        graphmem recall "which graph database"
    """
    configure_logging(verbose)
    state = CliState(data_dir, project_path, SERVICE_FACTORY or open_default_service)
    ctx.obj = state
    ctx.call_on_close(state.close)


for module in (memories, retrieval, code, transfer, maintenance, integrations, bench, server, ingest, gitlab):
    for command in module.COMMANDS:
        cli.add_command(command)


def main() -> None:
    """The ``graphmem`` console script."""
    cli(prog_name="graphmem")


if __name__ == "__main__":
    main()
