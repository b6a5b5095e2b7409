"""The code a question describes without naming it (``core.code_search``), for recall's entity
channel: one symbol index per project, built from the parses the code graph keeps.

An index is built on a background thread the first time a project is asked about, and again
when the project's scanned commit changes (a bootstrap at a new HEAD): a read never waits for it
(until it is ready, no symbol is described), unless the caller asks to (``wait``). ``close``
waits for the builds under way and starts none after (the service is closed).
"""

from __future__ import annotations

import logging
import threading

from graphmem.core.code_search import Described, SymbolIndex
from graphmem.core.models import Entity, EntityKind
from graphmem.core.ports import CodeGraph
from graphmem.errors import GraphmemError

log = logging.getLogger(__name__)

# Symbols a question may describe at most: as many as a person reads first.
MAX_DESCRIBED = 3
INDEX_WAIT_S = 120.0  # how long ``wait`` waits for an index being built


class DescribedCode:
    """The symbols a question describes, per project."""

    def __init__(self, code: CodeGraph) -> None:
        self._code = code
        self._lock = threading.Lock()
        self._indexes: dict[str, tuple[str | None, SymbolIndex]] = {}  # project -> (head, index)
        self._building: dict[str, threading.Thread] = {}
        self._closed = False

    def close(self) -> None:
        """Wait for the indexes being built (they read the code graph, closed next); none after."""
        with self._lock:
            self._closed = True
            building = list(self._building.values())
        for thread in building:
            thread.join(INDEX_WAIT_S)

    def entities_in(self, question: str, project: str | None, *, wait: bool = False) -> list[Entity]:
        """The symbols ``question`` describes in ``project``, best first (see ``SymbolIndex.search``)."""
        if not project:
            return []
        index = self._index(project, wait=wait)
        if index is None:
            return []
        return [self._entity(found, project) for found in index.search(question, MAX_DESCRIBED)]

    @staticmethod
    def _entity(found: Described, project: str) -> Entity:
        return Entity(found.key, EntityKind.SYMBOL, found.qualified_name, project)

    def _index(self, project: str, *, wait: bool) -> SymbolIndex | None:
        head = self._code.scanned_head(project)
        with self._lock:
            known = self._indexes.get(project)
            if known is not None and known[0] == head:
                return known[1]
            if self._closed:  # no build after ``close``
                return known[1] if known is not None else None
            thread = self._building.get(project)
            if thread is None:
                thread = threading.Thread(
                    target=self._build, args=(project, head), name="graphmem-symbol-index", daemon=True
                )
                self._building[project] = thread
                thread.start()
        if wait:
            thread.join(INDEX_WAIT_S)
            with self._lock:
                known = self._indexes.get(project)
        return known[1] if known is not None else None  # an older index while a new one is built

    def _build(self, project: str, head: str | None) -> None:
        try:
            index = SymbolIndex(project, self._code.load_parsed(project))
            with self._lock:
                self._indexes[project] = (head, index)
            log.debug("symbol index of %s: %d symbols", project, len(index))
        except GraphmemError as exc:  # a store closed or failing: no symbol described, said once
            log.warning("cannot index the symbols of %s: %s", project, exc)
        finally:
            with self._lock:
                self._building.pop(project, None)
