"""Human and JSON output of the CLI.

Results go to stdout; notes, progress and errors go to stderr so that
``id=$(graphmem remember ...)`` and ``graphmem recall --json ... | jq`` work.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import click

from graphmem.cli.terminal import CONTROLS, visible
from graphmem.core.branches import on_branch
from graphmem.core.models import Hit, LoginRole, MemoryRecord, Status, Trust
from graphmem.core.provenance import CLIENT_NAMES, Origin, label, record_origin
from graphmem.core.timeparse import format_age, utc_now
from graphmem.core.views import entity_view, hit_view, link_view, memory_view, why
from graphmem.errors import GraphmemError, ImportFileError

if TYPE_CHECKING:
    from graphmem.service.results import (
        ExportSummary,
        MemoryDetail,
        RecallResult,
        RememberResult,
        Stats,
    )

# Progress bars only for runs long enough to be worth watching.
PROGRESS_MIN_RECORDS = 200
# Characters of a memory's text shown on one line of ``list``.
LIST_TEXT_CHARS = 100
NO_HITS = "No memories clear the relevance floor for this query."


def echo_json(data: Any) -> None:
    # Control characters escaped, as JSON escapes those below 0x20 (DEL and C1 too, which
    # ``json`` leaves raw): the same text, and nothing a terminal acts on (cli/terminal.py).
    click.echo(CONTROLS.sub(_json_escape, json.dumps(data, indent=2, ensure_ascii=False)))


def _json_escape(found: re.Match[str]) -> str:
    return f"\\u{ord(found.group()):04x}"


Found = TypeVar("Found", contravariant=True)


class Dated(Protocol[Found]):
    """A presenter of a result whose ages it counts from ``now``."""

    def __call__(self, found: Found, /, *, now: datetime) -> Any: ...


def dated(found: Found, *, as_json: bool, text: Dated[Found], view: Dated[Found]) -> None:
    """A result for the person at the terminal (``text``), or its JSON ``view``, ages from now."""
    now = utc_now()
    if as_json:
        echo_json(view(found, now=now))
    else:
        text(found, now=now)


# Problems of an import file listed before "... and N more".
MAX_PROBLEMS_SHOWN = 20


def report(found: Any, format_report: Callable[[Any], str], *, as_json: bool) -> None:
    """A benchmark's report: ``format_report(found)``, or ``found`` as indented JSON."""
    click.echo(json.dumps(found, indent=2) if as_json else format_report(found))


def note(message: str) -> None:
    """A line for the person at the terminal, on stderr: what it quotes (a name, a path, a line of
    a file) drives no terminal (``cli/terminal.py``)."""
    click.echo(visible(message), err=True)


def error(exc: GraphmemError) -> None:
    """``error: <message>`` on stderr, then the per-line problems of an import file."""
    note(f"error: {exc}")
    if isinstance(exc, ImportFileError):
        for line, message in exc.problems[:MAX_PROBLEMS_SHOWN]:
            note(f"line {line}: {message}")
        hidden = len(exc.problems) - MAX_PROBLEMS_SHOWN
        if hidden > 0:
            note(f"... and {hidden} more invalid lines")


def one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# -- remember -------------------------------------------------------------------


def remembered(result: RememberResult) -> None:
    """The id on stdout; what else happened on stderr."""
    click.echo(result.memory.id)
    if not result.created:
        note(f"reinforced existing memory {result.duplicate_of} (seen {result.memory.reinforced + 1} times)")
    for done in result.supersessions:
        found = " (a newer one on its subject)" if done.automatic else ""
        note(
            f"supersedes {done.memory_id} {done.quote()}{found}; "
            f"`graphmem undo {done.event_id}` makes it current again"
        )
    told = {done.memory_id for done in result.supersessions}
    for old in result.superseded:
        if old not in told:  # a daemon of an older version says only the id
            note(f"supersedes {old}")
    if result.entities:
        note("about: " + ", ".join(e.name for e in result.entities))


def remembered_json(result: RememberResult, *, now: datetime) -> dict[str, Any]:
    return {
        "id": result.memory.id,
        "created": result.created,
        "duplicate_of": result.duplicate_of,
        "superseded": list(result.superseded),
        "supersessions": [done.view() for done in result.supersessions],
        "entities": [entity_view(e) for e in result.entities],
        "memory": memory_view(result.memory, now=now),
    }


# -- recall ---------------------------------------------------------------------


# A memory stored as low trust (its text read like an injection or a destructive command): said
# wherever it is shown, as the plugin's block and the context bundle mark it.
LOW_TRUST = "low trust"


# ``semantic_ready: false``: the query has no vector yet (the model loads), or memories wait for
# theirs (after a bootstrap or an import; ``graphmem status`` counts them).
NOT_EMBEDDED = (
    "note: search by meaning is not complete yet (memories still waiting for their vectors, or "
    "the model loading): those are found by their words, entities and the graph for now."
)


def hits(result: RecallResult, *, now: datetime) -> None:
    if not result.semantic_ready:
        note(NOT_EMBEDDED)
    if not result.hits:
        click.echo(NO_HITS)
        return
    for number, hit in enumerate(result.hits, start=1):
        prefix = f"{number}. "
        click.echo(f"{prefix}[{hit.memory.category.value}] {hit.memory.text}")
        click.echo(" " * len(prefix) + hit_details(hit, now=now))


def hit_details(hit: Hit, *, now: datetime) -> str:
    record = hit.memory
    parts = [record.id, record.scope.value]
    if record.status is not Status.ACTIVE:
        parts.append(record.status.value)
    parts += [format_age(record.created_at, now=now), f"from {provenance(record)}"]
    parts += [LOW_TRUST] if record.trust is Trust.LOW else []
    parts += [record.stale] if record.stale else []
    parts += [on_branch(record.branch)] if record.branch else []
    parts += [f"score {hit.score:.2f}", f"why: {why(hit)}"]
    return " · ".join(parts)


def provenance(record: MemoryRecord) -> str:
    """Where a memory came from, in words (``core/provenance.py``), with the session it was
    written in: the user, an agent, the user's words in a session, a file or commit of the
    repository, an import of a file; "proposed, unconfirmed" until a person confirms it."""
    said = label(record)
    if record.session and record_origin(record) is Origin.SESSION:
        message = f", message {record.origin}" if record.origin and record.origin != record.session else ""
        client = CLIENT_NAMES.get(record.source, "an agent's")
        said = said.replace("a session", f"{client} session {record.session}{message}", 1)
    elif record.session:
        said += f" (session {record.session})"
    return said


def recall_json(result: RecallResult, *, now: datetime) -> dict[str, Any]:
    return {
        "query": result.query,
        "plan": result.plan,
        "hits": [hit_view(hit, now=now) for hit in result.hits],
        "entities": [entity_view(e) for e in result.entities],  # named or described, best first
        "took_ms": round(result.took_ms, 1),
        "semantic_ready": result.semantic_ready,
    }


# -- show / list -----------------------------------------------------------------


def detail(found: MemoryDetail, *, now: datetime) -> None:
    record = found.memory
    click.echo(f"{record.id}  [{record.category.value}]  {record.status.value}")
    click.echo(record.text)
    scope = record.scope.value + (f" ({record.project})" if record.project else "")
    facts = [
        f"scope: {scope}",
        f"created {format_age(record.created_at, now=now)} ({record.created_at:%Y-%m-%d %H:%M} UTC)",
    ]
    if record.updated_at != record.created_at:
        facts.append(f"updated {format_age(record.updated_at, now=now)}")
    if record.valid_to is not None:
        facts.append(f"valid until {record.valid_to:%Y-%m-%d %H:%M} UTC")
    if record.expires_at is not None:
        verb = "expires" if record.expires_at > now else "expired"
        facts.append(
            f"{verb} {format_age(record.expires_at, now=now)} ({record.expires_at:%Y-%m-%d %H:%M} UTC)"
        )
    if record.branch is not None:
        facts.append(on_branch(record.branch))
    if record.reinforced:
        facts.append(f"reinforced {record.reinforced}×")
    facts.append(f"from {provenance(record)}")
    facts += [LOW_TRUST] if record.trust is Trust.LOW else []
    click.echo(" · ".join(facts))
    if record.stale:
        click.echo(f"note: {record.stale}")
    if found.entities:
        click.echo("about: " + ", ".join(f"{e.name} ({e.kind.value})" for e in found.entities))
    if found.links:
        click.echo("links:")
    for link in found.links:
        click.echo(f"  {link.source} {link.kind.value} {link.target}")


def detail_json(found: MemoryDetail, *, now: datetime) -> dict[str, Any]:
    view = memory_view(found.memory, now=now)
    view["entities"] = [entity_view(e) for e in found.entities]
    view["links"] = [link_view(link) for link in found.links]
    return view


def memory_lines(records: Iterable[MemoryRecord], *, now: datetime) -> None:
    shown = 0
    for record in records:
        flags = [] if record.status is Status.ACTIVE else [record.status.value]
        flags += [record.stale] if record.stale else []
        flags += [on_branch(record.branch)] if record.branch else []
        flags += [LOW_TRUST] if record.trust is Trust.LOW else []
        status = f" ({'; '.join(flags)})" if flags else ""
        age = format_age(record.created_at, now=now)
        click.echo(
            f"{record.id}  [{record.category.value}]{status}  {age}  {one_line(record.text, LIST_TEXT_CHARS)}"
        )
        shown += 1
    if not shown:
        click.echo("No memories match.")


def memories_json(records: Iterable[MemoryRecord], *, now: datetime) -> dict[str, Any]:
    return {"memories": [memory_view(record, now=now) for record in records]}


def status_line(verb: str, before: Status, record: MemoryRecord) -> None:
    """The line of a status verb on one memory: what it did, or that the memory was in that status
    already (the verb is idempotent: nothing changed, and it exits 0 all the same)."""
    if record.status is before:
        click.echo(f"{record.id} is {record.status.value} already: nothing changed")
    else:
        status_changed(verb, record)


def status_changed(verb: str, record: MemoryRecord) -> None:
    """One line per lifecycle verb; the status is named only when the verb does not say it."""
    if verb == record.status.value:
        click.echo(f"{verb} {record.id}")
    else:
        click.echo(f"{verb} {record.id} (now {record.status.value})")


# -- stats ------------------------------------------------------------------------


def counts(values: Mapping[str, int]) -> str:
    ordered = sorted(values.items(), key=lambda pair: (-pair[1], pair[0]))
    return ", ".join(f"{name} {n}" for name, n in ordered) or "none"


def stats(found: Stats) -> None:
    click.echo(f"memories: {found.total}")
    click.echo(f"  by status: {counts(found.by_status)}")
    click.echo(f"  by category: {counts(found.by_category)}")
    click.echo(f"  by scope: {counts(found.by_scope)}")
    click.echo(f"entities: {counts(found.entities)}")
    share = f"{stale_share(found):.1%}"
    click.echo(f"possibly stale: {found.stale} of {current_count(found)} current memories ({share})")
    click.echo(f"pending embeddings: {found.pending_embeddings}")
    click.echo(f"model: {found.model}")
    click.echo(f"data dir: {found.data_dir}")
    if found.role is not None:
        click.echo(f"role: {role_line(found.role)}")


def role_line(role: LoginRole) -> str:
    """The role a team's store logs in with, what it may do and whose global memories it sees."""
    may = "reads and writes" if role.writes else "read-only"
    seen = "everyone's" if role.sees_all else f"{role.name}'s own"
    return f"{role.name} ({may}; global memories: {seen})"


def current_count(found: Stats) -> int:
    """Active and resolved memories: the ones recall shows."""
    return found.by_status.get(Status.ACTIVE.value, 0) + found.by_status.get(Status.RESOLVED.value, 0)


def stale_share(found: Stats) -> float:
    """The share of current memories flagged stale (0 when there are none)."""
    current = current_count(found)
    return round(found.stale / current, 4) if current else 0.0


def stats_json(found: Stats) -> dict[str, Any]:
    return {**asdict(found), "stale_share": stale_share(found)}


# -- progress ---------------------------------------------------------------------


def progress_wanted() -> bool:
    """Whether a progress bar can be seen: stderr is a terminal."""
    return sys.stderr.isatty()


@contextmanager
def progress(label: str, total: int) -> Iterator[Callable[[int], None]]:
    """A callback taking how many records were just done, drawing a bar on stderr.

    The bar shows only on a terminal and only for more than ``PROGRESS_MIN_RECORDS``.
    """
    if not progress_wanted() or total <= PROGRESS_MIN_RECORDS:
        yield lambda done: None
        return
    with click.progressbar(length=total, label=label, file=sys.stderr, show_pos=True) as bar:
        yield bar.update


@contextmanager
def running_progress(label: str, *, shown: bool = True) -> Iterator[Callable[[int, int], None]]:
    """A callback taking (done, total) for work whose total grows as it goes (a scan, a
    queue), drawing a bar on stderr when ``shown`` and stderr is a terminal."""
    if not shown or not progress_wanted():
        yield lambda done, total: None
        return
    bar = click.progressbar(length=1, label=label, file=sys.stderr, show_pos=True)

    def update(done: int, total: int) -> None:
        bar.length = max(total, 1)
        bar.update(done - bar.pos)

    try:
        yield update
    finally:
        bar.render_finish()


# -- export / import / reindex ------------------------------------------------------


def quantity(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def exported(summary: ExportSummary) -> None:
    """On stderr: the export itself may be on stdout."""
    note(
        f"exported {quantity(summary.memories, 'memory', 'memories')}, "
        f"{quantity(summary.entities, 'entity', 'entities')}, {quantity(summary.links, 'link', 'links')}"
    )


def reindexed(count: int, model: str) -> None:
    click.echo(f"re-embedded {quantity(count, 'memory', 'memories')} with {model}")
