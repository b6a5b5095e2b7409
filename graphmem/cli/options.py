"""Option types and decorators shared by several commands."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

import click

from graphmem.core.models import Category, LinkKind, Status
from graphmem.core.timeparse import parse_since, utc_now
from graphmem.errors import InvalidInputError

F = TypeVar("F", bound=Callable[..., Any])

CATEGORY_CHOICE = click.Choice([c.value for c in Category], case_sensitive=False)
STATUS_CHOICE = click.Choice([*(s.value for s in Status), "all"], case_sensitive=False)
LINK_KIND_CHOICE = click.Choice([k.value for k in LinkKind], case_sensitive=False)


class SinceType(click.ParamType):
    """``--since``: ``30d``, ``2w``, ``today`` or an ISO date, as a UTC datetime."""

    name = "when"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> datetime:
        if isinstance(value, datetime):
            return value
        try:
            return parse_since(str(value), now=utc_now())
        except InvalidInputError as exc:
            self.fail(str(exc), param, ctx)


SINCE = SinceType()


def json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")(func)


def since_option(func: F) -> F:
    return click.option(
        "--since",
        type=SINCE,
        default=None,
        help="Only memories created since then: 90m, 12h, 30d, 2w, 3mo, 1y, today or an ISO date.",
    )(func)


def read_text(value: str) -> str:
    """``value``, or standard input when it is ``-``."""
    return click.get_text_stream("stdin").read() if value == "-" else value
