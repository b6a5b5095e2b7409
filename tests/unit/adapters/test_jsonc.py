"""Editing JSONC text in place: set and remove one member, keep every other character."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphmem.adapters import jsonc
from graphmem.errors import InvalidInputError

PATH = ("mcp", "graphmem")
ENTRY = {"type": "local", "command": ["/opt/bin/graphmem", "mcp"], "enabled": True, "timeout": 10000}
ENTRY_LINES = """\
    "graphmem": {
      "type": "local",
      "command": ["/opt/bin/graphmem", "mcp"],
      "enabled": true,
      "timeout": 10000
    }"""

COMMENTED = """\
{
  // the model I use
  "model": "anthropic/claude-sonnet-4", // fast enough
  /* a block
     comment */
  "theme": "dark",
}
"""

# Documents whose text comes back exactly after set_value then remove_value.
ROUND_TRIPS = [
    "{}",
    "{}\n",
    '{\n  "$schema": "https://opencode.ai/config.json"\n}\n',
    COMMENTED,
    '{\n    "a": 1 // four spaces, no trailing comma\n}',
    '{\n\t"a": {\n\t\t"b": 1\n\t}\n}\n',
    '{"a": 1}',
    '{"a": 1,}',
    '{\n  "a": 1 }',
    '{\n  "mcp": {\n    "other": {"type": "remote", "url": "http://127.0.0.1:1/mcp"}\n  }\n}\n',
    '{\n  "mcp": {\n    "other": {"type": "remote"}, // keep me\n  },\n}\n',
    '{\n  "mcp": { // servers\n  }\n}\n',
    '{\r\n  "a": 1, // crlf\r\n  "b": [1, 2]\r\n}\r\n',
    '\ufeff{\n  "a": "bom"\n}\n',
]


def test_get_value_reads_comments_and_trailing_commas() -> None:
    assert jsonc.get_value(COMMENTED, ()) == {"model": "anthropic/claude-sonnet-4", "theme": "dark"}


def test_get_value_keeps_comment_markers_inside_strings() -> None:
    text = '{"url": "http://x//y", "glob": "a/*b*/c", "q": "\\"//"}'

    assert jsonc.get_value(text, ()) == json.loads(text)


def test_get_value_takes_the_last_of_duplicate_keys_like_javascript() -> None:
    assert jsonc.get_value('{"a": 1, "a": 2}', ()) == {"a": 2}


@given(
    st.dictionaries(
        st.text(max_size=8),
        st.recursive(
            st.none()
            | st.booleans()
            | st.integers()
            | st.floats(allow_nan=False, allow_infinity=False)
            | st.text(max_size=8),
            lambda inner: (
                st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
            ),
            max_leaves=10,
        ),
        max_size=5,
    ),
    st.sampled_from([None, 2, 4, "\t"]),
)
def test_get_value_agrees_with_json_on_plain_json(document: dict[str, Any], indent: int | str | None) -> None:
    text = json.dumps(document, indent=indent)

    assert jsonc.get_value(text, ()) == json.loads(text)


def test_get_value_follows_the_key_path() -> None:
    text = '{"mcp": {"graphmem": {"enabled": false}}}'

    assert jsonc.get_value(text, PATH) == {"enabled": False}
    assert jsonc.get_value(text, ("mcp", "other")) is None
    assert jsonc.get_value("", PATH) is None


def test_set_value_inserts_the_member_after_the_last_one_keeping_comments() -> None:
    result = jsonc.set_value(COMMENTED, PATH, ENTRY)

    assert result == COMMENTED.replace(
        '  "theme": "dark",\n', '  "theme": "dark",\n  "mcp": {\n' + ENTRY_LINES + "\n  },\n"
    )


def test_set_value_adds_a_comma_before_a_trailing_line_comment() -> None:
    text = '{\n  "a": 1 // note\n}\n'

    result = jsonc.set_value(text, ("b",), 2)

    assert result == '{\n  "a": 1, // note\n  "b": 2\n}\n'


def test_set_value_into_an_existing_object_indents_to_match() -> None:
    text = '{\n    "mcp": {\n        "other": {}\n    }\n}\n'

    result = jsonc.set_value(text, PATH, {"enabled": True})

    assert result == (
        '{\n    "mcp": {\n        "other": {},\n        "graphmem": {\n'
        '            "enabled": true\n        }\n    }\n}\n'
    )


def test_set_value_on_an_empty_document_writes_a_new_object() -> None:
    assert jsonc.set_value("", ("a",), [1, 2]) == '{\n  "a": [1, 2]\n}\n'


def test_set_value_keeps_windows_line_endings() -> None:
    text = '{\r\n  "a": 1\r\n}\r\n'

    result = jsonc.set_value(text, PATH, ENTRY)

    assert result.count("\n") == result.count("\r\n")


def test_set_value_uses_tabs_in_a_tab_indented_file() -> None:
    result = jsonc.set_value('{\n\t"a": 1\n}\n', ("b",), {"c": 1})

    assert result == '{\n\t"a": 1,\n\t"b": {\n\t\t"c": 1\n\t}\n}\n'


def test_set_value_replaces_a_different_value_in_place() -> None:
    text = '{\n  "mcp": {\n    "graphmem": {"enabled": false}, // mine\n    "z": 1\n  }\n}\n'

    result = jsonc.set_value(text, PATH, {"enabled": True})

    assert result == text.replace('{"enabled": false}', '{\n      "enabled": true\n    }')


def test_set_value_leaves_an_equal_value_alone_whatever_its_formatting() -> None:
    text = '{"mcp": {"graphmem": {"timeout": 10000, "type": "local", "enabled": true,\n'
    text += ' "command": ["/opt/bin/graphmem", "mcp"]}}}'

    assert jsonc.set_value(text, PATH, ENTRY) == text


@pytest.mark.parametrize("stored", ["1", "1.0"])
def test_set_value_tells_true_from_one(stored: str) -> None:
    text = '{"mcp": {"graphmem": {"enabled": ' + stored + "}}}"

    assert jsonc.set_value(text, PATH, {"enabled": True}) == '{"mcp": {"graphmem": {"enabled": true}}}'


def test_set_value_is_idempotent() -> None:
    once = jsonc.set_value(COMMENTED, PATH, ENTRY)

    assert jsonc.set_value(once, PATH, ENTRY) == once


@pytest.mark.parametrize("text", ROUND_TRIPS)
def test_set_then_remove_gives_back_the_original_text(text: str) -> None:
    installed = jsonc.set_value(text, PATH, ENTRY)

    assert jsonc.get_value(installed, PATH) == ENTRY
    assert jsonc.remove_value(installed, PATH) == text


def test_remove_prunes_an_mcp_object_left_empty() -> None:
    text = '{\n  "a": 1,\n  "mcp": {}\n}\n'

    removed = jsonc.remove_value(jsonc.set_value(text, PATH, ENTRY), PATH)

    assert removed == '{\n  "a": 1\n}\n'


def test_an_empty_object_that_received_the_member_comes_back_closed_up() -> None:
    installed = jsonc.set_value("{\n}\n", PATH, ENTRY)

    assert jsonc.remove_value(installed, PATH) == "{}\n"


def test_remove_keeps_an_object_that_still_holds_comments() -> None:
    text = '{\n  "mcp": {\n    // servers\n    "graphmem": {}\n  }\n}\n'

    assert jsonc.remove_value(text, PATH) == '{\n  "mcp": {\n    // servers\n  }\n}\n'


def test_remove_takes_a_member_in_the_middle_with_its_line_and_comment() -> None:
    text = '{\n  "a": 1,\n  "b": 2, // about b\n  "c": 3\n}\n'

    assert jsonc.remove_value(text, ("b",)) == '{\n  "a": 1,\n  "c": 3\n}\n'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"b": 2, "a": 1}', '{"a": 1}'),
        ('{"a": 1, "b": 2}', '{"a": 1}'),
        ('{"a": 1, "b": 2, "c": 3}', '{"a": 1, "c": 3}'),
        ('{"b": 2}', "{}"),
        ('{\n  "b": 2\n}', "{}"),
    ],
)
def test_remove_from_one_line_objects(text: str, expected: str) -> None:
    assert jsonc.remove_value(text, ("b",)) == expected


def test_remove_takes_every_duplicate_of_the_key() -> None:
    text = '{"mcp": {"graphmem": 1, "x": 2, "graphmem": 3}}'

    assert jsonc.remove_value(text, PATH) == '{"mcp": {"x": 2}}'


@pytest.mark.parametrize("text", ["", "{}", '{"mcp": {}}', '{"mcp": 1}', '{"a": {"graphmem": 1}}'])
def test_remove_of_a_missing_member_changes_nothing(text: str) -> None:
    assert jsonc.remove_value(text, PATH) == text


@pytest.mark.parametrize(
    ("text", "where", "reason"),
    [
        ('{\n  "a": 1\n  "b": 2\n}', "line 3, column 3", "expected ',' or '}'"),
        ('{"a": }', "line 1, column 7", "expected a value"),
        ("{a: 1}", "line 1, column 2", "strings need double quotes"),
        ("{\n  /* open", "line 2, column 3", "never closed"),
        ('{"a": "x', "line 1, column 7", "invalid string"),
        ('{"a": 1', "line 1, column 8", "unexpected end of text"),
        ('{"a": 1} {}', "line 1, column 10", "after the end of the document"),
        ("[1, 2]", "line 1, column 1", "top level must be an object"),
        ('{"a": [1,,2]}', "line 1, column 10", "expected a value"),
        ('{"mcp": true}', "line 1, column 9", "'mcp' must be an object"),
    ],
)
def test_invalid_text_is_an_error_with_line_and_column(text: str, where: str, reason: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        jsonc.set_value(text, PATH, ENTRY)

    assert str(raised.value).startswith(where)
    assert reason in str(raised.value)


KEYS = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=6)
SCALARS = st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=6)
COMMENTS = st.sampled_from(["", " // note", " /* block */"])


@st.composite
def commented_documents(draw: st.DrawFn) -> str:
    """A JSONC object, one member per line, with comments and maybe a trailing comma."""
    values = SCALARS | st.lists(SCALARS, max_size=3)
    members = draw(st.dictionaries(KEYS.filter(lambda k: k != "mcp"), values, min_size=1))
    indent = draw(st.sampled_from(["  ", "    ", "\t"]))
    lines = [f"{indent}{json.dumps(k)}: {json.dumps(v)}" for k, v in members.items()]
    trailing = draw(st.booleans())
    body = ""
    for number, line in enumerate(lines):
        comma = "," if number < len(lines) - 1 or trailing else ""
        body += f"{line}{comma}{draw(COMMENTS)}\n"
    return "{" + draw(COMMENTS) + "\n" + body + "}\n"


@given(commented_documents())
def test_any_commented_document_round_trips_and_keeps_its_values(text: str) -> None:
    installed = jsonc.set_value(text, PATH, ENTRY)

    assert jsonc.get_value(installed, ()) == {**jsonc.get_value(text, ()), "mcp": {"graphmem": ENTRY}}
    assert jsonc.set_value(installed, PATH, ENTRY) == installed
    assert jsonc.remove_value(installed, PATH) == text


@pytest.mark.parametrize(
    "text",
    [
        '{"a": []}\n',
        '{"a": [1, {"b": 2}]}\n',
        '{\n  "a": [\n    1, // one\n    {"b": 2}\n  ]\n}\n',
        '{\r\n  "a": [\r\n    {"b": 2},\r\n  ]\r\n}\r\n',
    ],
)
def test_an_item_appended_then_removed_gives_back_the_text(text: str) -> None:
    added = jsonc.append_item(text, ("a",), {"ours": True})
    items = jsonc.get_value(added, ("a",))

    assert items[-1] == {"ours": True} and items[:-1] == jsonc.get_value(text, ("a",))
    assert jsonc.remove_item(added, ("a",), len(items) - 1) == (text if items[:-1] else '{"a": []}\n')


def test_replacing_an_item_leaves_the_others_as_written() -> None:
    text = '{\n  "a": [\n    {"x":1},\n    {"ours": 1}\n  ]\n}\n'

    done = jsonc.replace_item(text, ("a",), 1, {"ours": 2})

    assert done.startswith('{\n  "a": [\n    {"x":1},\n') and jsonc.get_value(done, ("a",)) == [
        {"x": 1},
        {"ours": 2},
    ]


def test_removing_a_middle_item_keeps_its_neighbours() -> None:
    text = '{"a": [{"x": 1}, {"ours": 1}, {"y": 2}]}'

    assert jsonc.remove_item(text, ("a",), 1) == '{"a": [{"x": 1}, {"y": 2}]}'
