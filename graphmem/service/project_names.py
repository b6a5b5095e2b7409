"""Which name the store keeps a checkout's project under, and where a named project is checked out.

Entry points name a project by its checkout's path (``graphmem.connect.resolve_project``); the
store keeps it under the name ``ProjectRoots.project_name`` gives (the path on the embedded
store; on a team's store the repository's shared name, ``core/projects.py``). Everything that
reads the checkout's files (mentions of files, context of a file, the repository export) asks
``checkout`` for the folder of a name.
"""

from __future__ import annotations

import threading
from pathlib import Path

from graphmem.core.ports import ProjectRoots
from graphmem.core.projects import checkout_path, is_checkout_path
from graphmem.service.writer import MemoryWriter


class ProjectNames:
    """A checkout's project name (see the module doc), and a name's checkout on this machine."""

    def __init__(self, roots: ProjectRoots | None, writer: MemoryWriter) -> None:
        self._roots = roots
        self._writer = writer
        self._adopted: set[str] = set()
        self._lock = threading.Lock()

    def of(self, project: str | None) -> str | None:
        """The name of the project checked out at ``project``; a name that is no path is kept
        as it is. The first time a checkout is named otherwise than by its path, the memories
        stored under its path move to the name (a team's store from before project names)."""
        if project is None or self._roots is None or not is_checkout_path(project):
            return project
        name = self._roots.project_name(Path(project))
        if name != project:
            with self._lock:
                first = project not in self._adopted
                self._adopted.add(project)
            if first:
                self._writer.rename_project(project, name)
        return name

    def checkout(self, project: str) -> Path | None:
        """Where ``project`` is checked out here: its path, or the checkout last named so."""
        return self._roots.checkout(project) if self._roots is not None else checkout_path(project)
