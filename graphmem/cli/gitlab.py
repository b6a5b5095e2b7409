"""GitLab: fetch MRs, issues and epics into the graph now."""

from __future__ import annotations

from dataclasses import asdict

import click

from graphmem.cli import present
from graphmem.cli.options import json_option
from graphmem.cli.state import CliState, pass_state
from graphmem.core.enrichment import GitLabStatus
from graphmem.errors import GitLabError


@click.command()
@click.argument("refs", nargs=-1, metavar="[REF]...")
@click.option(
    "--all",
    "everything",
    is_flag=True,
    help="Every MR, issue and epic your daemon enriches, not only those waiting.",
)
@click.option(
    "--refresh", is_flag=True, help="Fetch again even what was fetched within [gitlab] ttl_seconds."
)
@json_option
@pass_state
def enrich(state: CliState, refs: tuple[str, ...], everything: bool, refresh: bool, as_json: bool) -> None:
    """Fetch GitLab facts for merge requests, issues and epics now.

    With REFs (!12, #34, &5, group/project!12, group&5, or GitLab URLs; relative ones
    belong to the current project), fetch those. Without, fetch everything waiting in
    the enrichment queue (what memories, commits and sessions named), and what that
    finds (an MR's closing issues, their epic). The daemon does the same in the
    background; this does it now, with a progress bar on stderr.

    Counts are by outcome: fetched; unchanged (GitLab's updated_at did not move);
    fresh (fetched within [gitlab] ttl_seconds: not asked, see --refresh); missing
    (404), forbidden (403), error (GitLab failed: retried later), unresolvable
    (no project: write group/project!N) and foreign (a ref of the project's GitHub
    or Bitbucket repository: GitLab is not asked), each listed under problems;
    deferred (not tried: the token was rejected or GitLab asked to wait, said on
    stderr).

    Exits 11 when nothing got an answer because of a fault (token rejected, rate
    limit, GitLab down or unreachable); a 404 or 403 is an answer and exits 0.

    \b
    Example:
        $ graphmem enrich '!12' '#34'
        fetched 2
        $ graphmem enrich
        fetched 3, missing 1
        problems:
          #99: GitLab at https://gitlab.example.com has no issue acme/shop/backend#99 (404 Not Found), ...
    """
    if refs and everything:
        raise click.UsageError("Give REFs or --all, not both.")
    with present.running_progress("enriching", shown=not as_json) as progress:
        report = state.service.enrich(
            list(refs) or None, project=state.project, all=everything, refresh=refresh, progress=progress
        )
    if as_json:
        present.echo_json({**asdict(report), "total": report.total, "failed": report.failed})
    else:
        click.echo(present.counts(report.counts) if report.counts else "nothing to enrich")
        if report.problems:
            click.echo("problems:")
            for line in report.problems:
                click.echo(f"  {line}")
        if report.paused:
            present.note(f"stopped: {report.paused}")
    if report.failed:
        raise GitLabError(
            "Nothing could be fetched from GitLab (see above); what is stored is unchanged. "
            "Check `graphmem status`, then run graphmem enrich again."
        )


COMMANDS = [enrich]


def status_lines(found: GitLabStatus) -> list[str]:
    """What ``graphmem status`` says about GitLab (never the token)."""
    if not found.configured:
        if not found.enabled:
            return ["gitlab: off ([gitlab] enabled = false)"]
        # paused says "GitLab is not configured: set ..."; the label says it already
        how = (found.paused or "").removeprefix("GitLab is not configured: ")
        return [f"gitlab: not configured — {how}"]
    reachable = {True: "reachable", False: "unreachable", None: "not asked yet"}[found.reachable]
    lines = [
        f"gitlab: {found.url} ({reachable}); token {found.token}" + (f" ({found.user})" if found.user else "")
    ]
    if found.rate_limited_until is not None:
        lines.append(f"  rate-limited until {found.rate_limited_until:%Y-%m-%d %H:%M:%S} UTC")
    if found.paused:
        lines.append(f"  paused: {found.paused}")
    elif found.last_error:
        lines.append(f"  last error: {found.last_error}")
    lines.append(f"  waiting for enrichment: {found.pending}; by state: {present.counts(found.by_state)}")
    return lines
