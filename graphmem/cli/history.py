"""A memory's history and upkeep: history (what changed it, who, why), undo (reverse one
change) and review (what a person should confirm, edit or archive)."""

from __future__ import annotations

from datetime import datetime

import click

from graphmem.cli import present
from graphmem.cli.options import json_option, when_option
from graphmem.cli.state import CliState, pass_state
from graphmem.core.events import describe
from graphmem.core.timeparse import format_age, utc_now
from graphmem.core.views import event_view, memory_view


@click.command()
@click.argument("memory_id", metavar="ID")
@click.option(
    "-n", "--limit", type=click.IntRange(1, 500), default=100, show_default=True, help="Most events listed."
)
@json_option
@pass_state
def history(state: CliState, memory_id: str, limit: int, as_json: bool) -> None:
    """List the changes of a memory, newest first: edits (with the old text), status changes,
    supersessions, links, deletion and what the forge's rules did, each with who and why (on a
    team's store, with the person: the database role that made it).

    Each line starts with the event's id, which `graphmem undo` takes.

    \b
    Example:
        $ graphmem history mem_0c4e9a7b21d3f855
        evt_5d1c9e0a7b3f2468  2 hours ago  rule mr-merged-resolves-blocker  status active → resolved
            !123 merged on 2026-11-20
        evt_9a2b4c6d8e0f1357  3 days ago  user (alice)  text edited
            was: CI fails on arm64
    """
    events = state.service.history(memory_id, limit=limit)
    if as_json:
        present.echo_json({"memory_id": memory_id.strip(), "events": [event_view(e) for e in events]})
        return
    if not events:
        click.echo("No changes since it was remembered.")
        return
    now = utc_now()
    for event in events:
        who = f"rule {event.rule}" if event.rule else event.actor
        who += f" ({event.person})" if event.person else ""  # the role, on a team's store
        undone = f"  (undone by {event.undone_by})" if event.undone_by else ""
        click.echo(f"{event.id}  {format_age(event.at, now=now)}  {who}  {describe(event)}{undone}")
        if event.reason:
            click.echo(f"    {present.one_line(event.reason, 200)}")
        if "text" in event.before and event.kind.value != "undo":
            click.echo(f"    was: {present.one_line(str(event.before['text']), 200)}")


@click.command()
@click.argument("event_id", metavar="EVENT_ID")
@pass_state
def undo(state: CliState, event_id: str) -> None:
    """Reverse one change of a memory exactly (an EVENT_ID from `graphmem history`, or the
    beginning of one: at least 8 characters, evt_7bf2, when no other event's id starts so).

    Refused when the change was undone already, or when the memory changed since in what
    the change touched (undo the later change first). The undo is in the history too.

    \b
    Example:
        $ graphmem undo evt_5d1c9e0a7b3f2468
        undid evt_5d1c9e0a7b3f2468 on mem_0c4e9a7b21d3f855: status resolved → active
    """
    wanted = event_id.strip()
    done = state.service.undo(state.service.expand_id(wanted) if wanted.startswith("evt_") else wanted)
    click.echo(f"undid {done.undoes} on {done.memory_id}: {describe(done)}")


@click.command()
@when_option(
    "--older-than",
    "AGE",
    "Call a memory old when unchanged since then: 180d (the default), 1y or an ISO date.",
)
@click.option(
    "-n", "--limit", type=click.IntRange(1, 1000), default=50, show_default=True, help="Most memories listed."
)
@json_option
@pass_state
def review(state: CliState, older_than: datetime | None, limit: int, as_json: bool) -> None:
    """List the memories to look at again, each with why: expired (or expiring within a week),
    contradicted, possibly stale (the code they are about changed), unconfirmed (learned from a
    session and never repeated, or low trust) or old. Confirm one by remembering it again,
    change it with `graphmem edit`, set it aside with `graphmem archive`.

    \b
    Example:
        $ graphmem review
        mem_5e2a9c0d1b3f4a68  [blocker] (archived)  Staging is frozen for the audit
            expired 2 days ago
        mem_0c4e9a7b21d3f855  [decision]  Refunds round half-up
            contradicted by mem_71b2e0d9c3a4f6e8
    """
    items = state.service.review(project=state.project, older_than=older_than, limit=limit)
    now = utc_now()
    if as_json:
        shown = [{**memory_view(i.memory, now=now), "reasons": list(i.reasons)} for i in items]
        present.echo_json({"memories": shown})
        return
    if not items:
        click.echo("Nothing to review.")
        return
    for item in items:
        status = "" if item.memory.status.value == "active" else f" ({item.memory.status.value})"
        text = present.one_line(item.memory.text, 100)
        click.echo(f"{item.memory.id}  [{item.memory.category.value}]{status}  {text}")
        for reason in item.reasons:
            click.echo(f"    {reason}")


COMMANDS = (history, undo, review)
