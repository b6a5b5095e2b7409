"""Times as users write them (``--since 30d``) and as graphmem shows them (``3 days ago``).

Pure functions; every datetime returned is timezone-aware UTC. The caller passes
``now`` so results are reproducible.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, time, timedelta

import humanize

from graphmem.errors import InvalidInputError

__all__ = [
    "DAYS_PER_MONTH",
    "DAYS_PER_YEAR",
    "JUST_NOW_S",
    "UTC_RANGE",
    "format_age",
    "parse_since",
    "parse_until",
    "to_utc",
    "utc_now",
]

DAYS_PER_YEAR = 365
DAYS_PER_MONTH = 30
JUST_NOW_S = 60  # closer than this to ``now`` reads as "just now"

_DURATION_RE = re.compile(r"(?P<amount>[0-9]+)\s*(?P<unit>mo|y|w|d|h|m)", re.IGNORECASE)
_UNIT_DELTA = {
    "y": timedelta(days=DAYS_PER_YEAR),
    "mo": timedelta(days=DAYS_PER_MONTH),
    "w": timedelta(weeks=1),
    "d": timedelta(days=1),
    "h": timedelta(hours=1),
    "m": timedelta(minutes=1),
}
# What a UTC datetime holds: a time whose offset moves it past either end (9999-12-31T23:59:59-14:00)
# cannot be compared with, stored or shown beside any other.
UTC_RANGE = "between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z"
_ACCEPTED = (
    'a duration such as "90m", "12h", "30d", "2w", "3mo" (30 days each) or "1y" (365 days), '
    '"today", or an ISO date or datetime such as "2024-05-01" or "2024-05-01T12:00:00Z"'
)


def utc_now() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def to_utc(value: datetime) -> datetime:
    """``value`` in UTC; a naive datetime is taken to be UTC already.

    Raises:
        InvalidInputError: ``value`` falls outside what UTC holds (``UTC_RANGE``).
    """
    if value.tzinfo is None or value.utcoffset() is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise InvalidInputError(
            f"{value.isoformat()} is outside the times graphmem can hold: give one {UTC_RANGE}."
        ) from None


def parse_since(value: str, *, now: datetime) -> datetime:
    """The moment ``value`` names, counting durations back from ``now``.

    ``"30d"`` is 30 days before ``now``; units are ``m`` (minutes), ``h``, ``d``,
    ``w``, ``mo`` (30 days) and ``y`` (365 days), in any case except ``M``, which
    could mean either minutes or months and is refused. ``"today"`` is midnight UTC of
    ``now``'s day. An ISO date is midnight UTC; a naive ISO datetime is UTC.

    Raises:
        InvalidInputError: ``value`` is none of these forms.
    """
    text = value.strip()
    now_utc = to_utc(now)
    if text.lower() == "today":
        return datetime.combine(now_utc.date(), time(), tzinfo=UTC)
    duration = _DURATION_RE.fullmatch(text)
    if duration is not None:
        unit = duration.group("unit")
        if unit == "M":
            raise InvalidInputError(f"{value!r} is ambiguous: write 'm' for minutes or 'mo' for months.")
        return _subtract(now_utc, int(duration.group("amount")), unit.lower(), value)
    moment = _parse_iso(text)
    if moment is not None:
        return moment
    raise InvalidInputError(f"Cannot read {value!r} as a time. Use {_ACCEPTED}.")


def parse_until(value: str, *, now: datetime) -> datetime:
    """The future moment ``value`` names, counting durations forward from ``now`` (an expiry).

    ``"14d"`` is 14 days after ``now`` (the units of ``parse_since``); an ISO date or datetime
    is taken as it is. A moment that is not after ``now`` is refused.

    Raises:
        InvalidInputError: ``value`` is none of these forms, or not in the future.
    """
    text = value.strip()
    now_utc = to_utc(now)
    duration = _DURATION_RE.fullmatch(text)
    if duration is not None:
        unit = duration.group("unit")
        if unit == "M":
            raise InvalidInputError(f"{value!r} is ambiguous: write 'm' for minutes or 'mo' for months.")
        try:
            moment = now_utc + int(duration.group("amount")) * _UNIT_DELTA[unit.lower()]
        except OverflowError:
            raise InvalidInputError(
                f"{value!r} reaches further than a date can; use a smaller number."
            ) from None
    else:
        found = _parse_iso(text)
        if found is None:
            raise InvalidInputError(
                f'Cannot read {value!r} as an expiry. Use a duration such as "12h", "14d", "2w", "3mo" or '
                '"1y", or an ISO date or datetime such as "2026-12-31".'
            )
        moment = found
    if moment <= now_utc:
        raise InvalidInputError(f"The expiry {value!r} has passed already: give a time in the future.")
    return moment


def format_age(moment: datetime, *, now: datetime) -> str:
    """How long before (or after) ``now`` ``moment`` is, in words.

    ``"just now"``, ``"3 minutes ago"``, ``"a day ago"``, ``"2 months ago"``;
    a future moment reads ``"in 2 days"``.
    """
    delta = to_utc(now) - to_utc(moment)
    if abs(delta) < timedelta(seconds=JUST_NOW_S):
        return "just now"
    words = humanize.naturaldelta(abs(delta))
    return f"{words} ago" if delta > timedelta(0) else f"in {words}"


def _subtract(now: datetime, amount: int, unit: str, value: str) -> datetime:
    try:
        return now - amount * _UNIT_DELTA[unit]
    except OverflowError:
        raise InvalidInputError(
            f"{value!r} reaches further back than a date can; use a smaller number."
        ) from None


def _parse_iso(text: str) -> datetime | None:
    """``text`` as an ISO date or datetime in UTC; None when it is none (one outside what UTC
    holds is an error naming the range, from ``to_utc``)."""
    try:
        return to_utc(datetime.fromisoformat(text))
    except ValueError:
        return None
