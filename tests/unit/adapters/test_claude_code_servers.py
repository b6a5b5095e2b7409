"""``mcpServers`` edited in a server file that may be Claude Code's 100 MB state (``~/.claude.json``):
only that member changes, every other byte is put back, and the text editor never reads the rest."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphmem.adapters import claude_code_servers as servers
from graphmem.adapters import jsonc
from graphmem.errors import InvalidInputError

PATH = ("mcpServers", "graphmem")
ENTRY = {"type": "stdio", "command": "/opt/graphmem/.venv/bin/graphmem", "args": ["mcp"]}


def state_file(history_chars: int) -> str:
    """A ``~/.claude.json`` as Claude Code writes it, its prompt history ``history_chars`` long."""
    prompt = 'fix the flaky test — café 🚀 "quoted" \\ back\\slash\n' * (history_chars // 50)
    config = {
        "numStartups": 412,
        "projects": {"/home/me/shop": {"history": [{"display": prompt, "pastedContents": {}}]}},
        "mcpServers": {"github": {"type": "stdio", "command": "gh-mcp", "args": []}},
        "oauthAccount": {"emailAddress": "me@example.com"},
    }
    return json.dumps(config, indent=2, ensure_ascii=False)


def add(text: str) -> str:
    return servers.edited(text, lambda t: jsonc.set_value(t, PATH, ENTRY))


def remove(text: str) -> str:
    return servers.edited(text, lambda t: jsonc.remove_value(t, PATH))


def test_a_state_file_of_megabytes_gets_the_server_and_gives_back_every_byte() -> None:
    text = state_file(3 * 1024 * 1024)

    added = add(text)

    assert json.loads(added)["mcpServers"] == {
        "github": json.loads(text)["mcpServers"]["github"],
        "graphmem": ENTRY,
    }
    assert json.loads(added)["projects"] == json.loads(text)["projects"]
    assert servers.value(added, PATH) == ENTRY
    assert remove(added) == text


def test_the_text_editor_reads_only_the_skeleton(monkeypatch: pytest.MonkeyPatch) -> None:
    text = state_file(2 * 1024 * 1024)
    read: list[int] = []
    parser = jsonc._Parser

    def counted(given: str) -> Any:
        read.append(len(given))
        return parser(given)

    monkeypatch.setattr(jsonc, "_Parser", counted)
    remove(add(text))
    servers.value(text, PATH)

    assert read and max(read) < 1000  # the values cut out of it are 2 MB


def test_a_file_without_mcp_servers_gets_it_last_and_loses_it_again() -> None:
    text = json.dumps({"projects": {"/a": {"history": []}}, "userID": "x" * 2_000_000}, indent=2)
    added = add(text)
    assert list(json.loads(added)) == ["projects", "userID", "mcpServers"]
    assert remove(added) == text


def test_a_small_file_with_comments_is_edited_whole() -> None:
    text = '{\n  // mine\n  "mcpServers": {\n    "github": {"command": "gh-mcp"}, // the team\'s\n  },\n}\n'
    added = add(text)
    assert "// mine" in added and "// the team's" in added
    assert servers.value(added, PATH) == ENTRY
    assert remove(added) == text


def test_a_large_file_that_is_not_strict_json_is_refused_with_its_line() -> None:
    text = state_file(2 * 1024 * 1024).replace('"numStartups": 412,', '"numStartups": 412, // mine', 1)
    with pytest.raises(InvalidInputError, match=r"^line 2, column 23: expected a property name"):
        add(text)
    with pytest.raises(InvalidInputError, match=r"^line 2, column 23"):
        servers.value(text, PATH)


PAD = '"pad": "' + "x" * 1_100_000 + '"'  # past the 1 MiB a file that is not strict JSON may be


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{" + PAD + ', "projects": {"a": [1, 2}}', "Expecting ',' delimiter"),
        ("{" + PAD + '} {"b": 2}', "unexpected text after the end of the document"),
        ("{" + PAD + ",}", "expected a property name in double quotes"),
        ("[" + PAD[6:] + "]", "expected the document's '{'"),
        ("{" + PAD + ', "a": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deep"),
        ("{" + PAD + ', "a": "\udc00', "Unterminated string"),
    ],
)
def test_a_large_broken_file_says_where_and_why(text: str, reason: str) -> None:
    with pytest.raises(InvalidInputError, match=rf"^line 1, column \d+: {reason}"):
        add(text)


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=100, deadline=None)
@given(
    document=st.dictionaries(
        st.sampled_from(["a", "mcpServers", "projects", "é", "", "mcp\u0053"]), JSON_VALUES, max_size=5
    ),
    servers_first=st.dictionaries(st.text(max_size=5), JSON_VALUES, max_size=2),
    indent=st.sampled_from([None, 2, 4, "\t"]),
    ascii_only=st.booleans(),
)
def test_the_skeleton_edits_exactly_as_the_whole_text_would(
    document: dict[str, Any], servers_first: dict[str, Any], indent: int | str | None, ascii_only: bool
) -> None:
    if "mcpServers" in document:
        document["mcpServers"] = servers_first
    text = json.dumps(document, indent=indent, ensure_ascii=ascii_only)

    added = add(text)

    assert added == jsonc.set_value(text, PATH, ENTRY)
    assert remove(added) == jsonc.remove_value(added, PATH)
    assert servers.value(added, ("mcpServers",)) == jsonc.get_value(added, ("mcpServers",))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{}",
        " { }\n",
        '\ufeff{\r\n  "projects": {"a": 1},\r\n  "mcpServers": {}\r\n}\r\n',
        '{"mcpServers": {"a": 1}, "x": [1], "mcpServers": {"b": 2}}',
        '{"mcp\\u0053ervers": {"github": {}}, "projects": {}}',
    ],
)
def test_odd_but_valid_documents_are_edited_as_the_whole_text_would_be(text: str) -> None:
    added = add(text)
    assert added == jsonc.set_value(text, PATH, ENTRY)
    assert remove(added) == jsonc.remove_value(added, PATH)


MANY_KEYS = "{" + ", ".join(f'"k{i}": 0' for i in range(200_000)) + "}"  # keys by the thousand: hostile


@pytest.mark.parametrize(
    "text",
    [MANY_KEYS, '{"projects": {}, "mcpServers": {"x": "' + "y" * 1_100_000 + '"}}'],
    ids=["keys", "servers"],
)
def test_a_large_file_whose_keys_or_servers_alone_are_over_a_mib_is_refused(text: str) -> None:
    with pytest.raises(servers.TooLarge, match=r"^its mcpServers and top-level keys take over 1 MiB"):
        add(text)
