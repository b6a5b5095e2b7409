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

It sends the unit tests of no group (a unit each, the filler at the end of the queue:
``support/work_order.py``) several to a message: one at a time, each test cost the controller
a message and a wake-up of the worker besides its report, and a run of 2,000 trivial tests on two
workers took 13.3 s of CPU where one process took 4.5. A batch is a quarter of the worker's share
of what is left, at most :data:`BATCH_MAX` tests: it shrinks as the queue drains, so the two
workers still finish close together. Groups and integration tests go out one unit at a time, as
before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdist.scheduler import LoadGroupScheduling  # type: ignore[import-untyped]
from xdist.workermanage import WorkerController  # type: ignore[import-untyped]

from .work_order import INTEGRATION

__all__ = ["BATCH_MAX", "LoadGroupOnce"]

# Unit tests of no group sent to a worker in one message, at most.
BATCH_MAX = 50


class LoadGroupOnce(LoadGroupScheduling):  # type: ignore[misc]  # pytest-xdist has no types
    """``LoadGroupScheduling``, forgetting each unit once its tests are done (the module's docstring)."""

    def __init__(self, config: Any, log: Any = None) -> None:
        super().__init__(config, log)
        self._indices: dict[WorkerController, dict[str, int]] = {}
        self._queued: int | None = None  # tests in the work queue, counted at the first hand-out

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
        """Send ``node`` the next unit of the queue, and when it is a unit test of no group, the
        next ones of those too (the module's docstring)."""
        assert self.workqueue
        if self._queued is None:
            self._queued = sum(len(unit) for unit in self.workqueue.values())
        lone = self._lone_unit_test_next()
        indices = self._take(node)
        if lone:
            batch = min(BATCH_MAX, self._queued // (4 * len(self.nodes)))
            while len(indices) < batch and self._lone_unit_test_next():
                indices += self._take(node)
        node.send_runtest_some(indices)

    def _lone_unit_test_next(self) -> bool:
        """Whether the next unit of the queue is a unit test of no group (its scope is its node
        id; a group's is the group's name)."""
        if not self.workqueue:
            return False
        scope, work_unit = next(iter(self.workqueue.items()))
        return scope in work_unit and not scope.startswith(INTEGRATION)

    def _take(self, node: WorkerController) -> list[int]:
        """Give ``node`` the next unit of the queue; its tests' indices."""
        scope, work_unit = self.workqueue.popitem(last=False)
        assert self._queued is not None
        self._queued -= len(work_unit)
        self.assigned_work.setdefault(node, {})[scope] = work_unit
        indices = self._indices[node]
        return [indices[nodeid] for nodeid, done in work_unit.items() if not done]
