"""Lone surrogates' escapes mended in JSON's bytes: what a parser then reads is the text with each
half of a pair that has no other half as U+FFFD, and every other character as it was."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from graphmem.core.json_escapes import lone_surrogate_escapes, mend_lone_surrogates
from graphmem.core.text import well_formed

# Text with surrogates drawn on their own too, so halves meet their pairs or not, and backslashes.
TEXT = st.text(st.one_of(st.characters(), st.sampled_from(["\ud83d", "\ude00", "\\", "u", "d"])))


@given(TEXT, st.booleans())
def test_a_mended_body_reads_as_the_text_made_well_formed(text: str, ascii_only: bool) -> None:
    body = json.dumps([text, {"k": text}], ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    if not ascii_only and any(0xD800 <= ord(c) < 0xE000 for c in text):
        return  # raw surrogates are bytes no UTF-8 holds: the decoder's business, not an escape's
    assert json.loads(mend_lone_surrogates(body)) == [well_formed(text), {"k": well_formed(text)}]


def test_each_lone_half_is_found_in_order_and_a_whole_pair_or_an_escaped_backslash_is_not() -> None:
    body = rb'["\ud83d\ude00", "\\ud800", "\ude00 then \ud83d", "\ud83d\n"]'
    assert [m.group(0) for m in lone_surrogate_escapes(body)] == [rb"\ude00", rb"\ud83d", rb"\ud83d"]
    assert json.loads(mend_lone_surrogates(body)) == [
        "\U0001f600",
        "\\ud800",
        "\ufffd then \ufffd",
        "\ufffd\n",
    ]


def test_a_body_without_a_lone_half_is_given_back_as_it_is() -> None:
    body = b'{"a": "\\ud83d\\ude00 caf\xc3\xa9"}'
    assert mend_lone_surrogates(body) is body
