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
Where the store keeps memories under several spellings of one project (a split from before, or
two first writers at once), those of the others move to the one the binding picks; the code
graph kept under another follows at the next ``bootstrap`` (``service/renamed_code.py``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
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
    """A checkout's project name (see the module doc), and a name's checkout on this machine."""

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
        self._lock = threading.Lock()

    def of(self, project: str | None) -> str | None:
        """The name of the project checked out at ``project``; a name that is no path is kept
        as it is. The first time a checkout is named otherwise than by its path, the memories
        stored under its path move to the name (a team's store from before project names)."""
        if project is None or self._roots is None or not is_checkout_path(project):
            return project
        name = self._roots.project_name(Path(project))
        if name == project:
            return name
        name = self._stored_spelling(name)
        with self._lock:
            first = project not in self._adopted
            self._adopted.add(project)
        if first:
            self._writer.rename_project(project, name)
        return name

    def checkout(self, project: str) -> Path | None:
        """Where ``project`` is checked out here: its path, or the checkout last named so."""
        return self._roots.checkout(project) if self._roots is not None else checkout_path(project)

    def _stored_spelling(self, name: str) -> str:
        """The spelling of the shared ``name`` the store keeps (see the module doc); the memories
        under its other spellings move to it."""
        key = project_key(name)
        now = self._monotonic()
        with self._lock:
            cached = self._spellings.get(key)
        if cached is not None and now - cached[0] < PROJECT_SPELLING_TTL_S:
            return cached[1]
        coded = self._code.projects() if self._code is not None else set()
        spelling = stored_spelling(name, self._writer.store.projects(), coded)
        for other in spelling.others:
            try:
                moved = self._writer.rename_project(other, spelling.name)
            except StoreUnavailableError:
                raise
            except StoreError as exc:  # a read-only role or replica: the call goes on, a writer moves them
                log.warning("project %s is %s, but its memories stay till a writer moves them: %s",
                            other, spelling.name, exc)  # fmt: skip
                continue
            log.info("project %s is %s: %d memories moved to it", other, spelling.name, moved)
        with self._lock:
            self._spellings[key] = (now, spelling.name)
        return spelling.name
