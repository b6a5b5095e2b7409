"""Commands that write or read single memories: remember, show, list, edit, unresolve, links."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

import click

from graphmem.cli import present
from graphmem.cli.options import (
    CATEGORY_CHOICE,
    LINK_KIND_CHOICE,
    STATUS_CHOICE,
    F,
    categories_option,
    json_option,
    read_text,
    since_option,
)
from graphmem.cli.state import CliState, pass_state
from graphmem.core.models import Category, MemoryRecord, Scope, Status
from graphmem.core.timeparse import parse_until, utc_now

if TYPE_CHECKING:
    from graphmem.service.results import RememberResult


@click.command()
@click.argument("text")
@click.option(
    "-c",
    "--category",
    type=CATEGORY_CHOICE,
    default=Category.FACT.value,
    show_default=True,
    help="What kind of knowledge this is.",
)
@click.option(
    "--scope",
    type=click.Choice(["global", "project"], case_sensitive=False),
    default=None,
    help=(
        "Who sees it (default: project inside a git repository; global outside, and for a "
        "preference that names no file or symbol of the project)."
    ),
)
@click.option("--supersedes", metavar="ID", default=None, help="The memory this one replaces.")
@click.option("--session", metavar="ID", default=None, help="Session id: chains memories of one session.")
@click.option(
    "--expires",
    metavar="WHEN",
    default=None,
    help="When it stops being true: 14d, 12h, 2w, 3mo or an ISO date; then it leaves recall and context.",
)
@json_option
@pass_state
def remember(
    state: CliState,
    text: str,
    category: str,
    scope: str | None,
    supersedes: str | None,
    session: str | None,
    expires: str | None,
    as_json: bool,
) -> None:
    """Store TEXT as a memory and print its id (TEXT "-" reads standard input).

    Repeating a memory reinforces the existing one; a decision on the same
    subject as an older decision supersedes it. Written while the checkout is on a
    branch other than the default, the memory is seen on that branch until its MR merges.

    \b
    Example:
        $ graphmem remember -c decision "Payments retry 3 times with backoff, see !123"
        mem_3f9a1c0b7d2e4a51
        about: !123
        $ graphmem remember -c blocker "Staging is frozen for the audit" --expires 14d
    """
    expires_at = parse_until(expires, now=utc_now()) if expires is not None else None
    result = state.service.remember(
        read_text(text),
        category=category,
        scope=scope,
        project=state.project,
        supersedes=supersedes,
        session=session,
        expires_at=expires_at,
        branch=state.branch,
    )
    if as_json:
        present.echo_json(present.remembered_json(result, now=utc_now()))
        return
    present.remembered(result)
    if scope is None and state.project and result.created and result.memory.scope is Scope.GLOBAL:
        present.note(_private_note(result) if result.private else _global_note(result.memory))


def _global_note(memory: MemoryRecord) -> str:
    """What a memory stored global by default says on a store of one person."""
    return (
        f"global: every project sees this {memory.category.value} (remember it with --scope project "
        "to keep it to this one)"
    )


def _private_note(result: RememberResult) -> str:
    """What a memory stored global by default says on a team's store, where a global memory is
    its writer's own (docs/team.md, "Scopes"): teammates do not see it, and how they would."""
    kind = result.memory.category.value
    return (
        f"global: only you see this {kind}, in every project; your teammates do not (a global memory "
        "on a team's store is its writer's own). To share it with this project's team instead: "
        + result.sharing()
    )


@click.command()
@click.argument("memory_id", metavar="ID")
@json_option
@pass_state
def show(state: CliState, memory_id: str, as_json: bool) -> None:
    """Show one memory with what it is about and its links.

    ID may be the beginning of the id (at least 8 characters, mem_6850) when no other id starts so.

    \b
    Example:
        $ graphmem show mem_3f9a1c0b7d2e4a51
        mem_3f9a1c0b7d2e4a51  [decision]  active
        Payments retry 3 times with backoff, see !123
        scope: project (/home/me/shop) · created 3 days ago (2024-05-01 09:12 UTC) · from the user
        about: !123 (MergeRequest)
    """
    found = state.service.show(state.service.expand_id(memory_id))
    present.dated(found, as_json=as_json, text=present.detail, view=present.detail_json)


@click.command("list")
@categories_option("Only this category (repeatable).")
@click.option(
    "--status",
    "statuses",
    type=STATUS_CHOICE,
    multiple=True,
    help="Only this status (repeatable; default: active; 'all' for every status).",
)
@since_option
@click.option("--limit", type=click.IntRange(1), default=50, show_default=True, help="How many to show.")
@click.option("--offset", type=click.IntRange(0), default=0, show_default=True, help="How many to skip.")
@json_option
@pass_state
def list_(
    state: CliState,
    categories: tuple[str, ...],
    statuses: tuple[str, ...],
    since: datetime | None,
    limit: int,
    offset: int,
    as_json: bool,
) -> None:
    """List the memories visible from the project, newest first.

    \b
    Example:
        $ graphmem list --category blocker --status all
        mem_0c4e9a7b21d3f855  [blocker]  2 hours ago  CI fails on arm64: kuzu wheel missing
        mem_71b2e0d9c3a4f6e8  [blocker] (resolved)  5 days ago  Staging DB is read-only until Monday
    """
    chosen = set(Status) if "all" in statuses else {Status(s) for s in statuses} or {Status.ACTIVE}
    records = state.service.list(
        project=state.project,
        categories=categories or None,
        statuses=chosen or None,
        since=since,
        limit=limit,
        offset=offset,
    )
    present.dated(records, as_json=as_json, text=present.memory_lines, view=present.memories_json)


@click.command()
@click.argument("memory_id", metavar="ID")
@click.argument("text", required=False)
@click.option("-c", "--category", type=CATEGORY_CHOICE, default=None, help="The new category.")
@pass_state
def edit(state: CliState, memory_id: str, text: str | None, category: str | None) -> None:
    """Change a memory's TEXT and/or category; its id and history stay ("-" reads stdin).

    \b
    Example:
        $ graphmem edit mem_3f9a1c0b7d2e4a51 "Payments retry 5 times with backoff"
        edited mem_3f9a1c0b7d2e4a51 (now active)
    """
    record = state.service.edit(
        memory_id,
        text=None if text is None else read_text(text),
        category=category,
        project=state.project,
    )
    present.status_changed("edited", record)


@click.command()
@click.argument("memory_id", metavar="ID")
@pass_state
def unresolve(state: CliState, memory_id: str) -> None:
    """Mark a resolved blocker as blocking again.

    \b
    Example:
        $ graphmem unresolve mem_0c4e9a7b21d3f855
        unresolved mem_0c4e9a7b21d3f855 (now active)
    """
    before = state.service.show(memory_id).memory.status
    present.status_line("unresolved", before, state.service.unresolve(memory_id))


def link_arguments(kind_help: str) -> Callable[[F], F]:
    """SOURCE, TARGET and ``--kind``: a link between two memories."""

    def decorate(func: F) -> F:
        func = click.option("--kind", type=LINK_KIND_CHOICE, required=True, help=kind_help)(func)
        func = click.argument("target", metavar="TARGET")(func)
        return click.argument("source", metavar="SOURCE")(func)

    return decorate


@click.command()
@link_arguments("How SOURCE relates to TARGET.")
@pass_state
def link(state: CliState, source: str, target: str, kind: str) -> None:
    """Relate two memories: SOURCE supersedes / contradicts / extends / relates to TARGET.

    A supersedes link makes TARGET superseded (hidden from recall but in --history).

    \b
    Example:
        $ graphmem link mem_71b2e0d9c3a4f6e8 mem_3f9a1c0b7d2e4a51 --kind extends
        linked mem_71b2e0d9c3a4f6e8 extends mem_3f9a1c0b7d2e4a51
    """
    made = state.service.link(source, target, kind)
    click.echo(f"linked {made.source} {made.kind.value} {made.target}")


@click.command()
@link_arguments("The kind of link to remove.")
@pass_state
def unlink(state: CliState, source: str, target: str, kind: str) -> None:
    """Remove a link; removing supersedes makes TARGET current again.

    \b
    Example:
        $ graphmem unlink mem_71b2e0d9c3a4f6e8 mem_3f9a1c0b7d2e4a51 --kind extends
        unlinked mem_71b2e0d9c3a4f6e8 extends mem_3f9a1c0b7d2e4a51
    """
    state.service.unlink(source, target, kind)
    click.echo(f"unlinked {source} {kind} {target}")


COMMANDS = (remember, show, list_, edit, unresolve, link, unlink)
