"""What a request body's text must be before a route parses it: UTF-8 with no lone surrogate."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphmem.server.body_text import problem


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b'{"text": "plain"}',
        '{"text": "café 😀"}'.encode(),
        b'{"text": "\\ud83d\\ude00"}',  # an escaped pair: one character
        b'{"text": "\\uD83D\\uDE00"}',
        b'{"text": "\\\\ud800"}',  # an escaped backslash, then the letters "ud800"
        b'{"text": "\\u00e9 \\n \\"\\\\"}',
    ],
    ids=["empty", "ascii", "raw-utf8", "escaped-pair", "escaped-pair-upper", "escaped-backslash", "escapes"],
)
def test_utf8_text_and_escaped_pairs_pass(body: bytes) -> None:
    assert problem(body) is None


@pytest.mark.parametrize(
    ("body", "offset", "escape"),
    [
        (b'{"text": "\\ud800"}', 10, "\\ud800"),
        (b'{"text": "x\\udc00"}', 11, "\\udc00"),
        (b'{"text": "\\ud800 \\udc00"}', 10, "\\ud800"),  # halves apart are no pair
        (b'{"text": "\\ud800\\ud83d\\ude00"}', 10, "\\ud800"),  # a high half, then a whole pair
        (b'{"text": "\\\\\\ud800"}', 12, "\\ud800"),  # an escaped backslash, then the escape
    ],
    ids=["high", "low", "halves-apart", "high-before-pair", "after-escaped-backslash"],
)
def test_an_escaped_lone_surrogate_is_named_with_its_place(body: bytes, offset: int, escape: str) -> None:
    said = problem(body)
    assert said is not None
    assert f"lone surrogate: the JSON escape {escape} at byte {offset}" in said
    assert "Send the text as UTF-8" in said


def test_bytes_that_are_not_utf8_are_named_with_their_place() -> None:
    said = problem(b'{"text": "\xff"}')
    assert said is not None
    assert "not valid UTF-8: byte 10 (0xff)" in said and "encoded as UTF-8" in said


def test_a_surrogate_encoded_as_three_bytes_is_named_as_one() -> None:
    said = problem(b'{"text": "\xed\xa0\x80"}')
    assert said is not None
    assert "not valid UTF-8" in said and "lone UTF-16 surrogate" in said and "0xed 0xa0 0x80" in said


def _reads_as_text(body: bytes) -> bool:
    """What Python's JSON parser reads from ``body`` is text that UTF-8 can hold."""
    try:
        json.loads(body.decode("utf-8"))["text"].encode("utf-8")
    except UnicodeError:
        return False
    return True


# Any character, often a surrogate half, a backslash or a character beyond U+FFFF.
_CHARACTERS = st.one_of(
    st.characters(exclude_categories=()),
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, exclude_categories=()),
    st.sampled_from(["\\", "u", "d8", "😀"]),
)


@given(st.lists(_CHARACTERS, max_size=12).map("".join), st.booleans())
def test_a_body_passes_exactly_when_its_strings_read_as_text(text: str, ascii_only: bool) -> None:
    """Whatever ``json.dumps`` makes of any string, surrogates included, escaped or raw."""
    body = json.dumps({"text": text}, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    assert (problem(body) is None) == _reads_as_text(body)
