"""The rules every path graphmem is given meets: which flaw a path has, first, and the limits."""

from __future__ import annotations

import os

import pytest

from graphmem.core.path_rules import MAX_NAME_BYTES, MAX_PATH_BYTES, Flaw, PathFlaw, path_flaw


@pytest.mark.parametrize(
    ("path", "flaw"),
    [
        ("/tmp/a\0b", PathFlaw(Flaw.NUL, at=6)),
        (os.fsdecode(b"/tmp/\xff"), PathFlaw(Flaw.NOT_UTF8, at=5)),
        ("/tmp/\ud83d", PathFlaw(Flaw.NOT_UTF8, at=5)),
        ("/" + "a" * (MAX_NAME_BYTES + 1), PathFlaw(Flaw.LONG_NAME)),
        ("/tmp/" + "é" * 128, PathFlaw(Flaw.LONG_NAME)),  # 128 characters, 256 bytes
        ("a/" * 2049, PathFlaw(Flaw.TOO_LONG, size=4098)),
        ("/" + "é/" * 1366, PathFlaw(Flaw.TOO_LONG, size=4099)),  # 2,733 characters
    ],
    ids=[
        "NUL",
        "undecodable byte",
        "lone surrogate",
        "long name",
        "long name in UTF-8",
        "long",
        "long in UTF-8",
    ],
)
def test_a_path_no_file_can_be_at_has_its_flaw(path: str, flaw: PathFlaw) -> None:
    assert path_flaw(path) == flaw


@pytest.mark.parametrize(
    "path",
    [
        "/" + "a" * MAX_NAME_BYTES,
        "/tmp/" + "é" * 127 + "a",  # 255 bytes
        "/" + "a/" * ((MAX_PATH_BYTES - 1) // 2) + "a",  # 4,096 bytes
        "relative/é/🚀",
        "",
    ],
    ids=["a 255-byte name", "a 255-byte name in UTF-8", "4,096 bytes", "beyond ASCII", "empty"],
)
def test_a_path_at_the_limits_has_no_flaw(path: str) -> None:
    assert path_flaw(path) is None


def test_the_first_flaw_is_said_nul_then_length_then_encoding_then_names() -> None:
    long_name = "n" * (MAX_NAME_BYTES + 1)

    assert path_flaw("\0" + "x" * MAX_PATH_BYTES) == PathFlaw(Flaw.NUL, at=0)
    assert path_flaw("\udcff" + "x" * MAX_PATH_BYTES) == PathFlaw(Flaw.TOO_LONG, size=MAX_PATH_BYTES + 3)
    assert path_flaw(f"/{long_name}/\udcff") == PathFlaw(Flaw.NOT_UTF8, at=MAX_NAME_BYTES + 3)


def test_under_a_legacy_locale_a_character_its_file_system_cannot_write_is_a_flaw(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(os, "fsencode", lambda path: os.fspath(path).encode("latin-1"))

    assert path_flaw("/tmp/é") is None
    assert path_flaw("/tmp/漢") == PathFlaw(Flaw.UNENCODABLE, at=5)
