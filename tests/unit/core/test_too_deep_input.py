"""Text graphmem did not write, nested deeper than Python's JSON parser recurses, and times
UTC cannot hold: the pure readers answer as for any other unreadable input, never with a bare
RecursionError or OverflowError."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from graphmem.core.sessions import SessionMessage, SessionPart
from graphmem.core.shell_runs import command_runs
from graphmem.core.timeparse import parse_since, parse_until, to_utc
from graphmem.errors import InvalidInputError

DEEP = "[" * 3000  # deeper than json.loads recurses: it raised RecursionError
NOW = datetime(2026, 1, 1, tzinfo=UTC)
RANGE = "between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z"


def message(*parts: SessionPart) -> SessionMessage:
    return SessionMessage("msg_1", "assistant", NOW, parts)


def test_a_shell_run_whose_input_is_nested_too_deep_is_no_command() -> None:
    run = SessionPart("prt_1", "tool", tool="bash", tool_input=DEEP, tool_output="ok", status="completed")
    assert command_runs(message(run)) == []


def test_an_edit_whose_input_is_nested_too_deep_names_no_file() -> None:
    edit = SessionPart("prt_1", "tool", tool="edit", tool_input=DEEP, status="completed")
    [run] = command_runs(message(edit))
    assert run.files == () and run.command == ""


@pytest.mark.parametrize(
    "moment",
    [
        datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone(timedelta(hours=-14))),
        datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=14))),
    ],
)
def test_a_time_utc_cannot_hold_is_invalid_input_naming_it_and_the_range(moment: datetime) -> None:
    with pytest.raises(InvalidInputError) as caught:
        to_utc(moment)
    assert moment.isoformat() in str(caught.value) and RANGE in str(caught.value)


def test_since_and_until_name_the_range_for_a_time_utc_cannot_hold_and_take_its_ends() -> None:
    with pytest.raises(InvalidInputError, match=RANGE):
        parse_since("0001-01-01T00:00:00+14:00", now=NOW)
    with pytest.raises(InvalidInputError, match=RANGE):
        parse_until("9999-12-31T23:59:59-14:00", now=NOW)
    assert parse_since("0001-01-01T00:00:00Z", now=NOW) == datetime.min.replace(tzinfo=UTC)
    assert parse_until("9999-12-31T23:59:59.999999Z", now=NOW) == datetime.max.replace(tzinfo=UTC)
