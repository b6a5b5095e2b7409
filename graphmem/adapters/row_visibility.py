"""Which rows of the vector index a search may see: each row's project and status as small
codes, and the masks searches read, brought up to date with the rows changed since rather
than made again (a recall asks the same mask as the recall before, and making one took
50–90 ms at a million rows on a loaded machine).

The vector index (``adapters/vector_index.py``) owns the rows and their vectors; this owns
what each row is visible as. A row is global (no project) or of one *place*: a project, or
a project's branch (``core.branches.place``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from graphmem.core.branches import place, places_on, project_of
from graphmem.core.ports import VectorQuery

__all__ = ["MASK_CHANGES", "RowVisibility", "best_shown", "grown"]

_GLOBAL = -1  # project code of global memories (no project)
_DEAD = -1  # status code of removed rows (255 read as unsigned)
# Changed rows kept for bringing the masks up to date; past it they are made anew.
MASK_CHANGES = 4_096
# Masks kept, one per (statuses, places) a search asked.
MAX_MASKS = 16

Rows = slice | npt.NDArray[np.int64]


@dataclass(slots=True)
class _Mask:
    """``visible`` for its first ``rows`` rows, with the first ``applied`` changed rows seen."""

    visible: npt.NDArray[np.bool_]
    rows: int
    applied: int


class RowVisibility:
    """Per row: its project's and status's code; per search asked: a mask of what it shows.
    The caller holds the index's lock around every call."""

    def __init__(self) -> None:
        self._project_codes = np.zeros(0, np.int32)
        self._status_codes = np.zeros(0, np.int8)
        self._projects: dict[str, int] = {}
        self._statuses: dict[str, int] = {}
        self._masks: dict[tuple[tuple[int, ...], tuple[int, ...]], _Mask] = {}
        self._changes: list[int] = []  # rows whose status or project changed, in order
        self._partition_codes = np.zeros(0, np.int32)  # per row: its project's code (``partitions``)

    # -- writes -----------------------------------------------------------------

    def grow(self, capacity: int) -> None:
        """Room for ``capacity`` rows; new ones are global and dead until set."""
        if capacity > len(self._status_codes):
            self._project_codes = grown(self._project_codes, capacity, _GLOBAL)
            self._partition_codes = grown(self._partition_codes, capacity, _GLOBAL)
            self._status_codes = grown(self._status_codes, capacity, _DEAD)

    def assign(self, projects: Sequence[str | None], statuses: Sequence[str]) -> None:
        """The first rows' places and statuses, all at once (a load: no mask is kept)."""
        n = len(statuses)
        self._project_codes[:n] = [self._project_code(p) for p in projects]
        self._status_codes[:n] = [self._status_code(s) for s in statuses]
        self._partition_codes[:n] = self._partition_table()[self._project_codes[:n] + 1]
        self._forget_masks()

    def set(self, row: int, project: str | None, status: str) -> None:
        self._project_codes[row] = self._project_code(project)
        self._partition_codes[row] = _GLOBAL if project is None else self._project_code(project_of(project))
        self._status_codes[row] = self._status_code(status)
        self._changed(row)

    def set_status(self, row: int, status: str) -> None:
        self._status_codes[row] = self._status_code(status)
        self._changed(row)

    def kill(self, row: int) -> None:
        """``row`` is shown by no search again (its memory was removed or re-embedded)."""
        self._status_codes[row] = _DEAD
        self._changed(row)

    # -- reads ------------------------------------------------------------------

    def live(self, rows: Rows) -> npt.NDArray[np.bool_]:
        """Whether each of ``rows`` is not dead."""
        alive: npt.NDArray[np.bool_] = self._status_codes[rows] != _DEAD
        return alive

    def visible(self, n: int, query: VectorQuery) -> npt.NDArray[np.bool_]:
        """Which of the first ``n`` rows ``query`` shows: of one of its statuses, and global or
        of its project or an alias (and of its rows on a branch, those on its branch; all of
        them with ``all_branches``). Read only: the mask is shared, brought up to date in place
        by the next search."""
        codes = tuple(sorted(self._statuses[s] for s in query.statuses if s in self._statuses))
        branch, every = query.branch, query.all_branches
        places = sorted({code for p in query.projects for code in self._places(p, branch, every)})
        key = (codes, tuple(places))
        mask = self._masks.get(key)
        if mask is None or len(mask.visible) < n:
            if len(self._masks) >= MAX_MASKS:
                self._masks.clear()
            rows = len(self._status_codes)  # the capacity: rows added later are filled in
            mask = self._masks[key] = _Mask(np.zeros(rows, np.bool_), 0, len(self._changes))
        if mask.rows < n:
            mask.visible[mask.rows : n] = self._shown(slice(mask.rows, n), codes, places)
            mask.rows = n
        if mask.applied < len(self._changes):
            changed = np.asarray(self._changes[mask.applied :], np.int64)
            changed = changed[changed < mask.rows]
            mask.visible[changed] = self._shown(changed, codes, places)
            mask.applied = len(self._changes)
        return mask.visible[:n]

    def partitions(self, rows: Rows) -> npt.NDArray[np.int32]:
        """The project of each of ``rows`` as a code: a branch's rows are their project's; -1
        for a global one (the vector index keeps a graph per project: ``vector_graphs.py``)."""
        partitions: npt.NDArray[np.int32] = self._partition_codes[rows]
        return partitions

    def partitions_of(self, query: VectorQuery) -> list[int]:
        """The codes of the projects whose rows ``query`` may see: global (-1), its project and
        its aliases (with any of their branches)."""
        return [_GLOBAL, *(self._projects[p] for p in sorted(query.projects) if p in self._projects)]

    # -- saving and restoring ------------------------------------------------------

    def state(self, n: int) -> dict[str, Any]:
        """The first ``n`` rows' codes and what they stand for, as ``vector_files`` saves them."""
        return {
            "projects": dict(self._projects),
            "statuses": dict(self._statuses),
            "project_codes": self._project_codes[:n].copy(),
            "status_codes": self._status_codes[:n].copy(),
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Take what ``state`` gave (after ``grow`` made room for its rows)."""
        n = len(state["status_codes"])
        self._projects = dict(state["projects"])
        self._statuses = dict(state["statuses"])
        self._project_codes[:n] = state["project_codes"]
        self._status_codes[:n] = state["status_codes"]
        self._partition_codes[:n] = self._partition_table()[self._project_codes[:n] + 1]
        self._forget_masks()

    # -- inside ---------------------------------------------------------------------

    def _project_code(self, project: str | None) -> int:
        if project is None:
            return _GLOBAL
        return self._projects.setdefault(project, len(self._projects))

    def _partition_table(self) -> npt.NDArray[np.int32]:
        """Per project code plus one (global first): the code of its project, a branch's
        place's project given one here if it had none."""
        for key in list(self._projects):
            self._project_code(project_of(key))
        table = np.full(len(self._projects) + 1, _GLOBAL, np.int32)
        for key, code in self._projects.items():
            table[code + 1] = self._projects[project_of(key)]
        return table

    def _status_code(self, status: str) -> int:
        return self._statuses.setdefault(status, len(self._statuses))

    def _changed(self, row: int) -> None:
        """The masks must see ``row`` again; past ``MASK_CHANGES`` rows they are made anew."""
        if len(self._changes) >= MASK_CHANGES:
            self._forget_masks()
        self._changes.append(row)

    def _forget_masks(self) -> None:
        self._masks.clear()
        self._changes = []

    def _places(self, project: str, branch: str | None, all_branches: bool) -> list[int]:
        """The codes of ``project``'s rows a search sees (see ``core.branches.place``)."""
        wanted = {project, place(project, branch)}
        if all_branches:
            wanted.update(key for key in self._projects if places_on(key, project))
        return [self._projects[key] for key in wanted if key is not None and key in self._projects]

    def _shown(self, rows: Rows, codes: tuple[int, ...], places: list[int]) -> npt.NDArray[np.bool_]:
        """Whether each of ``rows`` is of one of the status ``codes``, and global or of one of
        ``places``: a table of the status codes looked up (``np.isin`` took 50 ms a million)."""
        table = np.zeros(256, np.bool_)
        table[list(codes)] = True
        visible: npt.NDArray[np.bool_] = table[self._status_codes[rows].view(np.uint8)]  # dead: 255
        projects = self._project_codes[rows]
        placed: npt.NDArray[np.bool_] = projects == _GLOBAL
        for code in places:
            placed |= projects == code
        visible &= placed
        return visible


def grown(array: npt.NDArray[Any], capacity: int, fill: Any) -> npt.NDArray[Any]:
    """A copy of ``array`` with room for ``capacity`` items, the new ones ``fill``."""
    grown = np.full(capacity, fill, array.dtype)
    grown[: len(array)] = array
    return grown


def best_shown(rows: npt.NDArray[np.int64], sims: npt.NDArray[Any], k: int) -> list[tuple[int, float]]:
    """The ``k`` best of ``sims`` a search shows (finite: a hidden row is scored minus infinity),
    as (row, similarity), best first."""
    k = min(k, len(sims))
    if k <= 0:
        return []
    top = np.argpartition(-sims, k - 1)[:k]
    top = top[np.argsort(-sims[top])]
    top = top[np.isfinite(sims[top])]
    return list(zip(rows[top].tolist(), sims[top].tolist(), strict=True))
