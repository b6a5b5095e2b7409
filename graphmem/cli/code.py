"""The code graph: bootstrap a repository."""

from __future__ import annotations

import signal
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import click

from graphmem.cli import present
from graphmem.cli.options import json_option, seconds_option, whole_number_option
from graphmem.cli.state import CliState, pass_state

if TYPE_CHECKING:
    from graphmem.service.results import BootstrapReport

MOVES_PRINTED = 5  # moves described under the summary (--json has up to 20)
INTERRUPTED_EXIT = 130  # a shell's code for a command stopped by Ctrl-C


@click.command()
@click.argument("path", required=False, type=click.Path(exists=True, file_okay=False, path_type=Path))
@whole_number_option(
    "--history", 0, 100_000, default=500, help="Most recent commits to learn from (0: none)."
)
@click.option("--watch", is_flag=True, help="Keep scanning for changes until Ctrl-C.")
@seconds_option(
    "--interval",
    0.1,
    3600,
    default=2.0,
    help="With --watch: seconds between scans (a change is picked up once it is this old).",
)
@json_option
@pass_state
def bootstrap(
    state: CliState, path: Path | None, history: int, watch: bool, interval: float, as_json: bool
) -> None:
    """Scan a repository into files, symbols, calls and imports; its docs into facts
    and directives; its recent commits into events. Run it again any time: unchanged
    files cost nothing.

    PATH defaults to the current project (the git toplevel of the current directory).
    The project's code graph is its default branch's: a checkout on another branch is
    refused, so that a branch never replaces what every checkout reads.
    With --watch it then re-scans every --interval seconds: each pass costs a stat per
    file, and only changed files are parsed.

    \b
    Example:
        $ graphmem bootstrap
        412 files indexed (37 parsed, 375 unchanged), 0 removed, 50 skipped in 1.8 s
        2,118 symbols; calls: import 1,204, self 388, same_file 240, unique_name 97; 655 imports
        facts: 12 added, 1 updated, 0 archived, 1 proposed (`graphmem review`); 25 commits
        skipped, generated (2): api/user_pb2.py, web/app.min.js
        skipped, vendored (48): dist/app.js, dist/app.css, dist/sw.js, dist/vue.js, out/main.js, and 43 more
        vectors: 37 memories embedded in 0.6 s

    With no daemon running, it then embeds the facts and commits it stored, so that the
    recalls after it search them by meaning at once (a daemon's worker does this in the
    background). Ctrl-C leaves the rest for later: recall searches them by their words.
    """
    root = path or (Path(state.project) if state.project else Path.cwd())
    try:
        with present.running_progress("scanning", shown=not as_json) as progress:
            report = state.service.bootstrap(root.resolve(), history=history, progress=progress)
    except KeyboardInterrupt:
        click.echo(
            "\nbootstrap interrupted: what it stored is kept and answers (through a daemon, the scan "
            "goes on there); run `graphmem bootstrap` again to finish (unchanged files cost nothing).",
            err=True,
        )
        raise click.exceptions.Exit(INTERRUPTED_EXIT) from None
    if as_json:
        present.echo_json(asdict(report) | {"embedded": _embed_backlog(state, report, shown=False)})
        return
    _print_report(report)
    _embed_backlog(state, report, shown=True)
    if watch:
        _watch(state, root.resolve(), interval)


def _print_report(report: BootstrapReport) -> None:
    calls = ", ".join(f"{kind} {n:,}" for kind, n in sorted(report.calls.items(), key=lambda kv: -kv[1]))
    left_out = sum(report.skipped.values())
    click.echo(
        f"{_count(report.files, 'file')} indexed ({report.parsed:,} parsed, {report.unchanged:,} unchanged), "
        f"{report.removed:,} removed, {left_out:,} skipped in {report.seconds} s"
    )
    if report.parsed or report.removed:
        click.echo(f"{report.symbols:,} symbols; calls: {calls or 'none'}; {report.imports:,} imports")
    else:  # the edges are counted when a pass builds them again
        click.echo(f"{report.symbols:,} symbols, their calls and imports unchanged since the last scan")
    if report.parse_errors:
        worst = ", ".join(f"{path} ({n:,})" for path, n in report.parse_error_files)
        click.echo(f"syntax errors: {report.parse_errors:,} in {worst} (what parses is indexed)")
    click.echo(
        f"facts: {report.facts_added} added, {report.facts_updated} updated, "
        f"{report.facts_archived} archived"
        + (f", {report.facts_proposed} proposed (`graphmem review`)" if report.facts_proposed else "")
        + f"; {_count(report.commits, 'commit')}"
    )
    if report.moved_symbols or report.moved_files or report.ambiguous_moves:
        click.echo(
            f"moved: {_count(report.moved_symbols, 'symbol')}, {_count(report.moved_files, 'file')}; "
            f"{_count(report.memories_moved, 'memory link')} followed them"
            + (f"; {report.ambiguous_moves:,} ambiguous, left alone" if report.ambiguous_moves else "")
        )
        for line in report.moves[:MOVES_PRINTED]:
            click.echo(f"  {line}")
    if report.renamed_from is not None:
        click.echo(
            f"renamed: the code graph kept under {report.renamed_from} is now {report.project}'s; "
            f"{_count(report.links_followed, 'memory link')} followed it"
            + (f", {report.links_kept:,} kept on code it no longer has" if report.links_kept else "")
        )
    for why, n in sorted(report.skipped.items()):
        click.echo(f"skipped, {why} ({n:,}): {_named(report.skipped_files.get(why, []), n)}")
    for note in report.notes:
        click.echo(f"note: {note}", err=True)


def _named(paths: list[str], count: int) -> str:
    """The paths a report names of ``count`` files, and how many more it did not."""
    more = count - len(paths)
    if not paths:  # a daemon of an older version, which named none
        return "not named"
    return ", ".join(paths) + (f", and {more:,} more" if more > 0 else "")


def _embed_backlog(state: CliState, report: BootstrapReport, *, shown: bool) -> int:
    """Embed now what the bootstrap left waiting for its vector, when no daemon's worker will:
    otherwise each recall after it would embed half a second's share, loading the model's
    full-precision session for it (1.6-2.3 s and 600-715 MB a recall, for about eight recalls
    after 500 commits, instead of 0.8 s and 310 MB). How many it embedded."""
    service = state.service
    if not report.pending_vectors:
        return 0
    if not service.embeds_on_read:
        if shown:
            waiting = _count(report.pending_vectors, "memory")
            click.echo(f"vectors: the daemon embeds {waiting} in the background")
        return 0
    started = time.monotonic()
    done = 0
    if shown and not present.progress_wanted():  # no bar on a pipe: say why the command waits
        waiting = _count(report.pending_vectors, "memory")
        click.echo(f"embedding {waiting} for search by meaning (Ctrl-C leaves them for later)", err=True)
    try:
        with present.running_progress("embedding", shown=shown) as progress:

            def step(batch: int) -> None:
                nonlocal done
                done += batch
                progress(done, report.pending_vectors)

            embedded = service.embed_pending(step)
    except KeyboardInterrupt:
        click.echo(
            f"\nembedding interrupted: {_count(report.pending_vectors - done, 'memory')} still wait for "
            "their vector; recall searches them by their words meanwhile and embeds a share each time "
            "(run `graphmem bootstrap` again to embed them all now).",
            err=True,
        )
        raise click.exceptions.Exit(INTERRUPTED_EXIT) from None
    if shown:
        click.echo(f"vectors: {_count(embedded, 'memory')} embedded in {time.monotonic() - started:.1f} s")
    return embedded


def _count(n: int, noun: str) -> str:
    plural = f"{noun[:-1]}ies" if noun.endswith("y") else f"{noun}s"
    return f"{n:,} {noun if n == 1 else plural}"


def _watch(state: CliState, root: Path, interval: float) -> None:
    """Scan every ``interval`` seconds until Ctrl-C (or SIGTERM); a pass is never cut short."""
    stop = threading.Event()

    def request_stop(signum: int, frame: object) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    click.echo(f"watching {root} (Ctrl-C stops)", err=True)
    try:
        while not stop.wait(interval):
            report = state.service.bootstrap(root, history=0)
            if report.pending_vectors and state.service.embeds_on_read:
                state.service.embed_pending()  # the facts of changed docs: no one else may open the store
            if report.parsed or report.removed:
                stamp = time.strftime("%H:%M:%S")
                click.echo(f"{stamp} {report.parsed} parsed, {report.removed} removed in {report.seconds} s")
                sys.stdout.flush()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    click.echo("stopped watching", err=True)


COMMANDS = [bootstrap]
