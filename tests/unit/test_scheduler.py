"""``support/scheduler.py``: pytest-xdist's ``--dist loadgroup`` hand-out, at a cost that does not
grow with the run. Two workers are played here: each reports its tests done one at a time, as a
real one does, and gets the next unit when it has two tests or fewer left."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from support.scheduler import LoadGroupOnce
from xdist.scheduler import LoadGroupScheduling  # type: ignore[import-untyped]

# Two groups and ten tests of none (a unit each), as the collection of a run gives them.
COLLECTION = [
    *(f"tests/integration/test_d.py::test_{i}@tests/integration/test_d.py" for i in range(4)),
    *(f"tests/unit/test_h.py::test_{i}@hostile(stage=0)" for i in range(5)),
    *(f"tests/unit/test_u.py::test_{i}" for i in range(10)),
]


class Config:
    """What a scheduler reads of pytest's config: two workers, units in collection order (as
    ``tests/conftest.py`` sets it)."""

    option = SimpleNamespace(loadscopereorder=False)

    def getvalue(self, name: str) -> Any:
        assert name == "tx"
        return ["2*popen"]


class Worker:
    """A worker as the scheduler sees it: the tests it was sent, in order."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down = False
        self.queue: list[int] = []

    def send_runtest_some(self, indices: list[int]) -> None:
        self.queue.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def run(scheduler: Any) -> tuple[dict[str, list[str]], list[int]]:
    """Play a run: the tests each worker ran, and how many units the scheduler held after each
    test was done."""
    workers = [Worker("gw0"), Worker("gw1")]
    for worker in workers:
        scheduler.add_node(worker)
        scheduler.add_node_collection(worker, COLLECTION)
    scheduler.schedule()
    ran: dict[str, list[str]] = {worker.name: [] for worker in workers}
    held: list[int] = []
    turn = 0
    while any(worker.queue for worker in workers):
        worker = workers[turn % 2] if workers[turn % 2].queue else workers[(turn + 1) % 2]
        turn += 1
        index = worker.queue.pop(0)
        ran[worker.name].append(COLLECTION[index])
        scheduler.mark_test_complete(worker, index)
        held.append(sum(len(units) for units in scheduler.assigned_work.values()))
    assert scheduler.tests_finished and not scheduler.has_pending
    return ran, held


def test_the_units_go_to_the_same_workers_in_the_same_order_as_pytest_xdists() -> None:
    ours, _ = run(LoadGroupOnce(Config()))
    theirs, _ = run(LoadGroupScheduling(Config()))

    assert ours == theirs
    assert sorted(ours["gw0"] + ours["gw1"]) == sorted(COLLECTION)  # each test once
    for group in ("test_d.py", "hostile"):  # a group's tests on one worker
        assert len({name for name, tests in ours.items() if any(group in test for test in tests)}) == 1


def test_a_unit_whose_tests_are_done_is_no_longer_held() -> None:
    """pytest-xdist's own holds every unit it ever handed out and counts them all at each test done."""
    _, held = run(LoadGroupOnce(Config()))

    assert max(held) <= 6  # three one-test units a worker at most in hand, never the run's 12
    assert held[-1] == 0
