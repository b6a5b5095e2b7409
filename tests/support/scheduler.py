"""pytest-xdist's ``--dist loadgroup`` scheduler, without its cost growing with the square of
the run.

pytest-xdist's controller (the ``pytest`` process the workers report to) keeps every work unit it
ever gave a worker, done or not, and at each test a worker finishes it counts that worker's
pending tests over all of them (``_pending_of``), twice more on each event it reads
(``has_pending``, ``tests_finished``); it also finds each test it hands out by a search of the
whole collection (``list.index``). With a test per work unit (a unit test of no group), a run of
4,700 unit tests cost the controller about 17 s of CPU, as much as a thousand of the tests.

:class:`LoadGroupOnce` hands the same units out in the same order, to the same rule (a worker
gets the next unit when it has two tests or fewer left): it only forgets a unit once all its
tests are done (a done unit has no pending test, so no count or crash recovery changes), and
finds a test's index in a dict. ``tests/conftest.py`` makes it the scheduler of ``--dist
loadgroup``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdist.scheduler import LoadGroupScheduling  # type: ignore[import-untyped]
from xdist.workermanage import WorkerController  # type: ignore[import-untyped]

__all__ = ["LoadGroupOnce"]


class LoadGroupOnce(LoadGroupScheduling):  # type: ignore[misc]  # pytest-xdist has no types
    """``LoadGroupScheduling``, forgetting each unit once its tests are done (the module's docstring)."""

    def __init__(self, config: Any, log: Any = None) -> None:
        super().__init__(config, log)
        self._indices: dict[WorkerController, dict[str, int]] = {}

    def add_node_collection(self, node: WorkerController, collection: Sequence[str]) -> None:
        super().add_node_collection(node, collection)
        if node in self.registered_collections:
            self._indices[node] = {nodeid: index for index, nodeid in enumerate(collection)}

    def mark_test_complete(self, node: WorkerController, item_index: int, duration: float = 0) -> None:
        nodeid = self.registered_collections[node][item_index]
        scope = self._split_scope(nodeid)
        unit = self.assigned_work[node][scope]
        unit[nodeid] = True
        if all(unit.values()):
            del self.assigned_work[node][scope]
        self._reschedule(node)

    def _assign_work_unit(self, node: WorkerController) -> None:
        assert self.workqueue
        scope, work_unit = self.workqueue.popitem(last=False)
        self.assigned_work.setdefault(node, {})[scope] = work_unit
        indices = self._indices[node]
        node.send_runtest_some([indices[nodeid] for nodeid, done in work_unit.items() if not done])
