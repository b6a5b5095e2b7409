"""``body_json.parse``'s limits, at their edges: nesting to ``MAX_DEPTH`` and the 64-bit integers
are read, one past either is refused."""

from __future__ import annotations

import pytest

from graphmem.errors import InvalidInputError
from graphmem.server.body_json import INT64_MAX, INT64_MIN, MAX_DEPTH, parse


def test_nesting_to_the_limit_is_read_and_one_more_level_refused() -> None:
    assert parse(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH) is not None

    with pytest.raises(InvalidInputError, match=f"more than {MAX_DEPTH} deep"):
        parse(b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1))


def test_the_64_bit_integers_are_read_and_one_past_either_end_refused() -> None:
    assert parse(f"[{INT64_MIN}, {INT64_MAX}]".encode()) == [INT64_MIN, INT64_MAX]

    for past in (INT64_MIN - 1, INT64_MAX + 1):
        with pytest.raises(InvalidInputError, match=f'"\\[0\\]" is {past}, outside the 64-bit integers'):
            parse(f"[{past}]".encode())
