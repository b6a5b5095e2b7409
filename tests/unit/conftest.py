"""Unit tests get a tight time limit: each runs in well under a second with fakes, so one
that takes a minute hangs (pyproject.toml's ``timeout`` is the integration tests' limit).

A unit test's bootstrap parses in the test's own process (``_bootstraps_parse_here``): the
pool of parser processes (``adapters/parse_pool.py``) and a bootstrap on it are integration
tests (``tests/integration/adapters/test_parse_pool.py``, ``tests/integration/bench/``)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from graphmem import app
from graphmem.core.code import ParsedFile, parsed_from_json, parsed_to_json
from graphmem.core.ports import CodeParser

if TYPE_CHECKING:  # imported when a test bootstraps: tree-sitter's grammars take a while
    from graphmem.adapters.code_parser import TreeSitterParser

# Seconds: about ten times the slowest unit test on a loaded two-core machine.
UNIT_TIMEOUT_S = 60
UNIT_DIR = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Give every test under tests/unit without its own ``timeout`` marker the unit limit."""
    for item in items:
        if item.path.is_relative_to(UNIT_DIR) and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(UNIT_TIMEOUT_S))


class ParsedHere:
    """The pool's parse in this process: each file through the tree-sitter parser a pool's
    process runs, its answer read back from the JSON that process would send (``parse_worker``).
    Starting the pool's processes cost 0.4 s of CPU each (importing the grammars), 32 of them a
    unit run."""

    def __init__(self, parser: TreeSitterParser) -> None:
        self._parser = parser

    def parse_many(self, sources: Sequence[tuple[bytes, str]]) -> list[ParsedFile]:
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
def _bootstraps_parse_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """What ``graphmem.app.learning_sources`` gives a bootstrap parses here, not in a pool."""
    monkeypatch.setattr(app, "_tree_sitter_parser", parser_here)
