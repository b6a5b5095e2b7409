"""Commands for agents sharing a daemon: session start/heartbeat/end/active, claim, release,
and session overrides (who forced what).

The MCP tools session_start, session_heartbeat, session_end, active_sessions, claim_item
and release_item, for scripts and people: sessions and claims live in the daemon (or a team's
PostgreSQL store), so on the embedded store these commands need one running (``graphmem
serve``) and say so otherwise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from graphmem.cli import present
from graphmem.cli.options import json_option
from graphmem.cli.state import CliState, pass_state
from graphmem.errors import GraphmemError

if TYPE_CHECKING:
    from graphmem.service.coordination import AgentSession, Claim, Override


def session_line(session: AgentSession) -> str:
    parts = [session.id, session.agent, f"since {session.started_at:%Y-%m-%d %H:%M} UTC"]
    if session.task:
        parts.append(f"task: {session.task}")
    if session.claims:
        parts.append("claims: " + ", ".join(session.claims))
    return " · ".join(parts)


def claim_line(claim: Claim) -> str:
    return f"{claim.item} · {claim.agent} ({claim.session}) · until {claim.expires_at:%Y-%m-%d %H:%M:%S} UTC"


def override_line(override: Override) -> str:
    who = override.person or "a person"  # the embedded store's one person
    what = "ended" if override.act == "end" else f"released {override.item} of"
    whose = f", {override.holder}'s" if override.holder else ""
    return f"{override.at:%Y-%m-%d %H:%M:%S} UTC · {who} {what} {override.session} ({override.agent}{whose})"


@click.group()
def session() -> None:
    """Announce, keep alive and end working sessions other agents see (needs the daemon).

    \b
    Example:
        $ graphmem session start opencode/build --task "refund bug"
        ses_5a0c2e9d71b4
        $ graphmem session end ses_5a0c2e9d71b4 --summary "Fixed the double refund in !12"
        ended ses_5a0c2e9d71b4 · summary stored as mem_0b3c1d2e4f5a6b7c
    """


@session.command("start")
@click.argument("agent")
@click.option("--task", default=None, help="What this session works on, in a few words.")
@json_option
@pass_state
def session_start(state: CliState, agent: str, task: str | None, as_json: bool) -> None:
    """Start a session for AGENT in the project and print its id.

    \b
    Example:
        $ graphmem session start opencode/build --task "refund bug"
        ses_5a0c2e9d71b4
    """
    started = state.service.session_start(agent, project=state.project, task=task)
    if as_json:
        present.echo_json(started.view())
        return
    click.echo(started.id)
    present.note(
        f"expires {started.expires_at:%H:%M:%S} UTC unless `graphmem session heartbeat {started.id}`"
    )


@session.command("heartbeat")
@click.argument("session_id", metavar="SESSION")
@click.option("--task", default=None, help="A new task description.")
@json_option
@pass_state
def session_heartbeat(state: CliState, session_id: str, task: str | None, as_json: bool) -> None:
    """Keep SESSION and its claims alive for another TTL.

    On a team's store only the person who started SESSION may: another's is refused (exit 4),
    with no --force; start a session of your own instead.

    \b
    Example:
        $ graphmem session heartbeat ses_5a0c2e9d71b4
        ses_5a0c2e9d71b4 · opencode/build · since 2026-05-01 09:12 UTC · task: refund bug
    """
    kept = state.service.session_heartbeat(session_id, task=task)
    if as_json:
        present.echo_json(kept.view())
    else:
        click.echo(session_line(kept))


@session.command("end")
@click.argument("session_id", metavar="SESSION")
@click.option("--summary", default=None, help="What was done; stored as an event memory.")
@click.option("--force", is_flag=True, help="End it even though an agent (another client) started it.")
@json_option
@pass_state
def session_end(state: CliState, session_id: str, summary: str | None, force: bool, as_json: bool) -> None:
    """End SESSION, release its claims, and store its summary as an event memory.

    A session an agent started through MCP is that agent's: ending it needs --force.

    \b
    Example:
        $ graphmem session end ses_5a0c2e9d71b4 --summary "Fixed the double refund in !12"
        ended ses_5a0c2e9d71b4 · summary stored as mem_0b3c1d2e4f5a6b7c
        $ graphmem session end ses_9b1d3f0a2c4e --force
        ended ses_9b1d3f0a2c4e
    """
    ended = state.service.session_end(session_id, summary=summary, force=force)
    if as_json:
        present.echo_json({"session": ended.session.view(), "summary_memory_id": ended.summary_memory_id})
    elif ended.summary_memory_id:
        click.echo(f"ended {ended.session.id} · summary stored as {ended.summary_memory_id}")
    else:
        click.echo(f"ended {ended.session.id}")


@session.command("active")
@click.option("--all-projects", is_flag=True, help="Sessions of every project.")
@json_option
@pass_state
def active_sessions(state: CliState, all_projects: bool, as_json: bool) -> None:
    """The agents working now on the project (or on all), with what they claim.

    \b
    Example:
        $ graphmem session active
        ses_5a0c2e9d71b4 · opencode/build · since 2026-05-01 09:12 UTC · claims: !12
    """
    found = state.service.active_sessions(project=state.project, all_projects=all_projects)
    if as_json:
        present.echo_json(
            {"sessions": [s.view() for s in found.sessions], "claims": [c.view() for c in found.claims]}
        )
        return
    for live in found.sessions:
        click.echo(session_line(live))
    if not found.sessions:
        click.echo("No live sessions.")


@session.command("overrides")
@click.option(
    "-n", "--limit", type=click.IntRange(1, 1000), default=50, show_default=True,
    help="Most overrides listed.",
)  # fmt: skip
@json_option
@pass_state
def session_overrides(state: CliState, limit: int, as_json: bool) -> None:
    """Who forced what: each `session end --force` and `release --force` of a session another
    client or person started, newest first.

    On a team's store they are kept in the database (its table agent_overrides, which no one but
    an administrator can change), with the session's person and who forced it; on the embedded
    store the daemon keeps them while it runs.

    \b
    Example:
        $ graphmem session overrides
        2026-05-01 09:40:15 UTC · bob ended ses_5a0c2e9d71b4 (opencode/build, alice's)
        2026-05-01 09:40:12 UTC · bob released !12 of ses_5a0c2e9d71b4 (opencode/build, alice's)
    """
    found = state.service.session_overrides(limit=limit)
    if as_json:
        present.echo_json({"overrides": [o.view() for o in found]})
        return
    for override in found:
        click.echo(override_line(override))
    if not found:
        click.echo("No session was ended, and no claim released, by force.")


@click.command()
@click.argument("session_id", metavar="SESSION")
@click.argument("item")
@click.option("--ttl", "ttl_seconds", type=click.IntRange(1, 86_400), default=None,
              help="Lease length in seconds (default: the session TTL).")  # fmt: skip
@json_option
@pass_state
def claim(state: CliState, session_id: str, item: str, ttl_seconds: int | None, as_json: bool) -> None:
    """Claim ITEM ('!123', '#45', a path, a task) for SESSION so other agents leave it alone.

    When another live session holds it, nothing is claimed: the holder is named and the
    exit code is 4. On a team's store only the person who started SESSION claims in it (exit 4
    otherwise, with no --force): claim with a session of your own.

    \b
    Example:
        $ graphmem claim ses_5a0c2e9d71b4 '!12'
        !12 · opencode/build (ses_5a0c2e9d71b4) · until 2026-05-01 09:17:00 UTC
    """
    made = state.service.claim_item(session_id, item, ttl_seconds=ttl_seconds)
    if as_json:
        present.echo_json(made.view())
    else:
        click.echo(claim_line(made))


@click.command()
@click.argument("session_id", metavar="SESSION")
@click.argument("item")
@click.option("--force", is_flag=True, help="Release it even though an agent (another client) holds it.")
@pass_state
def release(state: CliState, session_id: str, item: str, force: bool) -> None:
    """Release ITEM that SESSION claimed (exit 1 when it held no such claim).

    A claim of a session an agent started through MCP is that agent's: releasing it needs --force.

    \b
    Example:
        $ graphmem release ses_5a0c2e9d71b4 '!12'
        released !12
    """
    if not state.service.release_item(session_id, item, force=force):
        present.error(GraphmemError(f"{session_id} held no claim on {item}; nothing was released."))
        raise click.exceptions.Exit(1)
    click.echo(f"released {item}")


COMMANDS = (session, claim, release)
