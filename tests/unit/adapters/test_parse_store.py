"""How the parse store (``adapters/parse_store.py``) keeps a parse: zstd-compressed, and the zlib
streams an earlier graphmem wrote read as they are."""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphmem.adapters.parse_store import PARSES_FILE, ParseStore
from graphmem.errors import StoreError

PROJECT = "/src/proj"
PARSE = '{"language": "python", "definitions": []}' * 50


@pytest.fixture
def parses(tmp_path: Path) -> Iterator[ParseStore]:
    store = ParseStore(tmp_path / PARSES_FILE)
    yield store
    store.close()


def stored_blob(parses: ParseStore, path: str) -> bytes:
    with sqlite3.connect(parses.path) as db:
        blob: bytes = db.execute("SELECT parsed FROM parses WHERE path = ?", (path,)).fetchone()[0]
    return blob


def test_a_parse_is_stored_as_zstd_and_read_back(parses: ParseStore) -> None:
    parses.replace(PROJECT, (), [("a.py", PARSE)])

    blob = stored_blob(parses, "a.py")
    assert blob.startswith(b"zstd") and b"\x28\xb5\x2f\xfd" in blob[:16]  # zstd's own magic after the length
    assert len(blob) < len(PARSE) // 5
    assert parses.load(PROJECT) == {"a.py": PARSE}


def test_a_parse_an_earlier_graphmem_stored_with_zlib_is_read_as_it_is(parses: ParseStore) -> None:
    parses.replace(PROJECT, (), [("a.py", PARSE)])  # makes the file and its tables
    with sqlite3.connect(parses.path) as db:
        db.execute(
            "INSERT OR REPLACE INTO parses (project, path, parsed) VALUES (?, ?, ?)",
            (PROJECT, "old.py", zlib.compress(PARSE.encode(), 1)),
        )

    assert parses.load(PROJECT) == {"a.py": PARSE, "old.py": PARSE}
    assert parses.load(PROJECT, ["old.py"]) == {"old.py": PARSE}


def test_a_damaged_parse_is_the_store_error_that_says_what_to_do(parses: ParseStore) -> None:
    parses.replace(PROJECT, (), [("a.py", PARSE)])
    blob = stored_blob(parses, "a.py")
    for damaged in (blob[:12] + b"not a zstd frame", blob[:4] + (2**60).to_bytes(8, "big") + blob[12:]):
        with sqlite3.connect(parses.path) as db:
            db.execute("UPDATE parses SET parsed = ? WHERE path = 'a.py'", (damaged,))
        with pytest.raises(StoreError, match="Delete the file: the next `graphmem bootstrap` parses"):
            parses.load(PROJECT)
