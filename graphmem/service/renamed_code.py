"""A renamed project's code graph: the memories' links follow it to the new name, the old one goes.

On a team's store a checkout first named by its path is later kept under the repository's
shared name (``ProjectNames.of``, docs/team.md): its memories move to the name at the next
write (``ProjectNames.move_pending``), but its code graph (files, symbols, external modules,
keyed by project and path) is built again under the name by the checkout's next ``bootstrap``. Once
that pass has stored the new graph, ``RenamedCode.follow`` finishes the move:

- a memory about a file, symbol or external module of the old name is made about the same one
  (same path, same qualified name) under the new name; a file the new graph does not hold but
  the checkout has (a document a memory names) gets its entity under the new name;
- the old name's code graph is then removed as a pass that removed every file would remove it,
  and its external modules with it. A link to a file or symbol the new name does not have
  (deleted, or renamed, before the new graph was built) is kept: its node stays, marked
  deleted, as for code a scan sees go, so the memory keeps saying where it came from and is
  flagged possibly stale rather than losing its place silently; a module a memory is still
  about stays too. On a team's store another person's global memories, which this role cannot
  see, follow as well (``GraphStore.remembered`` finds their links, ``move_about`` moves them);
  the report counts only the links the caller sees.

The same holds for another spelling of the name (``core.projects.project_key``: ``Acme/Shop``
and ``acme/shop``) a team's store kept a graph under before its memories were bound to one
(``service/project_names.py``): ``follow_former`` follows the path and each such spelling.

Once done, a later pass finds no file left under the old name and does nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from graphmem.core.code_moves import MovePlan
from graphmem.core.codegraph import CodeEdges, CodeScan, ProjectCode, key_in_project
from graphmem.core.models import Entity, EntityKind
from graphmem.core.ports import CodeGraph
from graphmem.core.projects import is_checkout_path, project_key
from graphmem.service.inputs import file_entity
from graphmem.service.writer import MemoryWriter

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class FollowedCode:
    """What ``RenamedCode.follow`` did (``graphmem bootstrap`` prints it)."""

    old: str  # the name the checkout's code graph was kept under
    followed: int  # memory links moved to the same file, symbol or module under the new name
    kept: int  # links to code the new name does not have, kept (to nodes marked deleted)


class RenamedCode:
    """Moves a checkout's old code graph to its new name (see the module doc)."""

    def __init__(self, writer: MemoryWriter, code: CodeGraph, clock: Callable[[], datetime]) -> None:
        self._writer = writer
        self._store = writer.store  # read here, written through the writer
        self._code = code
        self._clock = clock

    def follow_former(self, new: str, root: Path) -> list[FollowedCode]:
        """``follow`` from each name the project ``new`` (a shared name, checked out at
        ``root``) may have had a graph under: the checkout's path, then every other spelling
        of ``new`` whose graph holds live files. What each did, for those that did something."""
        key = project_key(new)
        spellings = sorted(
            p for p in self._code.projects() if p != new and not is_checkout_path(p) and project_key(p) == key
        )
        done = (self.follow(old, new, root) for old in (str(root), *spellings))
        return [followed for followed in done if followed is not None]

    def follow(self, old: str, new: str, root: Path) -> FollowedCode | None:
        """After a pass stored ``new``'s graph from the checkout at ``root``: the links to ``old``'s
        code follow to ``new``'s, and ``old``'s graph goes. None when there was nothing to do."""
        if old == new:
            return None
        live = self._code.file_states(old)
        if not live:
            return None  # no graph under the old name (or it went at an earlier pass)
        linked: dict[str, tuple[EntityKind, str]] = {}  # old key -> its kind and new key
        for entity in self._store.all_entities():
            target = key_in_project(entity.key, old, new)
            if target is not None:
                linked[entity.key] = (entity.kind, target)
        # Anyone's: on a team's store another person's global memories are hidden from
        # memories_about, yet their links follow too (move_about moves them all).
        remembered = self._store.remembered(list(linked))
        about = self._store.memories_about(remembered)
        known = set(self._store.get_entities({linked[key][1] for key in remembered}))
        followed = kept = 0
        for kind in (EntityKind.FILE, EntityKind.SYMBOL, EntityKind.EXTERNAL_MODULE):
            moves: dict[str, str] = {}
            documents: list[Entity] = []
            for key in sorted(k for k in remembered if linked[k][0] is kind):
                target = linked[key][1]
                if target not in known and kind is EntityKind.FILE:
                    # in the checkout, not parsed (a document): confined to it, as a mention is
                    document = file_entity(root, target.split("::", 1)[1], new)
                    if document is not None:
                        documents.append(document)
                        known.add(target := document.key)
                if target not in known:
                    kept += len(about.get(key, ()))  # the links the caller sees
                    continue
                moves[key] = target
            followed += self._writer.move_links(kind, moves, new=documents)
        self._code.save(
            CodeScan(old, {}, sorted(live), ProjectCode(old), CodeEdges(), self._clock(), MovePlan())
        )
        self._code.replace_co_changes(old, {})
        self._code.remove_unused_modules(old)  # but those a memory is about (kept, as files are)
        log.info(
            "bootstrap: %s's code now under %s: %d memory links followed, %d kept on deleted code",
            old, new, followed, kept,
        )  # fmt: skip
        return FollowedCode(old, followed, kept)
