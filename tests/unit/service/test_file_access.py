"""How an export file is read (``service/file_access.py``): as bytes, each line checked to be UTF-8
and named by its number when it is not, never decoded as one text."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmem.errors import ImportFileError
from graphmem.service.file_access import decode_export, export_lines, read_export

LATIN1 = b'{"a": 1}\ncaf\xe9\n{"b": 2}\n\xff'


def test_an_export_file_is_read_as_its_bytes(tmp_path: Path) -> None:
    path = tmp_path / "emoji.jsonl"
    path.write_bytes('\ufeff{"a": "\U0001f680"}\r\n'.encode())

    assert read_export(path) == path.read_bytes()


def test_an_export_file_with_lines_that_are_not_utf8_is_refused_naming_each(tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(LATIN1)

    with pytest.raises(ImportFileError) as refused:
        read_export(path)

    assert str(refused.value).startswith(f"{path} has 2 line(s) that are not UTF-8; nothing was imported.")
    assert refused.value.problems == [
        (2, "invalid UTF-8 at byte 3: save the file as UTF-8"),
        (4, "invalid UTF-8 at byte 0: save the file as UTF-8"),
    ]


def test_no_line_is_given_after_one_that_is_not_utf8() -> None:
    given: list[int] = []

    with pytest.raises(ImportFileError):
        given.extend(number for number, _ in export_lines(LATIN1, "latin1.jsonl"))

    assert given == [1]


def test_a_repository_file_that_is_not_utf8_is_refused_as_an_import_file_is() -> None:
    with pytest.raises(ImportFileError) as refused:
        decode_export(LATIN1, "memories.jsonl")

    assert str(refused.value).startswith("memories.jsonl has 2 line(s) that are not UTF-8")
    assert [number for number, _ in refused.value.problems] == [2, 4]
