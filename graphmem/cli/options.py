"""Choices, option parsers and option decorators shared by several commands."""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

import click

from graphmem.core.models import Category, LinkKind, Status
from graphmem.core.text import MAX_TEXT_CHARS, validate_text
from graphmem.core.timeparse import parse_since, utc_now
from graphmem.errors import InvalidInputError

F = TypeVar("F", bound=Callable[..., Any])

CATEGORY_CHOICE = click.Choice([c.value for c in Category], case_sensitive=False)
STATUS_CHOICE = click.Choice([*(s.value for s in Status), "all"], case_sensitive=False)
LINK_KIND_CHOICE = click.Choice([k.value for k in LinkKind], case_sensitive=False)


def to_since(ctx: click.Context, param: click.Parameter, value: str | None) -> datetime | None:
    """``--since``: ``30d``, ``2w``, ``today`` or an ISO date, as a UTC datetime."""
    if value is None:
        return None
    try:
        return parse_since(value, now=utc_now())
    except InvalidInputError as exc:
        raise click.BadParameter(str(exc), ctx, param) from None


def json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")(func)


def categories_option(help: str) -> Callable[[F], F]:
    """``-c/--category`` (repeatable): the categories of memories a command acts on."""
    return click.option("-c", "--category", "categories", type=CATEGORY_CHOICE, multiple=True, help=help)


def when_option(name: str, metavar: str, help: str) -> Callable[[F], F]:
    """An option naming a time as an age back from now (``30d``) or a date (``to_since``)."""
    return click.option(name, metavar=metavar, default=None, callback=to_since, help=help)


def since_option(func: F) -> F:
    return when_option(
        "--since",
        "WHEN",
        "Only memories created since then: 90m, 12h, 30d, 2w, 3mo, 1y, today or an ISO date.",
    )(func)


def read_text(value: str) -> str:
    """``value``, or standard input (UTF-8) when it is ``-``; checked against the text limit
    here, so a text over it is never sent (to the daemon, or the service)."""
    if value == "-":
        # A character is at most 4 bytes of UTF-8: more than that many bytes is over the limit
        # whatever they say, and the rest is never read (a pipe from /dev/zero ends here).
        most = MAX_TEXT_CHARS * 4
        data = sys.stdin.buffer.read(most + 1)
        if len(data) > most:
            raise InvalidInputError(
                f"Standard input is over {MAX_TEXT_CHARS:,} characters, the limit: split it into "
                "several memories, one idea each."
            )
        try:
            value = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInputError(
                f"Standard input is not valid UTF-8 (byte {exc.start}): pass UTF-8 text."
            ) from None
    if len(value) > MAX_TEXT_CHARS:
        validate_text(value)  # raises when the text, stripped, is over the limit
    return value


def report_json_option(func: F) -> F:
    """``--json`` on a command that prints a report (the benchmarks): the report as JSON."""
    return click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")(func)


def whole_number_option(
    name: str,
    low: int | None,
    high: int | None,
    *,
    default: int | None,
    help: str,
    dest: str | None = None,
    **extra: Any,
) -> Callable[[F], F]:
    """An option taking a whole number from ``low`` to ``high`` (``None``: open), its default shown;
    the command gets it as ``dest`` when given (else as click names it from ``name``)."""
    decls = (name,) if dest is None else (name, dest)
    return click.option(
        *decls, type=click.IntRange(low, high), default=default, show_default=True, help=help, **extra
    )


def seconds_option(name: str, low: float, high: float, *, default: float, help: str) -> Callable[[F], F]:
    """An option taking seconds from ``low`` to ``high``, its default shown."""
    return click.option(name, type=click.FloatRange(low, high), default=default, show_default=True, help=help)


def store_url_option(help: str) -> Callable[[F], F]:
    """``--store URL``: a PostgreSQL database to run on instead of a temporary embedded store."""
    return click.option("--store", "store_url", default=None, metavar="URL", help=help)
