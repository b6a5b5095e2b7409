"""Where no parser process can start, ``ParserPool`` parses in graphmem's own process: a file
that takes the parser too long, or breaks it, costs only itself there too
(``adapters/parse_pool.py``). No process is started: the command does not exist."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphmem.adapters import code_parser, parse_pool, parse_worker
from graphmem.adapters.parse_pool import ParserPool
from graphmem.core.code import ParsedFile

GOOD = (b"def refund(amount):\n    return charge(-amount)\n", "python")
UNREAD = ParsedFile("python", (), (), (), (), 1)  # stored without symbols, as one syntax error


@pytest.fixture
def pool(tmp_path: Path) -> Iterator[ParserPool]:
    opened = ParserPool(1, command=[str(tmp_path / "no-such-parser")])
    yield opened
    opened.close()


def test_a_file_past_its_time_here_is_stored_without_symbols_and_the_pass_goes_on(
    pool: ParserPool, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(parse_pool, "CHUNK_TIMEOUT_S", 0.0)  # no file gets time

    parsed = pool.parse_many([GOOD])

    assert parsed == [UNREAD]
    assert "no parser process could start" in caplog.text
    assert "took the parser more than 0 s; stored without its symbols" in caplog.text


def test_a_file_that_breaks_the_parser_here_costs_only_itself(
    pool: ParserPool, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    real = code_parser.TreeSitterParser.parse

    def breaking(
        self: code_parser.TreeSitterParser, source: bytes, language: str, **kwargs: float | None
    ) -> ParsedFile:
        if source.startswith(b"BREAK"):
            raise RecursionError("a grammar's bug")
        return real(self, source, language, **kwargs)

    monkeypatch.setattr(code_parser.TreeSitterParser, "parse", breaking)

    parsed = pool.parse_many([(b"BREAK", "python"), GOOD])

    assert parsed[0] == UNREAD
    assert [d.qualified_name for d in parsed[1].definitions] == ["refund"]
    assert "broke the parser (RecursionError)" in caplog.text


def test_a_file_whose_parse_no_frame_holds_is_stored_here_without_symbols(
    pool: ParserPool, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Each method repeats its class's name as its parent and in its qualified name: a
    # megabyte of them parsed to 123 MB of JSON, which the parse store then refused to read
    name = "c" * 490
    methods = b"".join(b"    def m%d(self): pass\n" % i for i in range(40))
    monkeypatch.setattr(parse_worker, "FRAME_MAX_BYTES", 40 * 1024)  # the same, forty methods in

    parsed = pool.parse_many([(f"class {name}:\n".encode() + methods, "python"), GOOD])

    assert parsed[0] == UNREAD
    assert [d.qualified_name for d in parsed[1].definitions] == ["refund"]
    assert "a python file parses to more than 64 MB; stored without its symbols" in caplog.text


def test_a_worker_is_graphmems_own_module_started_in_the_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bootstrap runs in the repository it reads: a worker started there must not import the
    repository's ``graphmem/`` (``-P``, and ``/``: an empty ``PYTHONPATH`` entry is the current
    directory). No process is started: the spawn is refused after it is seen."""
    seen: list[tuple[list[str], dict[str, object]]] = []

    def refused(argv: list[str], **options: object) -> None:
        seen.append((list(argv), options))
        raise OSError("no processes here")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(subprocess, "Popen", refused)
    pool = ParserPool(1)
    try:
        pool.prepare(1)
    finally:
        pool.close()

    [(argv, options)] = seen
    assert argv == [sys.executable, "-P", "-m", "graphmem.adapters.parse_worker"]
    assert options["cwd"] == "/"
