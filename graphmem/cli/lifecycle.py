"""The lifecycle commands: archive, restore, resolve, delete — of several ids, or of a filter —
and confirm.

The filter is the service's (``select``), so the CLI, a daemon and the Python API pick the
same memories; ``--dry-run`` lists them and changes nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, TypeVar, cast

import click

from graphmem.cli import present
from graphmem.cli.options import STATUS_CHOICE, categories_option, since_option, when_option
from graphmem.cli.state import CliState, pass_state
from graphmem.core.models import MemoryRecord, Status
from graphmem.core.timeparse import utc_now
from graphmem.errors import GraphmemError, InvalidInputError

F = TypeVar("F", bound=Callable[..., Any])
# What a filter picks when it names no status: current memories (archive, delete), archived
# ones (restore), active blockers (resolve).
CURRENT = frozenset({Status.ACTIVE, Status.RESOLVED})
ARCHIVED = frozenset({Status.ARCHIVED})
ACTIVE = frozenset({Status.ACTIVE})


def _once(ctx: click.Context, param: click.Parameter, ids: tuple[str, ...]) -> tuple[str, ...]:
    """The ids given, each once, in their order: an id given twice is acted on once."""
    return tuple(dict.fromkeys(i.strip() for i in ids))


@dataclass(frozen=True)
class Selection:
    """What a lifecycle command was given: ids and/or a filter, and whether only to list them."""

    memory_ids: tuple[str, ...]
    categories: tuple[str, ...]
    statuses: tuple[str, ...]
    since: datetime | None
    older_than: datetime | None
    dry_run: bool

    @property
    def filtered(self) -> bool:
        return bool(self.categories or self.statuses or self.since or self.older_than)


def filter_options(func: F) -> F:
    """IDS and the filter options every lifecycle command shares, given to it as one ``Selection``."""

    @functools.wraps(func)
    def command(
        memory_ids: tuple[str, ...],
        categories: tuple[str, ...],
        statuses: tuple[str, ...],
        since: datetime | None,
        older_than: datetime | None,
        dry_run: bool,
        **more: Any,
    ) -> Any:
        return func(Selection(memory_ids, categories, statuses, since, older_than, dry_run), **more)

    decorated: Callable[..., Any] = command
    for decorate in reversed(
        (
            click.argument("memory_ids", metavar="[ID]...", nargs=-1, callback=_once),
            categories_option("Every memory of this category (repeatable)."),
            click.option(
                "--status",
                "statuses",
                type=STATUS_CHOICE,
                multiple=True,
                help="Every memory of this status (repeatable; 'all' for every status).",
            ),
            since_option,
            when_option(
                "--older-than", "AGE", "Only memories created before then: 90d, 2w, 6mo, 1y or an ISO date."
            ),
            click.option("--dry-run", is_flag=True, help="List what would change and change nothing."),
        )
    ):
        decorated = decorate(decorated)
    return cast(F, decorated)


def targets(
    state: CliState, chosen: Selection, *, default_statuses: frozenset[Status]
) -> tuple[list[MemoryRecord], GraphmemError | None]:
    """The memories named by id, then those the service's filter selects (each once), and the
    first error of an id among several that names no memory (printed; the others go on)."""
    filtered = chosen.filtered
    if not chosen.memory_ids and not filtered:
        raise InvalidInputError(
            "Name the memories: one or more ids, or a filter (--category, --status, --since, "
            "--older-than), e.g. --category event --older-than 90d --dry-run."
        )
    found: dict[str, MemoryRecord] = {}
    unknown: GraphmemError | None = None
    for memory_id in chosen.memory_ids:
        try:
            record = state.service.show(memory_id).memory
        except GraphmemError as exc:
            if len(chosen.memory_ids) == 1 and not filtered:
                raise
            present.error(exc)  # reported; the other ids go on, the exit code is the first error's
            unknown = unknown or exc
            continue
        found.setdefault(record.id, record)
    if filtered:
        statuses = chosen.statuses
        wanted = set(Status) if "all" in statuses else {Status(s) for s in statuses} or default_statuses
        for record in state.service.select(
            project=state.project,
            categories=chosen.categories or None,
            statuses=wanted,
            since=chosen.since,
            before=chosen.older_than,
        ):
            found.setdefault(record.id, record)
    return list(found.values()), unknown


def apply(
    verb: str,
    records: list[MemoryRecord],
    unknown: GraphmemError | None,
    change: Callable[[str], MemoryRecord],
    chosen: Selection,
) -> None:
    """List (``--dry-run``) or change each memory; a count of what changed at the end, or the
    one line of a single id. An error on one memory is reported and the others go on; the
    exit code is the first error's."""
    if chosen.dry_run:
        present.memory_lines(records, now=utc_now())
        present.note(
            f"would {verb} {present.quantity(len(records), 'memory', 'memories')} (dry run: nothing changed)"
        )
        if unknown is not None:
            raise click.exceptions.Exit(unknown.exit_code)
        return
    single = _single(chosen, records)
    changed = 0
    failed = unknown
    past = {"archive": "archived", "restore": "restored", "resolve": "resolved", "delete": "deleted"}[verb]
    for record in records:
        try:
            after = change(record.id)
        except GraphmemError as exc:
            present.error(exc)
            failed = failed or exc
            continue
        if single:
            if verb == "delete":
                click.echo(f"deleted {after.id}")
            else:
                present.status_line(past, record.status, after)
        changed += verb == "delete" or after.status is not record.status
    if not single:
        click.echo(f"{past} {present.quantity(changed, 'memory', 'memories')}")
    if failed is not None:
        raise click.exceptions.Exit(failed.exit_code)


@click.command()
@filter_options
@pass_state
def archive(state: CliState, chosen: Selection) -> None:
    """Hide memories from recall without deleting them (restore brings them back).

    Name the memories by id, or by a filter (active and resolved ones by default).

    \b
    Example:
        $ graphmem archive mem_3f9a1c0b7d2e4a51
        archived mem_3f9a1c0b7d2e4a51
        $ graphmem archive --category event --older-than 90d
        archived 12 memories
    """
    apply("archive", *targets(state, chosen, default_statuses=CURRENT), state.service.archive, chosen)


@click.command()
@filter_options
@pass_state
def restore(state: CliState, chosen: Selection) -> None:
    """Make archived or superseded memories current again (a filter picks archived ones).

    Restoring a superseded memory removes the supersedes links pointing at it.

    \b
    Example:
        $ graphmem restore mem_3f9a1c0b7d2e4a51
        restored mem_3f9a1c0b7d2e4a51 (now active)
        $ graphmem restore --category event --since 7d --dry-run
    """
    apply("restore", *targets(state, chosen, default_statuses=ARCHIVED), state.service.restore, chosen)


@click.command()
@filter_options
@pass_state
def resolve(state: CliState, chosen: Selection) -> None:
    """Mark blockers as no longer blocking (only blockers resolve; a filter picks active blockers).

    \b
    Example:
        $ graphmem resolve mem_0c4e9a7b21d3f855
        resolved mem_0c4e9a7b21d3f855
        $ graphmem resolve --older-than 30d
        resolved 3 memories
    """
    blockers = replace(chosen, categories=chosen.categories or (("blocker",) if chosen.filtered else ()))
    apply(
        "resolve",
        *targets(state, blockers, default_statuses=ACTIVE),
        state.service.resolve,
        chosen,
    )


@click.command()
@filter_options
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@pass_state
def delete(state: CliState, chosen: Selection, yes: bool) -> None:
    """Delete memories and their links for good (archive keeps them instead). Asks first.

    \b
    Example:
        $ graphmem delete mem_3f9a1c0b7d2e4a51
        Delete mem_3f9a1c0b7d2e4a51 "Payments retry 3 times with backoff, see !123"? [y/N]: y
        deleted mem_3f9a1c0b7d2e4a51
        $ graphmem delete --status archived --older-than 1y --yes
        deleted 40 memories
    """
    records, unknown = targets(state, chosen, default_statuses=CURRENT)
    single = _single(chosen, records)
    if not yes and not chosen.dry_run and records:
        if single:
            question = f'Delete {records[0].id} "{present.one_line(records[0].text, 60)}"?'
        else:
            present.memory_lines(records, now=utc_now())
            question = f"Delete these {present.quantity(len(records), 'memory', 'memories')}?"
        if not click.confirm(question, default=False, err=True):
            kept = records[0].id if single else present.quantity(len(records), "memory", "memories")
            present.note(f"Kept {kept}; nothing was deleted.")
            raise click.exceptions.Exit(1)
    apply("delete", records, unknown, state.service.delete, chosen)


@click.command()
@click.argument("memory_ids", metavar="ID...", nargs=-1, required=True, callback=_once)
@pass_state
def confirm(state: CliState, memory_ids: tuple[str, ...]) -> None:
    """Make memories yours: a proposal (an agent's or an import's directive or preference) becomes
    a convention injected in every session, a proposed change of one of yours replaces it, and
    a memory flagged "possibly stale" after its code changed is marked still valid.

    \b
    Example:
        $ graphmem review
        mem_3f9a1c0b7d2e4a51 [directive] Run make test-fast before every commit
          proposed by an agent: `graphmem confirm mem_3f9a1c0b7d2e4a51` makes it yours ...
        $ graphmem confirm mem_3f9a1c0b7d2e4a51
        confirmed mem_3f9a1c0b7d2e4a51
    """
    _each(memory_ids, state.service.confirm, "confirmed")


@click.command()
@click.argument("memory_ids", metavar="ID...", nargs=-1, required=True, callback=_once)
@pass_state
def reject(state: CliState, memory_ids: tuple[str, ...]) -> None:
    """Turn down proposals: an agent's or an import's directive or preference, or its change of
    one of your memories (yours stays as it is), is archived (``graphmem restore`` brings it
    back, proposed).

    \b
    Example:
        $ graphmem reject mem_3f9a1c0b7d2e4a51
        rejected mem_3f9a1c0b7d2e4a51 (archived)
    """
    _each(memory_ids, state.service.reject, "rejected")


@click.command()
@click.argument("memory_ids", metavar="ID...", nargs=-1, required=True, callback=_once)
@pass_state
def widen(state: CliState, memory_ids: tuple[str, ...]) -> None:
    """Make project memories global: an agent's memory stays in the project it was written in
    until you widen it. Yours is stored for every project and supersedes the project one. On a
    team's store a project memory is the team's and is not widened (a global one is yours alone):
    keep a copy with `graphmem remember --scope global`.

    \b
    Example:
        $ graphmem widen mem_3f9a1c0b7d2e4a51
        widened mem_3f9a1c0b7d2e4a51 → mem_91c2e7a04b5d3f68
    """
    failed: GraphmemError | None = None
    for memory_id in memory_ids:
        try:
            record = state.service.widen(memory_id)
        except GraphmemError as exc:
            present.error(exc)
            failed = failed or exc
            continue
        if record.id == memory_id.strip():  # a global one: nothing to widen
            click.echo(f"{record.id} is global already")
        else:
            click.echo(f"widened {memory_id.strip()} → {record.id}")
    if failed is not None:
        raise click.exceptions.Exit(failed.exit_code)


def _each(memory_ids: tuple[str, ...], verb: Callable[[str], MemoryRecord], done: str) -> None:
    """Run ``verb`` on each id, one line each; the first error's exit code when any failed."""
    failed: GraphmemError | None = None
    for memory_id in memory_ids:
        try:
            record = verb(memory_id)
        except GraphmemError as exc:
            present.error(exc)
            failed = failed or exc
            continue
        notes = [record.status.value] if record.status is not Status.ACTIVE else []
        notes += [f"still {record.stale}"] if record.stale else []
        click.echo(f"{done} {record.id}" + (f" ({', '.join(notes)})" if notes else ""))
    if failed is not None:
        raise click.exceptions.Exit(failed.exit_code)


def _single(chosen: Selection, records: list[MemoryRecord]) -> bool:
    """One id and no filter: the one-line output of before."""
    return len(chosen.memory_ids) == 1 and len(records) == 1


COMMANDS = (archive, restore, resolve, delete, confirm, reject, widen)
