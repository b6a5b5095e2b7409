"""Parsing ``--since`` values and showing ages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from graphmem.core.timeparse import format_age, parse_since, to_utc, utc_now
from graphmem.errors import InvalidInputError

NOW = datetime(2024, 6, 15, 12, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "ago"),
    [
        ("30d", timedelta(days=30)),
        ("2w", timedelta(weeks=2)),
        ("12h", timedelta(hours=12)),
        ("90m", timedelta(minutes=90)),
        ("1y", timedelta(days=365)),
        ("3mo", timedelta(days=90)),
        ("0d", timedelta(0)),
        (" 30D ", timedelta(days=30)),
        ("30 d", timedelta(days=30)),
        ("3MO", timedelta(days=90)),
    ],
)
def test_parse_since_counts_durations_back_from_now(value: str, ago: timedelta) -> None:
    assert parse_since(value, now=NOW) == NOW - ago


def test_parse_since_today_is_midnight_utc() -> None:
    assert parse_since("Today", now=NOW) == datetime(2024, 6, 15, tzinfo=UTC)


def test_parse_since_today_uses_the_utc_day_of_an_aware_now() -> None:
    late_in_tokyo = datetime(2024, 6, 16, 2, 0, tzinfo=timezone(timedelta(hours=9)))
    assert parse_since("today", now=late_in_tokyo) == datetime(2024, 6, 15, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2024-05-01", datetime(2024, 5, 1, tzinfo=UTC)),
        ("2024-05-01T08:15:00", datetime(2024, 5, 1, 8, 15, tzinfo=UTC)),
        ("2024-05-01T08:15:00Z", datetime(2024, 5, 1, 8, 15, tzinfo=UTC)),
        ("2024-05-01T10:15:00+02:00", datetime(2024, 5, 1, 8, 15, tzinfo=UTC)),
    ],
)
def test_parse_since_reads_iso_dates_and_datetimes_as_utc(value: str, expected: datetime) -> None:
    result = parse_since(value, now=NOW)
    assert result == expected
    assert result.tzinfo is UTC


def test_parse_since_accepts_a_naive_now_as_utc() -> None:
    assert parse_since("1d", now=datetime(2024, 6, 15)) == datetime(2024, 6, 14, tzinfo=UTC)


@pytest.mark.parametrize(
    "value",
    ["", "   ", "-3d", "abc", "30x", "30", "d", "1.5d", "30 days", "1M", "2024-13-01", "999999999y"],
)
def test_parse_since_rejects_other_forms(value: str) -> None:
    with pytest.raises(InvalidInputError):
        parse_since(value, now=NOW)


def test_parse_since_error_names_the_accepted_forms() -> None:
    with pytest.raises(InvalidInputError, match=r"30d.*today.*2024-05-01"):
        parse_since("last week", now=NOW)


@pytest.mark.parametrize(
    ("ago", "text"),
    [
        (timedelta(0), "just now"),
        (timedelta(seconds=59), "just now"),
        (timedelta(minutes=3), "3 minutes ago"),
        (timedelta(hours=5), "5 hours ago"),
        (timedelta(days=3), "3 days ago"),
        (timedelta(days=61), "2 months ago"),
        (timedelta(days=-2), "in 2 days"),
        (timedelta(minutes=-10), "in 10 minutes"),
    ],
)
def test_format_age_describes_the_distance_from_now(ago: timedelta, text: str) -> None:
    assert format_age(NOW - ago, now=NOW) == text


def test_format_age_treats_naive_moments_as_utc() -> None:
    assert format_age(datetime(2024, 6, 12, 12, 30), now=NOW) == "3 days ago"


def test_to_utc_assumes_naive_is_utc() -> None:
    assert to_utc(datetime(2024, 1, 1, 9)) == datetime(2024, 1, 1, 9, tzinfo=UTC)


def test_to_utc_converts_other_zones() -> None:
    result = to_utc(datetime(2024, 1, 1, 9, tzinfo=timezone(timedelta(hours=2))))
    assert (result, result.tzinfo) == (datetime(2024, 1, 1, 7, tzinfo=UTC), UTC)


def test_utc_now_is_aware_utc() -> None:
    assert utc_now().tzinfo is UTC
