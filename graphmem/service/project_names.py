"""Which name the store keeps a checkout's project under, and where a named project is checked out.

Entry points name a project by its checkout's path (``graphmem.connect.resolve_project``); the
store keeps it under the name ``ProjectRoots.project_name`` gives (the path on the embedded
store; on a team's store the repository's shared name, ``core/projects.py``). Everything that
reads the checkout's files (mentions of files, context of a file, the repository export) asks
``checkout`` for the folder of a name.

On a team's store a shared name is bound to the spelling of it the store already keeps memories
or a code graph under (``core.projects.stored_spelling``): a clone of
``https://github.com/acme/shop`` works in the ``github.com/Acme/Shop`` a clone of
``git@github.com:Acme/Shop.git`` stored first, and no stored name is rewritten to a new spelling.

Two kinds of memories belong under the name but are kept under another: those stored under the
checkout's path before it was named otherwise (a team's store from before project names), and,
where the store keeps memories under several spellings of one project (a split from before, or
two first writers at once), those of the spellings the binding did not pick. They move to the
name, but never on a read: a verb that reads changes nothing, events included (a read-only
role or replica could not anyway). ``of`` only resolves the name and records each such move as
pending; ``pending`` gives the names still to move to a project, and every read of the project
sees their memories as its own (``Stores.aliases``, ``Visibility.aliases``), so a read right
after the upgrade or the split finds them where they are. ``move_pending`` carries the moves
out (``MemoryWriter.rename_project``, one transaction each): in the daemon's idle worker, and
in a write. A verb of the service that stores memories under a project is declared a write
(``service/parts.py``, ``writes``) and runs inside ``writing``: the moves pending are made as it
starts, and a name ``of`` resolves during it has its memories moved to it before it is given,
so what the write stores next (``remember``, ``edit``, ``bootstrap``, an import, each session
an ingest reads) never lands beside a copy still kept under another name.

An alias in the reads' visibility rather than a second read merged into the first: one
condition, the same on every store (Kùzu's Cypher, PostgreSQL's SQL, the full-text and vector
indexes), so paging and ranking are the store's as for any project. A role that may not write
warns and keeps the alias: its reads still see the memories, and the move is tried again once
the spelling is read again (``PROJECT_SPELLING_TTL_S``). The code graph kept under another name
follows at the next ``bootstrap`` (``service/renamed_code.py``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from graphmem.core.ports import CodeGraph, ProjectRoots
from graphmem.core.projects import checkout_path, is_checkout_path, project_key, stored_spelling
from graphmem.errors import StoreError, StoreUnavailableError
from graphmem.service.writer import MemoryWriter

log = logging.getLogger(__name__)

# How long the spelling a store keeps a name under is taken as read: as long as git's answer
# (adapters/git.py, PROJECT_NAME_TTL_S), so a split made by two first writers at once heals
# within a minute, at one query a minute a project.
PROJECT_SPELLING_TTL_S = 60.0


class ProjectNames:
    """A checkout's project name and the moves of memories to it (see the module doc), and a
    name's checkout on this machine."""

    def __init__(
        self,
        roots: ProjectRoots | None,
        writer: MemoryWriter,
        code: CodeGraph | None = None,
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._roots = roots
        self._writer = writer
        self._code = code
        self._monotonic = monotonic
        self._adopted: set[str] = set()
        self._spellings: dict[str, tuple[float, str]] = {}  # project_key -> (when read, spelling)
        self._moves: dict[str, str] = {}  # a name memories are kept under -> the name they belong to
        self._refused: set[str] = set()  # of those, the ones a write was refused for, till read again
        self._lock = threading.Lock()
        self._writes = threading.local()  # ``depth``: the writes this thread is inside (``writing``)

    def of(self, project: str | None) -> str | None:
        """The name of the project checked out at ``project``; a name that is no path is kept
        as it is. Writes nothing outside a write: the memories to move to the name wait for
        ``move_pending``; inside one (``writing``) they are moved before the name is given."""
        name = self._named(project)
        if getattr(self._writes, "depth", 0):
            self.move_pending()
        return name

    @contextmanager
    def writing(self) -> Iterator[None]:
        """A write of this thread (``service/parts.py``, ``writes``): the moves pending are made
        as it starts, and those of each name ``of`` resolves in it before the name is given."""
        self._writes.depth = getattr(self._writes, "depth", 0) + 1
        try:
            self.move_pending()
            yield
        finally:
            self._writes.depth -= 1

    def pending(self, project: str | None) -> frozenset[str]:
        """The names whose memories are still to move to ``project``: a read sees them as its own."""
        if project is None:
            return frozenset()
        with self._lock:
            return frozenset(old for old, new in self._moves.items() if new == project)

    def move_pending(self) -> int:
        """Move the memories of each pending name to the one they belong to (in a write,
        ``writing``, and in the daemon's idle worker); how many moved. A role that may not write
        keeps them pending, seen by reads where they are, with a warning; a store that cannot be
        reached fails the call, the moves still pending."""
        with self._lock:
            due = [(old, new) for old, new in self._moves.items() if old not in self._refused]
        moved = 0
        for old, new in due:
            try:
                count = self._writer.rename_project(old, new)
            except StoreUnavailableError:
                raise
            except StoreError as exc:  # a read-only role or replica: reads see them, a writer moves them
                log.warning("project %s is %s, but its memories stay till a writer moves them: %s",
                            old, new, exc)  # fmt: skip
                with self._lock:
                    self._refused.add(old)
                continue
            with self._lock:
                if self._moves.get(old) == new:  # else bound to another name since: moved again
                    del self._moves[old]
            if count:
                log.info("project %s is %s: %d memories moved to it", old, new, count)
            moved += count
        return moved

    def checkout(self, project: str) -> Path | None:
        """Where ``project`` is checked out here: its path, or the checkout last named so."""
        return self._roots.checkout(project) if self._roots is not None else checkout_path(project)

    def _stored_spelling(self, name: str) -> str:
        """The spelling of the shared ``name`` the store keeps (see the module doc); the memories
        under its other spellings are to move to it."""
        key = project_key(name)
        now = self._monotonic()
        with self._lock:
            cached = self._spellings.get(key)
        if cached is not None and now - cached[0] < PROJECT_SPELLING_TTL_S:
            return cached[1]
        coded = self._code.projects() if self._code is not None else set()
        spelling = stored_spelling(name, self._writer.store.projects(), coded)
        with self._lock:
            for other in spelling.others:
                self._pend(other, spelling.name)
            self._spellings[key] = (now, spelling.name)
        return spelling.name

    def _named(self, project: str | None) -> str | None:
        """``of`` but for the moves: the name, each move it finds recorded as pending."""
        if project is None or self._roots is None or not is_checkout_path(project):
            return project
        name = self._roots.project_name(Path(project))
        if name == project:
            return name
        name = self._stored_spelling(name)
        with self._lock:
            if project not in self._adopted:  # named otherwise the first time: its path's memories
                self._adopted.add(project)
                self._pend(project, name)
        return name

    def _pend(self, old: str, new: str) -> None:
        """The memories kept under ``old`` are to move to ``new`` (the lock held): a move
        pending to ``old`` now goes to ``new``, and one the other way is dropped (the binding
        changed since); a move refused before is tried again."""
        if old == new:
            return
        if self._moves.get(new) == old:
            del self._moves[new]
        for moving, target in self._moves.items():
            if target == old:
                self._moves[moving] = new
        self._moves[old] = new
        self._refused.discard(old)
