"""Unit tests get a tight time limit: each runs in well under a second with fakes, so one
that takes a minute hangs (pyproject.toml's ``timeout`` is the integration tests' limit).

A unit test's bootstrap parses in the test's own process (``_bootstraps_parse_here``): the
pool of parser processes (``adapters/parse_pool.py``) and a bootstrap on it are integration
tests (``tests/integration/adapters/test_parse_pool.py``, ``tests/integration/bench/``)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # imported when a test bootstraps: tree-sitter's grammars take a while
    from graphmem.adapters.code_parser import TreeSitterParser
    from graphmem.core.code import ParsedFile
    from graphmem.core.ports import CodeParser

# Seconds: about ten times the slowest unit test on a loaded two-core machine.
UNIT_TIMEOUT_S = 60
UNIT_LIMIT = pytest.mark.timeout(UNIT_TIMEOUT_S)
UNIT_DIR = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Give every test under tests/unit without its own ``timeout`` marker the unit limit.
    Where a test is is asked once a module, and the marker made once: for each of some 5,700
    tests, the two took a tenth of a second of every pytest process's collection."""
    in_unit: dict[Path, bool] = {}
    for item in items:
        unit = in_unit.get(item.path)
        if unit is None:
            unit = in_unit[item.path] = item.path.is_relative_to(UNIT_DIR)
        if unit and item.get_closest_marker("timeout") is None:
            item.add_marker(UNIT_LIMIT)


class ParsedHere:
    """The pool's parse in this process: each file through the tree-sitter parser a pool's
    process runs, its answer read back from the JSON that process would send (``parse_worker``).
    Starting the pool's processes cost 0.4 s of CPU each (importing the grammars), 32 of them a
    unit run."""

    def __init__(self, parser: TreeSitterParser) -> None:
        self._parser = parser

    def parse_many(self, sources: Sequence[tuple[bytes, str]]) -> list[ParsedFile]:
        from graphmem.core.code import parsed_from_json, parsed_to_json

        return [
            parsed_from_json(parsed_to_json(self._parser.parse(data, language))) for data, language in sources
        ]

    def prepare(self, files: int) -> None:
        """Nothing to start."""

    def close(self) -> None:
        """Nothing was started."""


# One tree-sitter parser a thread (a parser is not thread-safe; loading a grammar and compiling
# its tag query takes a while): a bootstrap takes a new ``ParsedHere`` on it each pass.
_THREADS = threading.local()


def parser_here(workers: int) -> CodeParser:
    """``app._tree_sitter_parser`` for a unit test: ``workers`` processes asked, none started."""
    parser = getattr(_THREADS, "parser", None)
    if parser is None:
        from graphmem.adapters.code_parser import TreeSitterParser

        parser = _THREADS.parser = TreeSitterParser()
    return ParsedHere(parser)


@pytest.fixture(autouse=True)
def _bootstraps_parse_here() -> Iterator[None]:
    """What ``graphmem.app.learning_sources`` gives a bootstrap parses here, not in a pool. Set
    and put back without the ``monkeypatch`` fixture, which every unit test then ran (a test's
    own ``monkeypatch`` of it is undone first)."""
    from graphmem import app

    real = app._tree_sitter_parser
    app._tree_sitter_parser = parser_here
    yield
    app._tree_sitter_parser = real
