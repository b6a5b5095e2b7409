"""A hook's stdin is hostile input: bounded, validated, one clear line when it cannot be used."""

from __future__ import annotations

import io
import json

import pytest

from graphmem.integrations.hook_input import HookInputError, path_text, read_input, session_id, text
from graphmem.server.body_text import problem


def test_a_one_megabyte_prompt_is_read_whole() -> None:
    prompt = "x" * 1_000_000
    assert read_input(io.BytesIO(json.dumps({"prompt": prompt}).encode()))["prompt"] == prompt


def test_input_past_the_bound_is_drained_and_refused() -> None:
    stream = io.BytesIO(b'{"prompt": "' + b"x" * 5000 + b'"}')
    with pytest.raises(HookInputError, match="over 1,000 bytes"):
        read_input(stream, max_bytes=1000)
    assert stream.read() == b""  # the writer is not left blocked


@pytest.mark.parametrize(
    ("raw", "problem"), [(b"{not json", "not JSON"), (b"[1, 2]", "JSON list, not an object")]
)
def test_input_that_is_not_a_json_object_is_refused(raw: bytes, problem: str) -> None:
    with pytest.raises(HookInputError, match=problem):
        read_input(io.BytesIO(raw))


@pytest.mark.parametrize("value", ["../../etc/passwd", "a/b", "", "x" * 129, 42, None, "ses 1"])
def test_a_session_id_that_is_no_id_is_refused(value: object) -> None:
    with pytest.raises(HookInputError, match="is not an id"):
        session_id(value)


def test_a_bad_id_is_named_by_the_field_it_came_in() -> None:
    with pytest.raises(HookInputError, match=r"^turn_id NoneType is not an id"):
        session_id(None, "turn_id")


def test_a_uuid_is_a_session_id() -> None:
    assert session_id("0b5c3e8e-3f5a-4c43-9a0e-1f2d3c4b5a69") == "0b5c3e8e-3f5a-4c43-9a0e-1f2d3c4b5a69"


def test_text_is_cut_and_what_is_not_text_is_empty() -> None:
    assert text("abcdef", 3) == "abc"
    assert text({"a": 1}, 3) == ""


def test_a_lone_surrogate_in_a_prompt_becomes_a_replacement_character_and_the_body_is_utf8() -> None:
    given = read_input(io.BytesIO(b'{"prompt": "deploy \\ud83d then \\ud83d\\ude80 ok"}'))

    prompt = text(given["prompt"], 100)

    assert prompt == "deploy \ufffd then \N{ROCKET} ok"
    assert problem(json.dumps({"text": prompt}).encode()) is None  # what the daemon's guard asks of a body


@pytest.mark.parametrize("value", ["relative/path.jsonl", "/a\x00b", 7, "/" + "a" * 5000])
def test_a_path_that_is_not_absolute_text_is_refused(value: object) -> None:
    with pytest.raises(HookInputError, match=r"transcript_path .* is not an absolute path"):
        path_text(value, "transcript_path")


def test_an_absent_path_is_none() -> None:
    assert path_text(None, "transcript_path") is None
    assert (
        path_text("/home/me/.claude/projects/p/s.jsonl", "transcript_path")
        == "/home/me/.claude/projects/p/s.jsonl"
    )
