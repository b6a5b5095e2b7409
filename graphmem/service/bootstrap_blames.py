"""Who last changed each line of a pass's files, and the definition around each line.

A bootstrap pass links each new commit to the functions, methods and classes whose lines it
last changed at HEAD (``service/bootstrap.py``): git's answers (``GitHistory.blame_files``) are
read on a thread of their own from the pass's start, beside the parse, and each blamed line goes
to the innermost definition around it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Generator
from contextlib import closing

from graphmem.core.code import Definition, ParsedFile

log = logging.getLogger(__name__)

# Blaming the touched files links commits to symbols; past this many seconds in all, the
# remaining files keep their file links only (a huge repository's first bootstrap).
BLAME_BUDGET_S = 120.0
BLAMED_KINDS = frozenset({"function", "method", "class", "interface"})


class Blames:
    """The blames of a pass's files (``GitHistory.blame_files``), read on a thread of their own
    from the pass's start: git works while the parser processes do. What git said of each file,
    in ``paths``' order, within :data:`BLAME_BUDGET_S`; ``close`` stops the blames not yet read."""

    def __init__(self, paths: list[str] | None = None) -> None:
        self.paths: list[str] = paths or []
        self._answers: list[tuple[str, list[str]]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def start(self, blame: Callable[[], Generator[tuple[str, list[str]], None, None]]) -> None:
        self._thread = threading.Thread(target=self._read, args=(blame,), name="graphmem-blames", daemon=True)
        self._thread.start()

    def _read(self, blame: Callable[[], Generator[tuple[str, list[str]], None, None]]) -> None:
        started = time.perf_counter()
        shas: dict[str, str] = {}  # one string a commit, however many lines it last changed
        try:
            with closing(blame()) as blames:
                for path, lines in blames:
                    if self._stop.is_set():
                        break
                    if time.perf_counter() - started > BLAME_BUDGET_S:
                        log.info("bootstrap: blame budget spent; later files keep their file links only")
                        break
                    self._answers.append((path, [shas.setdefault(sha, sha) for sha in lines]))
        except BaseException as exc:  # raised where the answers are read
            self._error = exc

    def answers(self) -> list[tuple[str, list[str]]]:
        """What git said, once it is done (its error, if it failed)."""
        if self._thread is not None:
            self._thread.join()
        if self._error is not None:
            raise self._error
        return self._answers

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


def blamed_definitions(parsed: ParsedFile) -> list[Definition]:
    """The definitions a commit is linked to by its blamed lines."""
    return [d for d in parsed.definitions if d.kind in BLAMED_KINDS]


def innermost(definitions: list[Definition], lines: int) -> list[Definition | None]:
    """The innermost definition around each line (index 1..lines), or None."""
    owners: list[Definition | None] = [None] * (lines + 1)
    for definition in sorted(definitions, key=lambda d: d.start_line - d.end_line):
        for line in range(max(definition.start_line, 1), min(definition.end_line, lines) + 1):
            owners[line] = definition
    return owners
