"""A caller's path (``inputs.parse_path``) is refused by the rules a setting's path meets
(``locate.path_problem``), both read from ``graphmem.core.path_rules``, each in its own words."""

from __future__ import annotations

import os

import pytest

from graphmem.errors import InvalidInputError
from graphmem.locate import path_problem
from graphmem.service.inputs import parse_path

# One path of each flaw, and paths at the limits; ``~`` is the settings' own rule (a caller's path
# is expanded, or not, by the verb that takes it).
PATHS = {
    "a NUL": "/tmp/a\0b",
    "undecodable bytes": os.fsdecode(b"/tmp/bad\xff\xfe"),
    "a lone surrogate": "/tmp/\ud83d",
    "a name over 255 bytes": "/" + "a" * 256,
    "a name of 255 bytes": "/" + "é" * 127 + "a",
    "a name of 256 bytes in UTF-8": "/" + "é" * 128,
    "over 4,096 characters": "x" * 4097,
    "4,096 bytes": "/" + "/".join(["a" * 99] * 41)[: 4096 - 1],
    "over 4,096 bytes in fewer characters": "/tmp/" + ("é" * 100 + "/") * 30,
    "over 4,096 bytes in names that fit": "/tmp/" + "/".join(["p" * 200] * 25),
    "an ordinary path": "/home/someone/projects/graphmem",
}


def _parsed(path: str) -> bool:
    try:
        parse_path(path)
    except InvalidInputError:
        return False
    return True


@pytest.mark.parametrize("case", list(PATHS))
def test_a_callers_path_and_a_settings_path_are_refused_alike(case: str) -> None:
    path = PATHS[case]

    assert _parsed(path) == (path_problem(path) is None)


def test_a_path_over_4096_bytes_in_fewer_characters_is_refused_saying_both() -> None:
    """PATH_MAX counts bytes: 3,035 characters of é are 6,035 (a bootstrap there raised
    ENAMETOOLONG, a traceback)."""
    path = PATHS["over 4,096 bytes in fewer characters"]

    with pytest.raises(InvalidInputError) as raised:
        parse_path(path, what="db_path")

    assert str(raised.value) == (
        "The db_path is 3,035 characters (6,035 bytes); a path has at most 4,096 bytes."
    )


def test_an_overlong_ascii_path_is_still_said_in_characters() -> None:
    with pytest.raises(InvalidInputError) as raised:
        parse_path("x" * 20_000, what="db_path")

    assert str(raised.value) == "The db_path is 20,000 characters; a path has at most 4,096 bytes."


def test_a_path_that_is_not_utf8_is_refused_saying_where() -> None:
    with pytest.raises(InvalidInputError) as raised:
        parse_path(PATHS["undecodable bytes"])

    assert str(raised.value) == "The path is not valid UTF-8 (at character 8)."


def test_under_a_legacy_locale_a_character_its_file_names_cannot_hold_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """UTF-8, but a Latin-1 file system encoding cannot write it: as a setting's path, refused."""
    monkeypatch.setattr(os, "fsencode", lambda path: os.fspath(path).encode("latin-1"))

    with pytest.raises(InvalidInputError) as raised:
        parse_path("/tmp/漢字")

    assert (
        str(raised.value)
        == "The path holds a character this system's file names cannot hold (at character 5)."
    )
    assert (
        path_problem("/tmp/漢字")
        == "holds a character no path can be written in here (at character 5): remove it"
    )
